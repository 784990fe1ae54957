"""First run of kbtools against the reference TypeScript pipeline, side by side on the same store.

    python bench/gen_corpus.py bench/.corpus/ph200 --mb 200 --seed 1 --shape prose-heavy
    python bench/vs_reference.py bench/.corpus/ph200 WORK --reference /tmp/kbref/kb-ingest-sessions.mjs \\
        --node /tmp/kbref/node_modules/.bin/node [--runs 5] [--jobs N]

The reference is `scripts/kb-ingest-sessions.ts` of github.com/DavidHLP/DavidHLP.github.io at commit
c0ae74e72982910e13c46de0b92cf8fb9a8d1751 (the script is byte-identical at 7ea30d9, where it was
added: 1,205 lines, 51,485 bytes). It is not part of this repository; to obtain and build it,
outside the repository:

    git clone https://github.com/DavidHLP/DavidHLP.github.io /tmp/kbref/repo
    git -C /tmp/kbref/repo checkout c0ae74e72982910e13c46de0b92cf8fb9a8d1751
    cd /tmp/kbref && npm init -y && npm install node@22 esbuild   # node:sqlite needs Node >= 22.5
    node_modules/.bin/esbuild repo/scripts/kb-ingest-sessions.ts --format=esm --platform=node \\
        --target=node22 --outfile=/tmp/kbref/kb-ingest-sessions.mjs

Give `--reference` an absolute path without characters that need URL escaping: the script runs
its CLI only when `import.meta.url` equals `file://` + argv[1].

The compared store is WORK/store: hard links to what both read — the OMP sessions, the Codex
home (sessions, archived_sessions, history.jsonl), OpenCode's `opencode.db` and its prompt
history. The reference has no Claude Code reader and reads no OpenCode `storage/` tree, so those
are left out, and kbtools is given the same four locations. Both run with HOME and the XDG
folders in an empty directory (no other store is found), Hindsight off, each into a fresh output
dir (the reference from a fresh working directory: it writes `.agent/checkpoints/` there), in
alternation, `--runs` times each. CPU seconds are user + sys of each one's whole process tree
(first_run.run_tree). MB = 10^6 bytes of the compared store's files.

Prints one JSON line per run, a check that both read the same sources (their manifest rows per
tool and record type, unavailable stores left out), and a summary: min and median of CPU s,
wall s and peak RSS of each, MB/s wall, and kbtools / reference of CPU s and wall s. Exits 1
if a run failed or the two read different sources.
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

from benchenv import compile_package, kb_command  # noqa: E402
from corpus.common import tree_stats  # noqa: E402
from first_run import become_subreaper, isolated_env, last_json, manifest_counts, run_tree, spread  # noqa: E402

# What both pipelines read, relative to a gen_corpus.py output dir.
SHARED = ("omp/agent/sessions", "codex", "opencode/opencode.db", "opencode-state/prompt-history.jsonl")


def link_store(corpus: Path, store: Path) -> None:
    """``store`` holds hard links (same inode, size and mtime) to the parts of ``corpus`` both read."""
    shutil.rmtree(store, ignore_errors=True)
    for rel in SHARED:
        src, dst = corpus / rel, store / rel
        if not src.exists():
            raise SystemExit(f"vs_reference.py: {src} is missing (generate the corpus with bench/gen_corpus.py)")
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, copy_function=os.link)
        else:
            os.link(src, dst)


def source_flags(store: Path) -> list[str]:
    """The flags both CLIs accept, naming the four shared locations."""
    return [
        "--omp-sessions",
        str(store / SHARED[0]),
        "--codex-dir",
        str(store / SHARED[1]),
        "--opencode-db",
        str(store / SHARED[2]),
        "--prompt-history",
        str(store / SHARED[3]),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="vs_reference.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, help="a gen_corpus.py output dir")
    parser.add_argument("work", type=Path, help="work dir (replaced): linked store, outputs, logs")
    parser.add_argument("--reference", type=Path, required=True, help="the reference built to .mjs (see above)")
    parser.add_argument("--node", default="node", help="a Node >= 22.5 binary (default: node on PATH)")
    parser.add_argument("--runs", type=int, default=5, help="runs of each, alternating")
    parser.add_argument("--jobs", type=int, default=None, help="kb ingest --jobs (default: none given)")
    args = parser.parse_args(argv)
    reference = args.reference.resolve()
    if not reference.is_file():
        parser.error(f"--reference {reference} is not a file (see the module docstring for how to build it)")
    work = args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    store, logs = work / "store", work / "logs"
    link_store(args.corpus.resolve(), store)
    logs.mkdir(parents=True)
    mb = tree_stats(store)[0] / 1e6
    env = isolated_env(work / "home")
    compile_package()
    subprocess.run([*kb_command(), "init", str(work / "kb")], check=True, stdout=subprocess.DEVNULL, env=env)
    node_version = subprocess.run([args.node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    become_subreaper()
    print(json.dumps({"mb": round(mb, 2), "node": node_version, "loadavg": os.getloadavg()}), flush=True)

    def kbtools(out: Path) -> tuple[list[str], Path]:
        cmd = [*kb_command(), "ingest", "--write", "--skip-hindsight", "--output-dir", str(out), *source_flags(store)]
        return cmd + ([] if args.jobs is None else ["--jobs", str(args.jobs)]), work / "kb"

    def reference_run(out: Path) -> tuple[list[str], Path]:
        cwd = out.parent / f"{out.name}-repo"
        cwd.mkdir()
        return [args.node, str(reference), "--write", "--skip-hindsight", "--output-dir", str(out)] + source_flags(
            store
        ), cwd

    tools = {"kbtools": kbtools, "reference": reference_run}
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in tools}
    counts: dict[str, dict[str, int]] = {}
    failed = False
    for number in range(args.runs):
        for name, make in tools.items():
            out = work / "out" / f"{name}-{number}"
            out.parent.mkdir(exist_ok=True)
            cmd, cwd = make(out)
            run = run_tree(cmd, cwd, env, logs / f"{name}-{number}.stdout", logs / f"{name}-{number}.stderr")
            summary = last_json(logs / f"{name}-{number}.stdout") if run.exit == 0 else {}
            row = {
                "tool": name,
                "run": number,
                "exit": run.exit,
                "cpu_s": round(run.cpu, 2),
                "wall_s": round(run.wall, 2),
                "mb_per_s": round(mb / run.wall, 1),
                "cpu_s_per_mb": round(run.cpu / mb, 4),
                "peak_rss_mb": round(run.peak_rss_mb, 1),
                "loadavg_1m": os.getloadavg()[0],
                "discovered": summary.get("discovered"),
                "candidates": summary.get("candidates"),
            }
            print(json.dumps(row), flush=True)
            failed |= run.exit != 0
            if run.exit == 0:
                rows[name].append(row)
                counts.setdefault(name, manifest_counts(out / "manifest.jsonl"))
            shutil.rmtree(out, ignore_errors=True)
    same = len(counts) == 2 and counts["kbtools"] == counts["reference"]
    print(json.dumps({"sources_read": counts, "same": same}), flush=True)
    if all(rows.values()):
        line: dict[str, object] = {"mb": round(mb, 2), "runs": args.runs}
        for name, runs in rows.items():
            line[name] = {key: spread([float(r[key]) for r in runs]) for key in ("cpu_s", "wall_s", "peak_rss_mb")}
            line[name]["mb_per_s"] = spread([mb / float(r["wall_s"]) for r in runs], 1)  # type: ignore[index]
        for key in ("cpu_s", "wall_s"):
            ours, theirs = ([float(r[key]) for r in rows[n]] for n in tools)
            line[f"ratio_{key}"] = {
                "min": round(min(ours) / min(theirs), 3),
                "median": round(statistics.median(ours) / statistics.median(theirs), 3),
            }
        print(json.dumps(line), flush=True)
    return 1 if failed or not same else 0


if __name__ == "__main__":
    raise SystemExit(main())
