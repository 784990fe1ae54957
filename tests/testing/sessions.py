"""Builders that write realistic agent session stores for tests and benchmarks.

Each builder writes the agent's real on-disk format (see
``reference/session-formats.md``): compact JSON lines as the agents write
them, tool calls and tool output interleaved with the prose, so a parser is
tested against what it will meet. A conversation is a list of :class:`Msg`;
the per-agent builders also take raw entries for the odd cases (branches,
injected blocks, malformed lines).

Layouts and builders (``home`` is the hermetic ``$HOME`` of a test):

- OMP (:class:`OmpSession`, :func:`write_omp_session`, :func:`write_omp_advisor`):
  ``<sessions>/<dir-name>/<ts>_<session-id>.jsonl``; advisor transcripts in
  ``<sessions>/<dir-name>/<ts>_<session-id>/__advisor.jsonl``. Default root
  ``home/.omp/agent/sessions``.
- Codex (:class:`CodexSession`, :func:`write_codex_session`,
  :func:`write_codex_history`): ``<codex>/sessions/YYYY/MM/DD/rollout-<ts>-<id>.jsonl``,
  ``<codex>/archived_sessions/``, ``<codex>/history.jsonl``. Default ``home/.codex``.
- OpenCode (:class:`OpenCodeDb`, :func:`write_opencode_storage`,
  :func:`write_opencode_prompt_history`): ``<data>/opencode/opencode.db`` (drizzle
  schema), the legacy ``<data>/opencode/storage/`` tree, and
  ``<state>/opencode/prompt-history.jsonl``.
- Claude Code (:class:`ClaudeSession`, :func:`write_claude_session`):
  ``<claude>/projects/<encoded cwd>/<session>.jsonl`` and
  ``…/<session>/subagents/agent-<id>.jsonl``. Default ``home/.claude``.
- Hindsight (:class:`HindsightServer`): a real HTTP server on 127.0.0.1 in a
  thread, serving memories with paging, or any handler (500, hang, garbage).
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.testing.gitrepo import write

START = datetime(2026, 3, 1, 9, 0, 0, tzinfo=UTC)
DEFAULT_CWD = "/home/alice/work/project"


@dataclass(frozen=True)
class Msg:
    """One turn of a conversation.

    ``thinking`` is reasoning written with an assistant turn; ``tool`` is a
    tool call ``(command, output)`` the assistant makes after its text, whose
    output the harness records as a tool result.
    """

    role: str  # "user" | "assistant"
    text: str
    thinking: str = ""
    tool: tuple[str, str] | None = None


def user(text: str) -> Msg:
    return Msg("user", text)


def assistant(text: str, *, thinking: str = "", tool: tuple[str, str] | None = None) -> Msg:
    return Msg("assistant", text, thinking=thinking, tool=tool)


def log_paste(lines: int) -> str:
    """A server log as users paste it into a prompt (one request per line)."""
    return "\n".join(
        f"2026-03-01T09:{i // 60 % 60:02d}:{i % 60:02d}.{i % 1000:03d}Z INFO api.request "
        f"method=GET path=/v1/orders/{i * 7919 % 100_000} status={200 if i % 17 else 503} ms={i * 31 % 900}"
        for i in range(lines)
    )


def dumps(obj: Any) -> str:
    """Compact JSON, as the agents (JavaScript and Rust) write it."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def write_lines(path: Path, lines: Iterable[str], *, final_newline: bool = True) -> Path:
    text = "\n".join(lines)
    return write(path, text + "\n" if final_newline and text else text)


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def age(path: Path, seconds: float = 3600) -> Path:
    """Move ``path``'s mtime ``seconds`` into the past: older than any racy-mtime window, so
    ingest trusts its (size, mtime, inode) version on every run alike."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - int(seconds * 1e9)))
    return path


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def millis(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


class _Clock:
    def __init__(self, start: datetime) -> None:
        self.now = start

    def tick(self) -> datetime:
        self.now += timedelta(seconds=7)
        return self.now


class _Conversation:
    """Writes a list of :class:`Msg` through the builder's ``user``/``assistant``."""

    def user(self, text: str) -> Any:
        raise NotImplementedError

    def assistant(self, text: str, *, thinking: str = "", tool: tuple[str, str] | None = None) -> Any:
        raise NotImplementedError

    def add(self, messages: Iterable[Msg]) -> Any:
        for msg in messages:
            if msg.role == "user":
                self.user(msg.text)
            else:
                self.assistant(msg.text, thinking=msg.thinking, tool=msg.tool)
        return self


