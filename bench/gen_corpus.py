"""Generate realistic, deterministic agent session stores for tests and benchmarks.

    python bench/gen_corpus.py OUT_DIR --mb N [--seed S] [--agents omp,codex,opencode,claude]
                               [--shape default|prose-heavy|zh-mixed] [--safe-secrets | --no-secrets]

Writes each agent's store under OUT_DIR in its real on-disk layout (see
bench/corpus/__init__.py), then prints one JSON line: bytes, files and sessions
per agent, and the `kb ingest` flags that read them. 1 MB = 1,000,000 bytes.
Same arguments → byte-identical output.

Shapes (bench/corpus/shapes.py holds the numbers; figures for --mb 200 --seed 1):

  default       long-tailed session sizes (session files: median 78 KB, p90
                238 KB, max 5.9 MB; about 1,000 sessions); most bytes are tool
                output (file reads, test logs, diffs; 76 % of OMP's bytes) in
                lines a reader can skip without decoding them; 6.9 M characters
                of kept prose (user and assistant text). Agents: OMP 35 %,
                Codex 30 %, OpenCode 20 %, Claude Code 15 % of the bytes.
  prose-heavy   many small sessions (about 1,580; files: median 102 KB, p90
                192 KB, max 1.0 MB) whose bytes sit in the assistant messages a
                reader must decode (70 % of OMP's bytes): OMP assistant lines
                carry thinking and tool-call arguments (edits, written files)
                next to the text, closing answers have thinking too, tool
                results are cut to 2,500 characters; 8.9 M characters of kept
                prose. Agents: OMP 55 %, Codex 25 %, OpenCode 12 %, Claude
                Code 8 % (an OMP-first user who also runs Codex).
  zh-mixed      prose-heavy's sizes, shares and structure (about 1,560
                sessions), with the text of a Chinese-speaking team: 60 % of
                the sessions have a user who writes Simplified Chinese
                (technical requests with English identifiers, paths, commands
                and errors inline) and gets Chinese replies that mix in
                English terms and code; thinking stays mostly English. English
                replies carry typographic punctuation (em dashes, → in
                summaries, curly apostrophes, ✅/❌ status lists, …). Non-ASCII
                text takes reader code paths that ASCII prose never does.

Secrets: by default secret-shaped strings (API keys, tokens, AWS ids, JWTs,
passwords in URLs) are generated at random in real shapes. `--safe-secrets`
uses obviously fake placeholders (`sk-EXAMPLE-…`, the AWS documentation key)
that still trip a redactor — use it for anything committed. `--no-secrets`
leaves them out.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import AGENTS, SHAPES, generate, ingest_flags  # noqa: E402


def _agents(value: str) -> tuple[str, ...]:
    agents = tuple(a.strip() for a in value.split(",") if a.strip())
    unknown = [a for a in agents if a not in AGENTS]
    if unknown or not agents:
        raise argparse.ArgumentTypeError(
            f"unknown agent(s) {','.join(unknown) or '(none)'}; choose from {','.join(AGENTS)}"
        )
    return agents


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gen_corpus.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="output directory (agent stores are replaced)")
    parser.add_argument("--mb", type=float, required=True, help="total size in MB (10^6 bytes), split across agents")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--agents", type=_agents, default=AGENTS, help="comma list (default: all)")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="default", help="corpus shape (see above)")
    secrets = parser.add_mutually_exclusive_group()
    secrets.add_argument(
        "--safe-secrets",
        action="store_const",
        dest="secrets",
        const="placeholder",
        help="obviously fake placeholder secrets, safe to commit",
    )
    secrets.add_argument(
        "--no-secrets", action="store_const", dest="secrets", const="none", help="no secret-shaped strings"
    )
    parser.set_defaults(secrets="random")
    args = parser.parse_args(argv)
    if args.mb <= 0:
        parser.error("--mb must be positive")
    out: Path = args.out.resolve()
    started = time.perf_counter()
    stats = generate(
        out,
        total_bytes=int(args.mb * 1_000_000),
        seed=args.seed,
        agents=args.agents,
        secret_mode=args.secrets,
        shape=SHAPES[args.shape],
    )
    summary = {
        "out": str(out),
        "seed": args.seed,
        "mb": args.mb,
        "shape": args.shape,
        "secrets": args.secrets,
        "total_bytes": sum(s.bytes for s in stats),
        "total_files": sum(s.files for s in stats),
        "agents": {s.agent: {"bytes": s.bytes, "files": s.files, "sessions": s.sessions} for s in stats},
        "seconds": round(time.perf_counter() - started, 2),
        "ingest_flags": ingest_flags(out, args.agents),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
