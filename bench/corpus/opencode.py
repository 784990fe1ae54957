"""OpenCode store: `opencode.db` (drizzle schema of v1.2+: project/session/message/part/…),
a few legacy `storage/` JSON sessions, and the TUI prompt history.

Message rows hold the message info as JSON `data`; the text lives in part
rows (`text`, `reasoning`, `tool` with its state and output, `step-start`,
`step-finish`, `patch`, synthetic file text). Ids follow OpenCode's scheme:
prefix + 12 hex of (ms·4096 + counter) + 14 base62, with session ids
bit-inverted so the newest sorts first.
"""

from __future__ import annotations

import json
import random
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from corpus.common import MIN_SESSION, base62, dumps, fixed_mtime, new_context, session_size, write_lines
from corpus.content import Content
from corpus.model import SessionContext, ToolCall
from corpus.vocab import ADJECTIVES, MODELS, NOUNS

SCHEMA = """
CREATE TABLE `project` (
  `id` text PRIMARY KEY, `worktree` text NOT NULL, `vcs` text, `name` text, `icon_url` text, `icon_color` text,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `time_initialized` integer, `sandboxes` text NOT NULL
);
CREATE TABLE `session` (
  `id` text PRIMARY KEY, `project_id` text NOT NULL, `parent_id` text, `slug` text NOT NULL, `directory` text NOT NULL,
  `title` text NOT NULL, `version` text NOT NULL, `share_url` text, `summary_additions` integer, `summary_deletions` integer,
  `summary_files` integer, `summary_diffs` text, `revert` text, `permission` text, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `time_compacting` integer, `time_archived` integer,
  CONSTRAINT `fk_session_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE CASCADE
);
CREATE TABLE `message` (
  `id` text PRIMARY KEY, `session_id` text NOT NULL, `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
  `data` text NOT NULL,
  CONSTRAINT `fk_message_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
);
CREATE TABLE `part` (
  `id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `data` text NOT NULL,
  CONSTRAINT `fk_part_message_id_message_id_fk` FOREIGN KEY (`message_id`) REFERENCES `message`(`id`) ON DELETE CASCADE
);
CREATE TABLE `permission` (
  `project_id` text PRIMARY KEY, `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL,
  CONSTRAINT `fk_permission_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE CASCADE
);
CREATE TABLE `todo` (
  `session_id` text NOT NULL, `content` text NOT NULL, `status` text NOT NULL, `priority` text NOT NULL,
  `position` integer NOT NULL, `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
  CONSTRAINT `todo_pk` PRIMARY KEY(`session_id`, `position`),
  CONSTRAINT `fk_todo_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
);
CREATE TABLE `session_share` (
  `session_id` text PRIMARY KEY, `id` text NOT NULL, `secret` text NOT NULL, `url` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
  CONSTRAINT `fk_session_share_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
);
CREATE INDEX `message_session_idx` ON `message` (`session_id`);
CREATE INDEX `part_message_idx` ON `part` (`message_id`);
CREATE INDEX `part_session_idx` ON `part` (`session_id`);
CREATE INDEX `session_project_idx` ON `session` (`project_id`);
CREATE INDEX `session_parent_idx` ON `session` (`parent_id`);
CREATE INDEX `todo_session_idx` ON `todo` (`session_id`);
CREATE TABLE `__drizzle_migrations` (`id` integer PRIMARY KEY, `hash` text NOT NULL, `created_at` numeric);
"""

TOOL_NAMES = {"read": "read", "bash": "bash", "grep": "grep", "edit": "edit", "write": "write", "glob": "glob"}
LEGACY_SESSIONS = 3  # sessions also (or only) written to the frozen storage/ tree
PROMPT_HISTORY_MAX = 50


