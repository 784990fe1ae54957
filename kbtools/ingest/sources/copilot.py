"""GitHub Copilot CLI sessions: ``~/.copilot/session-state/``.

Each session is an event log, ``session-state/<id>/events.jsonl`` (older
builds: ``session-state/<id>.jsonl``), one event a line:
``{type, data, id, timestamp, parentId}`` with the types of the Copilot
session-event schema (github/copilot-sdk ``session-events.schema.json``,
generated as ``nodejs/src/generated/session-events.ts``).

Decisions: ``user.message`` ``data.content`` is the user's prose (its
``transformedContent``, the prompt with injected context, is not read);
``assistant.message`` ``data.content`` is assistant prose (its
``toolRequests`` are tool calls); ``assistant.reasoning`` is reasoning;
``tool.*`` events are tool I/O; ``system.message`` and ``session.info`` /
``session.warning`` / ``session.error`` are injected; deltas (the streamed
pieces of a message recorded whole later) are duplicates; lifecycle,
model, mode, usage and title events are metadata; ``subagent.*`` events are
the sub-agent's tool I/O. Anything else is counted as unknown.

Releases before the event log kept each session as one JSON object,
``history-session-state/<name>.json``: ``{sessionId, startTime, chatMessages,
timeline}``, ``chatMessages`` in the OpenAI chat shape (``role`` user,
assistant with ``content`` and ``tool_calls``, tool, system). Those files are
read too: user and assistant ``content`` are prose, ``tool_calls`` and role
``tool`` tool I/O, role ``system`` injected; ``timeline`` is the UI's copy of
the same messages and tool calls (duplicate).

Location: ``$COPILOT_HOME`` (default ``~/.copilot``; it moves the whole folder,
session state included: github/copilot-cli#1954). Identity: session =
``session.start`` ``data.sessionId`` (else the directory or file name),
project = ``data.context.cwd``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kbtools.ingest.hashing import iso_time
from kbtools.ingest.model import Record, SourceRef, SourceSettings, SourceUnit
from kbtools.ingest.sources._jsonl import JsonlScan
from kbtools.ingest.sources.common import (
    ASSISTANT,
    DUPLICATE,
    INJECTED,
    METADATA,
    REASONING,
    TOOL_IO,
    UNKNOWN,
    USER,
    Location,
    ProseBudget,
    Reader,
    Tally,
    content_texts,
    file_ref,
    read_json_file,
    unavailable_ref,
    unavailable_unit,
    walk_files,
)

TOOL = "copilot"
READER = Reader(
    tool=TOOL,
    locations=(
        Location(
            "copilot_dir", env="COPILOT_HOME", default="~/.copilot", help="Copilot CLI home (default: ~/.copilot)."
        ),
    ),
)
_HEAD = 256
_TYPE = re.compile(rb'"type"\s*:\s*"([A-Za-z_.]+)"')
_EXACT = {
    "user.message": USER,
    "assistant.message": ASSISTANT,
    "assistant.reasoning": REASONING,
    "system.message": INJECTED,
    "session.info": INJECTED,
    "session.warning": INJECTED,
    "session.error": INJECTED,
    "abort": METADATA,
}
# By prefix, for the families of lifecycle and tool events.
_PREFIXES = (
    ("assistant.message_delta", DUPLICATE),
    ("assistant.reasoning_delta", DUPLICATE),
    ("assistant.streaming_delta", DUPLICATE),
    ("assistant.", METADATA),  # turn_start, turn_end, intent, usage
    ("tool.", TOOL_IO),
    ("subagent.", TOOL_IO),
    ("hook.", INJECTED),
    ("skill.", INJECTED),
    ("session.", METADATA),  # start, resume, idle, model_change, title_changed, compaction_*, usage_info…
    ("pending_messages.", METADATA),
)
_PROSE = (b"user.message", b"assistant.message", b"session.start")
LEGACY_STATE = "history-session-state"
# The legacy chatMessages roles.
_LEGACY_ROLES = {"user": USER, "assistant": ASSISTANT, "tool": TOOL_IO, "system": INJECTED}


def discover(settings: SourceSettings) -> Iterator[SourceRef]:
    (root,) = settings.paths("copilot_dir") or (None,)
    state = root / "session-state" if root is not None else None
    legacy = root / LEGACY_STATE if root is not None else None
    if state is None or legacy is None or not (state.is_dir() or legacy.is_dir()):
        yield unavailable_ref(TOOL, state or "copilot-session-state")
        return
    for path in walk_files(state, ".jsonl") if state.is_dir() else ():
        relative = Path(path).relative_to(state)
        # <id>/events.jsonl (current) or <id>.jsonl (older); nothing deeper.
        if (len(relative.parts) == 2 and relative.name == "events.jsonl") or len(relative.parts) == 1:
            yield file_ref(TOOL, "session", path)
    for path in walk_files(legacy, ".json") if legacy.is_dir() else ():
        if Path(path).parent == legacy:
            yield file_ref(TOOL, "session", path, fmt="json")


def load(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    if ref.format == "unavailable":
        return unavailable_unit(ref)
    if ref.format == "json":
        return _load_legacy(ref, settings)
    path = Path(ref.locator)
    scan = JsonlScan(path)
    budget = ProseBudget.for_max_text(settings.max_text)
    tally = Tally()
    records: list[Record] = []
    start: dict[str, Any] = {}
    for line_no, line, whole in scan.lines(_wanted):
        if not whole or not _wanted(line[:_HEAD]):
            found = _TYPE.search(line[:_HEAD])
            tally.note(decision_of(found.group(1).decode()) if found else UNKNOWN)
            continue
        obj = scan.parse(line_no, line)
        if not isinstance(obj, dict):
            continue
        kind = obj.get("type")
        decision = decision_of(kind) if isinstance(kind, str) else UNKNOWN
        raw = obj.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if kind == "session.start" and not start:
            start = data
        if decision in (USER, ASSISTANT):
            text = data.get("content")
            if isinstance(text, str) and text.strip():
                role = "user" if decision == USER else "assistant"
                record = budget.record(role, text, obj.get("timestamp"), len(records))
                if record is not None:
                    records.append(record)
            else:
                decision = TOOL_IO if data.get("toolRequests") else METADATA
        tally.note(decision)
    found_context = start.get("context")
    context: dict[str, Any] = found_context if isinstance(found_context, dict) else {}
    session_id = start.get("sessionId")
    return scan.unit(
        ref,
        session_identity=session_id if isinstance(session_id, str) and session_id else _fallback_id(path),
        project_identity=context["cwd"] if isinstance(context.get("cwd"), str) else "",
        created_at=iso_time(start.get("startTime")),
        records=records,
        truncated=budget.truncated,
        tally=tally,
    )


def decision_of(kind: str) -> str:
    if kind in _EXACT:
        return _EXACT[kind]
    for prefix, decision in _PREFIXES:
        if kind.startswith(prefix):
            return decision
    return UNKNOWN


def _wanted(head: bytes) -> bool:
    found = _TYPE.search(head)
    return found is None or found.group(1) in _PROSE


def _fallback_id(path: Path) -> str:
    return path.parent.name if path.name == "events.jsonl" else path.stem


def _load_legacy(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    """A pre-event-log session: one JSON object with ``chatMessages``."""
    whole = read_json_file(ref)
    if isinstance(whole, SourceUnit):
        return whole
    obj, tally = whole.obj, Tally()
    budget = ProseBudget.for_max_text(settings.max_text)
    records: list[Record] = []
    tally.note(METADATA)  # sessionId, startTime and the rest of the object
    messages = obj.get("chatMessages")
    for message in messages if isinstance(messages, list) else []:
        role = message.get("role") if isinstance(message, dict) else None
        decision = _LEGACY_ROLES.get(role, UNKNOWN) if isinstance(role, str) else UNKNOWN
        if decision in (USER, ASSISTANT):
            text = "\n\n".join(t for t in content_texts(message.get("content")) if t.strip())
            if not text:
                decision = TOOL_IO if message.get("tool_calls") else METADATA
            elif (record := budget.record(str(role), text, None, len(records))) is not None:
                records.append(record)
        tally.note(decision)
    timeline = obj.get("timeline")
    tally.note(DUPLICATE, len(timeline) if isinstance(timeline, list) else 0)
    session_id = obj.get("sessionId")
    path = Path(ref.locator)
    return SourceUnit(
        tool=TOOL,
        record_type="session",
        format="json",
        source_identity=ref.locator,
        session_identity=session_id if isinstance(session_id, str) and session_id else path.stem,
        project_identity="",
        created_at=iso_time(obj.get("startTime")),
        updated_at=whole.mtime,
        content_hash=whole.content_hash,
        records=records,
        truncated=budget.truncated,
        stat_key=whole.stat_key,
        decisions={k: v for k, v in tally.counts.items() if v},
    )
