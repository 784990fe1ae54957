"""Codex CLI store: `sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl`, `archived_sessions/`,
`history.jsonl`, `session_index.jsonl`.

Envelope lines `{timestamp, [ordinal,] type, payload}`: `session_meta` with
~KBs of `base_instructions`, a developer permissions message, injected
`# AGENTS.md instructions` and `<environment_context>` user messages,
`turn_context`, reasoning items with `encrypted_content`, `exec_command`
(newer) or `shell` (older) function calls and their outputs, `apply_patch`
custom tool calls, assistant `output_text` with `phase`, and `event_msg`
copies of the turn (older files only).
"""

from __future__ import annotations

import base64
import random
from datetime import UTC, datetime
from pathlib import Path

from corpus.common import (
    base62,
    dumps,
    iso,
    line_bytes,
    new_context,
    session_size,
    uuid7,
    write_in_time_order,
    write_lines,
)
from corpus.content import Content
from corpus.model import SessionContext, ToolCall, Turn
from corpus.vocab import MODELS


def _shell_command(call: ToolCall) -> str:
    a = call.args
    if call.kind == "read":
        return f"sed -n '1,400p' {a['path']}"
    if call.kind == "grep":
        return f"rg -n '{a['pattern']}' {a['path']}"
    if call.kind == "glob":
        return f"rg --files -g '{a['pattern']}'"
    return a["command"]


def _call_input(call: ToolCall, ctx: SessionContext, unified_exec: bool) -> tuple[str, str]:
    """(tool name, arguments or patch text) for one abstract call.

    Newer builds run commands through `exec_command` (`{"cmd": ...}`); older
    ones through `shell` with an argv list.
    """
    a = call.args
    if call.kind in ("read", "bash", "grep", "glob"):
        command = _shell_command(call)
        if unified_exec:
            return "exec_command", dumps({"cmd": command, "workdir": ctx.cwd, "yield_time_ms": 10000})
        return "shell", dumps({"command": ["bash", "-lc", command], "workdir": ctx.cwd, "timeout_ms": 120000})
    if call.kind == "edit":
        old = "\n".join("-" + line for line in a["old"].split("\n"))
        new = "\n".join("+" + line for line in a["new"].split("\n"))
        return "apply_patch", f"*** Begin Patch\n*** Update File: {a['path']}\n@@\n{old}\n{new}\n*** End Patch\n"
    body = "\n".join("+" + line for line in a["content"].split("\n"))
    return "apply_patch", f"*** Begin Patch\n*** Add File: {a['path']}\n{body}\n*** End Patch\n"


class _Rollout:
    def __init__(self, ordinals: bool) -> None:
        self.lines: list[str] = []
        self.ordinals = ordinals

    def add(self, ms: int, item_type: str, payload: dict[str, object]) -> None:
        if self.ordinals:
            self.lines.append(
                dumps({"timestamp": iso(ms), "ordinal": len(self.lines), "type": item_type, "payload": payload})
            )
        else:
            self.lines.append(dumps({"timestamp": iso(ms), "type": item_type, "payload": payload}))

    def message(self, ms: int, role: str, text: str, phase: str | None = None) -> None:
        kind = "output_text" if role == "assistant" else "input_text"
        payload: dict[str, object] = {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}
        if phase:
            payload["phase"] = phase
        self.add(ms, "response_item", payload)


def _environment_context(ctx: SessionContext) -> str:
    return (
        f"<environment_context>\n  <cwd>{ctx.cwd}</cwd>\n  <approval_policy>on-request</approval_policy>\n"
        f"  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n"
        f"  <shell>bash</shell>\n</environment_context>"
    )


