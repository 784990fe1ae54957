"""OpenCode prompt history: ``$XDG_STATE_HOME/opencode/prompt-history.jsonl``.

One unit for the whole file; every line is a prompt the user typed (role
``user``). OpenCode's TUI (``packages/opencode/src/cli/cmd/tui/component/prompt/history.tsx``)
writes a ``PromptInfo`` per line: ``{input, mode?, parts}``. A paste is shown
in ``input`` as a placeholder (``[Pasted ~N lines]``) and kept whole as a
``text`` part whose ``source.text`` is ``{start, end, value}`` (the
placeholder's place in ``input``): the placeholder is replaced by the pasted
text, so what the user pasted is read, not the placeholder. ``file`` and
``agent`` parts (@mentions) stay as the mention typed. An older ``text`` key
(string or ``{text}``) is read when there is no ``input``. The session identity is the file
path, so appending prompts changes only the content hash (the file's bytes),
never the identity. Read only if the file exists: it is an optional index,
not a session store.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kbtools.ingest.model import Record, SourceRef, SourceSettings, SourceUnit
from kbtools.ingest.sources._jsonl import JsonlScan
from kbtools.ingest.sources.common import (
    METADATA,
    USER,
    ProseBudget,
    Tally,
    file_ref,
    text_of,
)

TOOL = "opencode"
RECORD_TYPE = "prompt-history"


def discover(settings: SourceSettings) -> Iterator[SourceRef]:
    path = settings.prompt_history
    if path is not None and path.is_file():
        yield file_ref(TOOL, RECORD_TYPE, path)


def load(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    path = Path(ref.locator)
    scan = JsonlScan(path)
    budget = ProseBudget.for_max_text(settings.max_text)
    records: list[Record] = []
    tally = Tally()
    for index, (line_no, line, whole) in enumerate(scan.lines()):
        obj = scan.parse(line_no, line) if whole else None
        if not isinstance(obj, dict):
            continue
        text = _expanded(text_of(obj.get("input")), obj.get("parts")) or text_of(obj.get("text"))
        tally.note(USER if text.strip() else METADATA)
        if text.strip():
            created = obj.get("ts") if obj.get("ts") is not None else obj.get("timestamp")
            if (record := budget.record("user", text, created, index)) is not None:
                records.append(record)
    unit = scan.unit(
        ref,
        session_identity=str(path),
        project_identity=TOOL,
        created_at="",
        records=records,
        truncated=budget.truncated,
        tally=tally,
    )
    # The hash of the bytes read, also when the file could not be opened (the
    # hash of nothing): what this source's ledger rows have always carried.
    unit.content_hash = scan.content_hash
    return unit


def _expanded(text: str, parts: Any) -> str:
    """``text`` with each paste placeholder replaced by the text pasted."""
    if not isinstance(parts, list) or "[" not in text:
        return text
    for part in parts:
        if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
            continue
        source = part.get("source")
        marker = source.get("text") if isinstance(source, dict) else None
        value = marker.get("value") if isinstance(marker, dict) else None
        if isinstance(value, str) and value and value in text:
            text = text.replace(value, part["text"], 1)
    return text