class _Ids:
    """OpenCode identifiers; a per-store counter keeps ids unique within one millisecond."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.last_ms = 0
        self.counter = 0

    def make(self, prefix: str, ms: int, descending: bool = False) -> str:
        if ms != self.last_ms:
            self.last_ms, self.counter = ms, 0
        self.counter += 1
        now = ms * 0x1000 + self.counter
        if descending:
            now = ~now & ((1 << 48) - 1)
        return f"{prefix}_{now & ((1 << 48) - 1):012x}{base62(self.rng, 14)}"


def _tool_state(call: ToolCall, ctx: SessionContext) -> dict[str, object]:
    a = call.args
    if call.kind == "read":
        inp: dict[str, object] = {"filePath": f"{ctx.cwd}/{a['path']}"}
        out = f"<file>\n{call.output}\n</file>"
    elif call.kind == "bash":
        inp, out = {"command": a["command"], "description": "Run " + a["command"].split(" ")[0]}, call.output
    elif call.kind == "grep":
        inp, out = {"pattern": a["pattern"], "path": a["path"]}, call.output
    elif call.kind == "edit":
        inp, out = {"filePath": f"{ctx.cwd}/{a['path']}", "oldString": a["old"], "newString": a["new"]}, call.output
    elif call.kind == "write":
        inp, out = {"filePath": f"{ctx.cwd}/{a['path']}", "content": a["content"]}, call.output
    else:
        inp, out = {"pattern": a["pattern"]}, call.output
    state: dict[str, object] = {
        "status": "error" if call.is_error and call.kind == "edit" else "completed",
        "input": inp,
    }
    if state["status"] == "error":
        state["error"] = out
    else:
        state.update(
            output=out,
            title=str(inp.get("filePath") or inp.get("command") or inp.get("pattern")),
            metadata={"preview": out[:200], "truncated": False},
        )
    state["time"] = {"start": call.started_ms, "end": call.ended_ms}
    return state


class _Session:
    """Collects the message and part rows of one session."""

    def __init__(self, ids: _Ids, sid: str) -> None:
        self.ids, self.sid = ids, sid
        self.messages: list[tuple[str, str, int, int, str]] = []
        self.parts: list[tuple[str, str, str, int, int, str]] = []
        self.size = 0

    def message(self, ms: int, data: dict[str, object]) -> str:
        mid = self.ids.make("msg", ms)
        blob = dumps(data)
        self.messages.append((mid, self.sid, ms, ms, blob))
        self.size += len(blob) + 80
        return mid

    def part(self, mid: str, ms: int, data: dict[str, object]) -> None:
        blob = dumps(data)
        self.parts.append((self.ids.make("prt", ms), mid, self.sid, ms, ms, blob))
        self.size += len(blob) + 100


def _build(rng: random.Random, content: Content, ids: _Ids, sid: str, ctx: SessionContext, target: int) -> _Session:
    s = _Session(ids, sid)
    model = {"providerID": ctx.provider, "modelID": ctx.model}

    def tokens() -> dict[str, object]:
        return {
            "input": rng.randint(100, 9000),
            "output": rng.randint(50, 3000),
            "reasoning": rng.randint(0, 900),
            "cache": {"read": rng.randint(0, 90_000), "write": rng.randint(0, 4000)},
        }

    while s.size < target:
        turn = content.turn(rng, ctx)
        for role, text in turn.control:
            mid = s.message(
                turn.prompt_ms,
                {"role": role, "time": {"created": turn.prompt_ms}, "agent": "build", "model": model}
                if role == "user"
                else {
                    "role": "assistant",
                    "time": {"created": turn.prompt_ms},
                    "agent": "build",
                    "mode": "build",
                    **model,
                    "path": {"cwd": ctx.cwd, "root": ctx.cwd},
                },
            )
            s.part(mid, turn.prompt_ms, {"type": "text", "text": text})
        user = s.message(
            turn.prompt_ms, {"role": "user", "time": {"created": turn.prompt_ms}, "agent": "build", "model": model}
        )
        s.part(user, turn.prompt_ms, {"type": "text", "text": turn.prompt})
        if turn.steps and turn.steps[0].tools[0].kind == "read" and rng.random() < 0.3:
            # An @file mention: OpenCode injects the file as synthetic text plus a file part.
            call = turn.steps[0].tools[0]
            s.part(
                user,
                turn.prompt_ms,
                {
                    "type": "text",
                    "synthetic": True,
                    "text": f"Called the Read tool with the following input: {dumps({'filePath': ctx.cwd + '/' + call.args['path']})}",
                },
            )
            s.part(user, turn.prompt_ms, {"type": "text", "synthetic": True, "text": call.output})
            s.part(
                user,
                turn.prompt_ms,
                {
                    "type": "file",
                    "mime": "text/plain",
                    "filename": call.args["path"].rsplit("/", 1)[-1],
                    "url": f"file://{ctx.cwd}/{call.args['path']}",
                },
            )
        steps = list(turn.steps)
        for _i, step in enumerate(steps + [None]):
            at = step.at_ms if step else turn.final_ms
            last = step is None
            info: dict[str, object] = {
                "role": "assistant",
                "time": {"created": at, "completed": at + rng.randint(500, 20_000)},
                "parentID": user,
                **model,
                "mode": "build",
                "agent": "build",
                "path": {"cwd": ctx.cwd, "root": ctx.cwd},
                "cost": round(rng.uniform(0, 0.2), 5),
                "tokens": tokens(),
                "finish": "stop" if last else "tool-calls",
            }
            mid = s.message(at, info)
            s.part(mid, at, {"type": "step-start", "snapshot": f"{rng.getrandbits(160):040x}"})
            if step and step.thinking:
                s.part(
                    mid,
                    at,
                    {
                        "type": "reasoning",
                        "text": step.thinking,
                        "metadata": {"anthropic": {"signature": base62(rng, 80)}},
                        "time": {"start": at, "end": at + 2000},
                    },
                )
            if step and step.text:
                s.part(mid, at, {"type": "text", "text": step.text, "time": {"start": at, "end": at + 500}})
            if step:
                for call in step.tools:
                    s.part(
                        mid,
                        call.started_ms,
                        {
                            "type": "tool",
                            "callID": "toolu_01" + base62(rng, 22),
                            "tool": TOOL_NAMES[call.kind],
                            "state": _tool_state(call, ctx),
                        },
                    )
                    if call.kind in ("edit", "write") and not call.is_error:
                        s.part(
                            mid,
                            call.ended_ms,
                            {
                                "type": "patch",
                                "hash": f"{rng.getrandbits(160):040x}",
                                "files": [f"{ctx.cwd}/{call.args['path']}"],
                            },
                        )
            else:
                s.part(mid, at, {"type": "text", "text": turn.final, "time": {"start": at, "end": at + 3000}})
            s.part(
                mid,
                at,
                {
                    "type": "step-finish",
                    "reason": info["finish"],
                    "snapshot": f"{rng.getrandbits(160):040x}",
                    "cost": info["cost"],
                    "tokens": info["tokens"],
                },
            )
    return s


@dataclass(frozen=True)
class _SessionRow:
    sid: str
    project_id: str
    slug: str
    directory: str
    title: str
    version: str
    summary: tuple[int, int, int]  # additions, deletions, files
    created: int
    updated: int

    def values(self) -> tuple[object, ...]:
        """In the `session` table's column order."""
        return (
            self.sid,
            self.project_id,
            None,
            self.slug,
            self.directory,
            self.title,
            self.version,
            None,
            *self.summary,
            None,
            None,
            None,
            self.created,
            self.updated,
            None,
            None,
        )