def _turn(r: _Rollout, rng: random.Random, ctx: SessionContext, turn: Turn, legacy_events: bool) -> None:
    turn_id = str(rng.getrandbits(40))
    r.add(
        turn.prompt_ms,
        "turn_context",
        {
            "cwd": ctx.cwd,
            "approval_policy": "on-request",
            "sandbox_policy": {"type": "workspace-write", "network_access": False},
            "model": ctx.model,
            "effort": "medium",
            "summary": "auto",
            "turn_id": turn_id,
        },
    )
    r.add(turn.prompt_ms, "event_msg", {"type": "task_started", "turn_id": turn_id, "model_context_window": 272000})
    for role, text in turn.control:
        r.message(turn.prompt_ms, role, text)
    r.message(turn.prompt_ms, "user", turn.prompt)
    if legacy_events:
        r.add(
            turn.prompt_ms,
            "event_msg",
            {"type": "user_message", "message": turn.prompt, "images": [], "local_images": []},
        )
    total = rng.randint(5_000, 40_000)
    for step in turn.steps:
        if step.thinking:
            r.add(
                step.at_ms,
                "response_item",
                {
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": "**Planning the change**\n\n" + step.thinking[:600]}],
                    "content": None,
                    "encrypted_content": base64.b64encode(rng.randbytes(len(step.thinking) // 2 + 200)).decode(),
                },
            )
            if legacy_events:
                r.add(step.at_ms, "event_msg", {"type": "agent_reasoning", "text": step.thinking[:600]})
        if step.text:
            r.message(step.at_ms, "assistant", step.text, phase="commentary")
            if legacy_events:
                r.add(step.at_ms, "event_msg", {"type": "agent_message", "message": step.text, "phase": "commentary"})
        for call in step.tools:
            call_id = "call_" + base62(rng, 24)
            name, arg = _call_input(call, ctx, unified_exec=not legacy_events)
            if name == "apply_patch":
                r.add(
                    call.started_ms,
                    "response_item",
                    {"type": "custom_tool_call", "status": "completed", "call_id": call_id, "name": name, "input": arg},
                )
                out = dumps(
                    {
                        "output": "Success. Updated the following files:\nM " + call.args["path"] + "\n",
                        "metadata": {"exit_code": 0, "duration_seconds": round(rng.uniform(0, 0.3), 1)},
                    }
                )
                r.add(
                    call.ended_ms,
                    "response_item",
                    {"type": "custom_tool_call_output", "call_id": call_id, "output": out},
                )
            else:
                r.add(
                    call.started_ms,
                    "response_item",
                    {"type": "function_call", "name": name, "arguments": arg, "call_id": call_id},
                )
                code = 1 if call.is_error else 0
                seconds = (call.ended_ms - call.started_ms) / 1000
                if name == "shell":
                    out = dumps(
                        {"output": call.output, "metadata": {"exit_code": code, "duration_seconds": round(seconds, 1)}}
                    )
                else:
                    out = (
                        f"Chunk ID: {rng.getrandbits(24):06x}\nWall time: {seconds:.4f} seconds\nProcess exited with code "
                        f"{code}\nOriginal token count: {len(call.output) // 4}\nOutput:\n{call.output}"
                    )
                r.add(
                    call.ended_ms, "response_item", {"type": "function_call_output", "call_id": call_id, "output": out}
                )
        total += rng.randint(2_000, 20_000)
        r.add(
            step.at_ms,
            "event_msg",
            {
                "type": "token_count",
                "info": {
                    "total_token_usage": {
                        "input_tokens": total,
                        "cached_input_tokens": total // 2,
                        "output_tokens": total // 20,
                        "reasoning_output_tokens": total // 40,
                        "total_tokens": total + total // 20,
                    },
                    "last_token_usage": {
                        "input_tokens": 4000,
                        "cached_input_tokens": 2000,
                        "output_tokens": 300,
                        "reasoning_output_tokens": 120,
                        "total_tokens": 4300,
                    },
                    "model_context_window": 272000,
                },
                "rate_limits": None,
            },
        )
    r.message(turn.final_ms, "assistant", turn.final, phase="final_answer")
    if legacy_events:
        r.add(turn.final_ms, "event_msg", {"type": "agent_message", "message": turn.final, "phase": "final_answer"})
    if rng.random() < 0.03:
        r.add(turn.final_ms, "compacted", {"message": f"Summary of the work so far: {turn.final[:800]}"})
        r.add(turn.final_ms, "event_msg", {"type": "context_compacted"})
    r.add(
        turn.final_ms,
        "event_msg",
        {
            "type": "task_complete",
            "turn_id": turn_id,
            "last_agent_message": turn.final[:200],
            "duration_ms": turn.final_ms - turn.prompt_ms,
        },
    )


def write(out: Path, budget: int, content: Content, seed: int) -> int:
    root = out / "codex"
    root.mkdir(parents=True, exist_ok=True)
    written = sessions = 0
    history: list[tuple[int, str]] = []
    index: list[tuple[int, str]] = []
    while written < budget:
        rng = random.Random(f"{seed}/codex/{sessions}")
        target, heavy = session_size(rng, budget - written, content.shape)
        ctx = new_context(rng, "openai", rng.choice(MODELS["openai"]), heavy)
        sid = uuid7(rng, ctx.started_ms)
        newer = rng.random() < 0.5  # 2026 builds: ordinals, no event_msg copies of the turn
        r = _Rollout(ordinals=newer)
        meta: dict[str, object] = {
            "id": sid,
            "timestamp": iso(ctx.started_ms),
            "cwd": ctx.cwd,
            "originator": rng.choice(("codex_cli_rs", "codex-tui", "codex_vscode")),
            "cli_version": f"0.{rng.randint(40, 148)}.0",
            "source": rng.choice(("cli", "cli", "vscode", "exec")),
            "model_provider": "openai",
            "base_instructions": {"text": content.system_prompt(rng, ctx)},
            "git": {
                "commit_hash": f"{rng.getrandbits(160):040x}",
                "branch": rng.choice(("main", "fix/ingest", "feat/cache")),
                "repository_url": f"git@github.com:acme/{ctx.project.name}.git",
            },
        }
        if newer:
            meta["history_mode"] = "paginated"
        r.add(ctx.started_ms, "session_meta", meta)
        r.message(
            ctx.started_ms,
            "developer",
            "<permissions instructions>\nFilesystem sandboxing: workspace-write. "
            "Approvals: on-request. Network access is restricted.\n</permissions instructions>",
        )
        r.message(
            ctx.started_ms,
            "user",
            f"# AGENTS.md instructions for {ctx.cwd}\n\n<INSTRUCTIONS>\n"
            f"{content.system_prompt(rng, ctx)[:1500]}\n</INSTRUCTIONS>",
        )
        r.message(ctx.started_ms, "user", _environment_context(ctx))
        while line_bytes(r.lines) < target:
            turn = content.turn(rng, ctx)
            _turn(r, rng, ctx, turn, legacy_events=not newer)
            history.append(
                (
                    turn.prompt_ms,
                    dumps(
                        {
                            "session_id" if newer else "conversation_id": sid,
                            "ts": turn.prompt_ms // 1000,
                            "text": turn.prompt,
                        }
                    ),
                )
            )
        day = datetime.fromtimestamp(ctx.started_ms / 1000, UTC)
        name = f"rollout-{day.strftime('%Y-%m-%dT%H-%M-%S')}-{sid}.jsonl"
        archived = rng.random() < 0.1 or sessions == 1  # at least one, even in small corpora
        path = root / "archived_sessions" / name if archived else root / "sessions" / day.strftime("%Y/%m/%d") / name
        written += write_lines(path, r.lines, ctx.clock_ms)
        title = ctx.turns[0].prompt.split("\n", 1)[0][:80] if ctx.turns else ""
        index.append((ctx.clock_ms, dumps({"id": sid, "thread_name": title, "updated_at": iso(ctx.clock_ms)})))
        sessions += 1
    written += write_in_time_order(root / "history.jsonl", history)
    written += write_in_time_order(root / "session_index.jsonl", index)
    return sessions
