"""GitHub Copilot CLI session logs as the CLI writes them.

Event envelopes ``{type, data, id, timestamp, parentId}`` and the event types
follow github/copilot-sdk ``nodejs/src/generated/session-events.ts``
(generated from ``session-events.schema.json``); the layout
``~/.copilot/session-state/<id>/events.jsonl`` (older: ``<id>.jsonl``) is the CLI's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kbtools.ingest.model import SourceSettings
from kbtools.ingest.sources import copilot

SID = "57c88cae-51c6-4acf-aaba-1f4a7408edce"
TS = "2026-02-01T14:22:22.447Z"


def event(kind: str, **data: Any) -> dict[str, Any]:
    return {"type": kind, "data": data, "id": f"e-{kind}-{len(data)}", "timestamp": TS, "parentId": None}


def load_all(root: Path) -> list[Any]:
    cfg = SourceSettings(locations=(("copilot_dir", (root,)),))
    return [copilot.load(ref, cfg) for ref in copilot.discover(cfg)]


def write(path: Path, events: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in events))


def test_every_event_type_has_its_decision(tmp_path: Path) -> None:
    write(
        tmp_path / "session-state" / SID / "events.jsonl",
        [
            event(
                "session.start",
                sessionId=SID,
                version=1,
                producer="copilot-agent",
                copilotVersion="0.0.407",
                startTime=TS,
                context={"cwd": "/home/alice/app"},
            ),
            event("session.info", infoType="folder_trust", message="Folder added to trusted folders."),
            event("session.model_change", newModel="claude-sonnet-4.5"),
            event(
                "user.message",
                content="Why does the upload retry forever?",
                transformedContent="<current_datetime>…</current_datetime> Why does the upload retry forever?",
                attachments=[],
            ),
            event("assistant.turn_start", turnId="0"),
            event("assistant.reasoning", reasoningId="r", content="THINKING"),
            event("assistant.message_delta", messageId="m1", deltaContent="The retry"),
            event(
                "assistant.message",
                messageId="m1",
                content="The retry loop never checks the attempt count.",
                toolRequests=[{"toolCallId": "t1", "name": "view", "arguments": {"path": "upload.py"}}],
            ),
            event("assistant.message", messageId="m2", content="", toolRequests=[{"toolCallId": "t2", "name": "bash"}]),
            event("tool.execution_start", toolCallId="t1", toolName="view", arguments={}),
            event("tool.execution_complete", toolCallId="t1", success=True, result={"content": "TOOL-OUTPUT"}),
            event("assistant.turn_end", turnId="0"),
            event("brand.new_event", text="NOT PROSE"),
        ],
    )
    (unit,) = load_all(tmp_path)
    assert [(r.role, r.text) for r in unit.records] == [
        ("user", "Why does the upload retry forever?"),
        ("assistant", "The retry loop never checks the attempt count."),
    ]
    assert (unit.session_identity, unit.project_identity) == (SID, "/home/alice/app")
    assert unit.decisions == {
        "metadata": 4,  # session.start, model_change, turn_start, turn_end
        "injected": 1,
        "user_prose": 1,
        "reasoning": 1,
        "duplicate": 1,
        "assistant_prose": 1,
        "tool": 3,  # a message that only requests tools, the two tool events
        "unknown": 1,
    }


def test_older_flat_session_file(tmp_path: Path) -> None:
    write(
        tmp_path / "session-state" / f"{SID}.jsonl",
        [event("session.start", sessionId=SID, startTime=TS), event("user.message", content="old prompt")],
    )
    (tmp_path / "session-state" / SID / "checkpoints").mkdir(parents=True)
    write(tmp_path / "session-state" / SID / "checkpoints" / "index.jsonl", [{"x": 1}])  # not a session log
    (unit,) = load_all(tmp_path)
    assert [r.text for r in unit.records] == ["old prompt"]


def test_missing_copilot_home_is_one_unavailable_row(tmp_path: Path) -> None:
    (unit,) = load_all(tmp_path / "none")
    assert (unit.format, unit.skip_reason) == ("unavailable", "source_store_unavailable")


def test_legacy_history_session_state_json_is_read(tmp_path: Path) -> None:
    """Releases before the event log wrote ``~/.copilot/history-session-state/
    session_<id>_<ms>.json``: one object ``{sessionId, startTime, chatMessages,
    timeline}`` with OpenAI-shaped chat messages. The CLI is closed source; the
    shape is the one that third-party parsers of these files read
    (``chatMessages`` for the conversation, ``timeline`` for the UI's events)."""
    body = {
        "sessionId": "hhh",
        "startTime": "2025-10-08T21:10:16.398Z",
        "chatMessages": [
            {"role": "system", "content": "You are the GitHub Copilot CLI."},
            {"role": "user", "content": "please add the mcp servers to the config"},
            {"role": "assistant", "content": "Adding both servers to `mcp-config.json`."},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"name": "str_replace_editor", "arguments": '{"command":"view"}'}}],
            },
            {"role": "tool", "name": "str_replace_editor", "content": "TOOL OUTPUT"},
            {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
            {"role": "narrator", "content": "?"},
        ],
        "timeline": [{"type": "user", "text": "please add…"}, {"type": "tool_call_completed"}],
    }
    legacy = tmp_path / "history-session-state" / "session_hhh_1759957816398.json"
    legacy.parent.mkdir(parents=True)
    legacy.write_text(json.dumps(body))
    (unit,) = load_all(tmp_path)  # no session-state/ at all: the legacy folder alone is a store
    assert (unit.error, unit.format, unit.session_identity) == ("", "json", "hhh")
    assert unit.created_at == "2025-10-08T21:10:16.398Z"
    assert [(r.role, r.text) for r in unit.records] == [
        ("user", "please add the mcp servers to the config"),
        ("assistant", "Adding both servers to `mcp-config.json`."),
        ("user", "thanks"),
    ]
    assert unit.decisions == {
        "metadata": 1,
        "injected": 1,
        "user_prose": 2,
        "assistant_prose": 1,
        "tool": 2,
        "unknown": 1,
        "duplicate": 2,
    }


def test_legacy_session_that_is_not_json_is_a_failed_row(tmp_path: Path) -> None:
    bad = tmp_path / "history-session-state" / "session_x_1.json"
    bad.parent.mkdir(parents=True)
    bad.write_text('{"sessionId": "x", "chatMessages": [')
    (unit,) = load_all(tmp_path)
    assert unit.error == "malformed_json: session file"
