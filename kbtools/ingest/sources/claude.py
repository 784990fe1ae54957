"""Claude Code transcripts: ``~/.claude/projects/**/*.jsonl``.

Claude Code is closed source; its records are as the tools that parse them
document them (daaain/claude-code-log ``models.py``, d-kimuson/claude-code-viewer
``schema``, ccusage). Every record is decided (docs/agents.md has the table):

* ``user`` lines: string content or ``text`` blocks are the user's prose,
  less ``<system-reminder>`` blocks and the harness's echoes (local-command
  output, hooks, interruptions). A slash command keeps what the user typed —
  ``/name`` and its ``<command-args>``, often the whole request. ``isMeta``
  lines (expanded skill text, caveats) and compaction summaries are injected.
  ``tool_result`` blocks are tool output, except the user's own words returned
  in one: the reason given when rejecting a tool use, and the answers to the
  agent's questions (AskUserQuestion). ``image`` blocks are binary.
* ``assistant`` lines: one API response is written over several lines sharing
  ``message.id``, merged into one record (a block repeated by a later line is
  not counted twice); ``text`` blocks are prose, ``thinking`` and
  ``redacted_thinking`` reasoning, ``tool_use`` tool calls; synthetic
  API-error turns are injected.
* Prompts typed while the agent works (queued commands): an ``attachment`` of
  type ``queued_command`` (2.x) or a ``queue-operation`` ``enqueue`` with
  ``content`` (earlier) — the user's prose, counted once when both appear.
* ``system``, other ``attachment`` types: injected. ``summary``, titles,
  snapshots, modes: metadata. ``progress``: tool output.

Rewinds: records form a tree through ``uuid``/``parentUuid`` (across a
compaction, ``logicalParentUuid``); a rewind starts a new branch from an
earlier record and leaves the old one in the file. The conversation is the
path from the last record back to the root; prose off it is ``abandoned``.
Only when the walk reaches a root is anything dropped — a chain that cannot
be followed (an id in a line too long to hold) keeps everything.

Sub-agent transcripts (``<session>/subagents/agent-<id>.jsonl`` in 2.x, or
``agent-<id>.jsonl`` beside the sessions in 2.0) are sessions of their own
with session identity ``<sessionId>/agent-<id>``; in the inline 1.0.x layout,
side-chain records (``isSidechain``) sit in the main file and are kept there.
Either way the sub-agent's "user" is the parent agent: that prose is kept
with the role ``agent``, never as the person's words.

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
from kbtools.ingest.sources._claude_tree import ROOT, UNKNOWN_PARENT, Tree, id_hash
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
    ProseBudget,
    Tally,
    file_ref,
    remove_tagged_blocks,
    unavailable_ref,
    unavailable_unit,
    walk_files,
)

TOOL = "claude"
_HEAD = 2048
_INJECTED_FLAGS = ("isMeta", "isCompactSummary", "isVisibleInTranscriptOnly", "isApiErrorMessage")
_SESSION_ID = re.compile(rb'"sessionId"\s*:\s*("(?:[^"\\]|\\.)*")')
_CWD = re.compile(rb'"cwd"\s*:\s*("(?:[^"\\]|\\.)*")')
_LINE_TYPE = re.compile(rb'"type"\s*:\s*"([A-Za-z_-]+)"')
_UUID = re.compile(rb'"uuid"\s*:\s*"([^"\\]+)"')
_PARENT = re.compile(rb'"parentUuid"\s*:\s*(null|"[^"\\]+")')
_LOGICAL_PARENT = re.compile(rb'"logicalParentUuid"\s*:\s*"([^"\\]+)"')
_SIDECHAIN = re.compile(rb'"isSidechain"\s*:\s*true')
# User "messages" the harness writes for local commands, shell escapes, hooks.
_HARNESS_PREFIXES = (
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<user-prompt-submit-hook>",
    "<task-notification>",
    "[Request interrupted by user",
)
_COMMAND_NAME = re.compile(r"<command-name>\s*(.*?)\s*</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
# The user's own words inside a tool result: the reason of a rejection, and
# answers to AskUserQuestion (markers as Claude Code writes them).
_REJECTION = "the user said:\n"
_REJECTED = "The user doesn't want to proceed with this tool use"
_ANSWERS = "User has answered your questions:"
_ANSWER = re.compile(r'"(?:[^"\\]|\\.)*"="((?:[^"\\]|\\.)*)"')
_USER_WORDS_IN_RESULT = (_REJECTED.encode(), _ANSWERS.encode())
# Record types (the line's ``type``) that carry no text to read.
_METADATA_TYPES = frozenset(
    {
        "summary",
        "custom-title",
        "ai-title",
        "agent-name",
        "last-prompt",
        "mode",
        "permission-mode",
        "file-history-snapshot",
        "tag",
        "pr-link",
        "agent-setting",
        "worktree-state",
    }
)
_NOT_PROSE_TYPES = frozenset({b"progress", b"file-history-snapshot", b"system", b"summary"})


# uuid hashes of the tree walk (see Tree).
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
    __slots__ = ("decision", "created", "index", "texts", "lines", "queued", "side", "refused")

    def __init__(self, decision: str, created: Any, index: int, line_no: int, queued: bool = False) -> None:
        self.decision = decision
        self.created = created
        self.index = index
        self.texts: list[str] = []
        self.lines = [line_no]
        self.queued = queued
        self.side = False  # a side-chain (sub-agent) record: not on the main tree
        self.refused = 0  # the characters of a prompt the prose budget refused (kept as a stand-in)


class _Transcript:
    __slots__ = (
        "subagent",
        "session_id",
        "cwd",
        "agent_id",
        "started",
        "messages",
        "by_api_id",
        "tally",
        "tree",
        "stand_in",
    )

    def __init__(self, subagent: bool) -> None:
        self.subagent = subagent
        self.session_id: str | None = None
        self.cwd: str | None = None
        self.agent_id: str | None = None
        self.started: Any = None
        self.messages: list[_Message] = []
        self.by_api_id: dict[str, _Message] = {}
        self.tally = Tally()
        self.tree = Tree()
        self.stand_in: _Message | None = None  # the refused prompt no kept text has followed yet

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

    def link_parsed(self, line_no: int, obj: dict[str, Any]) -> None:
        uid = obj.get("uuid")
        if not isinstance(uid, str):
            return
        parent = obj.get("parentUuid")
        logical = obj.get("logicalParentUuid")
        if isinstance(parent, str):
            parent_hash = id_hash(parent)
        elif isinstance(logical, str):
            parent_hash = id_hash(logical)
        elif "parentUuid" in obj and parent is None:
            parent_hash = ROOT
        else:
            parent_hash = UNKNOWN_PARENT
        self.tree.add(line_no, [id_hash(uid)], parent_hash, main=obj.get("isSidechain") is not True)

    def link_unparsed(self, line_no: int, data: bytes) -> None:
        """Links of a line not parsed, from its bytes: the parent is the first
        key of a real line; every ``uuid`` in it is taken (a nested one adds a
        harmless entry), since the line's own may stand after its content."""
        ids = [id_hash(m.group(1)) for m in _UUID.finditer(data)]
        if not ids:
            return
        parent = _PARENT.search(data[:_HEAD])
        logical = _LOGICAL_PARENT.search(data[:_HEAD])
        if parent is not None and parent.group(1) != b"null":
            parent_hash = id_hash(parent.group(1)[1:-1])
        elif logical is not None:
            parent_hash = id_hash(logical.group(1))
        elif parent is not None:
            parent_hash = ROOT
        else:
            parent_hash = UNKNOWN_PARENT
        self.tree.add(line_no, ids, parent_hash, main=_SIDECHAIN.search(data[:_HEAD]) is None)

    def add_message(
        self,
        decision: str,
        created: Any,
        line_no: int,
        texts: list[str],
        budget: ProseBudget,
        *,
        queued: bool = False,
        side: bool = False,
    ) -> None:
        kept = [t for t in texts if t and budget.admit(t)]
        refused = 0 if kept else len("\n\n".join(t for t in texts if t))
        last = self.stand_in
        if refused and last is not None and (last.queued, last.side) == (queued, side):
            # Refused prompts with no kept text between them are one stand-in: only the last can
            # have a reply after it (a million prompts over the budget cost a line number each).
            last.lines.append(line_no)
            last.refused = refused
            return
        if kept or refused:
            # (A stand-in is dated as its reply: a refused prompt's time is not kept.)
            message = _Message(decision, None if refused else created, len(self.messages), line_no, queued)
            message.texts = kept
            message.side = side
            message.refused = refused
            self.messages.append(message)
            self.stand_in = message if refused else None


