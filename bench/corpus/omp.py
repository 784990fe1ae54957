"""OMP (oh-my-pi) session store: `<agent>/sessions/<dir-name>/<ts>_<id>.jsonl`.

Version-3 tree entries (`id`/`parentId`), a 256-byte title slot on line 1 of
newer files, assistant messages with thinking/text/toolCall parts, toolResult
messages, sometimes an abandoned branch, a compaction, a `bashExecution`;
artifacts dirs with `__advisor.jsonl` transcripts and subagent transcripts.
"""

from __future__ import annotations

import random
from pathlib import Path

from corpus.common import (
    base62,
    dumps,
    iso,
    line_bytes,
    new_context,
    session_size,
    uuid7,
    write_lines,
)
from corpus.content import Content
from corpus.model import SessionContext, ToolCall, Turn
from corpus.vocab import MODELS

TOOL_NAMES = {"read": "read", "bash": "bash", "grep": "grep", "edit": "edit", "write": "write", "glob": "find"}


def dir_name(cwd: str, home: str, legacy: bool) -> str:
    """omp's session-dir encoding of a cwd (current scheme, or the legacy `--abs--`)."""

    def enc(s: str) -> str:
        return s.replace("/", "-").replace("\\", "-").replace(":", "-")

    if legacy:
        return f"--{enc(cwd.lstrip('/'))}--"
    if cwd == home:
        return "-"
    if cwd.startswith(home + "/"):
        return "-" + enc(cwd[len(home) + 1 :])
    if cwd.startswith("/tmp/"):
        return "-tmp-" + enc(cwd[len("/tmp/") :])
    return f"--{enc(cwd.lstrip('/'))}--"


def title_slot(title: str, updated_ms: int) -> str:
    title = title[:120]
    while True:  # the slot is 256 bytes: a non-ASCII title is cut further
        head = dumps(
            {"type": "title", "v": 1, "title": title, "source": "auto", "updatedAt": iso(updated_ms), "pad": ""}
        )
        if len(head.encode()) <= 255:
            break
        title = title[:-1]
    pad = max(0, 255 - len(head.encode()))
    return head[:-2] + " " * pad + '"}'


def _tool_args(call: ToolCall) -> dict[str, str]:
    a = call.args
    if call.kind == "edit":
        return {"path": a["path"], "oldText": a["old"], "newText": a["new"]}
    if call.kind == "glob":
        return {"pattern": a["pattern"]}
    return dict(a)


def _usage(rng: random.Random) -> dict[str, object]:
    i, o, cr = rng.randint(200, 9000), rng.randint(50, 3000), rng.randint(0, 150_000)
    return {
        "input": i,
        "output": o,
        "cacheRead": cr,
        "cacheWrite": rng.randint(0, 5000),
        "totalTokens": i + o + cr,
        "cost": {
            "input": i * 3e-6,
            "output": o * 1.5e-5,
            "cacheRead": cr * 3e-7,
            "cacheWrite": 0.0,
            "total": i * 3e-6 + o * 1.5e-5,
        },
    }


