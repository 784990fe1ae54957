"""Aider chat histories: ``.aider.chat.history.md`` beside the repositories.

Aider (Aider-AI/aider, ``aider/io.py``: ``InputOutput.append_chat_history``,
``user_input`` and ``tool_output``) appends every session to one Markdown
file per repository (git root, else the working directory). Each launch
starts with ``# aider chat started at YYYY-MM-DD HH:MM:SS``; what the user
typed is written as lines prefixed ``#### `` (a multi-line input is one
prefixed line each); the tool's own output (file lists, token reports,
commits, errors, "Applied edit to …") is written as ``> `` quoted lines;
everything else is the model's answer.

Decisions: ``####`` lines are the user's prose — except aider's own commands
(``/add``, ``/drop``, ``/run`` …; ``/ask``, ``/code`` and ``/architect`` keep
their message); ``>`` lines are tool output; the header is metadata; the
rest is assistant prose. The file has no session ids and grows for ever:
it is one source (session = the file, project = the folder holding it),
whose records carry the time of the launch they belong to.

Location: the roots to search, ``ingest.aider_roots`` (a list) or
``--aider-roots`` (``:``-separated) or ``$KB_AIDER_ROOTS``; default the home
directory's ``src``, ``code``, ``projects``, ``work`` and ``repos`` folders.
Search goes three folders deep, skipping hidden
folders and ``node_modules``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from kbtools.ingest.model import Record, SourceRef, SourceSettings, SourceUnit
from kbtools.ingest.sources._jsonl import JsonlScan
from kbtools.ingest.sources.common import (
    ASSISTANT,
    INJECTED,
    METADATA,
    TOOL_IO,
    USER,
    Location,
    ProseBudget,
    Reader,
    Tally,
    file_ref,
    unavailable_ref,
    unavailable_unit,
)

TOOL = "aider"
HISTORY = ".aider.chat.history.md"
READER = Reader(
    tool=TOOL,
    locations=(
        Location(
            "aider_roots",
            env="KB_AIDER_ROOTS",
            default=("~/src", "~/code", "~/projects", "~/work", "~/repos"),
            help="Folders searched for .aider.chat.history.md files (':'-separated; default: ~/src, ~/code, …).",
            many=True,
        ),
    ),
)
DEPTH = 3
_SKIP = frozenset({"node_modules", "__pycache__", "venv", ".venv", "target", "dist", "build"})
_HEADER = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")
# Aider's commands that are instructions to aider, not words about the work.
_CHAT_COMMANDS = ("/ask", "/code", "/architect", "/context")


def discover(settings: SourceSettings) -> Iterator[SourceRef]:
    roots = [r for r in settings.paths("aider_roots") if r.is_dir()]
    if not roots:
        yield unavailable_ref(TOOL, "aider-roots")
        return
    seen: set[str] = set()
    for root in roots:
        for path in _histories(root):
            real = os.path.realpath(path)
            if real not in seen:
                seen.add(real)
                yield file_ref(TOOL, "session", path, fmt="markdown")
    if not seen:
        yield unavailable_ref(TOOL, "aider-histories")


def _histories(root: Path) -> Iterator[str]:
    """``.aider.chat.history.md`` files in ``root`` and up to ``DEPTH`` folders below."""
    level = [os.fspath(root)]
    for depth in range(DEPTH + 1):
        below: list[str] = []
        for folder in sorted(level):
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        if entry.name == HISTORY:
                            yield entry.path
                        elif (
                            depth < DEPTH
                            and not entry.name.startswith(".")
                            and entry.name not in _SKIP
                            and entry.is_dir(follow_symlinks=False)
                        ):
                            below.append(entry.path)
            except OSError:
                continue
        level = below


def load(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    if ref.format == "unavailable":
        return unavailable_unit(ref)
    path = Path(ref.locator)
    scan = JsonlScan(path)
    budget = ProseBudget.for_max_text(settings.max_text)
    tally = Tally()
    records: list[Record] = []
    block: list[str] = []
    kind = ""
    started = ""
    launches = 0

    def flush() -> None:
        nonlocal block, kind
        text = "\n".join(block).strip()
        if kind == USER:
            text = _user_words(text)
        if kind in (USER, ASSISTANT) and text:
            tally.note(kind)
            record = budget.record("user" if kind == USER else "assistant", text, started, len(records))
            if record is not None:
                records.append(record)
        elif kind == USER:
            tally.note(INJECTED)  # an aider command
        elif kind:
            tally.note(TOOL_IO if kind == TOOL_IO else METADATA)
        block, kind = [], ""

    for _, raw, whole in scan.lines():
        line = raw.decode("utf-8", "replace").rstrip("\r\n") if whole else ""
        header = _HEADER.match(line)
        if header:
            flush()
            launches += 1
            started = header.group(1).replace(" ", "T")
            tally.note(METADATA)
            continue
        if line.startswith("#### ") or line == "####":
            this, content = USER, line[5:]
        elif line.startswith("> ") or line == ">":
            this, content = TOOL_IO, line[2:]
        else:
            this, content = (ASSISTANT, line) if line.strip() or kind == ASSISTANT else ("", "")
        if this != kind:
            flush()
            kind = this
        if this:
            block.append(content)
    flush()
    return scan.unit(
        ref,
        session_identity=str(path),
        project_identity=str(path.parent),
        created_at="",
        records=records,
        truncated=budget.truncated,
        tally=tally,
    )


def _user_words(text: str) -> str:
    if not text.startswith("/"):
        return text
    command, _, rest = text.partition(" ")
    return rest.strip() if command in _CHAT_COMMANDS else ""
