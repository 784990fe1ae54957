"""Codex CLI rollouts: ``$CODEX_HOME/{sessions,archived_sessions}/**``.

Discovered: ``*.jsonl`` rollouts, ``*.jsonl.zst`` (compressed; Codex reads
them transparently, so do we, streaming), and the TypeScript CLI's
``rollout-*.json`` (one JSON object ``{session, items}``, spring 2025). The
envelope ``{timestamp, type, payload}`` (``RolloutItem``) and the older
envelope-less lines (bare ``ResponseItem``s after a bare meta line, filler
``{"record_type": "state"}``) are both read.

Every record is decided (docs/agents.md has the table; ``_RESPONSE_ITEMS``,
``_EVENTS`` and ``_ROLLOUT_ITEMS`` below are it): only ``response_item``
messages carry prose — ``input_text`` of ``user`` messages (less the
harness's injected blocks: ``<environment_context>``, ``<user_instructions>``,
``# AGENTS.md instructions``, ``<permissions instructions>``…) and
``output_text`` of ``assistant`` ones. ``developer``/``system`` messages and
compactions are injected text; reasoning, tool calls and their output are
not prose; the ``event_msg`` copies of each turn are duplicates. Most of
these are judged by a look at the line's head, before JSON parsing.

``event_msg/thread_rolled_back`` (``num_turns``) discards the newest user
turns: they stay on disk but are evidence of nothing, so their prose is
dropped (``abandoned``). A sub-agent's rollout (``session_meta.source`` is
``subagent``) has the parent agent's words under the user role: kept with
the role ``agent``.

Identity: session = ``session_meta.payload.id`` (real rollouts), falling back
to ``payload.session_id`` (older fixtures) and then to the file stem — never
to the content hash, which would give a live session a new identity on every
run. Project = ``payload.cwd``. The first ``session_meta`` is canonical.
``history.jsonl`` (the prompt index) is recorded as one unit skipped as
``prompt_index_covered_by_session_store``, hashed but never parsed: the
sessions already hold those prompts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kbtools.ingest.hashing import iso_time
from kbtools.ingest.model import Record, SourceRef, SourceSettings, SourceUnit
from kbtools.ingest.sources._jsonl import ZSTD_SUFFIX, JsonlScan
from kbtools.ingest.sources.common import (
    ABANDONED,
    AGENT,
    ASSISTANT,
    DUPLICATE,
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
    read_json_file,
    remove_tagged_blocks,
    unavailable_ref,
    unavailable_unit,
    unmined_unit,
    walk_files,
)

TOOL = "codex"
SESSION_DIRS = ("sessions", "archived_sessions")
HISTORY_FILE = "history.jsonl"
SUFFIXES = (".jsonl", ".jsonl" + ZSTD_SUFFIX, ".json")
_TEXT_PARTS = frozenset({"input_text", "output_text"})
_HEAD = 512
_TYPE = re.compile(rb'"type"\s*:\s*"([A-Za-z_]+)"')
_PAYLOAD_TYPE = re.compile(rb'"payload"\s*:\s*\{\s*"type"\s*:\s*"([A-Za-z_]+)"')
_FORK_SUFFIX = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}_([A-Za-z0-9-]+)$", re.I)
_UUID_TAIL = re.compile(r"([0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12})$", re.I)

# codex-rs/protocol/src/models.rs ``ResponseItem`` (serde tag ``type``): the
# decision per item type; ``message`` is decided by its role.
_RESPONSE_ITEMS = {
    "message": None,
    "reasoning": REASONING,
    "function_call": TOOL_IO,
    "function_call_output": TOOL_IO,
    "custom_tool_call": TOOL_IO,
    "custom_tool_call_output": TOOL_IO,
    "local_shell_call": TOOL_IO,
    "web_search_call": TOOL_IO,
    "image_generation_call": TOOL_IO,
    "tool_search_call": TOOL_IO,
    "tool_search_output": TOOL_IO,
    "mcp_tool_call": TOOL_IO,
    "compaction": INJECTED,
    "compaction_summary": INJECTED,
    "context_compaction": INJECTED,
    "agent_message": INJECTED,
    "ghost_snapshot": METADATA,
    "other": UNKNOWN,
}
_MESSAGE_ROLES = {"user": USER, "assistant": ASSISTANT, "developer": INJECTED, "system": INJECTED}
# codex-rs/protocol/src/protocol.rs ``EventMsg``, the types the rollout policy
# persists (codex-rs/rollout/src/policy.rs) and a few more seen on disk.
_EVENTS = {
    "user_message": DUPLICATE,
    "agent_message": DUPLICATE,
    "agent_reasoning": REASONING,
    "agent_reasoning_raw_content": REASONING,
    "agent_reasoning_section_break": REASONING,
    "token_count": METADATA,
    "task_started": METADATA,
    "task_complete": METADATA,
    "turn_started": METADATA,
    "turn_complete": METADATA,
    "turn_aborted": METADATA,
    "context_compacted": METADATA,
    "thread_rolled_back": METADATA,
    "thread_name_updated": METADATA,
    "entered_review_mode": METADATA,
    "exited_review_mode": METADATA,
    "item_completed": METADATA,
    "plan_update": METADATA,
    "error": METADATA,
    "warning": METADATA,
    "stream_error": METADATA,
    "undo_completed": METADATA,
    "exec_command_begin": TOOL_IO,
    "exec_command_end": TOOL_IO,
    "patch_apply_begin": TOOL_IO,
    "patch_apply_end": TOOL_IO,
    "mcp_tool_call_begin": TOOL_IO,
    "mcp_tool_call_end": TOOL_IO,
    "web_search_begin": TOOL_IO,
    "web_search_end": TOOL_IO,
    "view_image_tool_call": TOOL_IO,
    "image_generation_end": TOOL_IO,
    "collab_agent_spawn_end": TOOL_IO,
    "collab_agent_interaction_end": TOOL_IO,
}
# codex-rs/protocol/src/protocol.rs ``RolloutItem`` (serde tag ``type``,
# content ``payload``), with the 2026 additions.
_ROLLOUT_ITEMS = {
    "session_meta": METADATA,
    "turn_context": METADATA,
    "compacted": INJECTED,
    "world_state": INJECTED,
    "retained_context": INJECTED,
    "inter_agent_communication": INJECTED,
    "inter_agent_communication_metadata": METADATA,
    "token_usage_record": METADATA,
}

_INJECTED_TAGS = (
    "environment_context",
    "user_instructions",
    "permissions instructions",
    "INSTRUCTIONS",
    "turn_aborted",
    "user_shell_command",
    "collaboration_mode",
    "subagent_notification",
    "skill",
)
_INJECTED_OPEN = re.compile(r"^\s*<(" + "|".join(re.escape(t) for t in _INJECTED_TAGS) + r")[\s>]")
_AGENTS_MD = re.compile(r"^\s*#\s*AGENTS\.md instructions\b")


def discover(settings: SourceSettings) -> Iterator[SourceRef]:
    root = settings.codex_dir
    if root is None or not root.is_dir():
        yield unavailable_ref(TOOL, root or "codex-home")
        return
    files: list[str] = []
    for name in SESSION_DIRS:
        if (root / name).is_dir():
            files.extend(p for p in walk_files(root / name, SUFFIXES) if _is_rollout(p))
    files.sort()
    for path in files:
        yield file_ref(TOOL, "session", path, fmt="json" if path.endswith(".json") else "jsonl")
    history = root / HISTORY_FILE
    if history.exists():
        yield file_ref(TOOL, "prompt-history", history)


def _is_rollout(path: str) -> bool:
    # The TypeScript CLI's one-object sessions are `rollout-*.json`; no other
    # JSON file there is a session.
    return not path.endswith(".json") or os.path.basename(path).startswith("rollout-")


def load(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    if ref.format == "unavailable":
        return unavailable_unit(ref)
    if ref.record_type == "prompt-history":
        return unmined_unit(
            ref,
            session_identity=ref.locator,
            project_identity=TOOL,
            skip_reason="prompt_index_covered_by_session_store",
            decision=DUPLICATE,  # each line a prompt the rollouts already hold
        )
    if ref.format == "json":
        return _load_json_session(ref, settings)
    return _load_session(ref, settings)


def strip_injected(text: str) -> str:
    """The user's own words in a Codex user message, without harness blocks."""
    if _AGENTS_MD.match(text):
        return ""
    if "<" not in text:
        return text
    remaining = text
    for tag in _INJECTED_TAGS:
        remaining = remove_tagged_blocks(remaining, tag)
    if _INJECTED_OPEN.match(remaining):  # an unclosed injected block: all of it is harness text
        return ""
    return text if remaining == text else remaining.strip()


