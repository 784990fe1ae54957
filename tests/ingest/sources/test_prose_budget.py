"""Every reader keeps turns apart when a source's prose budget runs out.

A reader retains at most ``4 × max_text`` characters of a source's prose, first fit. A turn
starts at every prompt, so a prompt the budget refused, with its reply kept, used to make the
reply part of the turn before: a candidate answering the wrong question. A refused prompt now
leaves a stand-in that says what was left out and holds nothing of it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kbtools.ingest.model import Record, SourceSettings, SourceUnit
from kbtools.ingest.sources import aider, claude, codex, copilot, cursor, gemini, omp, opencode
from kbtools.ingest.sources.common import PROSE_CAP_FACTOR, ProseBudget, answered, is_stand_in
from tests.testing.sessions import (
    ClaudeSession,
    CodexSession,
    OmpSession,
    OpenCodeDb,
    assistant,
    user,
    write_opencode_storage,
)

MAX_TEXT = 100
CAP = MAX_TEXT * PROSE_CAP_FACTOR  # 400 characters of prose per source
Turns = list[tuple[str, str]]  # (prompt, reply)


def stand_in(length: int) -> str:
    return ProseBudget(1).stand_in("user", length).text


def _msgs(turns: Turns) -> list[Any]:
    return [m for prompt, reply in turns for m in (user(prompt), assistant(reply))]


def _load(module: Any, cfg: SourceSettings) -> SourceUnit:
    (unit,) = [module.load(ref, cfg) for ref in module.discover(cfg)]
    return unit


def _omp(tmp: Path, turns: Turns) -> SourceUnit:
    OmpSession(session_id="s").add(_msgs(turns)).write(tmp)
    return _load(omp, SourceSettings(omp_sessions=tmp, max_text=MAX_TEXT))


def _codex(tmp: Path, turns: Turns) -> SourceUnit:
    CodexSession(session_id="s").add(_msgs(turns)).write(tmp)
    return _load(codex, SourceSettings(codex_dir=tmp, max_text=MAX_TEXT))


def _claude(tmp: Path, turns: Turns) -> SourceUnit:
    ClaudeSession(session_id="s").add(_msgs(turns)).write(tmp)
    return _load(claude, SourceSettings(claude_dir=tmp, max_text=MAX_TEXT))


def _opencode_db(tmp: Path, turns: Turns) -> SourceUnit:
    db = OpenCodeDb(tmp / "opencode.db")
    db.flush(db.session(_msgs(turns), session_id="ses_one"))
    db.close()
    return _load(opencode, SourceSettings(opencode_db=tmp / "opencode*.db", max_text=MAX_TEXT))


def _opencode_storage(tmp: Path, turns: Turns) -> SourceUnit:
    write_opencode_storage(tmp, _msgs(turns), session_id="ses_legacy")
    return _load(opencode, SourceSettings(opencode_storage=tmp / "storage", max_text=MAX_TEXT))


def _jsonl(path: Path, lines: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _gemini(tmp: Path, turns: Turns) -> SourceUnit:
    # google-gemini/gemini-cli packages/core/src/services/chatRecordingService.ts: a metadata line,
    # then one MessageRecord per line (`type` user | gemini).
    ts = "2026-07-01T10:00:00.000Z"
    lines: list[dict[str, Any]] = [{"sessionId": "g", "projectHash": "ab", "startTime": ts, "lastUpdated": ts}]
    for i, (prompt, reply) in enumerate(turns):
        lines.append({"id": f"u{i}", "timestamp": ts, "type": "user", "content": [{"text": prompt}]})
        lines.append({"id": f"g{i}", "timestamp": ts, "type": "gemini", "content": reply})
    _jsonl(tmp / "tmp" / "app" / "chats" / "session-2026-07-01T10-00-6f0a1c2e.jsonl", lines)
    return _load(gemini, SourceSettings(locations=(("gemini_dir", (tmp,)),), max_text=MAX_TEXT))


def _copilot(tmp: Path, turns: Turns) -> SourceUnit:
    # github/copilot-cli session-state/<id>/events.jsonl: `user.message` / `assistant.message` events.
    ts = "2026-02-01T14:22:22.447Z"
    sid = "57c88cae-51c6-4acf-aaba-1f4a7408edce"
    events: list[dict[str, Any]] = [{"type": "session.start", "data": {"sessionId": sid}, "timestamp": ts}]
    for prompt, reply in turns:
        events.append({"type": "user.message", "data": {"content": prompt}, "timestamp": ts})
        events.append({"type": "assistant.message", "data": {"content": reply}, "timestamp": ts})
    _jsonl(tmp / "session-state" / sid / "events.jsonl", events)
    return _load(copilot, SourceSettings(locations=(("copilot_dir", (tmp,)),), max_text=MAX_TEXT))


def _cursor(tmp: Path, turns: Turns) -> SourceUnit:
    # The cursor-agent CLI's chats/<workspace>/<chat>/store.db: JSON message blobs.
    chat = "ac437fdf-3e7e-4a54-98a4-7bb04fd3efc6"
    path = tmp / "cli" / "chats" / "e4e90b7bcae743c9a1a1a045a49e1b1d" / chat / "store.db"
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.execute("CREATE TABLE blobs (id TEXT PRIMARY KEY, data BLOB)")
    conn.execute("INSERT INTO meta VALUES ('0', ?)", (json.dumps({"agentId": chat}).encode().hex(),))
    messages = [
        {"role": role, "content": [{"type": "text", "text": text}]}
        for prompt, reply in turns
        for role, text in (("user", f"<user_query>\n{prompt}\n</user_query>"), ("assistant", reply))
    ]
    for i, message in enumerate(messages):
        conn.execute("INSERT INTO blobs VALUES (?, ?)", (f"blob{i:03d}", json.dumps(message).encode()))
    conn.commit()
    conn.close()
    cfg = SourceSettings(
        locations=(("cursor_dir", (tmp / "cli",)), ("cursor_user_dir", (tmp / "editor",))), max_text=MAX_TEXT
    )
    return _load(cursor, cfg)


def _aider(tmp: Path, turns: Turns) -> SourceUnit:
    # Aider-AI/aider aider/io.py: `#### ` lines are the user's input, plain Markdown the model's.
    repo = tmp / "repo"
    (repo / ".git").mkdir(parents=True)
    body = "".join(
        "".join(f"#### {line}\n" for line in prompt.splitlines()) + f"\n{reply}\n\n" for prompt, reply in turns
    )
    (repo / ".aider.chat.history.md").write_text(f"\n# aider chat started at 2026-03-02 10:15:04\n\n{body}")
    return _load(aider, SourceSettings(locations=(("aider_roots", (tmp,)),), max_text=MAX_TEXT))


READERS: dict[str, Callable[[Path, Turns], SourceUnit]] = {
    "omp": _omp,
    "codex": _codex,
    "claude": _claude,
    "opencode-db": _opencode_db,
    "opencode-storage": _opencode_storage,
    "gemini": _gemini,
    "copilot": _copilot,
    "cursor": _cursor,
    "aider": _aider,
}


# OMP and Claude Code collect up to twice the cap before the active branch is known: a paste
# between one and two caps is refused by the final budget, one over two caps while collecting.
@pytest.mark.parametrize("paste", [CAP + 50, 2 * CAP + 50], ids=["over-the-cap", "over-twice-the-cap"])
@pytest.mark.parametrize("reader", READERS)
def test_a_prompt_over_the_budget_leaves_a_stand_in_and_its_reply_stays_its_own(
    tmp_path: Path, reader: str, paste: int
) -> None:
    log = "\n".join(f"12:00:{i % 60:02d} worker-{i} ERROR upstream timed out" for i in range(paste // 40 + 1))
    log = log[:paste].rstrip()
    turns = [
        ("Why does the deploy hang?", "The health check waits forever."),
        (log, "The log shows every worker timing out upstream."),
        ("And the fix?", "Bound the wait."),
    ]
    unit = READERS[reader](tmp_path, turns)
    assert unit.error == ""
    assert unit.truncated
    assert [(r.role, r.text) for r in unit.records] == [
        ("user", "Why does the deploy hang?"),
        ("assistant", "The health check waits forever."),
        ("user", stand_in(len(log))),
        ("assistant", "The log shows every worker timing out upstream."),
        ("user", "And the fix?"),
        ("assistant", "Bound the wait."),
    ]


@pytest.mark.parametrize("reader", READERS)
def test_a_reply_over_the_budget_is_left_out_and_the_next_prompt_still_opens_its_turn(
    tmp_path: Path, reader: str
) -> None:
    turns = [("Show me the log.", "x " * (CAP // 2 + 10)), ("Which worker failed first?", "worker-3.")]
    unit = READERS[reader](tmp_path, turns)
    assert unit.truncated
    assert [(r.role, r.text) for r in unit.records] == [
        ("user", "Show me the log."),
        ("user", "Which worker failed first?"),
        ("assistant", "worker-3."),
    ]


def test_a_stand_in_says_how_much_was_left_out_and_no_reply_means_no_stand_in() -> None:
    budget = ProseBudget(10)
    refused = budget.record("user", "x" * 523_114, "2026-03-01T09:00:00.000Z", 4)
    assert refused is not None and is_stand_in(refused) and "523,114 characters" in refused.text
    assert len(refused.text) < 120  # alone it is shorter than a turn that can become a candidate
    assert budget.record("assistant", "y" * 20, None, 5) is None
    assert budget.record("user", "z" * 523_114, None, 6) is refused  # one object per role and length
    assert not is_stand_in(Record("user", refused.text, "", 7))  # a prompt that reads like one is a prompt
    reply = Record("assistant", "ok", "2026-03-01T09:05:00.000Z", 9)
    kept = Record("user", "short", "", 10)
    assert answered([refused, refused, kept, refused, reply, refused]) == [
        kept,
        refused._replace(created_at="2026-03-01T09:05:00.000Z"),
        reply,
    ]