# --------------------------------------------------------------------- OMP

_LAST = object()


class OmpSession(_Conversation):
    """An oh-my-pi session: title slot, header, then a tree of entries.

    Every ``user``/``assistant``/``tool_result``/``entry`` call appends one
    entry whose parent is the previous entry (``parent=...`` to branch) and
    returns its id. ``version=1`` writes the linear v1 format (no ids).
    """

    def __init__(
        self,
        *,
        session_id: str | None = None,
        cwd: str = DEFAULT_CWD,
        started: datetime = START,
        version: int = 3,
        seed: int = 0,
        title: str | None = "Fix the build",
    ) -> None:
        self._rng = random.Random(seed)
        self.session_id = session_id or self._uuid()
        self.cwd = cwd
        self.started = started
        self.version = version
        self.title = title
        self._clock = _Clock(started)
        self._entries: list[dict[str, Any]] = []
        self._last: str | None = None

    def _uuid(self) -> str:
        return "019f" + _hex(self._rng, 28)

    def _id(self) -> str:
        return _hex(self._rng, 8)

    def entry(self, body: dict[str, Any], *, parent: Any = _LAST) -> str:
        moment = self._clock.tick()
        entry: dict[str, Any] = {"type": body.pop("type", "message")}
        entry_id = self._id()
        if self.version >= 2:
            entry["id"] = entry_id
            entry["parentId"] = self._last if parent is _LAST else parent
        entry["timestamp"] = iso(moment)
        entry.update(body)
        self._entries.append(entry)
        self._last = entry_id
        return entry_id

    def _message(self, message: dict[str, Any], parent: Any) -> str:
        message.setdefault("timestamp", millis(self._clock.now + timedelta(seconds=7)))
        return self.entry({"type": "message", "message": message}, parent=parent)

    def user(self, text: str, *, as_string: bool = False, parent: Any = _LAST, **extra: Any) -> str:
        content: Any = text if as_string else [{"type": "text", "text": text}]
        return self._message({"role": "user", "content": content, **extra}, parent)

    def assistant(
        self,
        text: str,
        *,
        thinking: str = "",
        tool: tuple[str, str] | None = None,
        parent: Any = _LAST,
    ) -> str:
        content: list[dict[str, Any]] = []
        if thinking:
            content.append({"type": "thinking", "thinking": thinking, "thinkingSignature": "sig"})
        if text:
            content.append({"type": "text", "text": text})
        call_id = f"toolu_{self._id()}"
        if tool:
            content.append({"type": "toolCall", "id": call_id, "name": "bash", "arguments": {"command": tool[0]}})
        entry_id = self._message(
            {
                "role": "assistant",
                "content": content,
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": {"input": 1200, "output": 300, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1500},
                "stopReason": "toolUse" if tool else "stop",
            },
            parent,
        )
        if tool:
            entry_id = self.tool_result(tool[1], call_id=call_id)
        return entry_id

    def tool_result(self, output: str, *, call_id: str = "toolu_0", parent: Any = _LAST) -> str:
        return self._message(
            {
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": "bash",
                "content": [{"type": "text", "text": output}],
                "isError": False,
            },
            parent,
        )

    def lines(self) -> list[str]:
        out: list[str] = []
        if self.title is not None and self.version >= 3:
            slot = dumps(
                {
                    "type": "title",
                    "v": 1,
                    "title": self.title,
                    "source": "auto",
                    "updatedAt": iso(self.started),
                    "pad": "",
                }
            )
            out.append(slot[:-2] + " " * max(0, 255 - len(slot.encode())) + '"}')
        header: dict[str, Any] = {"type": "session"}
        if self.version >= 2:
            header["version"] = self.version
        header.update({"id": self.session_id, "timestamp": iso(self.started), "cwd": self.cwd})
        out.append(dumps(header))
        out.extend(dumps(e) for e in self._entries)
        return out

    def file_name(self) -> str:
        return iso(self.started).replace(":", "-").replace(".", "-") + f"_{self.session_id}.jsonl"

    def write(self, root: Path, *, dir_name: str = "-work-project", name: str | None = None) -> Path:
        return write_lines(root / dir_name / (name or self.file_name()), self.lines())


