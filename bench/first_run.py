"""First-run cost of `kb ingest --write` per corpus shape: CPU seconds (primary), wall, MB/s, peak RSS.

    python bench/first_run.py WORK [--mb 200] [--shapes default,prose-heavy] [--jobs default,1]
                              [--repeat 3] [--seed 1] [--tree LABEL=CHECKOUT ...]

`--shapes` takes any of bench/corpus/shapes.py's (default, prose-heavy, zh-mixed).
Generates each shape's corpus once under WORK/corpus/ (bench/gen_corpus.py's
generator, seed 1 by default; kept for later runs), makes a scratch knowledge
base (`kb init`), then runs the first run — `kb ingest --write --skip-hindsight`
with every source flag of the corpus into a fresh output dir — for each shape
and `--jobs` value in turn, `--repeat` rounds, alternating so that machine load
falls on all of them alike. `default` means no `--jobs` flag (one worker per
core), as a user runs it.

`kb` runs with HOME and the XDG folders pointed at an empty directory, so it
reads the corpus and nothing of the machine's own agent stores, and with its
bytecode compiled (benchenv.py). CPU seconds are user + sys of the whole
process tree: `wait4` of `kb` counts the workers it reaps, and this process is
a child subreaper (Linux), so any process left behind is reaped and counted
too. MB = 10^6 bytes of the files of the agent stores read.

Prints one JSON line per run, then one summary line per shape and `--jobs`
value: min and median of CPU s, wall s, CPU s per MB, MB/s wall and peak RSS.

`--tree base=/tmp/base` (repeatable) compares commits side by side: a checkout
of another commit (`git worktree add /tmp/base REV`) runs each configuration
too, in the same rounds, with its `kbtools` first on PYTHONPATH (bytecode
compiled likewise); this tree's runs are labelled `this`.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchenv import RUN_ENV, compile_package, kb_command  # noqa: E402
from corpus import SHAPES, agents_in, generate, ingest_flags, store_size  # noqa: E402

# Variables that would point a reader (kbtools' or the reference's) at another store.
STORE_VARIABLES = (
    "CODEX_HOME",
    "PI_CODING_AGENT_DIR",
    "OPENCODE_DB",
    "CLAUDE_CONFIG_DIR",
    "GEMINI_CLI_HOME",
    "HINDSIGHT_API_URL",
    "HINDSIGHT_API_KEY",
    "OMP_PROFILE",
)
SUMMARY_KEYS = ("discovered", "processed", "skipped", "failed", "candidates", "errors")
_PR_SET_CHILD_SUBREAPER = 36


def isolated_env(home: Path, base: Mapping[str, str] = RUN_ENV) -> dict[str, str]:
    """``base`` with HOME and the XDG folders in an empty ``home``, and no store variables."""
    for sub in ("", ".local/share", ".local/state", ".config", ".cache"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in base.items() if k not in STORE_VARIABLES}
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_STATE_HOME=str(home / ".local/state"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
    )
    return env


@dataclass(frozen=True)
class TreeRun:
    exit: int
    wall: float  # seconds until the command itself exited
    cpu: float  # user + sys seconds of the command and every descendant
    peak_rss_mb: float  # the largest resident set of any of them


def become_subreaper() -> None:
    """Orphaned descendants are reparented to this process (so they are reaped and counted here)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def run_tree(cmd: Sequence[str], cwd: Path, env: Mapping[str, str], stdout: Path, stderr: Path) -> TreeRun:
    """Run ``cmd`` to completion and reap every process of its tree (call :func:`become_subreaper` first)."""
    with stdout.open("wb") as out, stderr.open("wb") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(list(cmd), cwd=cwd, env=dict(env), stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        wall, code, cpu, rss = 0.0, -1, 0.0, 0
        while True:
            try:
                pid, status, usage = os.wait4(-1, 0)
            except ChildProcessError:
                break
            cpu += usage.ru_utime + usage.ru_stime
            rss = max(rss, usage.ru_maxrss)
            if pid == proc.pid:
                wall = time.perf_counter() - started
                code = os.waitstatus_to_exitcode(status)
                proc.returncode = code
    return TreeRun(code, wall, cpu, rss / 1024)  # Linux reports KiB


def last_json(path: Path) -> dict[str, object]:
    """The last line of a file as a JSON object ({} when it is not one)."""
    lines = path.read_text("utf-8", "replace").strip().splitlines()
    try:
        value = json.loads(lines[-1]) if lines else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def manifest_counts(manifest: Path) -> dict[str, int]:
    """Manifest rows per ``tool/record_type``, not counting unavailable stores."""
    counts: Counter[str] = Counter()
    if manifest.exists():
        with manifest.open("rb") as fh:
            for line in fh:
                row = json.loads(line)
                if row.get("format") != "unavailable":
                    counts[f"{row['tool']}/{row['record_type']}"] += 1
    return dict(sorted(counts.items()))


def spread(values: Sequence[float], digits: int = 2) -> dict[str, float]:
    return {"min": round(min(values), digits), "median": round(statistics.median(values), digits)}


def corpus_for(work: Path, shape: str, mb: float, seed: int) -> Path:
    """The shape's corpus under ``work``, generated unless a complete one is there."""
    out = work / "corpus" / f"{shape}-{mb:g}mb-seed{seed}"
    done = out / ".generated.json"
    if not done.exists():
        shutil.rmtree(out, ignore_errors=True)
        stats = generate(out, total_bytes=int(mb * 1_000_000), seed=seed, shape=SHAPES[shape])
        done.write_text(json.dumps({s.agent: {"bytes": s.bytes, "sessions": s.sessions} for s in stats}))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="first_run.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("work", type=Path, help="work dir: corpora (kept), scratch KB, ledgers, logs")
    parser.add_argument("--mb", type=float, default=200.0)
    parser.add_argument("--shapes", default="default,prose-heavy", help="comma list of corpus shapes")
    parser.add_argument("--jobs", default="default,1", help="comma list: 'default' (no flag) or a number")
    parser.add_argument("--repeat", type=int, default=3, help="rounds (each runs every shape and --jobs once)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tree", action="append", default=[], help="LABEL=CHECKOUT of another commit to run too")
    args = parser.parse_args(argv)
    trees: dict[str, Path | None] = {"this": None}
    for spec in args.tree:
        label, _, path = spec.partition("=")
        if not label or not path or not (Path(path) / "kbtools" / "__init__.py").is_file() or label in trees:
            parser.error(f"--tree {spec}: expected a new LABEL=CHECKOUT, the checkout holding kbtools/")
        trees[label] = Path(path).resolve()
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    if unknown := [s for s in shapes if s not in SHAPES]:
        parser.error(f"unknown shape(s) {','.join(unknown)}; choose from {','.join(SHAPES)}")
    jobs = [j.strip() for j in args.jobs.split(",") if j.strip()]
    if bad := [j for j in jobs if j != "default" and not j.isdigit()]:
        parser.error(f"--jobs: {','.join(bad)} is neither 'default' nor a number")
    work = args.work.resolve()
    corpora = {shape: corpus_for(work, shape, args.mb, args.seed) for shape in shapes}
    run_dir, logs = work / "run", work / "logs"
    shutil.rmtree(run_dir, ignore_errors=True)
    logs.mkdir(parents=True, exist_ok=True)
    env = isolated_env(run_dir / "home")
    compile_package()
    envs = {label: env if path is None else {**env, "PYTHONPATH": str(path)} for label, path in trees.items()}
    for path in filter(None, trees.values()):
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(path / "kbtools")], check=True, stdout=subprocess.DEVNULL
        )
    subprocess.run([*kb_command(), "init", str(run_dir / "kb")], check=True, stdout=subprocess.DEVNULL, env=env)
    become_subreaper()
    print(json.dumps({"loadavg": os.getloadavg(), "cores": os.cpu_count()}), flush=True)
    results: dict[tuple[str, str, str], list[dict[str, object]]] = {}
    failed = False
    for number in range(args.repeat):
        for shape, corpus in corpora.items():
            agents = agents_in(corpus)
            mb = sum(store_size(corpus, a)[0] for a in agents) / 1e6
            for job in jobs:
                for label, tree_env in envs.items():
                    ledgers = run_dir / "ledgers"
                    shutil.rmtree(ledgers, ignore_errors=True)
                    cmd = [*kb_command(), "ingest", "--write", "--skip-hindsight", "--output-dir", str(ledgers)]
                    cmd += ingest_flags(corpus, agents) + ([] if job == "default" else ["--jobs", job])
                    name = f"{label}-{shape}-jobs{job}-{number}"
                    run = run_tree(cmd, run_dir / "kb", tree_env, logs / f"{name}.stdout", logs / f"{name}.stderr")
                    summary = last_json(logs / f"{name}.stdout") if run.exit == 0 else {}
                    row = {
                        "tree": label,
                        "shape": shape,
                        "jobs": job,
                        "round": number,
                        "exit": run.exit,
                        "mb": round(mb, 2),
                        "cpu_s": round(run.cpu, 2),
                        "wall_s": round(run.wall, 2),
                        "cpu_s_per_mb": round(run.cpu / mb, 4),
                        "mb_per_s": round(mb / run.wall, 1),
                        "peak_rss_mb": round(run.peak_rss_mb, 1),
                        "loadavg_1m": os.getloadavg()[0],
                        **{k: summary.get(k) for k in SUMMARY_KEYS},
                    }
                    print(json.dumps(row), flush=True)
                    failed |= run.exit != 0
                    if run.exit == 0:
                        results.setdefault((label, shape, job), []).append(row)
    for (label, shape, job), rows in results.items():
        line = {"tree": label, "shape": shape, "jobs": job, "runs": len(rows), "mb": rows[0]["mb"]}
        for key in ("cpu_s", "wall_s", "cpu_s_per_mb", "mb_per_s", "peak_rss_mb"):
            line[key] = spread([float(r[key]) for r in rows], 4 if key == "cpu_s_per_mb" else 2)
        print(json.dumps(line), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
