"""Find the raw sources and notes of a knowledge base, and name them by slug.

A layer (raw or note) holds ``<locale>/<slug>.md`` files. The slug is the path
under the locale folder without ``.md`` (for the usual flat layout, the file's
base name); a file directly under the layer root has no locale ("") and is
visible from every locale.

Skipped, like the site generator skips them: files and folders whose name
starts with ``_`` (drafts) or ``.`` (the manifest, editor files). Folder
symlinks are never entered; file symlinks are listed, and also reported in
``symlinks`` so that callers can refuse to read one that leads outside.
Results are sorted by path, so every report comes out in a stable order.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "SLUG_PATTERN",
    "KbFile",
    "Layer",
    "layer_entry",
    "layer_from_paths",
    "layer_path",
    "open_regular",
    "read_regular",
    "scan_layer",
]

MARKDOWN_SUFFIX = ".md"
# A slug kb writes itself (kb raw add, kb promote): lowercase kebab-case. Slugs it reads may be
# anything a file name allows (the reference KB has `plugin_lifecycle_management_blog`).
SLUG_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def layer_entry(rel: str) -> tuple[str, str] | None:
    """``(locale, slug)`` of the file at ``rel`` (POSIX, relative to a layer root) when it is a
    note or raw source of that layer, else None — the rule of the module docstring, for
    callers that meet paths one at a time (a git diff, a staged file list, the derived filter)."""
    if not rel.endswith(MARKDOWN_SUFFIX):
        return None
    cut = rel.find("/")  # the usual `<locale>/<slug>.md` first (12,000 per lint)
    if cut > 0 and rel[0] not in "_." and rel[cut + 1] not in "_./" and rel.find("/", cut + 1) < 0:
        return rel[:cut], rel[cut + 1 : -3]
    parts = rel.split("/")
    if any(not part or part[0] in "_." for part in parts):
        return None
    if len(parts) == 1:
        return "", rel[: -len(MARKDOWN_SUFFIX)]
    return parts[0], "/".join(parts[1:])[: -len(MARKDOWN_SUFFIX)]


def layer_path(root: Path, locale: str, slug: str) -> Path:
    """Where the file of ``slug`` in ``locale`` lives under the layer ``root`` ("" = no locale)."""
    name = slug + MARKDOWN_SUFFIX
    return root / locale / name if locale else root / name


class KbFile(NamedTuple):  # a tuple: 12,000 of them are built per lint, frozen dataclasses cost 3x
    rel: str  # POSIX path relative to the layer root, e.g. "zh-cn/karpathy-llm-wiki.md"
    locale: str  # first folder, "" for a file at the layer root
    slug: str  # path under the locale without ".md", e.g. "karpathy-llm-wiki"
    abspath: str  # a plain string: building 12,000 Path objects costs more than the checks

    @property
    def path(self) -> Path:
        return Path(self.abspath)


@dataclass(frozen=True)
class Layer:
    root: Path
    files: tuple[KbFile, ...]
    symlinks: frozenset[str]  # every symlink met (files and folders), relative to the root

    def by_locale(self) -> dict[str, dict[str, KbFile]]:
        """locale → slug → file."""
        result: dict[str, dict[str, KbFile]] = {}
        for f in self.files:
            result.setdefault(f.locale, {})[f.slug] = f
        return result


def scan_layer(root: Path) -> Layer:
    """Every ``*.md`` file under ``root`` (not drafts, not hidden), sorted by path."""
    files: list[KbFile] = []
    symlinks: set[str] = set()
    _walk(str(root), "", None, "", files, symlinks)
    files.sort(key=lambda f: f.rel)
    return Layer(root, tuple(files), frozenset(symlinks))


def _walk(folder: str, prefix: str, locale: str | None, sub: str, files: list[KbFile], symlinks: set[str]) -> None:
    """``prefix``: path of ``folder`` under the layer root; ``locale`` None at the root;
    ``sub``: path of ``folder`` under its locale folder (the slug prefix)."""
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return
    for entry in entries:
        name = entry.name
        if name[0] in "_.":
            continue
        is_md = name.endswith(MARKDOWN_SUFFIX)
        if is_md and entry.is_file(follow_symlinks=False):  # the common case, decided from d_type
            files.append(KbFile(prefix + name, locale or "", sub + name[:-3], entry.path))
        elif entry.is_symlink():
            symlinks.add(prefix + name)
            if is_md:
                files.append(KbFile(prefix + name, locale or "", sub + name[:-3], entry.path))
        elif entry.is_dir(follow_symlinks=False):
            if locale is None:
                _walk(entry.path, prefix + name + "/", name, "", files, symlinks)
            else:
                _walk(entry.path, prefix + name + "/", locale, sub + name + "/", files, symlinks)


_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def open_regular(path: str | Path, *, follow: bool = True) -> tuple[int, int]:
    """``(fd, size)`` of a regular file opened for reading; OSError (the fd closed) for
    anything else — a FIFO or device must not hang or feed the lint. ``follow=False``
    refuses a symlink too (raw evidence is never read through one)."""
    fd = os.open(path, _READ_FLAGS if follow else _READ_FLAGS | _NOFOLLOW)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


def read_regular(path: str | Path) -> bytes:
    """The bytes of a regular file (symlinks followed); OSError for anything else."""
    fd, size = open_regular(path)
    try:
        # Read to the end without a file object (2,000 notes: a few ms): the first read
        # asks for one byte more than the size, so a file read whole meets the end next.
        pieces = [os.read(fd, size + 1)]
        while pieces[-1]:
            pieces.append(os.read(fd, 1 << 20))
        return pieces[0] if len(pieces) == 2 else b"".join(pieces)
    finally:
        os.close(fd)


def _by_rel(f: KbFile) -> str:
    return f.rel


def layer_from_paths(root: Path, paths: Iterable[str], symlinks: Iterable[str] = ()) -> Layer:
    """The layer :func:`scan_layer` finds, from a list of file paths relative to ``root``
    (POSIX) instead of the disk: the index's files for ``kb lint --staged``, or a full
    listing of the raw root. The same names are skipped (a component starting with ``_``
    or ``.``) and only ``*.md`` files are listed."""
    prefix = os.path.join(str(root), "")
    files: list[KbFile] = []
    for rel in paths:
        entry = layer_entry(rel)
        if entry is not None:
            files.append(KbFile(rel, entry[0], entry[1], prefix + rel))
    files.sort(key=_by_rel)
    return Layer(root, tuple(files), frozenset(symlinks))