def write_omp_session(root: Path, messages: Iterable[Msg], *, dir_name: str = "-work-project", **kwargs: Any) -> Path:
    """One linear OMP session under the sessions root ``root``."""
    return OmpSession(**kwargs).add(messages).write(root, dir_name=dir_name)


def write_omp_advisor(session_file: Path, messages: Iterable[Msg], *, name: str = "__advisor.jsonl") -> Path:
    """The watchdog's transcript in the session's artifacts dir."""
    session = OmpSession(title="Advisor", seed=99).add(messages)
    return write_lines(session_file.with_suffix("") / name, session.lines())


# ------------------------------------------------------------------- Codex

ENVIRONMENT_CONTEXT = (
    "<environment_context>\n  <cwd>{cwd}</cwd>\n  <approval_policy>on-request</approval_policy>\n"
    "  <sandbox_mode>workspace-write</sandbox_mode>\n  <shell>bash</shell>\n</environment_context>"
)
AGENTS_MD = (
    "# AGENTS.md instructions for {cwd}\n\n<INSTRUCTIONS>\nAlways run the tests before committing.\n</INSTRUCTIONS>"
)
PERMISSIONS = "<permissions instructions>\nFilesystem sandboxing: workspace-write.\n</permissions instructions>"


class CodexSession(_Conversation):
    """A Codex CLI rollout (`{timestamp,type,payload}` envelope, 2025–2026 builds).

    The first user turn is preceded by what the harness injects: a developer
    message with permissions, a user message with AGENTS.md instructions and
    one with the environment context. Each user prompt is also written as an
    ``event_msg``/``user_message`` (a UI copy), each reply is preceded by a
    reasoning item, and tool calls come as function_call/function_call_output.
    ``id_field`` is where the session id goes in ``session_meta``.
    """

    def __init__(
        self,
        *,
        session_id: str | None = None,
        cwd: str = DEFAULT_CWD,
        started: datetime = START,
        id_field: str = "id",
        seed: int = 0,
        inject: bool = True,
    ) -> None:
        rng = random.Random(seed)
        self.session_id = session_id or "0199" + _hex(rng, 28)
        self.cwd = cwd
        self.started = started
        self._clock = _Clock(started)
        self._lines: list[str] = []
        self._calls = 0
        meta: dict[str, Any] = {
            id_field: self.session_id,
            "timestamp": iso(started),
            "cwd": cwd,
            "originator": "codex_cli_rs",
            "cli_version": "0.48.0",
            "source": "cli",
            "model_provider": "openai",
            "base_instructions": {"text": "You are Codex, a coding agent. " * 40},
            "git": {"commit_hash": "3f2c1a9b7d", "branch": "main", "repository_url": "git@example.com:team/app.git"},
        }
        self._emit("session_meta", meta)
        if inject:
            self.message("developer", PERMISSIONS)
            self.message("user", AGENTS_MD.format(cwd=cwd))
            self.message("user", ENVIRONMENT_CONTEXT.format(cwd=cwd))

    def _emit(self, kind: str, payload: dict[str, Any]) -> None:
        self._lines.append(dumps({"timestamp": iso(self._clock.tick()), "type": kind, "payload": payload}))

    def message(self, role: str, *texts: str) -> None:
        kind = "output_text" if role == "assistant" else "input_text"
        content = [{"type": kind, "text": t} for t in texts]
        self._emit("response_item", {"type": "message", "role": role, "content": content})

    def raw(self, line: str) -> None:
        self._lines.append(line)

    def user(self, text: str) -> None:
        self._emit(
            "turn_context",
            {"cwd": self.cwd, "approval_policy": "on-request", "model": "gpt-5-codex", "summary": "auto"},
        )
        self.message("user", text)
        self._emit("event_msg", {"type": "user_message", "message": text, "images": []})

    def assistant(self, text: str, *, thinking: str = "", tool: tuple[str, str] | None = None) -> None:
        self._emit(
            "response_item",
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": thinking}] if thinking else [],
                "content": None,
                "encrypted_content": "gAAAAB" + "x" * 64,
            },
        )
        if tool:
            self._calls += 1
            call_id = f"call_{self._calls:04d}"
            self._emit(
                "response_item",
                {
                    "type": "function_call",
                    "name": "shell",
                    "arguments": dumps({"command": ["bash", "-lc", tool[0]]}),
                    "call_id": call_id,
                },
            )
            self._emit(
                "response_item",
                {
                    "type": "function_call_output",
                    "call_id": call_id,
                    "output": dumps({"output": tool[1], "metadata": {"exit_code": 0, "duration_seconds": 0.2}}),
                },
            )
        if text:
            self.message("assistant", text)
            self._emit("event_msg", {"type": "agent_message", "message": text})
        self._emit("event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 900}}})

    def lines(self) -> list[str]:
        return list(self._lines)

    def write(self, codex_home: Path, *, archived: bool = False) -> Path:
        stamp = iso(self.started)[:19].replace(":", "-")
        name = f"rollout-{stamp}-{self.session_id}.jsonl"
        if archived:
            path = codex_home / "archived_sessions" / name
        else:
            path = codex_home / "sessions" / stamp[:4] / stamp[5:7] / stamp[8:10] / name
        return write_lines(path, self._lines)


def write_codex_session(codex_home: Path, messages: Iterable[Msg], *, archived: bool = False, **kwargs: Any) -> Path:
    return CodexSession(**kwargs).add(messages).write(codex_home, archived=archived)


def write_codex_history(codex_home: Path, prompts: Iterable[str], *, session_id: str = "0199-hist") -> Path:
    """``$CODEX_HOME/history.jsonl``: one line per submitted prompt (epoch seconds)."""
    start = int(START.timestamp())
    return write_lines(
        codex_home / "history.jsonl",
        [dumps({"session_id": session_id, "ts": start + i, "text": p}) for i, p in enumerate(prompts)],
    )


# ---------------------------------------------------------------- OpenCode

OPENCODE_SCHEMA = """
CREATE TABLE IF NOT EXISTS project (
  id text PRIMARY KEY, worktree text NOT NULL, vcs text, name text,
  time_created integer NOT NULL, time_updated integer NOT NULL, time_initialized integer,
  sandboxes text NOT NULL DEFAULT '[]');
CREATE TABLE IF NOT EXISTS session (
  id text PRIMARY KEY, project_id text NOT NULL REFERENCES project(id) ON DELETE CASCADE,
  parent_id text, slug text NOT NULL, directory text NOT NULL, title text NOT NULL,
  version text NOT NULL, share_url text, summary_additions integer, summary_deletions integer,
  summary_files integer, summary_diffs text, revert text, permission text,
  time_created integer NOT NULL, time_updated integer NOT NULL,
  time_compacting integer, time_archived integer);
CREATE TABLE IF NOT EXISTS message (
  id text PRIMARY KEY, session_id text NOT NULL REFERENCES session(id) ON DELETE CASCADE,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE IF NOT EXISTS part (
  id text PRIMARY KEY, message_id text NOT NULL REFERENCES message(id) ON DELETE CASCADE,
  session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL,
  data text NOT NULL);
CREATE INDEX IF NOT EXISTS message_session_idx ON message (session_id);
CREATE INDEX IF NOT EXISTS part_message_idx ON part (message_id);
CREATE INDEX IF NOT EXISTS part_session_idx ON part (session_id);
"""

_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


class _OpenCodeIds:
    """`ses_`/`msg_`/`prt_` + 12 hex of (ms × 4096 + counter) + 14 base62, ascending."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self._counter = 0

    def new(self, prefix: str, ms: int) -> str:
        self._counter += 1
        stamp = f"{(ms * 4096 + self._counter) & (16**12 - 1):012x}"
        return f"{prefix}_{stamp}" + "".join(self._rng.choice(_BASE62) for _ in range(14))


@dataclass
class _OpenCodeRow:
    table: str
    values: dict[str, Any]


class _OpenCodeConversation(_Conversation):
    """Turns a conversation into OpenCode session/message/part rows (the same
    objects the SQLite DB stores as ``data`` and the legacy tree as files)."""

    def __init__(self, ids: _OpenCodeIds, session_id: str, directory: str, started: datetime) -> None:
        self.ids = ids
        self.session_id = session_id
        self.directory = directory
        self.clock = _Clock(started)
        self.rows: list[_OpenCodeRow] = []
        self._last_user = ""

    def _message(self, data: dict[str, Any]) -> tuple[str, int]:
        ms = millis(self.clock.tick())
        data.setdefault("time", {"created": ms})
        message_id = self.ids.new("msg", ms)
        self.rows.append(
            _OpenCodeRow(
                "message",
                {
                    "id": message_id,
                    "session_id": self.session_id,
                    "time_created": ms,
                    "time_updated": ms,
                    "data": data,
                },
            )
        )
        return message_id, ms

    def part(self, message_id: str, data: dict[str, Any]) -> str:
        ms = millis(self.clock.tick())
        part_id = self.ids.new("prt", ms)
        self.rows.append(
            _OpenCodeRow(
                "part",
                {
                    "id": part_id,
                    "message_id": message_id,
                    "session_id": self.session_id,
                    "time_created": ms,
                    "time_updated": ms,
                    "data": data,
                },
            )
        )
        return part_id

    def user(self, text: str, *, synthetic: str = "") -> str:
        message_id, ms = self._message(
            {
                "role": "user",
                "agent": "build",
                "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"},
            }
        )
        self._last_user = message_id
        self.part(message_id, {"type": "text", "text": text, "time": {"start": ms, "end": ms}})
        if synthetic:
            self.part(message_id, {"type": "text", "text": synthetic, "synthetic": True})
        return message_id

    def assistant(self, text: str, *, thinking: str = "", tool: tuple[str, str] | None = None) -> str:
        message_id, ms = self._message(
            {
                "role": "assistant",
                "parentID": self._last_user,
                "modelID": "claude-sonnet-4-5",
                "providerID": "anthropic",
                "mode": "build",
                "agent": "build",
                "path": {"cwd": self.directory, "root": self.directory},
                "cost": 0.0123,
                "tokens": {"input": 1200, "output": 300, "reasoning": 0, "cache": {"read": 0, "write": 0}},
                "finish": "stop",
            }
        )
        self.part(message_id, {"type": "step-start", "snapshot": "4b825dc642cb6eb9a060e54bf8d69288fbee4904"})
        if thinking:
            self.part(message_id, {"type": "reasoning", "text": thinking, "time": {"start": ms, "end": ms}})
        if text:
            self.part(message_id, {"type": "text", "text": text, "time": {"start": ms, "end": ms}})
        if tool:
            self.part(
                message_id,
                {
                    "type": "tool",
                    "callID": "toolu_01",
                    "tool": "bash",
                    "state": {
                        "status": "completed",
                        "input": {"command": tool[0]},
                        "output": tool[1],
                        "title": tool[0],
                        "metadata": {"exit": 0},
                        "time": {"start": ms, "end": ms},
                    },
                },
            )
        self.part(
            message_id,
            {"type": "step-finish", "reason": "stop", "cost": 0.0123, "tokens": {"input": 1200, "output": 300}},
        )
        return message_id


class OpenCodeDb:
    """An OpenCode ``opencode.db`` (drizzle schema of v1.2+), WAL mode by default."""

    def __init__(self, path: Path, *, wal: bool = True, seed: int = 0) -> None:
        import sqlite3

        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.ids = _OpenCodeIds(seed)
        self.conn = sqlite3.connect(path)
        if wal:
            self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.executescript(OPENCODE_SCHEMA)
        self.conn.execute(
            "INSERT OR IGNORE INTO project (id, worktree, vcs, time_created, time_updated) VALUES (?,?,?,?,?)",
            ("global", "/", None, millis(START), millis(START)),
        )
        self.conn.commit()

    def session(
        self,
        messages: Iterable[Msg] = (),
        *,
        session_id: str | None = None,
        directory: str = DEFAULT_CWD,
        started: datetime = START,
        title: str = "Fix the build",
    ) -> _OpenCodeConversation:
        """Add a session with ``messages``; returns its builder for more turns (then ``flush``)."""
        sid = session_id or self.ids.new("ses", millis(started))
        conversation = _OpenCodeConversation(self.ids, sid, directory, started)
        ms = millis(started)
        self.conn.execute(
            "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated)"
            " VALUES (?,?,?,?,?,?,?,?)",
            (sid, "global", "brave-otter", directory, title, "1.2.10", ms, ms),
        )
        conversation.add(messages)
        self.flush(conversation)
        return conversation

    def flush(self, conversation: _OpenCodeConversation) -> None:
        for row in conversation.rows:
            values = dict(row.values, data=dumps({k: v for k, v in row.values["data"].items()}))
            columns = ", ".join(values)
            marks = ", ".join("?" for _ in values)
            self.conn.execute(f"INSERT INTO {row.table} ({columns}) VALUES ({marks})", tuple(values.values()))
        conversation.rows.clear()
        self.conn.execute(
            "UPDATE session SET time_updated = ? WHERE id = ?",
            (millis(conversation.clock.now), conversation.session_id),
        )
        self.conn.commit()

    def close(self) -> None:
        self.conn.close()


def write_opencode_storage(
    data_dir: Path,
    messages: Iterable[Msg],
    *,
    session_id: str,
    directory: str = DEFAULT_CWD,
    project_id: str = "global",
    started: datetime = START,
    seed: int = 1,
) -> Path:
    """The legacy (≤ v1.1) JSON tree under ``<data_dir>/storage``; returns the session file."""
    storage = data_dir / "storage"
    conversation = _OpenCodeConversation(_OpenCodeIds(seed), session_id, directory, started)
    conversation.add(messages)
    ms = millis(started)
    session_file = storage / "session" / project_id / f"{session_id}.json"
    write_lines(
        session_file,
        [
            dumps(
                {
                    "id": session_id,
                    "slug": "calm-heron",
                    "projectID": project_id,
                    "directory": directory,
                    "title": "Legacy session",
                    "version": "1.1.4",
                    "time": {"created": ms, "updated": millis(conversation.clock.now)},
                }
            )
        ],
    )
    for row in conversation.rows:
        values = row.values
        if row.table == "message":
            body = {"id": values["id"], "sessionID": session_id, **values["data"]}
            write_lines(storage / "message" / session_id / f"{values['id']}.json", [dumps(body)])
        else:
            body = {"id": values["id"], "sessionID": session_id, "messageID": values["message_id"], **values["data"]}
            write_lines(storage / "part" / values["message_id"] / f"{values['id']}.json", [dumps(body)])
    return session_file


def write_opencode_prompt_history(path: Path, prompts: Iterable[str]) -> Path:
    """``$XDG_STATE_HOME/opencode/prompt-history.jsonl``: PromptInfo lines ``{input, parts, mode}``."""
    return write_lines(path, [dumps({"input": p, "parts": [], "mode": "normal"}) for p in prompts])


# ------------------------------------------------------------- Claude Code


def claude_project_dir(cwd: str) -> str:
    """Claude Code's encoding of a cwd: every non-alphanumeric character → ``-``."""
    return "".join(c if c.isalnum() else "-" for c in cwd)


class ClaudeSession(_Conversation):
    """A Claude Code transcript: ``<claude>/projects/<encoded cwd>/<session>.jsonl``.

    Assistant API messages are split one content block per line, the lines
    sharing ``message.id`` (thinking, text, tool_use); tool results come back
    as ``user`` lines with ``tool_result`` blocks; the harness adds meta
    lines, file-history snapshots and a summary line.
    """

    def __init__(
        self,
        *,
        session_id: str | None = None,
        cwd: str = DEFAULT_CWD,
        started: datetime = START,
        seed: int = 0,
        agent_id: str | None = None,
    ) -> None:
        self._rng = random.Random(seed)
        self.session_id = session_id or self._uuid()
        self.cwd = cwd
        self.agent_id = agent_id
        self._clock = _Clock(started)
        self._lines: list[str] = []
        self._last: str | None = None
        self._messages = 0

    def _uuid(self) -> str:
        h = _hex(self._rng, 32)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"

    def line(self, kind: str, message: dict[str, Any] | None = None, **extra: Any) -> str:
        entry_id = self._uuid()
        body: dict[str, Any] = {
            "parentUuid": self._last,
            "isSidechain": self.agent_id is not None,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": "2.1.3",
            "gitBranch": "main",
        }
        if self.agent_id is not None:
            body["agentId"] = self.agent_id
        body["type"] = kind
        if message is not None:
            body["message"] = message
        body.update(extra)
        body["uuid"] = entry_id
        body["timestamp"] = iso(self._clock.tick())
        self._lines.append(dumps(body))
        self._last = entry_id
        return entry_id

    def raw(self, line: str) -> None:
        self._lines.append(line)

    def user(self, text: str, **extra: Any) -> str:
        return self.line("user", {"role": "user", "content": text}, **extra)

    def meta(self, text: str) -> str:
        return self.user(text, isMeta=True)

    def assistant(self, text: str, *, thinking: str = "", tool: tuple[str, str] | None = None) -> str:
        self._messages += 1
        message_id = f"msg_01{self._messages:04d}" + "".join(self._rng.choice("ABCDEFGHJK") for _ in range(16))
        blocks: list[dict[str, Any]] = []
        if thinking:
            blocks.append({"type": "thinking", "thinking": thinking, "signature": "EqQB" + "s" * 40})
        if text:
            blocks.append({"type": "text", "text": text})
        tool_id = f"toolu_01{self._messages:04d}"
        if tool:
            blocks.append({"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": tool[0]}})
        last = ""
        for block in blocks:
            last = self.line(
                "assistant",
                {
                    "model": "claude-sonnet-4-5-20250929",
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "content": [block],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": 4,
                        "cache_creation_input_tokens": 1200,
                        "cache_read_input_tokens": 0,
                        "output_tokens": 300,
                    },
                },
                requestId=f"req_011C{self._messages:04d}",
            )
        if tool:
            last = self.line(
                "user",
                {
                    "role": "user",
                    "content": [{"tool_use_id": tool_id, "type": "tool_result", "content": tool[1], "is_error": False}],
                },
                toolUseResult={"stdout": tool[1], "stderr": "", "interrupted": False, "isImage": False},
            )
        return last

    def lines(self) -> list[str]:
        return list(self._lines)

    def write(self, claude_dir: Path) -> Path:
        project = claude_dir / "projects" / claude_project_dir(self.cwd)
        lines = [dumps({"type": "summary", "summary": "Fixing the build", "leafUuid": self._last}), *self._lines]
        if self.agent_id is None:
            lines.append(
                dumps(
                    {
                        "type": "file-history-snapshot",
                        "messageId": self._last,
                        "snapshot": {"trackedFileBackups": {}},
                        "isSnapshotUpdate": False,
                    }
                )
            )
            return write_lines(project / f"{self.session_id}.jsonl", lines)
        return write_lines(project / self.session_id / "subagents" / f"agent-{self.agent_id}.jsonl", self._lines)


