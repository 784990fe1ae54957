"""Gemini CLI chat recordings as gemini-cli writes them.

Fixtures follow ``ConversationRecord``/``MessageRecord``/``ToolCallRecord`` and
the JSONL record kinds (metadata line, message upserts, ``$set``,
``$rewindTo``) of google-gemini/gemini-cli
``packages/core/src/services/chatRecordingService.ts``; paths follow
``packages/core/src/config/storage.ts`` (``~/.gemini/tmp/<project>/chats``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kbtools.ingest.model import SourceSettings
from kbtools.ingest.sources import gemini

SID = "6f0a1c2e-9b7d-4e1a-8c3f-2d5e7a9b1c0d"
TS = "2026-07-01T10:00:00.000Z"


def settings(root: Path) -> SourceSettings:
    return SourceSettings(locations=(("gemini_dir", (root,)),))


def write(root: Path, lines: list[dict[str, Any]], name: str = "session-2026-07-01T10-00-6f0a1c2e.jsonl") -> Path:
    path = root / "tmp" / "my-app" / "chats" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def meta(**extra: Any) -> dict[str, Any]:
    return {"sessionId": SID, "projectHash": "ab12", "startTime": TS, "lastUpdated": TS, "kind": "main", **extra}


def msg(mid: str, kind: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {"id": mid, "timestamp": TS, "type": kind, "content": content, **extra}


def load_all(root: Path) -> list[Any]:
    cfg = settings(root)
    return [gemini.load(ref, cfg) for ref in gemini.discover(cfg)]


def test_every_record_kind_has_its_decision(tmp_path: Path) -> None:
    write(
        tmp_path,
        [
            meta(directories=["/home/alice/app"]),
            msg("u1", "user", [{"text": "Why does the build fail with TS2307?"}]),
            msg("g1", "gemini", "", thoughts=[{"subject": "Plan", "description": "THINK", "timestamp": TS}]),
            msg(
                "g1",
                "gemini",
                "The path alias is missing.",
                thoughts=[{"subject": "Plan", "description": "THINK", "timestamp": TS}],
                toolCalls=[{"id": "c1", "name": "read_file", "args": {}, "result": "TOOL-OUTPUT", "status": "success"}],
                model="gemini-2.5-pro",
            ),
            msg("i1", "info", "Switched to flash model."),
            msg("e1", "error", "Quota exceeded."),
            msg("u2", "user", "/chat save before-fix"),
            msg("u3", "user", [{"functionResponse": {"name": "read_file", "response": {"output": "X"}}}]),
            {"$set": {"summary": "TS2307 fix", "lastUpdated": TS}},
            {"unexpected": True},
        ],
    )
    (unit,) = load_all(tmp_path)
    assert [(r.role, r.text) for r in unit.records] == [
        ("user", "Why does the build fail with TS2307?"),
        ("assistant", "The path alias is missing."),
    ]
    assert (unit.session_identity, unit.project_identity) == (SID, "/home/alice/app")
    assert unit.decisions["duplicate"] == 1  # the first copy of g1
    assert unit.decisions["reasoning"] == 1 and unit.decisions["tool"] == 2  # g1's calls, u3's response
    # info, error, the slash command, the functionResponse-only user message
    assert unit.decisions["injected"] == 4
    assert unit.decisions["unknown"] == 1
    assert "TOOL-OUTPUT" not in repr(unit.records) and "THINK" not in repr(unit.records)


def test_rewind_drops_the_message_and_everything_after(tmp_path: Path) -> None:
    write(
        tmp_path,
        [
            meta(),
            msg("u1", "user", "first question"),
            msg("g1", "gemini", "first answer"),
            msg("u2", "user", "abandoned question"),
            msg("g2", "gemini", "abandoned answer"),
            {"$rewindTo": "u2"},
            msg("u3", "user", "rewritten question"),
            msg("g3", "gemini", "new answer"),
        ],
    )
    (unit,) = load_all(tmp_path)
    assert [r.text for r in unit.records] == ["first question", "first answer", "rewritten question", "new answer"]
    assert unit.decisions["abandoned"] == 2


def test_subagent_recording_prompt_is_the_agents_words(tmp_path: Path) -> None:
    write(
        tmp_path,
        [meta(kind="subagent"), msg("u1", "user", "Find the retry settings."), msg("g1", "gemini", "In config.ts.")],
        name=f"{SID}/7c1d.jsonl",
    )
    (unit,) = load_all(tmp_path)
    assert [(r.role, r.text) for r in unit.records] == [
        ("agent", "Find the retry settings."),
        ("assistant", "In config.ts."),
    ]


def test_older_single_json_recording(tmp_path: Path) -> None:
    path = tmp_path / "tmp" / "3f9a" / "chats" / "session-2025-08-01T09-00-6f0a1c2e.json"
    path.parent.mkdir(parents=True)
    record = {
        **meta(),
        "messages": [msg("u1", "user", "old question"), msg("g1", "gemini", "old answer", tokens={"total": 9})],
    }
    path.write_text(json.dumps(record, indent=2))
    (path.parent.parent / "logs.json").write_text("[]")  # prompt log, not a recording
    (unit,) = load_all(tmp_path)
    assert unit.format == "json" and [r.text for r in unit.records] == ["old question", "old answer"]


def test_missing_gemini_home_is_one_unavailable_row(tmp_path: Path) -> None:
    (unit,) = load_all(tmp_path / "none")
    assert (unit.format, unit.skip_reason) == ("unavailable", "source_store_unavailable")
