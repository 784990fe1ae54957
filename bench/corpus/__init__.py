"""A deterministic generator of coding-agent session stores laid out as the agents write them.

`generate(out, total_bytes=..., seed=..., agents=..., secret_mode=..., shape=...)` writes

    out/omp/agent/sessions/<dir>/<ts>_<id>.jsonl (+ <stem>/__advisor.jsonl, subagent transcripts)
    out/codex/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl, archived_sessions/, history.jsonl
    out/opencode/opencode.db (+ storage/ legacy JSON), out/opencode-state/prompt-history.jsonl
    out/claude/projects/<escaped-cwd>/<uuid>.jsonl (+ <uuid>/subagents/), history.jsonl

Same seed, size and options → byte-identical files (and mtimes). The shapes
(session sizes, what a message carries, each agent's share) are in corpus.shapes.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from corpus import claude, codex, omp, opencode
from corpus.common import budgets, tree_stats
from corpus.content import Content
from corpus.secrets import SECRET_MODES
from corpus.shapes import DEFAULT, SHAPES, Shape

AGENTS = ("omp", "codex", "opencode", "claude")
WRITERS = {"omp": omp.write, "codex": codex.write, "opencode": opencode.write, "claude": claude.write}
# The store directories each agent owns under the output dir.
STORES = {"omp": ("omp",), "codex": ("codex",), "opencode": ("opencode", "opencode-state"), "claude": ("claude",)}

__all__ = ["AGENTS", "SECRET_MODES", "SHAPES", "StoreStats", "agents_in", "generate", "ingest_flags", "store_size"]


@dataclass(frozen=True)
class StoreStats:
    agent: str
    bytes: int
    files: int
    sessions: int


def generate(
    out: Path,
    *,
    total_bytes: int,
    seed: int,
    agents: tuple[str, ...] = AGENTS,
    secret_mode: str = "random",
    shape: Shape = DEFAULT,
) -> list[StoreStats]:
    unknown = sorted(set(agents) - set(AGENTS))
    if unknown:
        raise ValueError(f"unknown agent(s): {', '.join(unknown)} (known: {', '.join(AGENTS)})")
    content = Content(seed, secret_mode, shape)
    stats = []
    for agent, budget in budgets(total_bytes, list(agents), shape.weights):
        for store in STORES[agent]:
            shutil.rmtree(out / store, ignore_errors=True)
        sessions = WRITERS[agent](out, budget, content, seed)
        stats.append(StoreStats(agent, *store_size(out, agent), sessions))
    return stats


def store_size(out: Path, agent: str) -> tuple[int, int]:
    """Bytes and files of everything the agent's stores hold under ``out``."""
    sizes = [tree_stats(out / store) for store in STORES[agent]]
    return sum(b for b, _ in sizes), sum(f for _, f in sizes)


def agents_in(out: Path) -> tuple[str, ...]:
    """The agents with a store under ``out`` (a corpus may be generated for some only)."""
    return tuple(a for a in AGENTS if any((out / s).exists() for s in STORES[a]))


def ingest_flags(out: Path, agents: tuple[str, ...] = AGENTS) -> list[str]:
    """The `kb ingest` flags that point at the generated stores."""
    flags: list[str] = []
    if "omp" in agents:
        flags += ["--omp-sessions", str(out / "omp" / "agent" / "sessions")]
    if "codex" in agents:
        flags += ["--codex-dir", str(out / "codex")]
    if "opencode" in agents:
        flags += [
            "--opencode-db",
            str(out / "opencode" / "opencode.db"),
            "--prompt-history",
            str(out / "opencode-state" / "prompt-history.jsonl"),
        ]
    if "claude" in agents:
        flags += ["--claude-dir", str(out / "claude")]
    return flags