def write_claude_session(claude_dir: Path, messages: Iterable[Msg], **kwargs: Any) -> Path:
    return ClaudeSession(**kwargs).add(messages).write(claude_dir)


# --------------------------------------------------------------- Hindsight


def send_body(handler: Any, body: bytes, status: int = 200) -> None:
    """``body`` as an ``application/json`` answer, whether or not it parses."""
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def send_json(handler: Any, value: Any, status: int = 200) -> None:
    send_body(handler, json.dumps(value).encode(), status)


def hindsight_memory_api(memories: dict[str, list[dict[str, Any]]]) -> Any:
    """A request handler serving ``memories`` (bank id → items) as the real API
    does: ``/v1/default/banks`` and ``…/banks/<id>/memories/list?limit=&offset=``."""
    from urllib.parse import parse_qs, unquote, urlparse

    def handle(handler: Any) -> None:
        url = urlparse(handler.path)
        parts = url.path.split("/")
        if url.path.endswith("/v1/default/banks"):
            send_json(handler, {"banks": [{"bank_id": b, "name": b} for b in memories]})
            return
        if len(parts) < 3 or parts[-2:] != ["memories", "list"]:
            send_json(handler, {"detail": "not found"}, status=404)
            return
        bank = unquote(parts[-3])
        query = parse_qs(url.query)
        limit, offset = int(query.get("limit", ["100"])[0]), int(query.get("offset", ["0"])[0])
        items = memories.get(bank, [])
        send_json(
            handler, {"items": items[offset : offset + limit], "total": len(items), "limit": limit, "offset": offset}
        )

    return handle


class HindsightServer:
    """A Hindsight API on 127.0.0.1 in a thread: ``with HindsightServer(...) as server``.

    ``memories`` maps bank ids to memory items, served with paging as the real
    API does; ``handler`` replaces that with any behaviour (an error status,
    a hang, garbage). ``requests`` records each request's path and headers.
    """

    def __init__(
        self,
        memories: dict[str, list[dict[str, Any]]] | None = None,
        *,
        handler: Any = None,
    ) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.memories = memories or {}
        self.requests: list[tuple[str, dict[str, str]]] = []
        handle = handler or hindsight_memory_api(self.memories)
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                outer.requests.append((self.path, dict(self.headers)))
                handle(self)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> HindsightServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
