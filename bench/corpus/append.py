"""Grow a generated corpus the way live agents do: a new turn appended to some sessions.

Used by the ingest benchmark's "changed" phase. Each appended turn is valid in
its store's format (tree/parent ids chained to the last entry, the Codex
envelope, Claude's record fields, OpenCode message and part rows).
"""

from __future__ import annotations

import json
import random
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from corpus.common import base62, dumps, iso, new_context, uuid4
from corpus.content import Content


@dataclass(frozen=True)
class AppendStats:
    sessions: int
    bytes: int


def _last_json(path: Path) -> dict[str, object]:
    with path.open("rb") as fh:
        fh.seek(max(0, path.stat().st_size - 1_000_000))
        for line in reversed(fh.read().splitlines()):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                return obj
    return {}


def _omp_lines(last: dict[str, object], prompt: str, reply: str, ms: int, rng: random.Random) -> list[str]:
    user_id, reply_id = f"{rng.getrandbits(32):08x}", f"{rng.getrandbits(32):08x}"
    return [
        dumps(
            {
                "type": "message",
                "id": user_id,
                "parentId": last.get("id"),
                "timestamp": iso(ms),
                "message": {"role": "user", "content": [{"type": "text", "text": prompt}], "timestamp": ms},
            }
        ),
        dumps(
            {
                "type": "message",
                "id": reply_id,
                "parentId": user_id,
                "timestamp": iso(ms + 9000),
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": reply}],
                    "stopReason": "stop",
                    "timestamp": ms + 9000,
                },
            }
        ),
    ]


def _codex_lines(last: dict[str, object], prompt: str, reply: str, ms: int, rng: random.Random) -> list[str]:
    ordinal = last.get("ordinal")
    lines = []
    for i, (role, kind, text) in enumerate((("user", "input_text", prompt), ("assistant", "output_text", reply))):
        env: dict[str, object] = {"timestamp": iso(ms + 9000 * i)}
        if isinstance(ordinal, int):
            env["ordinal"] = ordinal + 1 + i
        env.update(
            type="response_item", payload={"type": "message", "role": role, "content": [{"type": kind, "text": text}]}
        )
        lines.append(dumps(env))
    return lines


def _claude_lines(last: dict[str, object], prompt: str, reply: str, ms: int, rng: random.Random) -> list[str]:
    base: dict[str, object] = {
        k: last[k] for k in ("isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch") if k in last
    }
    user_uuid, reply_uuid = uuid4(rng), uuid4(rng)
    return [
        dumps(
            {
                "parentUuid": last.get("uuid"),
                **base,
                "type": "user",
                "message": {"role": "user", "content": prompt},
                "uuid": user_uuid,
                "timestamp": iso(ms),
            }
        ),
        dumps(
            {
                "parentUuid": user_uuid,
                **base,
                "type": "assistant",
                "message": {
                    "id": "msg_01" + base62(rng, 22),
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "text", "text": reply}],
                    "stop_reason": "end_turn",
                },
                "uuid": reply_uuid,
                "timestamp": iso(ms + 9000),
            }
        ),
    ]


_JSONL_STORES = (
    ("omp/agent/sessions", "*.jsonl", _omp_lines),
    ("codex/sessions", "rollout-*.jsonl", _codex_lines),
    ("claude/projects", "*.jsonl", _claude_lines),
)


def append_turns(out: Path, fraction: float, seed: int, content: Content | None = None) -> AppendStats:
    """Append one user/assistant turn to `fraction` of the sessions of every store in `out`."""
    rng = random.Random(f"{seed}/append")
    content = content or Content(seed, "random")
    sessions = grown = 0
    for store, pattern, render in _JSONL_STORES:
        files = sorted(p for p in (out / store).rglob(pattern) if not p.name.startswith("__advisor"))
        for path in rng.sample(files, max(1, round(len(files) * fraction))) if files else []:
            last = _last_json(path)
            ctx = new_context(rng, "anthropic", "claude-sonnet-4-5", False)
            ms = ctx.clock_ms
            text = "\n".join(render(last, content.prompt(rng, ctx), content.final(rng, ctx), ms, rng)) + "\n"
            with path.open("a", encoding="utf-8") as fh:
                fh.write(text)
            sessions, grown = sessions + 1, grown + len(text.encode())
    db_path = out / "opencode" / "opencode.db"
    if db_path.exists():
        con = sqlite3.connect(db_path)
        ids = [r[0] for r in con.execute("SELECT id FROM session ORDER BY id")]
        with con:
            for sid in rng.sample(ids, max(1, round(len(ids) * fraction))) if ids else []:
                ctx = new_context(rng, "anthropic", "claude-sonnet-4-5", False)
                ms = ctx.clock_ms
                for i, (role, text) in enumerate(
                    (("user", content.prompt(rng, ctx)), ("assistant", content.final(rng, ctx)))
                ):
                    mid, pid = (
                        f"msg_{ms * 4096 + i:012x}{base62(rng, 14)}",
                        f"prt_{ms * 4096 + i:012x}{base62(rng, 14)}",
                    )
                    data = dumps({"role": role, "time": {"created": ms + i}})
                    part = dumps({"type": "text", "text": text})
                    con.execute("INSERT INTO message VALUES (?,?,?,?,?)", (mid, sid, ms + i, ms + i, data))
                    con.execute("INSERT INTO part VALUES (?,?,?,?,?,?)", (pid, mid, sid, ms + i, ms + i, part))
                    grown += len(data) + len(part)
                con.execute("UPDATE session SET time_updated = ? WHERE id = ?", (ms + 1, sid))
                sessions += 1
        con.close()
    return AppendStats(sessions, grown)
