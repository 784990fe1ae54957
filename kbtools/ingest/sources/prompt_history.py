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
    CHANGED_DURING_READ,
    JsonlScan,
    ProseBudget,
    file_ref,
    make_record,
    mtime_iso,
    read_error,
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
    try:
        for index, (line_no, line, whole) in enumerate(scan.lines()):
            obj = scan.parse(line_no, line) if whole else None
            if not isinstance(obj, dict):
                continue
            text = text_of(obj.get("text")) or text_of(obj.get("input"))
            if text.strip() and budget.admit(text):
                created = obj.get("ts") if obj.get("ts") is not None else obj.get("timestamp")
                records.append(make_record("user", text, created, index))
        error = scan.error()
    except OSError as exc:
        error = read_error(exc)
    if error == CHANGED_DURING_READ or error.startswith("read_error"):
        records = []
    return SourceUnit(
        tool=TOOL,
        record_type=RECORD_TYPE,
        format="jsonl",
        source_identity=str(path),
        session_identity=str(path),
        project_identity=TOOL,
        created_at="",
        updated_at=mtime_iso(scan.stat_before) if scan.stat_before is not None else "",
        content_hash=scan.content_hash,
        records=records,
        error=error,
        truncated=budget.truncated,
        stat_key=scan.read_stat_key(),
    )
