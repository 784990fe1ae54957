"""The raw manifest (``.manifest.sha256``): one line per raw file, append-only.

A line is ``<64 lowercase hex sha256><space(s)><path relative to the raw root>``
(the two-space ``sha256sum`` format parses too). The hash is over the file
**bytes**. A path must stay inside the raw root: no ``..``, no absolute path and
no symlink that leads out — such a line is reported and the file behind it is
never read.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from kbtools.errors import KbError
from kbtools.kb.layout import Layout

__all__ = [
    "Manifest",
    "ManifestAppender",
    "ManifestEntry",
    "ManifestIssue",
    "append_manifest_line",
    "appended_rels",
    "changed_entries",
    "entry_key",
    "manifest_entries",
    "manifest_line",
    "parse_manifest",
    "read_manifest",
    "removed_entries",
    "sha256_bytes",
    "sha256_file",
    "unsafe_path_reason",
]

_LINE = re.compile(r"([0-9a-f]{64})[ \t]+(\S.*)")
_SHA = re.compile(r"[0-9a-f]{64}")


class ManifestEntry(NamedTuple):  # a tuple: one per manifest line, 10,000 on a large KB
    line_no: int  # 1-based
    line: str
    sha: str
    rel: str  # POSIX, relative to the raw root


@dataclass(frozen=True)
class ManifestIssue:
    line_no: int
    line: str
    reason: str  # "not '<sha256> <path>'", "duplicate path", "path leaves the raw root", ...
    rel: str | None = None  # the path the line names, when it has the right shape


@dataclass(frozen=True)
class Manifest:
    """Well-formed, safe entries (first occurrence of each path wins) and the lines that are not."""

    entries: tuple[ManifestEntry, ...]
    issues: tuple[ManifestIssue, ...]
    # The text, when every line of it is a plain entry (entries[i] is line i + 1): see appended_rels.
    plain_text: str | None = field(default=None, compare=False, repr=False)

    def sha_by_rel(self) -> dict[str, str]:
        return {e.rel: e.sha for e in self.entries}

    def named_rels(self) -> set[str]:
        """Every path a line names, bad lines included: such a path is registered (or taken)."""
        return {e.rel for e in self.entries} | {i.rel for i in self.issues if i.rel is not None}


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    """sha256 of a file's bytes (read in one go: raw files are small, and it is faster)."""
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def manifest_line(rel: str, sha: str) -> str:
    return f"{sha} {rel}"


def unsafe_path_reason(rel: str, raw_root: Path | None = None, symlinks: Collection[str] | None = None) -> str | None:
    """Why ``rel`` may not appear in the manifest, or None if it is a safe relative path.

    With ``raw_root``, a path through a symlink that resolves outside the raw root is
    unsafe. ``symlinks`` (POSIX paths relative to the raw root, as found by a scan)
    lets the caller skip the file system for paths that cross no symlink.
    """
    # Plain string tests: this runs once per manifest line, 10,000 times on a large KB.
    if "\\" in rel:
        return "path uses backslashes"
    if rel.startswith("/") or (len(rel) > 1 and rel[1] == ":" and rel[0].isalpha()):
        return "absolute path"
    parts = rel.split("/")
    if ".." in parts:
        return "path leaves the raw root"
    if "." in parts or "" in parts:
        return "path is not normalised"
    if raw_root is None:
        return None
    if symlinks is not None:
        if not symlinks:
            return None
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if not any(p in symlinks for p in prefixes):
            return None
    root = os.path.realpath(raw_root)
    target = os.path.realpath(os.path.join(root, rel))
    if target != root and not target.startswith(root + os.sep):
        return "symlink leads out of the raw root"
    return None