def _load_session(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    path = Path(ref.locator)
    scan = JsonlScan(path)
    final_budget = ProseBudget.for_max_text(settings.max_text)
    collecting = ProseBudget(cap=final_budget.cap * 2)
    transcript = _Transcript(subagent=is_subagent_file(path))
    tally = transcript.tally
    for line_no, line, whole in scan.lines(_wanted):
        if not whole or not _wanted(line):
            transcript.note_identity_from_head(line[:_HEAD])
            transcript.link_unparsed(line_no, line)
            tally.note(_decision_from_head(line[:_HEAD]))
            continue
        obj = scan.parse(line_no, line)
        if isinstance(obj, dict):
            transcript.link_parsed(line_no, obj)
            tally.note(_take(obj, line_no, transcript, collecting))
    records = [] if scan.failed else _records(transcript, final_budget)
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
        tally=tally,
    )


def _records(transcript: _Transcript, budget: ProseBudget) -> list[Record]:
    """The kept messages: on the active branch, a queued prompt once."""
    abandoned = transcript.tree.abandoned_lines()
    tally = transcript.tally
    typed = {t for m in transcript.messages if m.decision == USER and not m.queued for t in m.texts}
    seen_queued: set[str] = set()
    records: list[Record] = []
    for message in transcript.messages:
        text = "\n\n".join(message.texts)
        if message.queued and message.refused:
            pass  # its text is not known: a stand-in, whether or not it was typed too
        elif message.queued:
            if text in typed or text in seen_queued:
                tally.moved(USER, DUPLICATE, 1)
                continue
            seen_queued.add(text)
        elif abandoned and not message.side and all(n in abandoned for n in message.lines):
            tally.moved(message.decision, ABANDONED, 1)
            continue
        if message.refused:
            records.append(budget.stand_in(ROLE_OF[message.decision], message.refused))
            continue
        if not text.strip():
            continue
        record = budget.record(ROLE_OF[message.decision], text, message.created, message.index)
        if record is not None:
            records.append(record)
    return records