class _Rollout:
    """The records of one rollout as they are read, with the user-turn starts a
    rollback counts back over."""

    __slots__ = ("meta", "records", "turn_starts", "tally", "budget", "index")

    def __init__(self, budget: ProseBudget) -> None:
        self.meta: dict[str, Any] | None = None
        self.records: list[Record] = []
        self.turn_starts: list[int] = []
        self.tally = Tally()
        self.budget = budget
        self.index = 0

    @property
    def subagent(self) -> bool:
        source = (self.meta or {}).get("source")
        return source in ("subagent", "sub_agent") or (
            isinstance(source, dict) and ("subagent" in source or "sub_agent" in source)
        )

    def item(self, item: dict[str, Any], created: Any) -> None:
        kind = item.get("type")
        decision = _RESPONSE_ITEMS.get(kind, UNKNOWN) if isinstance(kind, str) else UNKNOWN
        if decision is not None:
            self.tally.note(decision)
            return
        decision = _MESSAGE_ROLES.get(item.get("role"), UNKNOWN)  # type: ignore[arg-type]
        if decision in (USER, ASSISTANT):
            text = _prose_of(item)
            if not text:
                decision = INJECTED if decision == USER else METADATA
            else:
                if decision == USER:
                    self.turn_starts.append(len(self.records))
                    decision = AGENT if self.subagent else USER
                record = self.budget.record(ROLE_OF[decision], text, created, self.index)
                if record is not None:
                    self.records.append(record)
            self.index += 1
        self.tally.note(decision)

    def roll_back(self, turns: Any) -> None:
        """Drop the newest ``turns`` user turns (``ThreadRolledBackEvent.num_turns``)."""
        if not isinstance(turns, int) or isinstance(turns, bool) or turns <= 0 or not self.turn_starts:
            return
        cut = self.turn_starts[-min(turns, len(self.turn_starts))]
        dropped = self.records[cut:]
        del self.records[cut:]
        self.turn_starts = [start for start in self.turn_starts if start < cut]
        for record in dropped:
            self.tally.moved({"user": USER, "agent": AGENT}.get(record.role, ASSISTANT), ABANDONED, 1)