def parse_manifest(text: str, raw_root: Path | None = None, symlinks: Collection[str] | None = None) -> Manifest:
    """Manifest text → entries and issues (malformed, duplicate or unsafe lines)."""
    # Without symlinks in the raw tree, a plain relative path (word characters, dots and
    # dashes, no component starting with a dot) cannot be unsafe: one regex decides.
    plain = raw_root is None or (symlinks is not None and not symlinks)
    if plain and (lines := _plain_lines(text)) is not None and len({r for _, _, r in lines}) == len(lines):
        entries = tuple(ManifestEntry(i, line, sha, rel) for i, (line, sha, rel) in enumerate(lines, 1))
        return Manifest(entries, (), plain_text=text)
    return _parse_lines(text, raw_root, symlinks, plain)


def _parse_lines(text: str, raw_root: Path | None, symlinks: Collection[str] | None, plain_paths: bool) -> Manifest:
    """:func:`parse_manifest` line by line."""
    entries: list[ManifestEntry] = []
    issues: list[ManifestIssue] = []
    seen: set[str] = set()
    plain = _PLAIN_LINE.fullmatch if plain_paths else None
    for line_no, raw_line in enumerate(text.split("\n"), start=1):
        line = raw_line.rstrip()
        if not line:
            continue
        match = plain(line) if plain is not None else None
        if match is not None:
            sha, rel, reason = match.group(1), match.group(2), None
        else:
            match = _LINE.fullmatch(line)
            if match is None:
                issues.append(ManifestIssue(line_no, line, "not '<sha256> <path>'"))
                continue
            sha, rel = match.group(1), match.group(2)
            reason = unsafe_path_reason(rel, raw_root, symlinks)
        if reason is None and rel in seen:
            reason = "duplicate path"
        if reason is not None:
            issues.append(ManifestIssue(line_no, line, reason, rel))
            continue
        seen.add(rel)
        entries.append(ManifestEntry(line_no, line, sha, rel))
    return Manifest(tuple(entries), tuple(issues))


_LOOSE_LINE = re.compile(r"([0-9a-fA-F]{64})[ \t]+\*?(\S.*)")


def entry_key(line: str) -> tuple[str, str] | str:
    """What a manifest line registers: ``(path, sha)``, whatever the spacing, the case of
    the hash, a ``sha256sum`` binary marker (``*``), a leading ``./`` or backslashes;
    a line that is not an entry → its words joined by single spaces.

    Append-only means no entry removed or changed: two manifests with the same keys hold
    the same evidence, in whatever order or layout.
    """
    plain = _PLAIN_LINE.fullmatch(line)  # the usual line: nothing to normalise
    if plain is not None:
        return (plain.group(2), plain.group(1))
    match = _LOOSE_LINE.fullmatch(line.strip())
    if match is None:
        return " ".join(line.split())
    rel = match.group(2).rstrip().replace("\\", "/")
    while rel.startswith("./"):
        rel = rel[2:]
    return (rel, match.group(1).lower())


def manifest_entries(text: str) -> dict[str, str]:
    """path → sha of every entry line of a manifest text (the first line of a path wins)."""
    result: dict[str, str] = {}
    lines = _plain_lines(text)
    if lines is not None:
        for _, sha, rel in lines:
            result.setdefault(rel, sha)
        return result
    return _entries_by_line(text)


def _entries_by_line(text: str) -> dict[str, str]:
    """:func:`manifest_entries` line by line."""
    result: dict[str, str] = {}
    for line in text.split("\n"):
        key = entry_key(line)
        if isinstance(key, tuple):
            result.setdefault(key[0], key[1])
    return result


def removed_entries(old: str, new: str) -> list[str]:
    """Lines of manifest text ``old`` whose entry (path → sha) ``new`` does not hold:
    removed or changed. Re-sorting lines and normalising their layout removes nothing."""
    if _only_appended(old, new):
        return []  # the usual commit: every old line is still there
    kept = {entry_key(line) for line in new.split("\n") if line.strip()}
    return [line.rstrip() for line in old.split("\n") if line.strip() and entry_key(line) not in kept]