def _wanted(line: bytes) -> bool:
    """False when the line shows no prose: tool results (unless they return
    the user's words), tool calls or thinking alone, progress and snapshot
    lines. Given a whole line or a long line's head."""
    head = line[:_HEAD]
    if b'"tool_result"' in head:
        return any(marker in line for marker in _USER_WORDS_IN_RESULT)
    kind = _LINE_TYPE.search(head)
    if kind is not None and kind.group(1) in _NOT_PROSE_TYPES:
        return False
    if b'"type":"text"' in head:
        return True
    return b'"type":"tool_use"' not in head and b'"type":"thinking"' not in head


def _decision_from_head(head: bytes) -> str:
    if b'"tool_result"' in head or b'"type":"tool_use"' in head:
        return TOOL_IO
    if b'"type":"thinking"' in head or b'"type":"redacted_thinking"' in head:
        return REASONING
    kind = _LINE_TYPE.search(head)
    if kind is None:
        return UNKNOWN
    name = kind.group(1).decode()
    if name == "progress":
        return TOOL_IO
    if name == "system":
        return INJECTED
    return METADATA if name in _METADATA_TYPES else UNKNOWN


def _take(obj: dict[str, Any], line_no: int, transcript: _Transcript, budget: ProseBudget) -> str:
    """Read one parsed line into the transcript; its decision."""
    kind = obj.get("type")
    if kind == "queue-operation":
        content = obj.get("content")
        if obj.get("operation") == "enqueue" and isinstance(content, str) and content.strip():
            transcript.add_message(USER, obj.get("timestamp"), line_no, [content], budget, queued=True)
            return USER
        return METADATA
    if kind == "attachment":
        return _attachment(obj, line_no, transcript, budget)
    if kind in _METADATA_TYPES:
        return METADATA
    if kind == "system":
        return INJECTED
    if kind == "progress":
        return TOOL_IO
    if kind not in ("user", "assistant"):
        return UNKNOWN
    transcript.note_identity(obj)
    if any(obj.get(flag) is True for flag in _INJECTED_FLAGS):
        return INJECTED
    message = obj.get("message")
    if not isinstance(message, dict):
        return UNKNOWN
    by_agent = transcript.subagent or obj.get("isSidechain") is True
    if kind == "assistant":
        return _assistant(obj, message, line_no, transcript, budget)
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list):
        return UNKNOWN
    texts: list[str] = []
    decision = ""
    for block in blocks:
        part = _user_block(block)
        if isinstance(part, str):
            texts.append(part)
        elif not decision:
            decision = part[0]
    if texts:
        kept = AGENT if by_agent else USER
        transcript.add_message(kept, obj.get("timestamp"), line_no, texts, budget, side=obj.get("isSidechain") is True)
        return kept
    return decision or INJECTED


