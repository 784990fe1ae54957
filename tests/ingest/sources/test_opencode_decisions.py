"""OpenCode parts as ``session/message-v2.ts`` (anomalyco/opencode) defines
them, each decided; the prompt history's pasted parts as the TUI's
``component/prompt/history.tsx`` and ``prompt/index.tsx`` write them."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from kbtools.ingest.model import SourceSettings
from kbtools.ingest.sources import opencode, prompt_history


def test_every_part_type_has_its_decision(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    conn = sqlite3.connect(db)
    conn.executescript(
        "CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT, directory TEXT, time_created INTEGER,"
        " time_updated INTEGER);"
        "CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, time_updated INTEGER,"
        " data TEXT);"
        "CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, time_created INTEGER,"
        " time_updated INTEGER, data TEXT);"
    )
    conn.execute("INSERT INTO session VALUES ('ses_1', 'p', '/home/alice/app', 1, 1)")
    messages = [
        ("msg_1", {"role": "user", "time": {"created": 1}}),
        ("msg_2", {"role": "assistant", "time": {"created": 2}, "modelID": "m", "providerID": "p"}),
        ("msg_3", {"role": "assistant", "time": {"created": 3}, "summary": True}),
    ]
    for i, (mid, data) in enumerate(messages):
        conn.execute("INSERT INTO message VALUES (?, 'ses_1', ?, ?, ?)", (mid, i, i, json.dumps(data)))
    parts = [
        ("prt_01", "msg_1", {"type": "text", "text": "Why does the build fail?"}),
        ("prt_02", "msg_1", {"type": "text", "text": "FILE CONTENTS", "synthetic": True}),
        ("prt_03", "msg_1", {"type": "file", "mime": "text/plain", "filename": "a.ts", "url": "data:,x"}),
        ("prt_04", "msg_2", {"type": "step-start"}),
        ("prt_05", "msg_2", {"type": "reasoning", "text": "THINKING", "time": {"start": 1}}),
        ("prt_06", "msg_2", {"type": "tool", "callID": "c", "tool": "bash", "state": {"status": "completed"}}),
        ("prt_07", "msg_2", {"type": "text", "text": "The alias is missing."}),
        ("prt_08", "msg_2", {"type": "step-finish", "reason": "stop"}),
        ("prt_09", "msg_3", {"type": "text", "text": "SUMMARY"}),
        ("prt_10", "msg_2", {"type": "brand-new", "text": "NOT PROSE"}),
    ]
    for pid, mid, data in parts:
        conn.execute("INSERT INTO part VALUES (?, ?, 'ses_1', 1, 1, ?)", (pid, mid, json.dumps(data)))
    conn.commit()
    conn.close()
    cfg = SourceSettings(opencode_db=db, opencode_storage=tmp_path / "storage")
    (unit,) = [opencode.load(ref, cfg) for ref in opencode.discover(cfg)]
    assert [(r.role, r.text) for r in unit.records] == [
        ("user", "Why does the build fail?"),
        ("assistant", "The alias is missing."),
    ]
    assert unit.decisions == {
        "user_prose": 1,
        "injected": 2,  # the synthetic part, the summary's part
        "metadata": 3,  # file, step-start, step-finish
        "reasoning": 1,
        "tool": 1,
        "assistant_prose": 1,
        "unknown": 1,
    }


def test_pasted_text_replaces_its_placeholder(tmp_path: Path) -> None:
    path = tmp_path / "prompt-history.jsonl"
    pasted = "Traceback (most recent call last):\n  File \"app.py\", line 3\nKeyError: 'user'"
    entry = {
        "input": "why this error? [Pasted ~3 lines] only on CI",
        "parts": [
            {
                "type": "text",
                "text": pasted,
                "source": {"text": {"start": 15, "end": 32, "value": "[Pasted ~3 lines]"}},
            }
        ],
        "mode": "normal",
    }
    path.write_text(json.dumps(entry) + "\n" + json.dumps({"input": "plain prompt", "parts": []}) + "\n")
    cfg = SourceSettings(prompt_history=path)
    (unit,) = [prompt_history.load(ref, cfg) for ref in prompt_history.discover(cfg)]
    assert [r.text for r in unit.records] == [f"why this error? {pasted} only on CI", "plain prompt"]
    assert unit.decisions == {"user_prose": 2}
