"""Wall time of the plain git hook (`kb hooks install`) before a commit with a handful of changes.

Usage: python bench/hook_bench.py [--raws N] [--notes N] [--runs N] [--kb SPEC]...

Generates a KB with bench/lint_bench.py's generator (committed), installs the plain hook,
stages five changes (a new raw file, its manifest line, its index row, a note citing it, a
log entry) and times, min and median of ``--runs`` rounds after a warm-up (wall, and CPU =
user + sys of the child), with `kb` started as a subprocess each time:

- `kb lint --staged` alone;
- `kb hooks run pre-commit` (lint, retention, artifact recording in one process);
- the installed hook script itself, as git runs it (`sh .kb/hooks/pre-commit`).

The budget (SPEC §9) is 300 ms wall for the staged hook, interpreter start included.
``--kb '[VAR=value ...] PYTHON'`` as in bench/lint_bench.py: repeat it to compare two trees,
the interpreters taking turns in every round.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchenv import RUN_ENV, bench_git  # noqa: E402
from lint_bench import (  # noqa: E402
    Interpreter,
    generate_kb,
    interleaved,
    load_average,
    stage_note_and_log,
    stage_three_changes,
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--raws", type=int, default=1_000)
    ap.add_argument("--notes", type=int, default=200)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--kb", action="append", metavar="'[VAR=value ...] PYTHON'")
    args = ap.parse_args(argv)
    kbs = [Interpreter.parse(spec) for spec in (args.kb or [sys.executable])]
    with tempfile.TemporaryDirectory(prefix="kb-hook-bench-") as tmp:
        root = Path(tmp) / "kb"
        root.mkdir()
        generate_kb(root, raws=args.raws, notes=args.notes)
        subprocess.run(kbs[0].kb("hooks", "install"), cwd=root, check=True, stdout=subprocess.DEVNULL, env=RUN_ENV)
        stage_three_changes(root)
        stage_note_and_log(root)
        # The first run records the staged note in the artifact manifest (exit 1, as the hook
        # convention wants); stage that too so every timed run is the steady state.
        subprocess.run(kbs[0].kb("hooks", "run", "pre-commit"), cwd=root, capture_output=True, env=RUN_ENV)
        bench_git(root, "add", "-A")
        print(f"load average {load_average()} at the start")
        rows = []
        for name, command in (
            ("kb lint --staged", ("lint", "--staged")),
            ("kb hooks run pre-commit", ("hooks", "run", "pre-commit")),
            ("sh .kb/hooks/pre-commit (as git runs it)", None),
        ):
            # The hook script runs $KB when set; kb need not be on PATH.
            runs = [
                (kb.kb(*command) if command else ["sh", ".kb/hooks/pre-commit"], {**kb.env, "KB": shlex.join(kb.kb())})
                for kb in kbs
            ]
            rows.append((name, interleaved(args.runs, runs, root)))
    print(f"KB: {args.raws} raw files, {args.notes} notes; 5 staged changes; {args.runs} rounds, interleaved")
    print("| command | " + " | ".join(f"`{kb.label}`" for kb in kbs) + " |")
    print("| --- |" + " --- |" * len(kbs))
    for name, timings in rows:
        print(f"| {name} | " + " | ".join(t.shown("ms") for t in timings) + " |")
    print(f"load average {load_average()} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
