"""Where each layer of a knowledge base lives, resolved once from the Config."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

from kbtools.config import CONFIG_FILE, Config
from kbtools.errors import ConfigError

DEFAULT_LOCALE = "en"
# In an index: a backticked name, or a link target (whose last path parts name a raw file).
_BACKTICKED = re.compile(r"`([^`\n]+)`")
_LINK_TARGET = re.compile(r"\]\(\s*<?([^)\s>]+)")


class LocaleChoice(NamedTuple):
    locale: str
    reason: str | None = None  # set when it was inferred among several locales with an index


@dataclass(frozen=True)
class Layout:
    config: Config

    @property
    def root(self) -> Path:
        return self.config.root

    def _path(self, rel: str) -> Path:
        return self.root / rel

    @property
    def raw_root(self) -> Path:
        return self._path(self.config.paths.raw)

    @property
    def raw_manifest(self) -> Path:
        return self._path(self.config.paths.raw_manifest)

    @property
    def note_root(self) -> Path:
        return self._path(self.config.paths.notes)

    @property
    def artifact_manifest(self) -> Path:
        return self._path(self.config.paths.artifact_manifest)

    @property
    def ingest_output(self) -> Path:
        return self._path(self.config.paths.ingest_output)

    @property
    def checkpoint(self) -> Path:
        return self._path(self.config.paths.checkpoint)

    @property
    def kb_md(self) -> Path:
        return self._path(self.config.paths.kb_md)

    @cached_property
    def locale_choice(self) -> LocaleChoice:
        """The canonical locale and, when it had to be inferred among several, how.

        Configured, else inferred from the evidence: the single locale that has an index;
        else, among the locales with an index, the one that holds raw sources; else the
        one whose index lists every raw source. Still ambiguous: a ConfigError naming the
        candidates. With no index anywhere, the one locale holding raw sources (else the
        single note locale, else ``en``) is assumed so that lint can name the missing index.
        """
        if self.config.canonical_locale:
            return LocaleChoice(self.config.canonical_locale)
        pattern = self.config.paths.index
        if "{locale}" not in pattern:
            return LocaleChoice(DEFAULT_LOCALE)
        head, _, tail = pattern.partition("{locale}")
        indexed = sorted(p.name for p in _subdirs(self._path(head)) if self._path(head + p.name + tail).is_file())
        if len(indexed) == 1:
            return LocaleChoice(indexed[0])
        with_raw = [loc for loc in sorted(p.name for p in _subdirs(self.raw_root)) if _holds_files(self.raw_root / loc)]
        if not indexed:
            if len(with_raw) == 1:
                return LocaleChoice(with_raw[0])
            note_locales = sorted(p.name for p in _subdirs(self.note_root))
            return LocaleChoice(note_locales[0] if len(note_locales) == 1 else DEFAULT_LOCALE)
        among = ", ".join(indexed)
        holding = [loc for loc in indexed if loc in with_raw]
        if len(holding) == 1:
            return LocaleChoice(holding[0], f"the only locale with raw sources (indexes exist for {among})")
        complete = self._indexes_listing_all_raw(head, tail, holding or indexed)
        if len(complete) == 1:
            return LocaleChoice(complete[0], f"the only index that lists every raw source (indexes exist for {among})")
        raw_part = f"raw sources under {', '.join(holding)}" if holding else "no locale holds raw sources"
        listing = f"indexes listing every raw source: {', '.join(complete)}" if complete else "no index lists them all"
        raise ConfigError(
            f"canonical locale is ambiguous: indexes exist for {among}; {raw_part}; {listing}; set canonical_locale",
            str(self.config.source or self.root / CONFIG_FILE),
        )

    @property
    def canonical_locale(self) -> str:
        return self.locale_choice.locale

    @property
    def locale_notice(self) -> str | None:
        """One line saying what was inferred, when the choice was not obvious."""
        choice = self.locale_choice
        if choice.reason is None:
            return None
        return f"kb: canonical locale {choice.locale} inferred: {choice.reason}; set canonical_locale in .kb.yaml to choose"

    def _indexes_listing_all_raw(self, head: str, tail: str, locales: list[str]) -> list[str]:
        from kbtools.kb.tree import scan_layer

        raw = scan_layer(self.raw_root).files
        found = []
        for locale in locales:
            try:
                text = self._path(head + locale + tail).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            named = _index_names(text)
            if all(f.slug in named or f"{f.locale}/{f.slug}" in named or f.rel in named for f in raw):
                found.append(locale)
        return found

    @property
    def index(self) -> Path:
        return self._path(self.config.paths.index.replace("{locale}", self.canonical_locale))

    @property
    def log(self) -> Path:
        return self._path(self.config.paths.log.replace("{locale}", self.canonical_locale))

    def rel(self, path: Path) -> str:
        """POSIX path relative to the KB root (for messages and git)."""
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.as_posix()


def _subdirs(base: Path) -> list[Path]:
    try:
        return [p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")]
    except OSError:
        return []


def _holds_files(folder: Path) -> bool:
    """Whether ``folder`` holds any visible file, at any depth."""
    try:
        for entry in os.scandir(folder):
            if entry.name[0] in "_.":
                continue
            if entry.is_file() or (entry.is_dir(follow_symlinks=False) and _holds_files(Path(entry.path))):
                return True
    except OSError:
        return False
    return False


def _index_names(text: str) -> set[str]:
    """Every backticked name of an index, and every tail of its link targets
    (``../../raw/zh-cn/a.md`` names ``a.md``, ``zh-cn/a.md``, …) with and without ``.md``."""
    names = {m.group(1).strip() for m in _BACKTICKED.finditer(text)}
    for match in _LINK_TARGET.finditer(text):
        parts = match.group(1).split("#", 1)[0].strip("/").split("/")
        for i in range(len(parts)):
            tail = "/".join(parts[i:])
            names.add(tail)
            names.add(tail.removesuffix(".md"))
    return names
