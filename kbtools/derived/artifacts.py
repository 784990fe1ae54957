"""Which files are artifacts: every ``.md`` under the notes folder (none inside
a dot-folder) and the files matching the ``derived.skills`` globs (default
``skills/**/SKILL.md``, ``.claude/skills/**/SKILL.md``, ``.agents/skills/**/SKILL.md``).

Apart from :mod:`kbtools.derived.manifest`: a run whose derived index is cached
lists these files (to check the cache) but never reads the manifest.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from kbtools.kb.layout import Layout


def _glob_regex(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def is_artifact_path(layout: Layout, rel_path: str) -> bool:
    """``rel_path`` (POSIX, relative to the KB root) is a note or a skill."""
    notes = layout.rel(layout.note_root).rstrip("/") + "/"
    path = PurePosixPath(rel_path)
    if (
        rel_path.startswith(notes)
        and path.suffix == ".md"
        and not any(part.startswith(".") for part in PurePosixPath(rel_path[len(notes) :]).parts)
    ):
        return True
    return any(_glob_regex(g).fullmatch(rel_path) for g in layout.config.derived.skills)


def current_artifact_files(layout: Layout) -> Iterator[Path]:
    """The notes and skills in the working tree, each once, in a stable order."""
    found: set[Path] = set(markdown_files(layout.note_root)) if layout.note_root.is_dir() else set()
    for pattern in layout.config.derived.skills:
        for path in layout.root.glob(pattern):
            if path.is_file():
                found.add(path)
    yield from sorted(found)


def markdown_files(folder: Path) -> Iterator[Path]:
    """Every ``.md`` file under ``folder``, none inside a dot-folder (``.obsidian``, ``.git``)."""
    for path in folder.rglob("*.md"):
        if not any(part.startswith(".") for part in path.relative_to(folder).parts) and path.is_file():
            yield path
