"""Benchmark `kb ingest --write` on a generated corpus: first run, unchanged rerun, rerun after growth.

    python bench/gen_corpus.py bench/.corpus/50 --mb 50 --seed 1
    python bench/ingest_bench.py bench/.corpus/50 bench/.out/50 [--jobs N] [--append-fraction 0.01] [--repeat N]

Copies the corpus into OUT_DIR/corpus (so appends never touch the original),
makes a scratch knowledge base OUT_DIR/kb (`kb init`), then runs `kb ingest
--write --skip-hindsight` with every source flag as a child process, in three
phases:

  first      fresh output dir
  unchanged  the same input again
  appended   after appending one user/assistant turn to `--append-fraction`
             of the sessions of every store

With `--repeat N` each rerun phase runs N times from the same ledgers and a
summary line gives min and median (the unchanged phase once more first: the
first rerun after a first run turns every "processed" row into "unchanged",
and the timed runs start from the ledgers it leaves).

with kbtools' bytecode compiled, as an installed kb has it (see benchenv.py),
and prints one JSON line per run: wall seconds, session MB/s (bytes of every
file of the agent stores / wall time), the child's peak RSS (wait4 rusage),
and the ingest summary's counts.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchenv import RUN_ENV, compile_package, kb_command, run_child  # noqa: E402
from corpus import agents_in, ingest_flags, store_size  # noqa: E402
from corpus.append import append_turns  # noqa: E402
from ingest_ab import snapshot  # noqa: E402

SUMMARY_KEYS = (
    "discovered",
    "processed",
    "unchanged",
    "skipped",
    "failed",
    "candidates",
    "rejected",
    "duplicates",
    "errors",
)


def run_phase(phase: str, cmd: list[str], cwd: Path, session_bytes: int, logs: Path) -> dict[str, object]:
    out_path, err_path = logs / f"{phase}.stdout", logs / f"{phase}.stderr"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        run = run_child(cmd, cwd, stdout=out, stderr=err, env=RUN_ENV)
    lines = out_path.read_text("utf-8", "replace").strip().splitlines()
    summary = json.loads(lines[-1]) if run.exit == 0 and lines else {}
    return {
        "phase": phase,
        "exit": run.exit,
        "seconds": round(run.seconds, 3),
        "session_mb": round(session_bytes / 1e6, 2),
        "mb_per_s": round(session_bytes / 1e6 / run.seconds, 1),
        "peak_rss_mb": round(run.usage.ru_maxrss / 1024, 1),  # Linux reports KiB
        **{k: summary.get(k) for k in SUMMARY_KEYS},
        **({} if run.exit == 0 else {"stderr_tail": err_path.read_text("utf-8", "replace")[-500:]}),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ingest_bench.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, help="a gen_corpus.py output dir")
    parser.add_argument("out", type=Path, help="work dir (replaced): corpus copy, scratch KB, ledgers, logs")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--append-fraction", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=1, help="seed of the appended turns")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs of each rerun phase, from the same ledgers (a summary line gives min and median)",
    )
    args = parser.parse_args(argv)
    agents = agents_in(args.corpus)
    if not agents:
        parser.error(f"no agent store under {args.corpus} (run bench/gen_corpus.py first)")
    work = args.out.resolve()
    shutil.rmtree(work, ignore_errors=True)
    corpus, kb, ledgers, logs = work / "corpus", work / "kb", work / "ledgers", work / "logs"
    shutil.copytree(args.corpus, corpus)
    logs.mkdir(parents=True)
    compile_package()
    subprocess.run([*kb_command(), "init", str(kb)], check=True, stdout=subprocess.DEVNULL)
    cmd = [
        *kb_command(),
        "ingest",
        "--write",
        "--skip-hindsight",
        "--output-dir",
        str(ledgers),
        *ingest_flags(corpus, agents),
    ]
    if args.jobs:
        cmd += ["--jobs", str(args.jobs)]

    def session_bytes() -> int:
        return sum(store_size(corpus, a)[0] for a in agents)

    failed = False
    before = work / "ledgers-before"
    for phase in ("first", "unchanged", "appended"):
        if phase == "appended":
            grown = append_turns(corpus, args.append_fraction, args.seed)
            print(json.dumps({"phase": "append", "sessions": grown.sessions, "bytes": grown.bytes}), flush=True)
        runs = 1 if phase == "first" else max(args.repeat, 1)
        # The first rerun after a first run rewrites every row ("processed" → "unchanged"):
        # repeated, the unchanged phase is timed from the ledgers it leaves.
        warm = 1 if phase == "unchanged" and runs > 1 else 0
        seconds = []
        for number in range(warm + runs):
            if runs > 1 and number == warm:  # every timed run starts from these ledgers
                snapshot(ledgers, before)
            elif runs > 1 and number > warm:
                snapshot(before, ledgers)
            result = run_phase(phase, cmd, kb, session_bytes(), logs)
            print(json.dumps(result), flush=True)
            failed |= result["exit"] != 0
            seconds += [result["seconds"]] if number >= warm else []
        if runs > 1:
            shutil.rmtree(before)
            print(
                json.dumps(
                    {"phase": phase, "runs": runs, "min_s": min(seconds), "median_s": statistics.median(seconds)}
                ),
                flush=True,
            )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
