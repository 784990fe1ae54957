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
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kbtools.ingest.hashing import iso_time
from kbtools.ingest.model import Record, SourceRef, SourceSettings, SourceUnit
from kbtools.ingest.sources._jsonl import JsonlScan
from kbtools.ingest.sources.common import (
    ABANDONED,
    AGENT,
    ASSISTANT,
    INJECTED,
    METADATA,
    REASONING,
    ROLE_OF,
    TOOL_IO,
    UNKNOWN,
    USER,
    ProseBudget,
    Tally,
    content_texts,
    file_ref,
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
    """The sessions of every root: the configured one (``omp_sessions``), and
    by default also the XDG data location and the profiles' (``omp_roots``,
    see ``sources.resolve_settings``); a root reached twice is read once."""
    roots: list[Path] = []
    seen: set[str] = set()
    for root in (settings.omp_sessions, *settings.paths("omp_roots")):
        if root is not None and root.is_dir() and (real := os.path.realpath(root)) not in seen:
            seen.add(real)
            roots.append(root)
    if not roots:
        yield unavailable_ref(TOOL, settings.omp_sessions or "omp-sessions")
        return
    for root in roots:
        for path in walk_files(root, ".jsonl", skip_dirs=_SKIP_DIRS):
            if os.path.basename(path).startswith(ADVISOR_PREFIX):
                # The root it was found under names the advisor (None: the configured one).
                yield file_ref(TOOL, "advisor", path, payload=None if root == settings.omp_sessions else str(root))
            else:
                yield file_ref(TOOL, "session", path)


def load(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    if ref.format == "unavailable":
        return unavailable_unit(ref)
    if ref.record_type == "advisor":
        return _load_advisor(ref, settings)
    return _load_session(ref, settings)


def _id_hash(value: str | bytes | None) -> int:
    """An entry id as a nonzero 64-bit number (0: no id): a million-entry
    session's tree costs arrays of numbers, not a million strings."""
    if value is None:
        return 0
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return (hash(value) & 0x7FFF_FFFF_FFFF_FFFF) | 1


# Entry types (docs/session.md, session-entries.ts) by decision; messages are
# decided by role (_ROLES).
_ENTRY_TYPES = {
    "session": METADATA,
    "title": METADATA,
    "model_change": METADATA,
    "thinking_level_change": METADATA,
    "service_tier_change": METADATA,
    "label": METADATA,
    "archive": METADATA,
    "title_change": METADATA,
    "mode_change": METADATA,
    "credential_pin": METADATA,
    "model_usage": METADATA,
    "reset_boundary": METADATA,
    "custom": METADATA,
    "compaction": INJECTED,
    "branch_summary": INJECTED,
    "custom_message": INJECTED,
    "ttsr_injection": INJECTED,
    "session_init": INJECTED,
}
# pi AgentMessage roles: user and assistant carry prose; the others are the
# harness's (hookMessage was renamed custom in v3).
_ROLES = {
    "user": USER,
    "assistant": ASSISTANT,
    "toolResult": TOOL_IO,
    "bashExecution": TOOL_IO,
    "custom": INJECTED,
    "hookMessage": INJECTED,
    "branchSummary": INJECTED,
    "compactionSummary": INJECTED,
    "fileMention": INJECTED,
}


class _Tree:
    """Entries in file order as parallel arrays: id, parent id, kept record."""

    __slots__ = ("ids", "parents", "records", "kept")

    def __init__(self) -> None:
        self.ids = array("q")
        self.parents = array("q")
        self.records = array("l")  # index into kept, or -1
        self.kept: list[Record] = []

    def add(self, entry_id: int, parent_id: int, record: Record | None) -> None:
        self.ids.append(entry_id)
        self.parents.append(parent_id)
        if record is None:
            self.records.append(-1)
        else:
            self.records.append(len(self.kept))
            self.kept.append(record)

    def active_branch(self) -> tuple[list[Record], list[Record]]:
        """(records on the path from the last entry back to the root, the rest).

        Entries without an id (v1, linear) are all kept. A parent that is not in
        the file ends the walk; a cycle cannot loop for ever (a parent precedes
        its children, so the walk only goes back)."""
        ids, parents, records = self.ids, self.parents, self.records
        n = len(ids)
        leaf = next((pos for pos in range(n - 1, -1, -1) if ids[pos]), None)
        if leaf is None:
            return list(self.kept), []
        on_path = bytearray(n)
        current = ids[leaf]
        for pos in range(leaf, -1, -1):
            if ids[pos] == current:
                on_path[pos] = 1
                current = parents[pos]
                if not current:
                    break
        active: list[Record] = []
        dropped: list[Record] = []
        for pos in range(n):
            if records[pos] >= 0:
                (active if on_path[pos] or not ids[pos] else dropped).append(self.kept[records[pos]])
        return active, dropped


def _load_session(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    path = Path(ref.locator)
    scan = JsonlScan(path)
    # Prose of abandoned branches is collected too until the tree is known,
    # so the collecting cap is twice the final one.
    final_budget = ProseBudget.for_max_text(settings.max_text)
    collecting = ProseBudget(cap=final_budget.cap * 2)
    header: dict[str, Any] = {}
    tree = _Tree()
    tally = Tally()
    subagent = _is_subagent_file(path)
    message_index = 0
    shape = _shape()
    for line_no, line, whole in scan.lines(_wanted):
        head = line[:_HEAD]
        skipped = _skipped(head) if whole else _skipped(head, always=True)
        if skipped is not None:
            decision, entry_id, parent_id = skipped
            tally.note(decision)
            if entry_id is not None:
                tree.add(_id_hash(entry_id), _id_hash(parent_id), None)
            continue
        obj = scan.parse(line_no, line, shape)
        if not isinstance(obj, dict):
            continue
        kind = obj.get("type")
        if kind == "session":
            tally.note(METADATA)
            if not header:
                header = obj
                subagent = subagent or isinstance(obj.get("parentSession"), str)
            continue
        entry_id = obj.get("id") if isinstance(obj.get("id"), str) else None
        parent = obj.get("parentId") if isinstance(obj.get("parentId"), str) else None
        record = None
        message = obj.get("message")
        if kind == "message" and isinstance(message, dict):
            decision, text = _decide(message, subagent)
            if text:
                created = message.get("timestamp") or obj.get("timestamp")
                record = collecting.record(ROLE_OF[decision], text, created, message_index)
            if decision in ROLE_OF:
                message_index += 1
            tally.note(decision)
        else:
            tally.note(_ENTRY_TYPES.get(kind, UNKNOWN) if isinstance(kind, str) else UNKNOWN)
        if entry_id is not None or record is not None:
            tree.add(_id_hash(entry_id), _id_hash(parent), record)
    active, dropped = tree.active_branch()
    for record in dropped:
        tally.moved({"user": USER, "agent": AGENT}.get(record.role, ASSISTANT), ABANDONED, 1)
    kept = [k for r in active if (k := final_budget.keep(r)) is not None]
    session_id = header.get("id")
    cwd = header.get("cwd")
    return scan.unit(
        ref,
        session_identity=session_id if isinstance(session_id, str) and session_id else path.stem,
        project_identity=cwd if isinstance(cwd, str) else "",
        created_at=iso_time(header.get("timestamp")),
        records=kept,
        truncated=collecting.truncated or final_budget.truncated,
        tally=tally,
    )


def _shape() -> Callable[[bytes], Any] | None:
    """The OMP line shape (msgspec, imported here: not for discovery); None would decode
    every line whole — same records, slower."""
    from kbtools.ingest.sources._shapes import omp_line

    return omp_line()


def _is_subagent_file(path: Path) -> bool:
    """A sub-agent's transcript sits in its parent session's artifacts folder
    (the session file's path without ``.jsonl``)."""
    return (path.parent.parent / (path.parent.name + ".jsonl")).is_file()


def _decide(message: dict[str, Any], subagent: bool) -> tuple[str, str]:
    role = message.get("role")
    decision = _ROLES.get(role, UNKNOWN) if isinstance(role, str) else UNKNOWN
    if decision not in (USER, ASSISTANT):
        return decision, ""
    # Agent-originated "user" turns (advisor updates and the like) are not the user's words.
    if decision == USER and (message.get("synthetic") is True or message.get("attribution") == "agent"):
        return INJECTED, ""
    text = _prose_of(message)
    if not text:
        parts = message.get("content")
        kinds = {p.get("type") for p in parts if isinstance(p, dict)} if isinstance(parts, list) else set()
        return (REASONING if "thinking" in kinds else TOOL_IO if "toolCall" in kinds else METADATA), ""
    return (AGENT if decision == USER and subagent else decision), text


def _decision_from_head(head: bytes) -> str:
    typed = _LINE_TYPE.match(head)
    if typed and typed.group(1) != b"message":
        return _ENTRY_TYPES.get(typed.group(1).decode(), UNKNOWN)
    role = _ROLE.search(head)
    if role:
        return _ROLES.get(role.group(1).decode(), UNKNOWN)
    return UNKNOWN


# The head OMP writes: type, id, parentId, timestamp, then a message's role. A head of this
# shape is read by one match; any other by the searches below (the same answers).
_HEAD_FIELDS = re.compile(
    rb'\{"type":"([A-Za-z_]+)","id":"([^"\\]*)","parentId":(?:null|"([^"\\]*)")'
    rb'(?:,"timestamp":"[^"\\]*")?(?:,"message":\{"role":"([A-Za-z_]+)")?'
)


def _skipped(head: bytes, *, always: bool = False) -> tuple[str, str | None, str | None] | None:
    """``(decision, entry id, parent id)`` of a line :func:`_skippable` by its head (or of
    any line, ``always``: one whose rest was not held), else None: it is to be parsed."""
    fields = _HEAD_FIELDS.match(head)
    if fields is not None:
        kind, entry_id, parent_id, role = fields.groups()
        # The first "type", "id", "parentId" and "role" of the head, as the searches find.
        if kind == b"message" and role is not None:
            if not always and role.decode() in _PROSE_ROLES:
                return None
            decision = _ROLES.get(role.decode(), UNKNOWN)
        elif kind not in _PARSED_TYPES:
            decision = _ENTRY_TYPES.get(kind.decode(), UNKNOWN)
        else:  # a session line, or a message whose role (if any) is further on
            fields = None
        if fields is not None:
            parent = parent_id.decode("utf-8", "replace") if parent_id is not None else None
            return decision, entry_id.decode("utf-8", "replace"), parent
    if not always and not _skippable(head):
        return None
    return _decision_from_head(head), *_ids_from_head(head)


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
    parts = content_texts(message.get("content"))
    texts = [p for p in parts if p.strip() and not p.startswith(_BLOB_REF)]
    return "\n\n".join(texts)


def _load_advisor(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    """Hash the file in one streamed pass; never parse it."""
    path = Path(ref.locator)
    root = Path(ref.payload) if isinstance(ref.payload, str) else settings.omp_sessions
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
        decision=INJECTED,  # the watchdog's own transcript: harness text, every line of it
    )