def _user_block(block: Any) -> str | tuple[str]:
    """A user content block: its prose, or ``(decision,)`` when it has none."""
    if not isinstance(block, dict):
        return (UNKNOWN,)
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        prose = _user_prose(text) if isinstance(text, str) else ""
        return prose if prose else (INJECTED,)
    if kind == "tool_result":
        words = _user_words_in_result(block.get("content"))
        return words if words else (TOOL_IO,)
    if kind in ("image", "document"):
        return (METADATA,)
    return (UNKNOWN,)


def _assistant(
    obj: dict[str, Any], message: dict[str, Any], line_no: int, transcript: _Transcript, budget: ProseBudget
) -> str:
    if message.get("model") == "<synthetic>":
        return INJECTED
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list):
        return UNKNOWN
    texts: list[str] = []
    decision = ""
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str) and block["text"].strip():
            texts.append(block["text"])
        elif not decision:
            decision = {"thinking": REASONING, "redacted_thinking": REASONING, "tool_use": TOOL_IO}.get(
                kind or "", UNKNOWN
            )
    if not texts:
        return decision or METADATA
    api_id = message.get("id")
    target = transcript.by_api_id.get(api_id) if isinstance(api_id, str) else None
    known = target.texts if target is not None else ()
    kept: list[str] = []
    for text in texts:
        if text not in known and text not in kept and budget.admit(text):
            kept.append(text)
    if target is not None:
        target.lines.append(line_no)
    elif kept:
        # (A reply the budget refused whole leaves nothing: no record, and no object per line.)
        target = _Message(ASSISTANT, obj.get("timestamp"), len(transcript.messages), line_no)
        target.side = obj.get("isSidechain") is True
        transcript.messages.append(target)
        if isinstance(api_id, str):
            transcript.by_api_id[api_id] = target
    if target is not None and kept:
        target.texts.extend(kept)
        transcript.stand_in = None
    return ASSISTANT


def _attachment(obj: dict[str, Any], line_no: int, transcript: _Transcript, budget: ProseBudget) -> str:
    """A prompt typed while the agent worked is a ``queued_command`` attachment
    (``commandMode`` ``prompt``, typed by a person); other attachments are
    context the harness adds."""
    attachment = obj.get("attachment")
    if not isinstance(attachment, dict):
        return UNKNOWN
    if attachment.get("type") != "queued_command":
        return INJECTED
    origin = attachment.get("origin")
    human = not isinstance(origin, dict) or origin.get("kind", "human") == "human"
    if attachment.get("commandMode", "prompt") != "prompt" or not human or attachment.get("isMeta") is True:
        return INJECTED
    prompt = attachment.get("prompt")
    if isinstance(prompt, list):
        texts = [b["text"] for b in prompt if isinstance(b, dict) and isinstance(b.get("text"), str)]
    else:
        texts = [prompt] if isinstance(prompt, str) else []
    texts = [p for p in (_user_prose(t) for t in texts) if p]
    if not texts:
        return INJECTED
    decision = AGENT if transcript.subagent else USER
    transcript.add_message(decision, obj.get("timestamp"), line_no, texts, budget, queued=decision == USER, side=True)
    return decision


def _user_words_in_result(content: Any) -> str:
    """The user's own words a tool result returns: a rejection's reason, or
    the answers chosen or typed for the agent's questions."""
    if isinstance(content, list):
        content = "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    if not isinstance(content, str):
        return ""
    if content.startswith(_REJECTED) and (at := content.find(_REJECTION)) >= 0:
        return content[at + len(_REJECTION) :].strip()
    if content.startswith(_ANSWERS):
        answers = [json.loads(f'"{m.group(1)}"') for m in _ANSWER.finditer(content)]
        return "\n".join(a for a in answers if a.strip())
    return ""


def _user_prose(text: str) -> str:
    if "<system-reminder>" in text:
        text = remove_tagged_blocks(text, "system-reminder").strip()
    stripped = text.lstrip()
    if stripped.startswith(("<command-name>", "<command-message>", "<command-args>")):
        return _slash_command(text)
    if stripped.startswith(_HARNESS_PREFIXES):
        return ""
    return text


def _slash_command(text: str) -> str:
    """What the user typed for a slash command: ``/name args``."""
    name = _COMMAND_NAME.search(text)
    args = _COMMAND_ARGS.search(text)
    arg_text = args.group(1).strip() if args else ""
    if not arg_text:
        return ""  # a bare command (/clear, /compact) is no prose
    command = name.group(1).strip() if name else ""
    return f"{command} {arg_text}".strip()
