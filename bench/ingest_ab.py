"""Two kbtools trees side by side on the same corpus: the unchanged rerun and the growth rerun.

    git worktree add /tmp/kb-base REV            # the tree to compare against
    python bench/ingest_ab.py bench/.corpus/500 OUT /tmp/kb-base . [--repeat 7] [--first]

Copies the corpus once; each tree gets its own ledgers from its own first run
(and the rerun that turns every row "unchanged"). Then the trees take turns,
A B A B …, each run starting from its tree's ledgers as they were: ``--repeat``
unchanged reruns each, then a turn is appended to 1 % of the sessions and
``--repeat`` growth reruns each. Every run is ``python -m kbtools ingest --write``
with ``PYTHONPATH=<tree>`` and the tree's bytecode compiled. Prints one JSON
line per run (wall and CPU seconds of the child and its workers, from wait4)
and per tree and phase a summary: min and median of wall and CPU, and the load
average before and after. ``--first`` times the first runs too (one each).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchenv import RUN_ENV, run_child  # noqa: E402
from corpus import agents_in, ingest_flags  # noqa: E402
from corpus.append import append_turns  # noqa: E402


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def snapshot(src: Path, dst: Path) -> None:
    """Ledgers as they were: the ledgers hard-linked (same inode and mtime, as the caches key
    them; a run replaces them whole), every other file copied (a run may change it in place:
    the search index, the extraction memo)."""
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, copy_function=_link_or_copy)
    index, stamp = dst / "search-index.sqlite", dst / "search-index.stamp"
    if index.exists() and stamp.exists():  # the copy's own stamp, else the run rebuilds the index
        st = index.stat()
        stamp.write_text(json.dumps([st.st_size, st.st_mtime_ns, st.st_ino]) + "\n")


def _link_or_copy(src: str, dst: str) -> None:
    if src.endswith(".jsonl"):
        os.link(src, dst)
    else:
        shutil.copy2(src, dst)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ingest_ab.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("out", type=Path, help="work dir (replaced)")
    parser.add_argument("trees", type=Path, nargs=2, help="tree A and tree B (each a checkout of kbtools)")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--append-fraction", type=float, default=0.01)
    parser.add_argument("--first", action="store_true", help="report the first runs' times too")
    args = parser.parse_args(argv)
    agents = agents_in(args.corpus)
    if not agents:
        parser.error(f"no agent store under {args.corpus}")
    work = args.out.resolve()
    shutil.rmtree(work, ignore_errors=True)
    corpus, kb = work / "corpus", work / "kb"
    shutil.copytree(args.corpus, corpus)
    trees = [t.resolve() for t in args.trees]
    names = ["A", "B"]
    for tree in trees:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "kbtools")], check=True)
    subprocess.run([sys.executable, "-m", "kbtools", "init", str(kb)], check=True, stdout=subprocess.DEVNULL)
    flags = ingest_flags(corpus, agents)

    def run(i: int, ledgers: Path) -> dict[str, object]:
        env = {**RUN_ENV, "PYTHONPATH": str(trees[i])}
        cmd = [sys.executable, "-m", "kbtools", "ingest", "--write", "--skip-hindsight", "--output-dir"]
        done = run_child([*cmd, str(ledgers), *flags], kb, env=env)
        lines = done.stdout.decode("utf-8", "replace").strip().splitlines()
        summary = json.loads(lines[-1]) if done.exit == 0 and lines else {}
        return {
            "tree": names[i],
            "exit": done.exit,
            "wall": round(done.seconds, 3),
            "cpu": round(done.cpu_seconds, 3),
            "processed": summary.get("processed"),
            "unchanged": summary.get("unchanged"),
        }

    base = [work / f"ledgers-{n}-base" for n in names]
    for i in range(2):
        live = work / f"ledgers-{names[i]}"
        first = run(i, live)
        if args.first:
            print(json.dumps({"phase": "first", **first}), flush=True)
        run(i, live)  # every row turns "unchanged"
        snapshot(live, base[i])

    failed = False
    for phase in ("unchanged", "growth"):
        if phase == "growth":
            grown = append_turns(corpus, args.append_fraction, 1)
            print(json.dumps({"phase": "append", "sessions": grown.sessions, "bytes": grown.bytes}), flush=True)
        runs: list[list[dict[str, object]]] = [[], []]
        load_before = loadavg()
        for _ in range(args.repeat):
            for i in range(2):
                live = work / f"ledgers-{names[i]}"
                snapshot(base[i], live)
                result = run(i, live)
                failed |= result["exit"] != 0
                runs[i].append(result)
                print(json.dumps({"phase": phase, **result}), flush=True)
        load_after = loadavg()
        for i in range(2):
            wall = [float(str(r["wall"])) for r in runs[i]]
            cpu = [float(str(r["cpu"])) for r in runs[i]]
            summary = {
                "phase": phase,
                "tree": names[i],
                "path": str(trees[i]),
                "runs": len(wall),
                "wall_min": min(wall),
                "wall_median": statistics.median(wall),
                "cpu_min": min(cpu),
                "cpu_median": statistics.median(cpu),
                "load_before": load_before,
                "load_after": load_after,
            }
            print(json.dumps(summary), flush=True)
    if os.environ.get("KEEP_AB_WORK") != "1":
        shutil.rmtree(work / "corpus", ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
