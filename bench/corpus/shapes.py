"""Corpus shapes: how big the sessions are, what an assistant message carries, each agent's share.

`default` is the generator's original mix: long-tailed session sizes (median about
78 KB, 3 % of sessions several MB), most bytes in tool output (file reads, test
logs, diffs), which a reader can skip without decoding it.

`prose-heavy` is shaped like a store of many small sessions (about 1,580 in
200 MB, no multi-MB tail), where most bytes sit in assistant messages that a
reader has to decode to get at the prose: OMP assistant lines carry a thinking
part (and a final answer's thinking) and tool-call arguments (edits, written
files) next to the text part; tool results are short. About 9 M characters of
kept prose (user and assistant text) per 200 MB. The agents' shares follow an
OMP-first user who also runs Codex, with OpenCode and Claude Code on the side.

`zh-mixed` is prose-heavy with the text real stores hold: about 60 % of the
sessions belong to a user who writes Simplified Chinese (修复…, 为什么…报错,
帮我…, with English identifiers, paths, error messages and commands inline) and
gets Chinese replies mixing in English terms and code; thinking stays English
with a Chinese sentence now and then (15 %). English assistant prose is
typeset as models write it: per message a 45 % chance of em dashes (for about
2 in 5 of its `, ` and `; `), 30 % curly apostrophes, 6 % ellipses; closing
answers add a status list with ✅/✓/❌ (30 %), a line with arrows (35 %), a
dashed aside (30 %). Templates and vocabulary are in corpus.zh. On 200 MB
(seed 1, 1,560 sessions, 61 % of them Chinese) 51 % of the kept English
replies over 200 characters have an em dash, 34 % an arrow, 30 % a check mark.

Every knob of `default` is the constant the generator had before shapes
existed, consumed in the same order, so the default output is byte-identical
to it for the same seed; later knobs (`zh_p`, `typography`, `extras`) default
to values that draw nothing, so older shapes keep their output too.
"""

from __future__ import annotations

from typing import NamedTuple


class Shape(NamedTuple):
    name: str
    # Share of the total per agent (renormalised over the agents asked for).
    weights: dict[str, float]
    # Session sizes: lognormal(median, sigma); a `heavy_p` share drawn uniformly from `heavy_bytes`.
    median_bytes: float
    sigma: float
    heavy_p: float
    heavy_bytes: tuple[float, float]
    # Assistant steps per turn, drawn from this tuple.
    steps: tuple[int, ...]
    thinking_p: float  # a step has a thinking part
    thinking_sentences: tuple[int, int]
    text_p: float  # a step has a text part next to its tool calls
    final_thinking_p: float  # the closing answer has a thinking part too
    # Cumulative shares of read, bash, grep, edit, write tool calls (glob is the rest).
    tools: tuple[float, float, float, float, float]
    output_cap: int  # tool output is cut to this many characters (0: not cut)
    # Knobs of later shapes; their defaults draw nothing, so older shapes' streams stay as they were.
    zh_p: float = 0.0  # share of sessions whose user writes Simplified Chinese (and gets Chinese replies)
    # Per English assistant message: chance of em dashes, curly apostrophes, ellipses; and
    # of a status list (✅/❌), an arrow line and a dashed aside in a closing answer.
    typography: tuple[float, float, float] = (0.0, 0.0, 0.0)
    extras: tuple[float, float, float] = (0.0, 0.0, 0.0)


DEFAULT = Shape(
    name="default",
    weights={"omp": 0.35, "codex": 0.30, "opencode": 0.20, "claude": 0.15},
    median_bytes=60_000,
    sigma=0.85,
    heavy_p=0.03,
    heavy_bytes=(1.0e6, 6.0e6),
    steps=(0, 1, 1, 2, 2, 3, 4, 6),
    thinking_p=0.6,
    thinking_sentences=(2, 14),
    text_p=0.5,
    final_thinking_p=0.0,
    tools=(0.32, 0.62, 0.74, 0.92, 0.97),
    output_cap=0,
)

PROSE_HEAVY = DEFAULT._replace(
    name="prose-heavy",
    weights={"omp": 0.55, "codex": 0.25, "opencode": 0.12, "claude": 0.08},
    median_bytes=90_000,
    sigma=0.55,
    heavy_p=0.005,
    heavy_bytes=(0.4e6, 1.2e6),
    steps=(2, 2, 3, 3, 4, 5, 6),
    thinking_p=0.9,
    thinking_sentences=(12, 48),
    text_p=0.85,
    final_thinking_p=0.7,
    tools=(0.18, 0.36, 0.44, 0.84, 0.95),
    output_cap=2_500,
)

ZH_MIXED = PROSE_HEAVY._replace(
    name="zh-mixed",
    zh_p=0.6,
    typography=(0.45, 0.3, 0.06),
    extras=(0.3, 0.35, 0.3),
)

SHAPES = {shape.name: shape for shape in (DEFAULT, PROSE_HEAVY, ZH_MIXED)}
