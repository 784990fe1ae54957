"""Codex rollouts as Codex writes them: every record type decided.

Fixture lines follow the upstream types: ``RolloutItem``/``RolloutLine``
(openai/codex ``codex-rs/protocol/src/protocol.rs``), ``ResponseItem``
(``codex-rs/protocol/src/models.rs``), the persisted ``EventMsg`` subset
(``codex-rs/rollout/src/policy.rs``), rollout paths
(``codex-rs/rollout/src/recorder.rs``) and the TypeScript CLI's session file
(``codex-cli/src/utils/storage/save-rollout.ts``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from kbtools.ingest.model import SourceSettings
from kbtools.ingest.sources import codex

TS = "2026-05-02T10:00:00.000Z"
THREAD = "019dbc77-5b0f-703e-928a-a0a72f3f47c9"


def line(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": TS, "type": kind, "payload": payload}


def meta(**extra: Any) -> dict[str, Any]:
    return line(
        "session_meta",
        {
            "id": THREAD,
            "timestamp": TS,
            "cwd": "/home/alice/app",
            "originator": "codex_cli_rs",
            "cli_version": "0.128.0",
            "source": "cli",
            "model_provider": "openai",
            "base_instructions": {"text": "You are Codex, a coding agent."},
            **extra,
        },
    )


def message(role: str, *texts: str, part: str = "") -> dict[str, Any]:
    kind = part or ("output_text" if role == "assistant" else "input_text")
    return line(
        "response_item", {"type": "message", "role": role, "content": [{"type": kind, "text": t} for t in texts]}
    )


def event(kind: str, **fields: Any) -> dict[str, Any]:
    return line("event_msg", {"type": kind, **fields})


def write(root: Path, lines: list[dict[str, Any]], name: str = f"rollout-2026-05-02T10-00-00-{THREAD}.jsonl") -> Path:
    path = root / "sessions" / "2026" / "05" / "02" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(item) + "\n" for item in lines))
    return path


def load_all(root: Path) -> list[Any]:
    cfg = SourceSettings(codex_dir=root)
    return [codex.load(ref, cfg) for ref in codex.discover(cfg) if ref.record_type == "session"]


def test_every_rollout_item_type_has_its_decision(tmp_path: Path) -> None:
    write(
        tmp_path,
        [
            meta(),
            line("turn_context", {"cwd": "/home/alice/app", "model": "gpt-5", "approval_policy": "on-request"}),
            message("developer", "<permissions instructions>sandboxed</permissions instructions>"),
            message("user", "<environment_context>\n  <cwd>/home/alice/app</cwd>\n</environment_context>"),
            message("user", "# AGENTS.md instructions for /home/alice/app\n\n<INSTRUCTIONS>be brief</INSTRUCTIONS>"),
            message("user", "Why does the build fail with TS2307?"),
            event("user_message", message="Why does the build fail with TS2307?", images=[]),
            event("task_started", turn_id="t1"),
            line("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "THINKING"}]}),
            event("agent_reasoning", text="THINKING"),
            line(
                "response_item",
                {"type": "function_call", "name": "shell", "arguments": '{"command":["ls"]}', "call_id": "c1"},
            ),
            line("response_item", {"type": "function_call_output", "call_id": "c1", "output": "TOOL-OUTPUT"}),
            line("response_item", {"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch"}),
            line("response_item", {"type": "local_shell_call", "action": {"type": "exec", "command": ["ls"]}}),
            line("response_item", {"type": "web_search_call", "action": {"type": "search", "query": "ts2307"}}),
            message("assistant", "The path alias is missing; add it to tsconfig."),
            event("agent_message", message="The path alias is missing; add it to tsconfig."),
            event("token_count", info={"total_token_usage": {"input_tokens": 10}}),
            event("task_complete", turn_id="t1", last_agent_message="done"),
            line("compacted", {"message": "SUMMARY OF EARLIER TURNS"}),
            line("world_state", {"text": "WORLD"}),
            line("brand_new_item", {"text": "NOT PROSE"}),
            event("brand_new_event", text="NOT PROSE EITHER"),
            line("response_item", {"type": "brand_new_response_item", "text": "NOR THIS"}),
        ],
    )
    (unit,) = load_all(tmp_path)
    assert [(r.role, r.text) for r in unit.records] == [
        ("user", "Why does the build fail with TS2307?"),
        ("assistant", "The path alias is missing; add it to tsconfig."),
    ]
    assert unit.decisions == {
        "metadata": 5,  # session_meta, turn_context, task_started, token_count, task_complete
        "injected": 5,  # developer message, two injected user messages, compacted, world_state
        "user_prose": 1,
        "duplicate": 2,  # the event_msg copies of the turn
        "reasoning": 2,
        "tool": 5,
        "assistant_prose": 1,
        "unknown": 3,
    }
    assert unit.error == ""
    assert "NOT PROSE" not in repr(unit.records)


def test_rolled_back_turns_are_abandoned(tmp_path: Path) -> None:
    # ThreadRolledBackEvent { num_turns }: the newest user turns are discarded.
    write(
        tmp_path,
        [
            meta(),
            message("user", "first question"),
            message("assistant", "first answer"),
            message("user", "second question"),
            message("assistant", "second answer"),
            message("user", "<environment_context>x</environment_context>"),
            message("user", "third question"),
            message("assistant", "third answer"),
            event("thread_rolled_back", num_turns=2),
            message("user", "retried question"),
            message("assistant", "retried answer"),
        ],
    )
    (unit,) = load_all(tmp_path)
    assert [r.text for r in unit.records] == ["first question", "first answer", "retried question", "retried answer"]
    assert unit.decisions["abandoned"] == 4
    assert unit.decisions["user_prose"] == 2 and unit.decisions["assistant_prose"] == 2


def test_subagent_rollout_prompt_is_the_agents_words(tmp_path: Path) -> None:
    # SessionSource::SubAgent serialises as {"subagent": ...}.
    write(
        tmp_path,
        [
            meta(source={"subagent": {"thread_spawn": {"parent_thread_id": "p", "depth": 1}}}),
            message("user", "Review the diff for missing tests."),
            message("assistant", "Two tests are missing."),
        ],
    )
    (unit,) = load_all(tmp_path)
    assert [(r.role, r.text) for r in unit.records] == [
        ("agent", "Review the diff for missing tests."),
        ("assistant", "Two tests are missing."),
    ]
    assert unit.decisions["agent_prompt"] == 1


def test_compressed_rollouts_are_read_like_plain_ones(tmp_path: Path) -> None:
    zstandard = pytest.importorskip("zstandard")
    plain = write(tmp_path, [meta(), message("user", "zst question"), message("assistant", "zst answer")])
    data = plain.read_bytes()
    compressed = plain.with_name(plain.name + ".zst")
    # Two frames, as an appended-then-compressed file may have.
    compressed.write_bytes(
        zstandard.ZstdCompressor().compress(data[:40]) + zstandard.ZstdCompressor().compress(data[40:])
    )
    plain.unlink()
    (unit,) = load_all(tmp_path)
    assert unit.format == "jsonl"
    assert [r.text for r in unit.records] == ["zst question", "zst answer"]
    assert unit.session_identity == THREAD
    assert unit.stat_key is not None and unit.error == ""


def test_corrupt_compressed_rollout_is_a_read_error(tmp_path: Path) -> None:
    pytest.importorskip("zstandard")
    path = write(tmp_path, [], name=f"rollout-2026-05-02T10-00-00-{THREAD}.jsonl.zst")
    path.write_bytes(b"\x28\xb5\x2f\xfd" + os.urandom(64))
    (unit,) = load_all(tmp_path)
    assert unit.records == [] and unit.error.startswith("read_error")


def test_legacy_envelope_less_rollout(tmp_path: Path) -> None:
    # mid-2025 Rust builds: a bare meta line, bare ResponseItems, filler state lines.
    write(
        tmp_path,
        [
            {"id": THREAD, "timestamp": TS, "instructions": None, "git": {"branch": "main"}},
            {"record_type": "state"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "legacy question"}]},
            {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "legacy answer"}]},
        ],
    )
    (unit,) = load_all(tmp_path)
    assert [r.text for r in unit.records] == ["legacy question", "legacy answer"]
    assert unit.decisions == {"metadata": 2, "user_prose": 1, "reasoning": 1, "assistant_prose": 1}


def test_typescript_cli_session_file(tmp_path: Path) -> None:
    path = tmp_path / "sessions" / f"rollout-2025-04-20-{THREAD}.json"
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps(
            {
                "session": {"timestamp": TS, "id": THREAD, "instructions": ""},
                "items": [
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "ts question"}]},
                    {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c"},
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ts answer"}]},
                ],
            },
            indent=2,
        )
    )
    (tmp_path / "sessions" / "config.json").write_text("{}")  # not a rollout
    (unit,) = load_all(tmp_path)
    assert (unit.format, unit.session_identity) == ("json", THREAD)
    assert [r.text for r in unit.records] == ["ts question", "ts answer"]
    assert unit.decisions == {"metadata": 1, "user_prose": 1, "tool": 1, "assistant_prose": 1}


def test_prompt_with_an_inline_screenshot_over_the_line_limit_keeps_its_text(tmp_path: Path) -> None:
    import base64

    image = "data:image/png;base64," + base64.b64encode(os.urandom(9 * 1024 * 1024)).decode()
    item = line(
        "response_item",
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Why is this button misaligned?"},
                {"type": "input_image", "image_url": image},
            ],
        },
    )
    write(tmp_path, [meta(), item, message("assistant", "The flex gap is missing.")])
    (unit,) = load_all(tmp_path)
    assert [r.text for r in unit.records] == ["Why is this button misaligned?", "The flex gap is missing."]
    assert unit.decisions["binary_dropped"] == 1
    assert unit.error == ""


def _decision_by_searches(head: bytes) -> str:
    """The decision of a skipped line as the reader took it before the one look (_skipped)."""
    found = codex._TYPE.search(head)
    if found is None:
        return codex.UNKNOWN
    kind = found.group(1).decode()
    payload = codex._PAYLOAD_TYPE.search(head)
    inner = payload.group(1).decode() if payload is not None else None
    if kind == "response_item":
        decision = codex._RESPONSE_ITEMS.get(inner or "", codex.UNKNOWN)
        return decision if decision is not None else codex.UNKNOWN
    if kind == "event_msg":
        return codex._EVENTS.get(inner or "", codex.UNKNOWN)
    if kind in codex._ROLLOUT_ITEMS:
        return codex._ROLLOUT_ITEMS[kind]
    decision = codex._RESPONSE_ITEMS.get(kind, codex.UNKNOWN)
    return decision if decision is not None else codex.UNKNOWN


def _parsed_by_searches(head: bytes) -> bool:
    found = codex._TYPE.search(head)
    if found is None:
        return True
    kind = found.group(1)
    if kind in (b"response_item", b"event_msg"):
        inner = codex._PAYLOAD_TYPE.search(head)
        if inner is None:
            return True
        return inner.group(1) == (b"message" if kind == b"response_item" else b"thread_rolled_back")
    return kind in (b"session_meta", b"message")


@pytest.mark.parametrize(
    "kind",
    [
        *codex._RESPONSE_ITEMS,
        *codex._EVENTS,
        *codex._ROLLOUT_ITEMS,
        "message",
        "thread_rolled_back",
        "brand_new",
    ],
)
def test_one_look_at_a_head_decides_as_the_searches(kind: str) -> None:
    heads = [
        f'{{"timestamp":"t","type":"{kind}","payload":{{"type":"x"}}}}',
        f'{{"timestamp":"t","type":"response_item","payload":{{"type":"{kind}","role":"user"}}}}',
        f'{{"timestamp":"t","type":"event_msg","payload":{{"type":"{kind}"}}}}',
        f'{{"timestamp":"t","type":"response_item","payload":{{"id":"{kind}"}}}}',
        f'{{"type":"{kind}","role":"assistant","content":[]}}',
        f'{{"id":"{kind}","timestamp":"t"}}',
    ]
    for head in (h.encode() for h in heads):
        parsed = _parsed_by_searches(head)
        assert codex._may_hold_prose_or_meta(head) == parsed, head
        assert codex._skipped(head) == (None if parsed else _decision_by_searches(head)), head
        assert codex._skipped(head, always=True) == _decision_by_searches(head), head
