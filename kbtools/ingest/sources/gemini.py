"""Gemini CLI chat recordings: ``~/.gemini/tmp/<project>/chats/``.

Written by gemini-cli's ``ChatRecordingService``
(``packages/core/src/services/chatRecordingService.ts``): one session per
file, ``session-<time>-<id8>.jsonl`` (sub-agents: ``chats/<parent>/<id>.jsonl``),
or a single JSON ``ConversationRecord`` ``session-*.json`` in older releases.
A JSONL recording is an upsert log: a metadata line (``sessionId``,
``projectHash``, ``startTime``, ``kind``…), then message records that are
rewritten in full, under the same ``id``, each time their tool calls, thoughts
or tokens change (the last copy wins); ``{"$set": {...}}`` patches metadata;
``{"$rewindTo": "<id>"}`` drops that message and every later one (the turns a
rewind abandoned).

Decisions: ``user`` messages are the user's prose (in a sub-agent's recording,
the parent agent's: ``agent``); ``gemini`` messages are assistant prose (``content`` string or
``text`` parts), their ``thoughts`` reasoning and ``toolCalls`` tool I/O;
``info``, ``error`` and ``warning`` messages are the CLI's own words
(injected), and so is a slash command; ``functionCall``/``functionResponse`` parts are tool I/O.

Location: ``$GEMINI_CLI_HOME/.gemini`` (the variable replaces the home
directory), default ``~/.gemini``. Identity: session = ``sessionId`` (else
the file stem), project = the first of ``directories``, else ``projectHash``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kbtools.ingest.hashing import iso_time
from kbtools.ingest.model import Record, SourceRef, SourceSettings, SourceUnit
from kbtools.ingest.sources._jsonl import JsonlScan
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
    Location,
    ProseBudget,
    Reader,
    Tally,
    file_ref,
    read_json_file,
    unavailable_ref,
    unavailable_unit,
    walk_files,
)

TOOL = "gemini"
READER = Reader(
    tool=TOOL,
    locations=(
        Location(
            "gemini_dir",
            env="GEMINI_CLI_HOME",
            env_subpath=".gemini",
            default="~/.gemini",
            help="Gemini CLI home (default: $GEMINI_CLI_HOME/.gemini or ~/.gemini).",
        ),
    ),
)
_SLASH_COMMAND = re.compile(r"/[A-Za-z][\w:-]*(?:\s|$)")
_MESSAGE_TYPES = {"user": USER, "gemini": ASSISTANT, "info": INJECTED, "error": INJECTED, "warning": INJECTED}


def discover(settings: SourceSettings) -> Iterator[SourceRef]:
    (root,) = settings.paths("gemini_dir") or (None,)
    tmp = root / "tmp" if root is not None else None
    if tmp is None or not tmp.is_dir():
        yield unavailable_ref(TOOL, tmp or "gemini-tmp")
        return
    for path in walk_files(tmp, (".jsonl", ".json")):
        parts = Path(path).parts
        if "chats" not in parts:
            continue  # logs.json, checkpoints, shell history: not recordings
        if path.endswith(".json") and not os.path.basename(path).startswith("session-"):
            continue
        yield file_ref(TOOL, "session", path, fmt="json" if path.endswith(".json") else "jsonl")


def load(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    if ref.format == "unavailable":
        return unavailable_unit(ref)
    if ref.format == "json":
        return _load_json(ref, settings)
    return _load_jsonl(ref, settings)


class _Recording:
    """Messages by id in file order, the last copy of each winning."""

    __slots__ = ("meta", "messages", "tally", "subagent")

    def __init__(self, subagent: bool) -> None:
        self.meta: dict[str, Any] = {}
        self.messages: dict[str, dict[str, Any]] = {}
        self.tally = Tally()
        self.subagent = subagent

    def record(self, obj: dict[str, Any]) -> None:
        if "$rewindTo" in obj:
            self.tally.note(METADATA)
            self.rewind(obj["$rewindTo"])
        elif "$set" in obj:
            self.tally.note(METADATA)
            patch = obj["$set"]
            if isinstance(patch, dict):
                self.patch(patch)
        elif isinstance(obj.get("id"), str) and "type" in obj:
            if obj["id"] in self.messages:
                self.tally.note(DUPLICATE)  # an earlier copy, replaced where it stood
            self.messages[obj["id"]] = _slim(obj)
        elif "sessionId" in obj and not self.meta:
            self.meta = obj
            self.tally.note(METADATA)
            if obj.get("kind") == "subagent":
                self.subagent = True
        else:
            self.tally.note(UNKNOWN)

    def patch(self, patch: dict[str, Any]) -> None:
        messages = patch.get("messages")
        self.meta = {**self.meta, **{k: v for k, v in patch.items() if k != "messages"}}
        if isinstance(messages, list):  # a snapshot of the context: messages not seen yet are added
            for message in messages:
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    self.messages.setdefault(message["id"], _slim(message))

    def rewind(self, target: Any) -> None:
        ids = list(self.messages)
        if not isinstance(target, str) or target not in self.messages:
            return
        for message_id in ids[ids.index(target) :]:
            del self.messages[message_id]
            self.tally.note(ABANDONED)

    def records(self, budget: ProseBudget) -> list[Record]:
        records: list[Record] = []
        for index, message in enumerate(self.messages.values()):
            decision, text = _decide(message)
            if decision == USER and self.subagent:
                decision = AGENT
            for extra in message.get("_decisions", ()):
                self.tally.note(extra)
            self.tally.note(decision)
            if decision in ROLE_OF and text:
                record = budget.record(ROLE_OF[decision], text, message.get("timestamp"), index)
                if record is not None:
                    records.append(record)
        return records


def _slim(message: dict[str, Any]) -> dict[str, Any]:
    """What a message is kept as until the end: its text and the decisions of
    its other parts, not its tool results or thought texts."""
    decisions = []
    if message.get("thoughts"):
        decisions.append(REASONING)
    if message.get("toolCalls"):
        decisions.append(TOOL_IO)
    texts, tool_parts = _texts(message.get("content"))
    if tool_parts:
        decisions.append(TOOL_IO)
    return {
        "type": message.get("type"),
        "timestamp": message.get("timestamp"),
        "text": "\n\n".join(texts),
        "_decisions": tuple(decisions),
    }


def _texts(content: Any) -> tuple[list[str], bool]:
    """The text of a ``content`` (a string, a part, or a list of parts), and
    whether it held tool parts."""
    if isinstance(content, str):
        return [content], False
    parts = content if isinstance(content, list) else [content]
    texts: list[str] = []
    tools = False
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            if part.get("thought") is True:
                continue
            if isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif "functionCall" in part or "functionResponse" in part:
                tools = True
    return [t for t in texts if t.strip()], tools


def _decide(message: dict[str, Any]) -> tuple[str, str]:
    kind = message.get("type")
    decision = _MESSAGE_TYPES.get(kind, UNKNOWN) if isinstance(kind, str) else UNKNOWN
    text = str(message.get("text") or "")
    if decision == USER:
        text = _command_free(text)
    if decision in (USER, ASSISTANT) and not text.strip():
        return (INJECTED if decision == USER else METADATA), ""
    return decision, text


def _command_free(text: str) -> str:
    """A slash command (``/chat save``, ``/memory add …``) is an instruction to
    the CLI, not words about the work: nothing of it is prose."""
    stripped = text.strip()
    return "" if _SLASH_COMMAND.match(stripped) else text


def _is_subagent_file(path: Path) -> bool:
    return path.parent.name != "chats"


def _load_jsonl(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    path = Path(ref.locator)
    scan = JsonlScan(path)
    recording = _Recording(_is_subagent_file(path))
    for line_no, line, whole in scan.lines():
        obj = scan.parse(line_no, line) if whole else None
        if isinstance(obj, dict):
            recording.record(obj)
    budget = ProseBudget.for_max_text(settings.max_text)
    records = recording.records(budget)
    return scan.unit(
        ref,
        session_identity=_session_id(recording.meta, path),
        project_identity=_project(recording.meta),
        created_at=iso_time(recording.meta.get("startTime")),
        records=records,
        truncated=budget.truncated,
        tally=recording.tally,
    )


def _load_json(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    """An older release's whole-file ``ConversationRecord``."""
    path = Path(ref.locator)
    whole = read_json_file(ref)
    if isinstance(whole, SourceUnit):
        return whole
    obj = whole.obj
    recording = _Recording(_is_subagent_file(path))
    messages = obj.get("messages")
    recording.meta = {k: v for k, v in obj.items() if k != "messages"}
    recording.tally.note(METADATA)
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, dict) and isinstance(message.get("id"), str):
            recording.messages[message["id"]] = _slim(message)
        else:
            recording.tally.note(UNKNOWN)
    budget = ProseBudget.for_max_text(settings.max_text)
    records = recording.records(budget)
    return SourceUnit(
        tool=TOOL,
        record_type="session",
        format="json",
        source_identity=str(path),
        session_identity=_session_id(recording.meta, path),
        project_identity=_project(recording.meta),
        created_at=iso_time(recording.meta.get("startTime")),
        updated_at=iso_time(recording.meta.get("lastUpdated")),
        content_hash=whole.content_hash,
        records=records,
        truncated=budget.truncated,
        stat_key=whole.stat_key,
        decisions=dict(recording.tally.counts),
    )


def _session_id(meta: dict[str, Any], path: Path) -> str:
    value = meta.get("sessionId")
    return value if isinstance(value, str) and value else path.stem


def _project(meta: dict[str, Any]) -> str:
    directories = meta.get("directories")
    if isinstance(directories, list) and directories and isinstance(directories[0], str):
        return directories[0]
    project = meta.get("projectHash")
    return project if isinstance(project, str) else ""