def _load_session(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    path = Path(ref.locator)
    scan = JsonlScan(path)
    rollout = _Rollout(ProseBudget.for_max_text(settings.max_text))
    tally = rollout.tally
    for line_no, line, whole in scan.lines(_may_hold_prose_or_meta):
        skipped = _skipped(line[:_HEAD], always=not whole)
        if skipped is not None:
            tally.note(skipped)
            continue
        obj = scan.parse(line_no, line)
        if not isinstance(obj, dict):
            continue
        kind = obj.get("type")
        payload = obj.get("payload")
        if "payload" in obj:  # the envelope
            if kind == "response_item" and isinstance(payload, dict):
                rollout.item(payload, obj.get("timestamp"))
            elif kind == "event_msg" and isinstance(payload, dict):
                event = payload.get("type")
                tally.note(_EVENTS.get(event, UNKNOWN) if isinstance(event, str) else UNKNOWN)
                if event == "thread_rolled_back":
                    rollout.roll_back(payload.get("num_turns"))
            else:
                if kind == "session_meta" and isinstance(payload, dict) and rollout.meta is None:
                    rollout.meta = payload
                tally.note(_ROLLOUT_ITEMS.get(kind, UNKNOWN) if isinstance(kind, str) else UNKNOWN)
        elif kind is None and "record_type" in obj:
            tally.note(METADATA)  # the legacy filler line
        elif kind is None and rollout.meta is None and "id" in obj and "timestamp" in obj:
            rollout.meta = obj  # the legacy first line
            tally.note(METADATA)
        else:
            rollout.item(obj, obj.get("timestamp"))  # a legacy bare item
    meta = rollout.meta or {}
    return scan.unit(
        ref,
        session_identity=_session_id(meta, path),
        project_identity=meta["cwd"] if isinstance(meta.get("cwd"), str) else "",
        created_at=iso_time(meta.get("timestamp")),
        records=rollout.records,
        truncated=rollout.budget.truncated,
        tally=tally,
    )


def _load_json_session(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    """The TypeScript CLI's session file: ``{"session": {id, timestamp,
    instructions}, "items": [ResponseItem…]}`` (codex-cli/src/utils/storage/save-rollout.ts)."""
    path = Path(ref.locator)
    whole = read_json_file(ref)
    if isinstance(whole, SourceUnit):
        return whole
    obj = whole.obj
    rollout = _Rollout(ProseBudget.for_max_text(settings.max_text))
    session = obj.get("session")
    meta: dict[str, Any] = session if isinstance(session, dict) else {}
    rollout.meta = meta
    rollout.tally.note(METADATA)
    created = meta.get("timestamp")
    items = obj.get("items")
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            rollout.item(item, created)
        else:
            rollout.tally.note(UNKNOWN)
    unit = SourceUnit(
        tool=TOOL,
        record_type="session",
        format="json",
        source_identity=str(path),
        session_identity=_session_id(meta, path),
        project_identity=meta["cwd"] if isinstance(meta.get("cwd"), str) else "",
        created_at=iso_time(created),
        updated_at=whole.mtime,
        content_hash=whole.content_hash,
        records=rollout.records,
        truncated=rollout.budget.truncated,
        stat_key=whole.stat_key,
        decisions=dict(rollout.tally.counts),
    )
    return unit


def _skipped(head: bytes, *, always: bool = False) -> str | None:
    """The decision of a line not :func:`_may_hold_prose_or_meta`, from the types in its
    head (of any line, ``always``: one whose rest was not held); None: it is to be parsed.
    One look at the head serves both questions."""
    found = _TYPE.search(head)
    if found is None:
        return UNKNOWN if always else None  # a legacy meta line, or an unknown shape: parse it
    kind = found.group(1)
    if kind == b"response_item" or kind == b"event_msg":
        payload = _PAYLOAD_TYPE.search(head)
        inner = payload.group(1) if payload is not None else None
        if not always and (
            inner is None or inner == (b"message" if kind == b"response_item" else b"thread_rolled_back")
        ):
            return None
        name = inner.decode() if inner is not None else ""
        if kind == b"event_msg":
            return _EVENTS.get(name, UNKNOWN)
        decision = _RESPONSE_ITEMS.get(name, UNKNOWN)
        return decision if decision is not None else UNKNOWN
    if not always and kind in (b"session_meta", b"message"):
        return None
    name = kind.decode()
    if name in _ROLLOUT_ITEMS:
        return _ROLLOUT_ITEMS[name]
    decision = _RESPONSE_ITEMS.get(name, UNKNOWN)  # a legacy bare item
    return decision if decision is not None else UNKNOWN


def _may_hold_prose_or_meta(head: bytes) -> bool:
    """False for lines the head shows to be events, reasoning, tool calls or
    tool output — most of a rollout's bytes. Rollback events are read."""
    return _skipped(head) is None


def _prose_of(item: dict[str, Any]) -> str:
    parts = content_texts(item.get("content"), _TEXT_PARTS)
    if item.get("role") == "user":
        parts = [strip_injected(p) for p in parts]
    return "\n\n".join(p for p in parts if p.strip())


def _session_id(meta: dict[str, Any], path: Path) -> str:
    """The thread id; a fork or revert file (``…-<thread>_<rollout>.jsonl``)
    shares its thread's id, so its rollout suffix is added to keep two files
    from claiming one ledger row."""
    fork = _FORK_SUFFIX.search(path.stem)
    suffix = f"_{fork.group(1)}" if fork else ""
    for key in ("id", "session_id"):
        value = meta.get(key)
        if isinstance(value, str) and value:
            return value + suffix
    tail = _UUID_TAIL.search(path.stem)
    return tail.group(1) if tail else path.stem
