"""Where each layer of a knowledge base lives, resolved once from the Config."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from kbtools.config import Config
from kbtools.errors import ConfigError

DEFAULT_LOCALE = "en"


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
    def canonical_locale(self) -> str:
        """Configured locale, else the single locale that has an index.

        Several locales with an index and none configured is ambiguous: a
        ConfigError. With no index anywhere, the single note locale (or
        ``en``) is assumed so that lint can name the missing index.
        """
        if self.config.canonical_locale:
            return self.config.canonical_locale
        pattern = self.config.paths.index
        if "{locale}" not in pattern:
            return DEFAULT_LOCALE
        head, _, tail = pattern.partition("{locale}")
        base = self._path(head)
        found = sorted(p.name for p in _subdirs(base) if (self._path(head + p.name + tail)).is_file())
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise ConfigError(
                f"canonical locale is ambiguous: indexes exist for {', '.join(found)}; set canonical_locale",
                str(self.config.source or self.root / ".kb.yaml"),
            )
        note_locales = sorted(p.name for p in _subdirs(self.note_root))
        return note_locales[0] if len(note_locales) == 1 else DEFAULT_LOCALE

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