def appended_rels(manifest: Manifest, old: str) -> set[str] | None:
    """Paths of ``manifest``'s entries that manifest text ``old`` lacks or holds with another
    hash, without keying ``old``: when ``manifest`` was read from plain lines that ``old``
    begins line for line (the usual commit: lines appended), the entries after them. None
    when that cannot be told so."""
    text = manifest.plain_text
    if text is None or not _only_appended(old, text):
        return None
    return {e.rel for e in manifest.entries[old.count("\n") :]}


def _only_appended(old: str, new: str) -> bool:
    """Manifest text ``new`` is ``old`` with whole lines appended (``old`` ends its last line)."""
    return new.startswith(old) and (not old or old.endswith("\n"))


def changed_entries(old: str, new: str) -> list[str]:
    """Lines of manifest text ``old`` whose path ``new`` registers with another hash."""
    now = manifest_entries(new)
    result = []
    for line in old.split("\n"):
        key = entry_key(line)
        if isinstance(key, tuple) and now.get(key[0], key[1]) != key[1]:
            result.append(line.rstrip())
    return result


# Path components each start with a word character or a dash; written so the engine never backtracks.
_PLAIN = r"([0-9a-f]{64})[ \t]+([\w-][\w.-]*(?:/[\w-][\w.-]*)*)"  # sha, path
_PLAIN_LINE = re.compile(_PLAIN)
_PLAIN_LINES = re.compile(rf"^({_PLAIN})$", re.MULTILINE)  # line, sha, path


def _plain_lines(text: str) -> list[tuple[str, str, str]] | None:
    """``(line, sha, path)`` of every line, when every line is a :data:`_PLAIN_LINE` and none
    is blank (the usual manifest, read in one regex pass); else None."""
    body = text[:-1] if text.endswith("\n") else text
    if not body:
        return None
    lines: list[tuple[str, str, str]] = _PLAIN_LINES.findall(body)
    return lines if len(lines) == body.count("\n") + 1 else None


def read_manifest(path: Path, raw_root: Path | None = None, symlinks: Collection[str] | None = None) -> Manifest | None:
    """Parse the manifest file, or None if it does not exist."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return parse_manifest(data.decode("utf-8", "surrogateescape"), raw_root, symlinks)


def append_manifest_line(layout: Layout, rel: str, sha: str) -> bool:
    """Append ``<sha> <rel>`` to the raw manifest of ``layout`` (a Layout); never rewrite a line.

    Returns False when the identical line is already there (nothing written). Raises
    KbError when ``rel`` is unsafe, ``sha`` is not 64 lowercase hex, or ``rel`` is already
    registered with another hash (evidence is immutable: add a new file instead).
    """
    return ManifestAppender(layout).append(rel, sha)


class ManifestAppender:
    """:func:`append_manifest_line` for several lines: the manifest is read once, not
    once a line (adding 300 files to a manifest of 10,000 lines took 6 s)."""

    def __init__(self, layout: Layout) -> None:
        self.path, self.raw_root = layout.raw_manifest, layout.raw_root
        existing = read_manifest(self.path)
        self._known = existing.sha_by_rel() if existing is not None else {}
        # Paths the manifest names, even if the file is gone: such a path is never reused.
        self.registered: set[str] = existing.named_rels() if existing is not None else set()

    def append(self, rel: str, sha: str) -> bool:
        """One line, written and synced before this returns (see :func:`append_manifest_line`)."""
        path = self.path
        if not _SHA.fullmatch(sha):
            raise KbError(f"not a sha256: {sha!r}", str(path))
        reason = unsafe_path_reason(rel, self.raw_root)
        if reason is not None:
            raise KbError(f"cannot register {rel!r}: {reason}", str(path))
        known = self._known.get(rel)
        if known == sha:
            return False
        if known is not None:
            raise KbError(f"{rel} is already registered with another hash; raw evidence is immutable", str(path))
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab+") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() > 0:
                fh.seek(-1, os.SEEK_END)
                if fh.read(1) != b"\n":  # a hand-edited file without a final newline
                    fh.write(b"\n")
            fh.write((manifest_line(rel, sha) + "\n").encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        self._known[rel] = sha
        self.registered.add(rel)
        return True
