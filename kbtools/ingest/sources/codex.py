"""Codex CLI rollouts: ``$CODEX_HOME/{sessions,archived_sessions}/**/*.jsonl``.

Only ``response_item`` messages are read, and of them only ``input_text`` /
``output_text`` parts of ``user``/``assistant`` messages: the ``event_msg``
copies of each turn, reasoning items, tool calls and their output, turn
contexts and compactions are skipped (most of them by a look at the line's
head, before JSON parsing). Developer and system messages are harness
scaffolding.

What the harness injects into user messages is not the user's prose: the
``<environment_context>``, ``<user_instructions>``, ``<permissions
instructions>`` blocks and the ``# AGENTS.md instructions … <INSTRUCTIONS>``
block are dropped (the reference kept them, so they became the "user goal").

Identity: session = ``session_meta.payload.id`` (real rollouts), falling back
to ``payload.session_id`` (older fixtures) and then to the file stem — never
to the content hash, which would give a live session a new identity on every
run. Project = ``payload.cwd``. The first ``session_meta`` is canonical.

The legacy envelope-less format (bare items, a first line with ``id`` and
``timestamp``) is read too. ``history.jsonl`` (the prompt index) is recorded
as one unit skipped as ``prompt_index_covered_by_session_store``, hashed but
never parsed: the sessions already hold those prompts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kbtools.ingest.hashing import iso_time
from kbtools.ingest.model import Record, SourceRef, SourceSettings, SourceUnit
from kbtools.ingest.sources.common import (
    JsonlScan,
    ProseBudget,
    content_texts,
    file_ref,
    make_record,
    remove_tagged_blocks,
    unavailable_ref,
    unavailable_unit,
    unmined_unit,
    walk_files,
)

TOOL = "codex"
SESSION_DIRS = ("sessions", "archived_sessions")
HISTORY_FILE = "history.jsonl"
_PROSE_ROLES = frozenset({"user", "assistant"})
_TEXT_PARTS = frozenset({"input_text", "output_text"})
_HEAD = 512
_TYPE = re.compile(rb'"type"\s*:\s*"([A-Za-z_]+)"')
_PAYLOAD_TYPE = re.compile(rb'"payload"\s*:\s*\{\s*"type"\s*:\s*"([A-Za-z_]+)"')
_FORK_SUFFIX = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}_([A-Za-z0-9-]+)$", re.I)
_UUID_TAIL = re.compile(r"([0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12})$", re.I)

_INJECTED_TAGS = (
    "environment_context",
    "user_instructions",
    "permissions instructions",
    "INSTRUCTIONS",
    "turn_aborted",
    "user_shell_command",
    "collaboration_mode",
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
            files.extend(walk_files(root / name, ".jsonl"))
    files.sort()
    for path in files:
        yield file_ref(TOOL, "session", path)
    history = root / HISTORY_FILE
    if history.is_file():
        yield file_ref(TOOL, "prompt-history", history)


def load(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    if ref.format == "unavailable":
        return unavailable_unit(ref)
    if ref.record_type == "prompt-history":
        return unmined_unit(
            ref,
            session_identity=ref.locator,
            project_identity=TOOL,
            skip_reason="prompt_index_covered_by_session_store",
        )
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


def _load_session(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    path = Path(ref.locator)
    scan = JsonlScan(path)
    budget = ProseBudget.for_max_text(settings.max_text)
    meta: dict[str, Any] | None = None
    records: list[Record] = []
    index = 0
    for line_no, line, whole in scan.lines(_may_hold_prose_or_meta):
        if not whole or not _may_hold_prose_or_meta(line[:_HEAD]):
            continue
        obj = scan.parse(line_no, line)
        if not isinstance(obj, dict):
            continue
        kind = obj.get("type")
        payload = obj.get("payload")
        if kind == "session_meta" and isinstance(payload, dict):
            meta = meta or payload
            continue
        if kind == "response_item" and isinstance(payload, dict):
            item = payload
        elif kind == "message" and "payload" not in obj:
            item = obj  # legacy bare item
        elif kind is None and meta is None and "id" in obj and "timestamp" in obj:
            meta = obj  # legacy first line
            continue
        else:
            continue
        if item.get("type") != "message" or item.get("role") not in _PROSE_ROLES:
            continue
        text = _prose_of(item)
        if text and budget.admit(text):
            records.append(make_record(item["role"], text, obj.get("timestamp"), index))
        index += 1
    meta = meta or {}
    return scan.unit(
        ref,
        session_identity=_session_id(meta, path),
        project_identity=meta["cwd"] if isinstance(meta.get("cwd"), str) else "",
        created_at=iso_time(meta.get("timestamp")),
        records=records,
        truncated=budget.truncated,
    )


def _may_hold_prose_or_meta(head: bytes) -> bool:
    """False for lines the head shows to be events, reasoning, tool calls or
    tool output — most of a rollout's bytes."""
    found = _TYPE.search(head)
    if found is None:
        return True  # a legacy meta line, or an unknown shape: parse it
    kind = found.group(1)
    if kind == b"response_item":
        payload_type = _PAYLOAD_TYPE.search(head)
        return payload_type is None or payload_type.group(1) == b"message"
    return kind in (b"session_meta", b"message")


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
