"""OpenCode prompt history: ``$XDG_STATE_HOME/opencode/prompt-history.jsonl``.

One unit for the whole file; every line is a prompt the user typed (role
``user``). OpenCode writes ``{input, mode?, parts}``; ``text`` (string or
``{text}``) is read first, then ``input``. The session identity is the file
path, so appending prompts changes only the content hash (the file's bytes),
never the identity. Read only if the file exists: it is an optional index,
not a session store.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kbtools.ingest.model import Record, SourceRef, SourceSettings, SourceUnit
from kbtools.ingest.sources.common import (
    JsonlScan,
    ProseBudget,
    file_ref,
    make_record,
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
    for index, (line_no, line, whole) in enumerate(scan.lines()):
        obj = scan.parse(line_no, line) if whole else None
        if not isinstance(obj, dict):
            continue
        text = text_of(obj.get("text")) or text_of(obj.get("input"))
        if text.strip() and budget.admit(text):
            created = obj.get("ts") if obj.get("ts") is not None else obj.get("timestamp")
            records.append(make_record("user", text, created, index))
    unit = scan.unit(
        ref,
        session_identity=str(path),
        project_identity=TOOL,
        created_at="",
        records=records,
        truncated=budget.truncated,
    )
    # The hash of the bytes read, also when the file could not be opened (the
    # hash of nothing): what this source's ledger rows have always carried.
    unit.content_hash = scan.content_hash
    return unit
