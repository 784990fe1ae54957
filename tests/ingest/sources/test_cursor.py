"""Cursor's chat stores as Cursor writes them, in real SQLite files.

The agent CLI's ``~/.cursor/chats/<workspace md5>/<chat id>/store.db``
(tables ``meta`` with hex-encoded JSON under key ``0``, and ``blobs``) and
the editor's ``globalStorage/state.vscdb`` (table ``cursorDiskKV`` with
``composerData:<id>`` and ``bubbleId:<composer>:<bubble>``), as documented by
the parsers of those stores (e.g. michaeldhood/chatrxiv
``docs/cursor/storage-reference.md``; cursor-agent readers of ``store.db``).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from kbtools.ingest.model import SourceSettings
from kbtools.ingest.sources import cursor

CHAT = "ac437fdf-3e7e-4a54-98a4-7bb04fd3efc6"


def settings(cli: Path, editor: Path) -> SourceSettings:
    return SourceSettings(locations=(("cursor_dir", (cli,)), ("cursor_user_dir", (editor,))))


def load_all(cfg: SourceSettings) -> list[Any]:
    return [cursor.load(ref, cfg) for ref in cursor.discover(cfg)]


def make_chat(root: Path, messages: list[dict[str, Any]]) -> Path:
    path = root / "chats" / "e4e90b7bcae743c9a1a1a045a49e1b1d" / CHAT / "store.db"
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.execute("CREATE TABLE blobs (id TEXT PRIMARY KEY, data BLOB)")
    meta = {"agentId": CHAT, "name": "Retry fix", "mode": "default", "createdAt": 1767225600000}
    conn.execute("INSERT INTO meta VALUES ('0', ?)", (json.dumps(meta).encode().hex(),))
    for i, message in enumerate(messages):
        conn.execute("INSERT INTO blobs VALUES (?, ?)", (f"blob{i:03d}", json.dumps(message).encode()))
    conn.execute("INSERT INTO blobs VALUES ('tree', ?)", (b"\x0a\x20" + bytes(32),))  # a tree node, binary
    conn.commit()
    conn.close()
    return path


def test_agent_cli_chat_decisions(tmp_path: Path) -> None:
    make_chat(
        tmp_path / "cli",
        [
            {"role": "system", "content": "You are a coding agent. SYSTEM PROMPT"},
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": "<user_info>OS linux, shell bash</user_info>\n<user_query>\nWhy does the upload retry"
                        " forever?\n</user_query>",
                    }
                ],
            },
            {
                "role": "assistant",
                "id": "a1",
                "content": [
                    {"type": "reasoning", "text": "THINKING"},
                    {"type": "text", "text": "The loop never counts attempts."},
                    {"type": "tool-call", "toolCallId": "t1", "toolName": "read", "args": {}},
                ],
            },
            {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "t1", "result": "TOOL-OUTPUT"}]},
            {"role": "critic", "content": "NOT PROSE"},
        ],
    )
    (unit,) = load_all(settings(tmp_path / "cli", tmp_path / "editor"))
    assert [(r.role, r.text) for r in unit.records] == [
        ("user", "Why does the upload retry forever?"),
        ("assistant", "The loop never counts attempts."),
    ]
    assert unit.session_identity == CHAT and unit.format == "sqlite"
    assert unit.decisions == {
        "injected": 1,
        "user_prose": 1,
        "assistant_prose": 1,
        "tool": 1,
        "unknown": 1,
        "metadata": 1,
    }


def make_state(root: Path) -> Path:
    path = root / "globalStorage" / "state.vscdb"
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    conn.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    composer = {
        "_v": 10,
        "composerId": "c1",
        "createdAt": 1767225600000,
        "lastUpdatedAt": 1767229200000,
        "fullConversationHeadersOnly": [{"bubbleId": "b1", "type": 1}, {"bubbleId": "b2", "type": 2}],
    }
    bubbles = {
        "b1": {"_v": 3, "type": 1, "bubbleId": "b1", "text": "How do I pin the compiler version in CI?"},
        "b2": {
            "_v": 3,
            "type": 2,
            "bubbleId": "b2",
            "text": "Set it in the workflow's setup step.",
            "thinking": {"text": "THINKING"},
        },
    }
    conn.execute("INSERT INTO cursorDiskKV VALUES ('composerData:c1', ?)", (json.dumps(composer),))
    for bubble_id, bubble in bubbles.items():
        conn.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"bubbleId:c1:{bubble_id}", json.dumps(bubble)))
    legacy = {"composerId": "c0", "conversation": [{"type": 1, "text": "inline question"}, {"type": 2, "text": ""}]}
    conn.execute("INSERT INTO cursorDiskKV VALUES ('composerData:c0', ?)", (json.dumps(legacy),))
    conn.commit()
    conn.close()
    return path


def test_editor_composers_are_sessions(tmp_path: Path) -> None:
    state = make_state(tmp_path / "editor")
    units = {u.session_identity: u for u in load_all(settings(tmp_path / "cli", tmp_path / "editor"))}
    assert [(r.role, r.text) for r in units["c1"].records] == [
        ("user", "How do I pin the compiler version in CI?"),
        ("assistant", "Set it in the workflow's setup step."),
    ]
    assert units["c1"].decisions == {"metadata": 1, "user_prose": 1, "reasoning": 1, "assistant_prose": 1}
    assert [r.text for r in units["c0"].records] == ["inline question"]
    # Read-only: the store's bytes are untouched.
    before = state.read_bytes()
    load_all(settings(tmp_path / "cli", tmp_path / "editor"))
    assert state.read_bytes() == before


def test_an_edited_bubble_changes_the_composers_version(tmp_path: Path) -> None:
    state = make_state(tmp_path / "editor")
    cfg = settings(tmp_path / "cli", tmp_path / "editor")
    (before,) = [r.stat_key for r in cursor.discover(cfg) if r.locator.endswith("c1")]
    conn = sqlite3.connect(state)
    conn.execute(
        "UPDATE cursorDiskKV SET value = ? WHERE key = 'bubbleId:c1:b1'", (json.dumps({"type": 1, "text": "edited"}),)
    )
    conn.commit()
    conn.close()
    (after,) = [r.stat_key for r in cursor.discover(cfg) if r.locator.endswith("c1")]
    assert before != after


def test_missing_cursor_stores_are_one_unavailable_row(tmp_path: Path) -> None:
    (unit,) = load_all(settings(tmp_path / "none", tmp_path / "none2"))
    assert (unit.format, unit.skip_reason) == ("unavailable", "source_store_unavailable")