def _write_legacy(storage: Path, row: _SessionRow, s: _Session) -> int:
    """The pre-1.2 JSON layout: project, session, message and part files carrying their own ids."""
    sid = row.sid
    written = write_lines(
        storage / "session" / row.project_id / f"{sid}.json",
        [
            json.dumps(
                {
                    "id": sid,
                    "slug": row.slug,
                    "version": row.version,
                    "projectID": row.project_id,
                    "directory": row.directory,
                    "parentID": None,
                    "title": row.title,
                    "time": {"created": row.created, "updated": row.updated},
                },
                indent=2,
            )
        ],
        row.updated,
    )
    written += write_lines(
        storage / "project" / f"{row.project_id}.json",
        [
            json.dumps(
                {
                    "id": row.project_id,
                    "worktree": row.directory,
                    "vcs": "git",
                    "time": {"created": row.created, "initialized": row.created},
                },
                indent=2,
            )
        ],
        row.created,
    )
    for mid, _sid, ms, _u, blob in s.messages:
        written += write_lines(
            storage / "message" / sid / f"{mid}.json",
            [json.dumps({"id": mid, "sessionID": sid, **json.loads(blob)}, indent=2)],
            ms,
        )
    for pid, mid, _sid, ms, _u, blob in s.parts:
        written += write_lines(
            storage / "part" / mid / f"{pid}.json",
            [json.dumps({"id": pid, "sessionID": sid, "messageID": mid, **json.loads(blob)}, indent=2)],
            ms,
        )
    return written


