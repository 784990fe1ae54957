"""Which files are artifacts: every note (as :mod:`kbtools.kb.tree` defines them: ``.md``
under the notes folder, no draft ``_…`` and nothing hidden) and the files matching the ``derived.skills`` globs (default
``skills/**/SKILL.md``, ``.claude/skills/**/SKILL.md``, ``.agents/skills/**/SKILL.md``).

Apart from :mod:`kbtools.derived.manifest`: a run whose derived index is cached
lists these files (to check the cache) but never reads the manifest.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from kbtools.kb.layout import Layout
from kbtools.kb.tree import layer_entry, scan_layer


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
    if rel_path.startswith(notes) and layer_entry(rel_path[len(notes) :]) is not None:
        return True
    return any(_glob_regex(g).fullmatch(rel_path) for g in layout.config.derived.skills)


def current_artifact_files(layout: Layout) -> Iterator[Path]:
    """The notes and skills in the working tree, each once, in a stable order."""
    # The notes as lint sees them (kbtools.kb.tree): not drafts (`_…`), not hidden.
    found: set[Path] = {note.path for note in scan_layer(layout.note_root).files}
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
