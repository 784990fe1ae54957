"""Start-up cost of `kb` and wall time of every staged hook command.

Usage: python bench/startup_bench.py [--raws N] [--notes N] [--runs N] [--kb SPEC]... [--imports]

Generates a small KB (bench/lint_bench.py's generator, committed), edits three notes (one
appended paragraph each, so every identifier is kept) and stages them, then times, best of
``--runs`` with `kb` started as a subprocess each time (interpreter start included):

- `kb --version` (the floor: interpreter, typer, the app);
- `kb lint --staged`, `kb retention check --staged`, `kb artifacts record --staged` (the
  hooks of .pre-commit-hooks.yaml; SPEC §9's budget is 300 ms wall for the staged hook).

``--kb '[VAR=value ...] PYTHON'`` picks the interpreter running ``-m kbtools`` (default: this
one); repeat it to compare, e.g. another venv with an older tree on ``PYTHONPATH``. The
interpreters take turns, so a busy machine slows them alike. With ``--imports`` it also
prints the cumulative import time of the heaviest modules under ``python -X importtime -m
kbtools <cmd> --help`` for every command, and under each hook command itself.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchenv import bench_git, timed_run  # noqa: E402
from lint_bench import LOCALE, Interpreter, generate_kb  # noqa: E402

HOOK_COMMANDS = (
    ("--version",),
    ("lint", "--staged"),
    ("retention", "check", "--staged"),
    ("artifacts", "record", "--staged"),
)
HELP_COMMANDS = (
    (),
    ("init",),
    ("lint",),
    ("raw", "add"),
    ("raw", "verify"),
    ("ingest",),
    ("redact",),
    ("artifacts", "record"),
    ("verify",),
    ("retention", "check"),
    ("retention", "probe"),
    ("promote",),
    ("hooks", "install"),
)
# Modules that no command should import before it needs them.
HEAVY = (
    "pydantic",
    "rich",
    "ruamel.yaml",
    "git",
    "ahocorasick_rs",
    "kbtools.redact.engine",
    "kbtools.redact.rules",
    "kbtools.derived",
    "kbtools.ingest",
    "sqlite3",
    "json",
    "typer",
)


def stage_three_notes(root: Path) -> None:
    """Three notes each gain a paragraph (identifiers kept), staged."""
    for i in (1, 2, 3):
        note = root / "src/content/note" / LOCALE / f"note-{i:04d}.md"
        note.write_text(
            note.read_text(encoding="utf-8") + f"\nAnother paragraph {i} on the same evidence.\n", encoding="utf-8"
        )
    bench_git(root, "add", "-A")


def import_costs(kb: Interpreter, argv: tuple[str, ...], cwd: Path) -> tuple[float, dict[str, float]]:
    """Total and per-heavy-module cumulative import time (ms) of ``kb ARGV``."""
    proc = subprocess.run(
        [kb.python, "-X", "importtime", "-m", "kbtools", *argv], cwd=cwd, capture_output=True, text=True, env=kb.env
    )
    heavy: dict[str, float] = {}
    total = 0.0
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if not m:
            continue
        cumulative, depth, name = int(m.group(2)) / 1000, len(m.group(3)), m.group(4)
        if depth == 1:
            total += cumulative
        for top in HEAVY:
            if name == top or name.startswith(top + "."):
                heavy[top] = max(heavy.get(top, 0.0), cumulative)
    return total, heavy


def interleaved_best(runs: int, kbs: list[Interpreter], argv: tuple[str, ...], cwd: Path) -> list[float]:
    """Best wall time of each interpreter, taking turns so a busy machine hurts them alike."""
    best = [float("inf")] * len(kbs)
    for _ in range(runs + 1):  # the first round warms the page cache
        for i, kb in enumerate(kbs):
            elapsed, proc = timed_run([kb.python, "-m", "kbtools", *argv], cwd, kb.env)
            if proc.returncode != 0:
                raise SystemExit(f"{kb.label}: kb {' '.join(argv)} exited {proc.returncode}: {proc.stderr[:500]!r}")
            best[i] = min(best[i], elapsed)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--raws", type=int, default=200)
    ap.add_argument("--notes", type=int, default=50)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument(
        "--kb",
        action="append",
        metavar="'[VAR=value ...] PYTHON'",
        help="interpreter running -m kbtools; repeat to compare (default: this python)",
    )
    ap.add_argument("--imports", action="store_true")
    args = ap.parse_args(argv)
    kbs = [Interpreter.parse(spec) for spec in (args.kb or [sys.executable])]
    with tempfile.TemporaryDirectory(prefix="kb-startup-bench-") as tmp:
        root = Path(tmp) / "kb"
        root.mkdir()
        generate_kb(root, raws=args.raws, notes=args.notes)
        stage_three_notes(root)
        # The first record adds the staged notes to the artifact manifest (exit 1, the hook
        # convention); stage that too so every timed run is the steady state.
        first = kbs[0]
        subprocess.run(
            [first.python, "-m", "kbtools", "artifacts", "record", "--staged"],
            cwd=root,
            capture_output=True,
            env=first.env,
        )
        bench_git(root, "add", "-A")
        print(f"KB: {args.raws} raw files, {args.notes} notes; 3 staged notes; best of {args.runs}, interleaved")
        print("| command | " + " | ".join(f"`{kb.label}`" for kb in kbs) + " |")
        print("| --- |" + " --- |" * len(kbs))
        for command in HOOK_COMMANDS:
            best = interleaved_best(args.runs, kbs, command, root)
            print(f"| `kb {' '.join(command)}` | " + " | ".join(f"{s * 1000:.0f} ms" for s in best) + " |")
        if args.imports:
            for kb in kbs:
                print(f"\nimport time with `{kb.label}` (ms, cumulative; heavy modules only)")
                for command in (*((*c, "--help") for c in HELP_COMMANDS), *HOOK_COMMANDS):
                    total, heavy = import_costs(kb, command, root)
                    shown = ", ".join(f"{k} {v:.0f}" for k, v in sorted(heavy.items(), key=lambda kv: -kv[1]))
                    print(f"kb {' '.join(command)}: {total:.0f} ms — {shown or 'nothing heavy'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