def write(out: Path, budget: int, content: Content, seed: int) -> int:
    root = out / "opencode"
    root.mkdir(parents=True, exist_ok=True)
    db_path = root / "opencode.db"
    db_path.unlink(missing_ok=True)
    db = sqlite3.connect(db_path, isolation_level=None)
    db.execute("PRAGMA journal_mode=DELETE")
    db.execute("PRAGMA synchronous=OFF")
    db.executescript(SCHEMA)
    db.execute("BEGIN")
    db.execute(
        "INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)",
        ("20260127222353_familiar_lady_ursula", 1769552633000),
    )
    ids = _Ids(random.Random(f"{seed}/opencode/ids"))
    projects: dict[str, str] = {}
    written = sessions = legacy = legacy_bytes = 0
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    prompts: list[tuple[int, str]] = []
    storage = root / "storage"
    while written < budget:
        rng = random.Random(f"{seed}/opencode/{sessions}")
        target, heavy = session_size(rng, budget - written, content.shape)
        if legacy < LEGACY_SESSIONS:
            # Legacy sessions predate the DB: keep them short so small corpora still hold several DB sessions.
            target, heavy = min(target, max(MIN_SESSION, budget // 40)), False
        ctx = new_context(rng, "anthropic", rng.choice(MODELS["anthropic"] + MODELS["google"]), heavy)
        if ctx.cwd not in projects:
            projects[ctx.cwd] = f"{rng.getrandbits(160):040x}"
            db.execute(
                "INSERT INTO project VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    projects[ctx.cwd],
                    ctx.cwd,
                    "git",
                    None,
                    None,
                    None,
                    ctx.started_ms,
                    ctx.started_ms,
                    ctx.started_ms,
                    "[]",
                ),
            )
        sid = ids.make("ses", ctx.started_ms, descending=True)
        s = _build(rng, content, ids, sid, ctx, target)
        title = ctx.turns[0].prompt.split("\n", 1)[0][:80] if ctx.turns else "New session"
        row = _SessionRow(
            sid,
            projects[ctx.cwd],
            f"{rng.choice(ADJECTIVES)}-{rng.choice(NOUNS)}",
            ctx.cwd,
            title,
            f"1.{rng.randint(2, 16)}.{rng.randint(0, 9)}",
            (rng.randint(0, 400), rng.randint(0, 200), rng.randint(0, 12)),
            ctx.started_ms,
            ctx.clock_ms,
        )
        only_legacy = legacy == LEGACY_SESSIONS - 1 and sessions >= LEGACY_SESSIONS - 1
        if not only_legacy:
            db.execute("INSERT INTO session VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", row.values())
            db.executemany("INSERT INTO message VALUES (?,?,?,?,?)", s.messages)
            db.executemany("INSERT INTO part VALUES (?,?,?,?,?,?)", s.parts)
            for pos, turn in enumerate(ctx.turns[:3]):
                db.execute(
                    "INSERT INTO todo VALUES (?,?,?,?,?,?,?)",
                    (
                        sid,
                        turn.prompt.split("\n", 1)[0][:100],
                        "completed",
                        "medium",
                        pos,
                        turn.prompt_ms,
                        turn.final_ms,
                    ),
                )
        if legacy < LEGACY_SESSIONS:
            # The frozen JSON store: the first sessions were also migrated into
            # the DB; the last one exists only in JSON (its DB was reset).
            legacy_bytes += _write_legacy(storage, row, s)
            legacy += 1
        # The DB's real size so far (page_count includes this transaction's pages).
        db_bytes = db.execute("PRAGMA page_count").fetchone()[0] * page_size
        written = db_bytes + legacy_bytes
        prompts += [(t.prompt_ms, t.prompt) for t in ctx.turns]
        sessions += 1
    db.execute("COMMIT")
    db.close()
    prompts.sort()
    last_ms = prompts[-1][0] if prompts else 0
    fixed_mtime(db_path, last_ms)
    if storage.exists():
        (storage / "migration").write_text("2")
        fixed_mtime(storage / "migration", last_ms)
    history = [dumps({"input": text, "parts": [], "mode": "normal"}) for _ms, text in prompts[-PROMPT_HISTORY_MAX:]]
    state = out / "opencode-state"
    write_lines(state / "prompt-history.jsonl", history, last_ms)
    return sessions
