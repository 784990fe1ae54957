"""Wall time of the plain git hook (`kb hooks install`) before a commit with a handful of changes.

Usage: python bench/hook_bench.py [--raws N] [--notes N] [--runs N]

Generates a KB with bench/lint_bench.py's generator (committed), installs the plain hook,
stages five changes (a new raw file, its manifest line, its index row, a note citing it, a
log entry) and times, best of ``--runs``, with `kb` started as a subprocess each time:

- `kb lint --staged` alone;
- `kb hooks run pre-commit` (lint, retention, artifact recording in one process);
- the installed hook script itself, as git runs it (`sh .kb/hooks/pre-commit`).

The budget (SPEC §9) is 300 ms wall for the staged hook, interpreter start included.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchenv import RUN_ENV, bench_git  # noqa: E402
from lint_bench import best_of, generate_kb, stage_note_and_log, stage_three_changes  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--raws", type=int, default=1_000)
    ap.add_argument("--notes", type=int, default=200)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    kb = [sys.executable, "-m", "kbtools"]
    with tempfile.TemporaryDirectory(prefix="kb-hook-bench-") as tmp:
        root = Path(tmp) / "kb"
        root.mkdir()
        generate_kb(root, raws=args.raws, notes=args.notes)
        subprocess.run([*kb, "hooks", "install"], cwd=root, check=True, stdout=subprocess.DEVNULL)
        stage_three_changes(root)
        stage_note_and_log(root)
        # The first run records the staged note in the artifact manifest (exit 1, as the hook
        # convention wants); stage that too so every timed run is the steady state.
        subprocess.run([*kb, "hooks", "run", "pre-commit"], cwd=root, capture_output=True)
        bench_git(root, "add", "-A")
        env = {**RUN_ENV, "KB": " ".join(kb)}  # the hook script runs $KB when set; kb need not be on PATH
        rows = [
            ("kb lint --staged", best_of(args.runs, [*kb, "lint", "--staged"], root, env)),
            ("kb hooks run pre-commit", best_of(args.runs, [*kb, "hooks", "run", "pre-commit"], root, env)),
            ("sh .kb/hooks/pre-commit (as git runs it)", best_of(args.runs, ["sh", ".kb/hooks/pre-commit"], root, env)),
        ]
    print(f"KB: {args.raws} raw files, {args.notes} notes; 5 staged changes; best of {args.runs}")
    for name, seconds in rows:
        print(f"{name}: {seconds * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
