"""Claude Code transcripts: ``~/.claude/projects/**/*.jsonl``.

Claude Code writes one API response over several ``assistant`` lines, one
content block each, sharing ``message.id``: they are merged into one record
(a block repeated by a later line is not counted twice). Kept: ``text``
blocks of assistant messages and what the user typed (string content or
``text`` blocks). Skipped: ``thinking``, ``tool_use``, ``tool_result`` (most
of the bytes — judged by the line's head, before parsing), ``isMeta`` lines
(injected skill text, caveats), compaction summaries, synthetic API-error
turns, slash-command and local-command echoes, ``<system-reminder>`` blocks,
summaries, snapshots and progress lines.

Sub-agent transcripts (``<session>/subagents/agent-<id>.jsonl``, or
``agent-<id>.jsonl`` beside the sessions in v2.0) are sessions of their own:
they share the parent's ``sessionId``, so their session identity is
``<sessionId>/agent-<id>``. Inline side-chain records of older main files
are the sub-agent's conversation, not the user's, and are skipped.

Identity: session = ``sessionId`` (else the file stem), project = ``cwd``.
"""

from __future__ import annotations

import json
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
    walk_files,
)

TOOL = "claude"
_HEAD = 2048
_SKIP_FLAGS = ("isMeta", "isCompactSummary", "isVisibleInTranscriptOnly", "isApiErrorMessage")
_NOT_PROSE_LINES = (b'"type":"progress"', b'"type":"file-history-snapshot"', b'"type":"queue-operation"')
_SESSION_ID = re.compile(rb'"sessionId"\s*:\s*("(?:[^"\\]|\\.)*")')
_CWD = re.compile(rb'"cwd"\s*:\s*("(?:[^"\\]|\\.)*")')
# User "messages" the harness writes for slash commands, local commands and hooks.
_HARNESS_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<user-prompt-submit-hook>",
    "[Request interrupted by user",
)


def discover(settings: SourceSettings) -> Iterator[SourceRef]:
    root = settings.claude_dir
    projects = root / "projects" if root is not None else None
    if projects is None or not projects.is_dir():
        yield unavailable_ref(TOOL, projects or "claude-projects")
        return
    for path in walk_files(projects, ".jsonl"):
        yield file_ref(TOOL, "session", path)


def load(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    if ref.format == "unavailable":
        return unavailable_unit(ref)
    return _load_session(ref, settings)


def is_subagent_file(path: Path) -> bool:
    return path.name.startswith("agent-") or path.parent.name == "subagents"


class _Message:
    __slots__ = ("role", "created", "index", "texts")

    def __init__(self, role: str, created: Any, index: int, texts: list[str] | None = None) -> None:
        self.role = role
        self.created = created
        self.index = index
        self.texts = texts if texts is not None else []


class _Transcript:
    __slots__ = ("subagent", "session_id", "cwd", "agent_id", "started", "messages", "by_api_id")

    def __init__(self, subagent: bool) -> None:
        self.subagent = subagent
        self.session_id: str | None = None
        self.cwd: str | None = None
        self.agent_id: str | None = None
        self.started: Any = None
        self.messages: list[_Message] = []
        self.by_api_id: dict[str, _Message] = {}

    def note_identity(self, obj: dict[str, Any]) -> None:
        if self.session_id is None and isinstance(obj.get("sessionId"), str):
            self.session_id = obj["sessionId"]
        if self.cwd is None and isinstance(obj.get("cwd"), str):
            self.cwd = obj["cwd"]
        if self.agent_id is None and isinstance(obj.get("agentId"), str):
            self.agent_id = obj["agentId"]
        if self.started is None and obj.get("timestamp") is not None:
            self.started = obj["timestamp"]

    def note_identity_from_head(self, head: bytes) -> None:
        for attr, pattern in (("session_id", _SESSION_ID), ("cwd", _CWD)):
            if getattr(self, attr) is None and (found := pattern.search(head)):
                try:
                    setattr(self, attr, json.loads(found.group(1)))
                except ValueError:
                    pass


def _load_session(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    path = Path(ref.locator)
    scan = JsonlScan(path)
    final_budget = ProseBudget.for_max_text(settings.max_text)
    collecting = ProseBudget(cap=final_budget.cap * 2)
    transcript = _Transcript(subagent=is_subagent_file(path))
    for line_no, line, whole in scan.lines(_wanted):
        if not whole or not _wanted(line[:_HEAD]):
            transcript.note_identity_from_head(line[:_HEAD])
            continue
        obj = scan.parse(line_no, line)
        if isinstance(obj, dict):
            _take(obj, transcript, collecting)
    records: list[Record] = []
    if not scan.failed:
        for message in transcript.messages:
            text = "\n\n".join(message.texts)
            if text.strip() and final_budget.admit(text):
                records.append(make_record(message.role, text, message.created, message.index))
    session_id = transcript.session_id or path.stem
    if transcript.subagent:
        session_id = f"{session_id}/{path.stem if path.stem.startswith('agent-') else transcript.agent_id}"
    return scan.unit(
        ref,
        session_identity=session_id,
        project_identity=transcript.cwd or "",
        created_at=iso_time(transcript.started),
        records=records,
        truncated=collecting.truncated or final_budget.truncated,
    )


def _wanted(head: bytes) -> bool:
    """False when the head shows a line without prose: tool results, tool
    calls or thinking alone, progress and snapshot lines."""
    if b'"tool_result"' in head:
        return False
    if any(marker in head for marker in _NOT_PROSE_LINES):
        return False
    if b'"type":"text"' in head:
        return True
    return b'"type":"tool_use"' not in head and b'"type":"thinking"' not in head


def _take(obj: dict[str, Any], transcript: _Transcript, budget: ProseBudget) -> None:
    kind = obj.get("type")
    if kind not in ("user", "assistant"):
        return
    transcript.note_identity(obj)
    if any(obj.get(flag) is True for flag in _SKIP_FLAGS):
        return
    if obj.get("isSidechain") is True and not transcript.subagent:
        return
    message = obj.get("message")
    if not isinstance(message, dict):
        return
    if kind == "assistant":
        if message.get("model") == "<synthetic>":
            return
        api_id = message.get("id")
        texts = _blocks_text(message.get("content"))
        target = transcript.by_api_id.get(api_id) if isinstance(api_id, str) else None
        if target is None:
            target = _Message("assistant", obj.get("timestamp"), len(transcript.messages))
            transcript.messages.append(target)
            if isinstance(api_id, str):
                transcript.by_api_id[api_id] = target
        for text in texts:
            if text not in target.texts and budget.admit(text):
                target.texts.append(text)
        return
    content = message.get("content")
    if isinstance(content, str):
        texts = [content]
    elif isinstance(content, list) and not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        texts = _blocks_text(content)
    else:
        return
    kept = [t for t in (_user_prose(t) for t in texts) if t and budget.admit(t)]
    if kept:
        transcript.messages.append(_Message("user", obj.get("timestamp"), len(transcript.messages), kept))


def _blocks_text(content: Any) -> list[str]:
    return [text for text in content_texts(content) if text.strip()]


def _user_prose(text: str) -> str:
    if "<system-reminder>" in text:
        text = remove_tagged_blocks(text, "system-reminder").strip()
    if text.lstrip().startswith(_HARNESS_PREFIXES):
        return ""
    return text
