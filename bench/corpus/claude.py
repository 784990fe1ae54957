"""Claude Code store: `projects/<escaped-cwd>/<session-uuid>.jsonl`, sub-agent transcripts
under `<session-uuid>/subagents/agent-<id>.jsonl` (+ `.meta.json`), and `history.jsonl`.

One line per assistant content block (sharing `message.id` and `usage`), tool
results as user records with a structured `toolUseResult` beside them (which
repeats the output, as the real files do), `isMeta` and `<system-reminder>`
injections, compaction boundaries and summaries, synthetic API-error turns,
`system` records, `file-history-snapshot` and title lines.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from corpus.common import (
    base62,
    dumps,
    iso,
    line_bytes,
    new_context,
    session_size,
    uuid4,
    write_in_time_order,
    write_lines,
)
from corpus.content import Content
from corpus.model import SessionContext, ToolCall, Turn
from corpus.vocab import MODELS

TOOL_NAMES = {"read": "Read", "bash": "Bash", "grep": "Grep", "edit": "Edit", "write": "Write", "glob": "Glob"}
VERSIONS = ("2.0.37", "2.0.76", "2.1.4", "2.1.19")


def escape_cwd(cwd: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def _input(call: ToolCall, cwd: str) -> dict[str, object]:
    a = call.args
    if call.kind == "read":
        return {"file_path": f"{cwd}/{a['path']}"}
    if call.kind == "bash":
        return {"command": a["command"], "description": "Run " + a["command"].split(" ")[0]}
    if call.kind == "grep":
        return {"pattern": a["pattern"], "path": a["path"], "output_mode": "content", "-n": True}
    if call.kind == "edit":
        return {"file_path": f"{cwd}/{a['path']}", "old_string": a["old"], "new_string": a["new"]}
    if call.kind == "write":
        return {"file_path": f"{cwd}/{a['path']}", "content": a["content"]}
    return {"pattern": a["pattern"]}


def _result(call: ToolCall, cwd: str) -> object:
    if call.kind == "read":
        n = call.output.count("\n") + 1
        return {
            "type": "text",
            "file": {
                "filePath": f"{cwd}/{call.args['path']}",
                "content": call.output,
                "numLines": n,
                "startLine": 1,
                "totalLines": n,
            },
        }
    if call.kind == "bash":
        return {"stdout": call.output, "stderr": "", "interrupted": False, "isImage": False}
    if call.kind in ("edit", "write"):
        return {"filePath": f"{cwd}/{call.args['path']}", "type": "update" if call.kind == "edit" else "create"}
    return {"mode": "content", "numFiles": call.output.count("\n") + 1, "content": call.output}


class _Transcript:
    def __init__(self, rng: random.Random, ctx: SessionContext, sid: str, version: str, agent_id: str | None) -> None:
        self.rng, self.ctx, self.sid, self.version, self.agent_id = rng, ctx, sid, version, agent_id
        self.lines: list[str] = []
        self.parent: str | None = None

    def record(self, kind: str, ms: int, **fields: object) -> str:
        uid = uuid4(self.rng)
        rec: dict[str, object] = {
            "parentUuid": self.parent,
            "isSidechain": self.agent_id is not None,
            "userType": "external",
            "cwd": self.ctx.cwd,
            "sessionId": self.sid,
            "version": self.version,
            "gitBranch": "main",
        }
        if self.agent_id:
            rec["agentId"] = self.agent_id
        rec.update(type=kind, **fields)
        rec.update(uuid=uid, timestamp=iso(ms))
        self.lines.append(dumps(rec))
        self.parent = uid
        return uid

    def user(self, ms: int, content: object, **extra: object) -> str:
        return self.record("user", ms, message={"role": "user", "content": content}, **extra)

    def assistant(self, ms: int, blocks: list[dict[str, object]], stop: str | None, synthetic: bool = False) -> None:
        rng = self.rng
        msg_id, req = "msg_01" + base62(rng, 22), "req_011C" + base62(rng, 18)
        model = "<synthetic>" if synthetic else self.ctx.model
        extra: dict[str, object] = {"isApiErrorMessage": True} if synthetic else {"requestId": req}
        usage = {
            "input_tokens": rng.randint(3, 900),
            "cache_creation_input_tokens": rng.randint(0, 9000),
            "cache_read_input_tokens": rng.randint(0, 150_000),
            "output_tokens": rng.randint(20, 4000),
            "service_tier": "standard",
        }
        for i, block in enumerate(blocks):
            self.record(
                "assistant",
                ms + i,
                message={
                    "model": model,
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "content": [block],
                    "stop_reason": stop if i == len(blocks) - 1 else None,
                    "stop_sequence": None,
                    "usage": usage,
                },
                **extra,
            )

    def turn(self, turn: Turn, local_command: bool = False) -> None:
        rng, cwd = self.rng, self.ctx.cwd
        for role, text in turn.control:
            if role == "user":
                self.user(turn.prompt_ms, text)
            else:
                self.assistant(turn.prompt_ms, [{"type": "text", "text": text}], "end_turn")
        if rng.random() < 0.05 or local_command:
            # A slash command: an injected caveat, the command echo and its output, none typed prose.
            self.user(
                turn.prompt_ms,
                "Caveat: The messages below were generated by the user while running local commands. "
                "DO NOT respond to these messages or otherwise consider them in your response unless the user "
                "explicitly asks you to.",
                isMeta=True,
            )
            self.user(
                turn.prompt_ms,
                "<command-name>/model</command-name>\n<command-message>model</command-message>\n"
                "<command-args></command-args>",
            )
            self.user(turn.prompt_ms, f"<local-command-stdout>Set model to {self.ctx.model}</local-command-stdout>")
        r = rng.random()
        if r < 0.1:
            # Claude Code injects reminders as extra text blocks of the user's message.
            self.user(
                turn.prompt_ms,
                [
                    {
                        "type": "text",
                        "text": "<system-reminder>\nThe TodoWrite tool hasn't been used recently. "
                        "Ignore this if it is not relevant.\n</system-reminder>",
                    },
                    {"type": "text", "text": turn.prompt},
                ],
            )
        else:
            self.user(turn.prompt_ms, turn.prompt if r < 0.85 else [{"type": "text", "text": turn.prompt}])
        if rng.random() < 0.01:
            self.assistant(
                turn.prompt_ms + 1,
                [
                    {
                        "type": "text",
                        "text": 'API Error: 529 {"type":"error","error":'
                        '{"type":"overloaded_error","message":"Overloaded"}}',
                    }
                ],
                "stop_sequence",
                synthetic=True,
            )
        for step in turn.steps:
            blocks: list[dict[str, object]] = []
            if step.thinking:
                blocks.append({"type": "thinking", "thinking": step.thinking, "signature": base62(rng, 300)})
            if step.text:
                blocks.append({"type": "text", "text": step.text})
            ids = ["toolu_01" + base62(rng, 22) for _ in step.tools]
            blocks += [
                {"type": "tool_use", "id": tid, "name": TOOL_NAMES[c.kind], "input": _input(c, cwd)}
                for tid, c in zip(ids, step.tools)
            ]
            self.assistant(step.at_ms, blocks, "tool_use")
            for tid, call in zip(ids, step.tools):
                output: object = call.output if rng.random() < 0.7 else [{"type": "text", "text": call.output}]
                result: dict[str, object] = {"tool_use_id": tid, "type": "tool_result", "content": output}
                if call.is_error:
                    result["is_error"] = True
                self.user(call.ended_ms, [result], toolUseResult=_result(call, cwd))
        self.assistant(turn.final_ms, [{"type": "text", "text": turn.final}], "end_turn")
        if rng.random() < 0.3:
            self.record(
                "system",
                turn.final_ms + 1,
                subtype="turn_duration",
                durationMs=turn.final_ms - turn.prompt_ms,
                isMeta=False,
            )
        if rng.random() < 0.03:
            # Auto-compaction: a boundary, then the summary as a user record the user never typed.
            self.record(
                "system",
                turn.final_ms + 2,
                subtype="compact_boundary",
                content="Conversation compacted",
                compactMetadata={"trigger": "auto", "preTokens": rng.randint(150_000, 190_000)},
                level="info",
            )
            self.user(
                turn.final_ms + 3,
                "This session is being continued from a previous conversation that ran out of "
                f"context. The conversation is summarized below:\nAnalysis: {turn.prompt[:400]}\nSummary: {turn.final[:800]}",
                isCompactSummary=True,
                isVisibleInTranscriptOnly=True,
            )


def write(out: Path, budget: int, content: Content, seed: int) -> int:
    root = out / "claude"
    projects = root / "projects"
    projects.mkdir(parents=True, exist_ok=True)
    written = sessions = 0
    history: list[tuple[int, str]] = []
    subagents = 0
    while written < budget:
        rng = random.Random(f"{seed}/claude/{sessions}")
        target, heavy = session_size(rng, budget - written, content.shape)
        ctx = new_context(rng, "anthropic", rng.choice(MODELS["anthropic"]), heavy)
        sid, version = uuid4(rng), rng.choice(VERSIONS)
        t = _Transcript(rng, ctx, sid, version, None)
        if rng.random() < 0.2:
            t.lines.append(
                dumps(
                    {
                        "type": "summary",
                        "summary": f"{ctx.project.name}: fix {ctx.project.package} tests",
                        "leafUuid": uuid4(rng),
                    }
                )
            )
        snap = uuid4(rng)
        t.lines.append(
            dumps(
                {
                    "type": "file-history-snapshot",
                    "messageId": snap,
                    "snapshot": {"messageId": snap, "trackedFileBackups": {}, "timestamp": iso(ctx.started_ms)},
                    "isSnapshotUpdate": False,
                }
            )
        )
        while line_bytes(t.lines) < target:
            turn = content.turn(rng, ctx)
            t.turn(turn, local_command=sessions == 0 and len(ctx.turns) == 1)
            history.append(
                (
                    turn.prompt_ms,
                    dumps(
                        {
                            "display": turn.prompt[:2000],
                            "pastedContents": {},
                            "timestamp": turn.prompt_ms,
                            "project": ctx.cwd,
                            "sessionId": sid,
                        }
                    ),
                )
            )
        if ctx.turns:
            t.lines.append(
                dumps({"type": "ai-title", "aiTitle": ctx.turns[0].prompt.split("\n", 1)[0][:60], "sessionId": sid})
            )
            t.lines.append(dumps({"type": "last-prompt", "lastPrompt": ctx.turns[-1].prompt[:200], "sessionId": sid}))
        folder = projects / escape_cwd(ctx.cwd)
        written += write_lines(folder / f"{sid}.jsonl", t.lines, ctx.clock_ms)
        if ctx.turns and (subagents == 0 or rng.random() < 0.08):
            agent_id = f"{rng.getrandbits(32):08x}"
            sub = _Transcript(rng, ctx, sid, version, agent_id)
            sub.turn(content.turn(rng, ctx))
            written += write_lines(folder / sid / "subagents" / f"agent-{agent_id}.jsonl", sub.lines, ctx.clock_ms)
            write_lines(
                folder / sid / "subagents" / f"agent-{agent_id}.meta.json",
                [dumps({"agentType": "Explore", "description": "Find where the config is loaded"})],
                ctx.clock_ms,
            )
            subagents += 1
        sessions += 1
    write_in_time_order(root / "history.jsonl", history)
    return sessions
