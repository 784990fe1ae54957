"""`kb lint` of two kbtools trees side by side on the same KBs: before and after a change.

Usage: python bench/evidence_bench.py OLD_TREE NEW_TREE [--runs N] [--big-mb N] [--skip-large]

Each tree is a checkout of the project (``git archive REV | tar -x -C DIR``); `kb` runs as
``python -m kbtools`` with ``PYTHONPATH=TREE``, alternating old and new, best of ``--runs``:

- `kb lint --staged` on the hook's KB (1,000 raw files, 200 notes; a new raw file, its
  manifest line and index row staged) — the 300 ms budget of the commit hook;
- `kb lint` and `kb lint --staged` on 10,000 raw files and 2,000 notes (unless --skip-large);
- `kb lint --staged` with one raw file of ``--big-mb`` MB staged (default 200): wall time and
  peak RSS from wait4 (the kb process and the git processes it waited for; git diff itself
  holds the blob).
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchenv import RUN_ENV, bench_git, run_child  # noqa: E402
from lint_bench import LOCALE, generate_kb, stage_three_changes  # noqa: E402


def kb_env(tree: Path) -> dict[str, str]:
    return {**RUN_ENV, "PYTHONPATH": str(tree)}


def compile_tree(tree: Path) -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "kbtools")], check=True)


def best(runs: int, args: list[str], cwd: Path, tree: Path) -> tuple[float, int, int]:
    """Least wall seconds, the largest peak RSS (kB) and the exit code of ``kb args``."""
    seconds, rss, code = float("inf"), 0, 0
    for _ in range(runs):
        child = run_child([sys.executable, "-m", "kbtools", *args], cwd, env=kb_env(tree))
        seconds, rss, code = min(seconds, child.seconds), max(rss, child.usage.ru_maxrss), child.exit
    return seconds, rss, code


def big_raw(root: Path, megabytes: int) -> None:
    line = b"Evidence line with some words in it, long enough to look like prose in a transcript.\n"
    head = b'---\ntitle: "Big"\ncapturedAt: 2026-08-09\nsourceType: file\nsourceUrl: file:big\n---\n\n'
    path = root / "src/content/raw" / LOCALE / "raw-big.md"
    digest = hashlib.sha256(head)
    with open(path, "wb") as fh:
        fh.write(head)
        block = line * 10_000
        for _ in range(megabytes * 1024 * 1024 // len(block)):
            fh.write(block)
            digest.update(block)
    with (root / "src/content/raw/.manifest.sha256").open("a", encoding="utf-8") as fh:
        fh.write(f"{digest.hexdigest()} {LOCALE}/raw-big.md\n")
    index = root / "src/content/information" / LOCALE / "kb-index.md"
    index.write_text(index.read_text(encoding="utf-8") + "| `raw-big` | file |\n", encoding="utf-8")
    bench_git(root, "add", "-A")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--big-mb", type=int, default=200)
    ap.add_argument("--skip-large", action="store_true")
    args = ap.parse_args(argv)
    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    for tree in trees.values():
        compile_tree(tree)
    rows: list[str] = []

    def measure(label: str, cmd: list[str], root: Path, runs: int) -> None:
        for name, tree in trees.items():
            seconds, rss, code = best(runs, cmd, root, tree)
            rows.append(f"{label} [{name}]: {seconds * 1000:.0f} ms, peak RSS {rss / 1024:.0f} MB, exit {code}")
            print(rows[-1], flush=True)

    with tempfile.TemporaryDirectory(prefix="kb-evidence-bench-") as tmp:
        hook = Path(tmp) / "hook"
        hook.mkdir()
        generate_kb(hook, raws=1_000, notes=200)
        stage_three_changes(hook)
        measure("hook KB (1,000 raw, 200 notes): kb lint --staged", ["lint", "--staged"], hook, args.runs)
        if not args.skip_large:
            large = Path(tmp) / "large"
            large.mkdir()
            generate_kb(large, raws=10_000, notes=2_000)
            measure("10,000 raw + 2,000 notes: kb lint", ["lint"], large, args.runs)
            stage_three_changes(large)
            measure("10,000 raw + 2,000 notes: kb lint --staged", ["lint", "--staged"], large, args.runs)
        big_raw(hook, args.big_mb)
        measure(f"one {args.big_mb} MB raw file staged: kb lint --staged", ["lint", "--staged"], hook, 1)
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