class _Tree:
    """Appends entries, each a child of the current leaf unless a parent (or None) is given."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.lines: list[str] = []
        self.leaf: str | None = None

    def add(self, entry_type: str, ms: int, parent: object = ..., **fields: object) -> str:
        eid = f"{self.rng.getrandbits(32):08x}"
        pid = self.leaf if parent is ... else parent
        self.lines.append(dumps({"type": entry_type, "id": eid, "parentId": pid, "timestamp": iso(ms), **fields}))
        self.leaf = eid
        return eid

    def message(self, ms: int, message: dict[str, object], parent: object = ...) -> str:
        return self.add("message", ms, parent, message=message)


def _render_turn(tree: _Tree, rng: random.Random, ctx: SessionContext, turn: Turn, parent: object = ...) -> None:
    api, provider, model = "anthropic-messages", ctx.provider, ctx.model
    first = True
    for role, text in turn.control:
        tree.message(
            turn.prompt_ms,
            {"role": role, "content": [{"type": "text", "text": text}], "timestamp": turn.prompt_ms},
            parent if first else ...,
        )
        first = False
    content: object = turn.prompt if rng.random() < 0.2 else [{"type": "text", "text": turn.prompt}]
    tree.message(
        turn.prompt_ms, {"role": "user", "content": content, "timestamp": turn.prompt_ms}, parent if first else ...
    )
    for step in turn.steps:
        parts: list[dict[str, object]] = []
        if step.thinking:
            parts.append({"type": "thinking", "thinking": step.thinking, "thinkingSignature": base62(rng, 120)})
        if step.text:
            parts.append({"type": "text", "text": step.text})
        ids = []
        for call in step.tools:
            ids.append("toolu_01" + base62(rng, 22))
            parts.append(
                {"type": "toolCall", "id": ids[-1], "name": TOOL_NAMES[call.kind], "arguments": _tool_args(call)}
            )
        tree.message(
            step.at_ms,
            {
                "role": "assistant",
                "content": parts,
                "api": api,
                "provider": provider,
                "model": model,
                "usage": _usage(rng),
                "stopReason": "toolUse",
                "timestamp": step.at_ms,
            },
        )
        for call_id, call in zip(ids, step.tools):
            tree.message(
                call.ended_ms,
                {
                    "role": "toolResult",
                    "toolCallId": call_id,
                    "toolName": TOOL_NAMES[call.kind],
                    "content": [{"type": "text", "text": call.output}],
                    "isError": call.is_error,
                    "timestamp": call.ended_ms,
                },
            )
    final: list[dict[str, object]] = [{"type": "text", "text": turn.final}]
    if turn.final_thinking:
        final.insert(0, {"type": "thinking", "thinking": turn.final_thinking, "thinkingSignature": base62(rng, 120)})
    tree.message(
        turn.final_ms,
        {
            "role": "assistant",
            "content": final,
            "api": api,
            "provider": provider,
            "model": model,
            "usage": _usage(rng),
            "stopReason": "stop",
            "timestamp": turn.final_ms,
        },
    )


def _session(
    rng: random.Random, content: Content, target: int, sid: str, ctx: SessionContext, force_branch: bool
) -> list[str]:
    tree = _Tree(rng)
    tree.lines.append(
        dumps({"type": "session", "version": 3, "id": sid, "timestamp": iso(ctx.started_ms), "cwd": ctx.cwd})
    )
    tree.add("model_change", ctx.started_ms, None, model=f"{ctx.provider}/{ctx.model}", role="default")
    tree.add("thinking_level_change", ctx.started_ms, thinkingLevel=rng.choice(("low", "medium", "high")))
    branch_at = rng.randint(1, 4) if rng.random() < 0.2 else -1
    if force_branch:
        branch_at = 0
    n = 0
    while line_bytes(tree.lines) < target:
        turn = content.turn(rng, ctx)
        if n == branch_at:
            # The user rewinds: this turn's answer is abandoned and the next
            # prompt hangs off the entry before it.
            branch_point = tree.leaf
            _render_turn(tree, rng, ctx, turn)
            abandoned = tree.leaf
            if rng.random() < 0.5:
                tree.add(
                    "branch_summary",
                    turn.final_ms + 1000,
                    branch_point,
                    fromId=abandoned,
                    summary=f"Abandoned approach: {turn.final[:300]}",
                )
                parent = tree.leaf
            else:
                parent = branch_point
            _render_turn(tree, rng, ctx, content.turn(rng, ctx), parent)
        else:
            _render_turn(tree, rng, ctx, turn)
        if rng.random() < 0.05:
            # The advisor's note, injected into the primary session as an extension message.
            tree.add(
                "custom_message",
                ctx.tick(3),
                customType="advisory",
                display=True,
                content=f'<advisory severity="{rng.choice(("info", "warn"))}">Re-run the tests before claiming '
                f"the fix for: {turn.prompt[:120]}</advisory>",
            )
        if rng.random() < 0.04:
            ms = ctx.tick(5)
            tree.message(
                ms,
                {
                    "role": "bashExecution",
                    "command": "git status --short",
                    "output": " M src/app.py\n?? notes.md\n",
                    "exitCode": 0,
                    "cancelled": False,
                    "truncated": False,
                    "timestamp": ms,
                },
            )
        if n and rng.random() < 0.03:
            tree.add(
                "compaction",
                ctx.tick(2),
                summary="Goal: " + turn.prompt[:400] + "\nProgress: " + turn.final[:600],
                firstKeptEntryId=tree.leaf,
                tokensBefore=rng.randint(80_000, 190_000),
            )
        n += 1
    return tree.lines


def _advisor(rng: random.Random, content: Content, ctx: SessionContext, sid: str) -> list[str]:
    tree = _Tree(rng)
    tree.lines.append(
        dumps(
            {
                "type": "session",
                "version": 3,
                "id": uuid7(rng, ctx.started_ms),
                "timestamp": iso(ctx.started_ms),
                "cwd": ctx.cwd,
                "title": "Advisor",
                "parentSession": sid,
            }
        )
    )
    for turn in ctx.turns[:6]:
        tree.message(
            turn.final_ms + 500,
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": f"## Session update\nThe primary agent answered: {turn.final[:500]}"}
                ],
                "synthetic": True,
                "attribution": "agent",
                "timestamp": turn.final_ms + 500,
            },
        )
        verdict = rng.choice(
            (
                "Nothing to critique yet.",
                "No action needed.",
                f'<advisory severity="warn">Check the tests for `{turn.prompt[:60]}` before claiming done.</advisory>',
            )
        )
        tree.message(
            turn.final_ms + 4000,
            {
                "role": "assistant",
                "content": [{"type": "text", "text": verdict}],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-haiku-4-5",
                "usage": _usage(rng),
                "stopReason": "stop",
                "timestamp": turn.final_ms + 4000,
            },
        )
    return tree.lines


def _subagent(rng: random.Random, content: Content, ctx: SessionContext, sid: str) -> list[str]:
    tree = _Tree(rng)
    tree.lines.append(
        dumps(
            {
                "type": "session",
                "version": 3,
                "id": uuid7(rng, ctx.clock_ms),
                "timestamp": iso(ctx.clock_ms),
                "cwd": ctx.cwd,
                "parentSession": sid,
            }
        )
    )
    tree.add(
        "session_init",
        ctx.clock_ms,
        None,
        systemPrompt=content.system_prompt(rng, ctx)[:2000],
        task="Explore the repository and report where the config is loaded.",
        tools=["read", "grep", "find"],
    )
    _render_turn(tree, rng, ctx, content.turn(rng, ctx))
    return tree.lines


def write(out: Path, budget: int, content: Content, seed: int) -> int:
    root = out / "omp" / "agent" / "sessions"
    root.mkdir(parents=True, exist_ok=True)
    written = sessions = advisors = 0
    while written < budget:
        rng = random.Random(f"{seed}/omp/{sessions}")
        target, heavy = session_size(rng, budget - written, content.shape)
        ctx = new_context(rng, "anthropic", rng.choice(MODELS["anthropic"]), heavy)
        sid = uuid7(rng, ctx.started_ms)
        # Session 2 always has an abandoned branch, so even a small corpus shows one.
        lines = _session(rng, content, target, sid, ctx, force_branch=sessions == 2)
        title = ctx.turns[0].prompt.split("\n", 1)[0] if ctx.turns else "New session"
        if rng.random() < 0.8:
            lines.insert(0, title_slot(title, ctx.clock_ms))
        stamp = iso(ctx.started_ms).replace(":", "-").replace(".", "-")
        folder = root / dir_name(ctx.cwd, ctx.person.home, legacy=rng.random() < 0.2)
        path = folder / f"{stamp}_{sid}.jsonl"
        written += write_lines(path, lines, ctx.clock_ms)
        stem = path.with_suffix("")
        if advisors < 2 and ctx.turns and (sessions % 3 == 0):
            written += write_lines(stem / "__advisor.jsonl", _advisor(rng, content, ctx, sid), ctx.clock_ms)
            advisors += 1
        if rng.random() < 0.06 or (sessions == 1):
            written += write_lines(
                stem / f"{rng.randint(0, 9)}-Explore.jsonl", _subagent(rng, content, ctx, sid), ctx.clock_ms
            )
        sessions += 1
    return sessions
