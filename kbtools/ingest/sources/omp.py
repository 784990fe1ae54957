"""OMP (oh-my-pi) sessions: ``~/.omp/agent/sessions/**/*.jsonl``.

A session file holds a header line (``type: session`` with ``id``, ``cwd``,
``timestamp``) and entries. From format v2 on, entries form a tree through
``id``/``parentId``; branches the user abandoned stay in the file, so only the
path from the last entry back to the root is the conversation (v1 files are
linear and kept whole). A message's ``content`` is a string or a list of
parts; only ``text`` parts of ``user``/``assistant`` messages are prose.

``__advisor*.jsonl`` files are the watchdog's own transcripts: they become one
``advisor`` unit, skipped as ``internal_control_plane``, without being parsed.

Identity (anchor §2.1): session = header ``id`` (else the file stem, which
stays the same while a live session grows — the reference fell back to the
content hash, giving a growing file a new identity on every run); project =
header ``cwd``; the path is not part of the identity, so a moved file keeps
its key.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from kbtools.ingest.hashing import iso_time
from kbtools.ingest.model import Record, SourceRef, SourceSettings, SourceUnit
from kbtools.ingest.sources.common import (
    JsonlScan,
    ProseBudget,
    content_texts,
    file_ref,
    make_record,
    unavailable_ref,
    unavailable_unit,
    unmined_unit,
    walk_files,
)

TOOL = "omp"
ADVISOR_PREFIX = "__advisor"
_SKIP_DIRS = frozenset({".omp-backups"})
_PROSE_ROLES = frozenset({"user", "assistant"})
_HEAD = 512
# Cheap looks at a line's head, so tool output is skipped before JSON parsing.
_LINE_TYPE = re.compile(rb'^\{\s*"type"\s*:\s*"([A-Za-z_]+)"')
_ROLE = re.compile(rb'"role"\s*:\s*"([A-Za-z_]+)"')
_ID = re.compile(rb'"id"\s*:\s*"([^"\\]*)"')
_PARENT = re.compile(rb'"parentId"\s*:\s*(?:null|"([^"\\]*)")')
_PARSED_TYPES = frozenset({b"message", b"session"})
# Externalised strings (`blobtext:sha256:<hex>`) are references, not prose.
_BLOB_REF = "blobtext:sha256:"


def discover(settings: SourceSettings) -> Iterator[SourceRef]:
    root = settings.omp_sessions
    if root is None or not root.is_dir():
        yield unavailable_ref(TOOL, root or "omp-sessions")
        return
    for path in walk_files(root, ".jsonl", skip_dirs=_SKIP_DIRS):
        record_type = "advisor" if os.path.basename(path).startswith(ADVISOR_PREFIX) else "session"
        yield file_ref(TOOL, record_type, path)


def load(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    if ref.format == "unavailable":
        return unavailable_unit(ref)
    if ref.record_type == "advisor":
        return _load_advisor(ref, settings)
    return _load_session(ref, settings)


class _Entry(NamedTuple):  # one per tree entry of a file: keep it small
    entry_id: str | None
    parent_id: str | None
    record: Record | None


def _load_session(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    path = Path(ref.locator)
    scan = JsonlScan(path)
    # Prose of abandoned branches is collected too until the tree is known,
    # so the collecting cap is twice the final one.
    final_budget = ProseBudget.for_max_text(settings.max_text)
    collecting = ProseBudget(cap=final_budget.cap * 2)
    header: dict[str, Any] = {}
    entries: list[_Entry] = []
    message_index = 0
    for line_no, line, whole in scan.lines(_wanted):
        head = line[:_HEAD]
        if not whole or _skippable(head):
            entry_id, parent_id = _ids_from_head(head)
            if entry_id is not None:
                entries.append(_Entry(entry_id, parent_id, None))
            continue
        obj = scan.parse(line_no, line)
        if not isinstance(obj, dict):
            continue
        kind = obj.get("type")
        if kind == "session":
            if not header:
                header = obj
            continue
        entry_id = obj.get("id") if isinstance(obj.get("id"), str) else None
        parent = obj.get("parentId") if isinstance(obj.get("parentId"), str) else None
        record = None
        message = obj.get("message")
        if isinstance(message, dict) and message.get("role") in _PROSE_ROLES:
            text = _prose_of(message)
            if text and collecting.admit(text):
                created = message.get("timestamp") or obj.get("timestamp")
                record = make_record(message["role"], text, created, message_index)
            message_index += 1
        if entry_id is not None or record is not None:
            entries.append(_Entry(entry_id, parent, record))
    kept = [r for r in _active_branch(entries) if final_budget.admit(r.text)]
    session_id = header.get("id")
    cwd = header.get("cwd")
    return scan.unit(
        ref,
        session_identity=session_id if isinstance(session_id, str) and session_id else path.stem,
        project_identity=cwd if isinstance(cwd, str) else "",
        created_at=iso_time(header.get("timestamp")),
        records=kept,
        truncated=collecting.truncated or final_budget.truncated,
    )


def _wanted(head: bytes) -> bool:
    return not _skippable(head)


def _skippable(head: bytes) -> bool:
    """True when the head shows a line that carries no prose (tool results,
    model changes, compactions…), so it need not be parsed."""
    typed = _LINE_TYPE.match(head)
    if typed and typed.group(1) not in _PARSED_TYPES:
        return True
    role = _ROLE.search(head)
    return bool(role and role.group(1).decode() not in _PROSE_ROLES)


def _ids_from_head(head: bytes) -> tuple[str | None, str | None]:
    found = _ID.search(head)
    if found is None:
        return None, None
    parent = _PARENT.search(head)
    parent_id = parent.group(1) if parent else None
    return found.group(1).decode("utf-8", "replace"), (
        parent_id.decode("utf-8", "replace") if parent_id is not None else None
    )


def _prose_of(message: dict[str, Any]) -> str:
    # Agent-originated "user" turns (advisor updates and the like) are not the user's words.
    if message.get("role") == "user" and (message.get("synthetic") is True or message.get("attribution") == "agent"):
        return ""
    parts = content_texts(message.get("content"))
    texts = [p for p in parts if p.strip() and not p.startswith(_BLOB_REF)]
    return "\n\n".join(texts)


def _active_branch(entries: list[_Entry]) -> list[Record]:
    """Records on the path from the last entry back to the root.

    Entries without an id (v1, linear) are all kept. A parent that is not in
    the file ends the walk; a cycle cannot loop for ever.
    """
    parents = {e.entry_id: e.parent_id for e in entries if e.entry_id is not None}
    if not parents:
        return [e.record for e in entries if e.record is not None]
    leaf = next(e.entry_id for e in reversed(entries) if e.entry_id is not None)
    on_path: set[str] = set()
    current: str | None = leaf
    while current is not None and current not in on_path and current in parents:
        on_path.add(current)
        current = parents[current]
    return [e.record for e in entries if e.record is not None and (e.entry_id is None or e.entry_id in on_path)]


def _load_advisor(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    """Hash the file in one streamed pass; never parse it."""
    path = Path(ref.locator)
    root = settings.omp_sessions
    try:
        relative = path.relative_to(root) if root is not None else Path(path.name)
    except ValueError:
        relative = path
    # The advisor's place in the store (session dir / stem / advisor name)
    # identifies it without reading its header.
    return unmined_unit(
        ref,
        session_identity=str(relative),
        project_identity=relative.parts[0] if relative.parts else "",
        skip_reason="internal_control_plane",
    )
