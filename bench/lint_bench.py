"""`kb lint` on a large knowledge base: 10,000 raw files of about 8 KB and 2,000 notes.

Usage: python bench/lint_bench.py [--raws N] [--notes N] [--runs N] [--kb SPEC]... [--keep DIR]

Generates the KB in a temporary git repository (committed), then times, with `kb` started
as a subprocess so interpreter start counts (``--runs`` rounds after a warm-up round; min and
median of wall and of CPU time, user + sys of the child):

- full `kb lint` (work tree vs HEAD, every check), and in the same rounds `sha256sum` over
  the raw files, the hashing floor it is compared with;
- `kb lint --staged` with three staged changes (a new raw file, its manifest line, its index
  row), then with five (+ a note citing it, a log entry);
- per-frontmatter parse cost: ruamel.yaml YAML(typ="safe") pure-Python and C-backed,
  and the path kb takes.

``--kb '[VAR=value ...] PYTHON'`` picks the interpreter running ``-m kbtools`` (default: this
one); repeat it to compare two trees side by side (e.g. another worktree's venv): the
interpreters take turns in every round, so a busy machine slows them alike.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchenv import RUN_ENV, bench_git, run_child  # noqa: E402

HERE = Path(__file__).resolve().parent
LOCALE = "zh-cn"
WORDS = (
    "evidence manifest ledger session transcript wiki note index log raw source hash commit "
    "agent ingest redaction filter shingle gate identifier retention lint hook pipeline"
).split()


def _prose(rng: random.Random, size: int) -> str:
    out: list[str] = []
    length = 0
    while length < size:
        line = " ".join(rng.choice(WORDS) for _ in range(14)) + ".\n"
        out.append(line)
        length += len(line)
    return "".join(out)


def generate_kb(root: Path, raws: int = 10_000, notes: int = 2_000, seed: int = 7) -> None:
    """A reference-layout KB that lints clean, committed in a fresh git repository."""
    rng = random.Random(seed)
    raw_dir = root / "src/content/raw" / LOCALE
    note_dir = root / "src/content/note" / LOCALE
    info_dir = root / "src/content/information" / LOCALE
    for d in (raw_dir, note_dir, info_dir):
        d.mkdir(parents=True, exist_ok=True)
    manifest: list[str] = []
    raw_slugs = [f"raw-source-{i:05d}" for i in range(raws)]
    for i, slug in enumerate(raw_slugs):
        head = (
            f'---\ntitle: "Raw source {i}"\ncapturedAt: 2026-08-07 00:00:00+00:00\nsourceType: gist\n'
            f"sourceUrl: https://example.com/{slug}\nimmutable: true\n---\n\n# {slug}\n\n"
        )
        data = (head + _prose(rng, 8_000 - len(head))).encode("utf-8")
        (raw_dir / f"{slug}.md").write_bytes(data)
        manifest.append(f"{hashlib.sha256(data).hexdigest()} {LOCALE}/{slug}.md\n")
    (root / "src/content/raw/.manifest.sha256").write_text("".join(manifest), encoding="utf-8")
    note_slugs = [f"note-{i:04d}" for i in range(notes)]
    index = ["# Index", "", "## Notes", ""]
    for i, slug in enumerate(note_slugs):
        sources = [raw_slugs[(i * 5 + k) % raws] for k in range(rng.randint(1, 3))]
        related = [note_slugs[(i + k) % notes] for k in (1, 2)]
        status = "provisional" if i % 5 == 0 else "active"
        body = (
            f"# {slug}\n\n{_prose(rng, 1200)}\nSee [{related[0]}](/note/{related[0]}) and "
            f"[the other](./{related[1]}.md), evidence `{sources[0]}`.\n\n{_prose(rng, 600)}"
        )
        (note_dir / f"{slug}.md").write_text(
            f'---\ntitle: "Note {i}"\ntimestamp: 2026-08-08 00:00:00+00:00\nseries: bench\nkind: concept\n'
            f"status: {status}\nsources: [{', '.join(repr(s).replace(chr(39), chr(34)) for s in sources)}]\n"
            f"related: [{', '.join(related)}]\n---\n\n{body}",
            encoding="utf-8",
        )
        index.append(f"- [Note {i}](/note/{slug}) — summary {i}")
    index += ["", "## Raw sources", "", "| slug | type |", "| --- | --- |"]
    index += [f"| `{slug}` | gist |" for slug in raw_slugs]
    (info_dir / "kb-index.md").write_text("\n".join(index) + "\n", encoding="utf-8")
    log = ["# Log", ""] + [f"## [2026-08-{d:02d}] ingest | batch {d}\n\nIngested.\n" for d in range(1, 29)]
    (info_dir / "kb-log.md").write_text("\n".join(log), encoding="utf-8")
    bench_git(root, "init", "-q", "-b", "main")
    bench_git(root, "add", "-A")
    bench_git(root, "commit", "-q", "--no-verify", "-m", "bench kb")


def stage_three_changes(root: Path) -> None:
    """A new raw file, its manifest line and its index row, all staged (what an ingest of
    one source touches before a note cites it)."""
    raw = root / "src/content/raw" / LOCALE / "raw-source-new.md"
    data = (
        b'---\ntitle: "New"\ncapturedAt: 2026-08-09 00:00:00+00:00\nsourceType: gist\n'
        b"sourceUrl: https://example.com/new\nimmutable: true\n---\n\nNew evidence.\n"
    )
    raw.write_bytes(data)
    with (root / "src/content/raw/.manifest.sha256").open("a", encoding="utf-8") as fh:
        fh.write(f"{hashlib.sha256(data).hexdigest()} {LOCALE}/raw-source-new.md\n")
    index = root / "src/content/information" / LOCALE / "kb-index.md"
    index.write_text(index.read_text(encoding="utf-8") + "| `raw-source-new` | gist |\n", encoding="utf-8")
    bench_git(root, "add", "-A")


def stage_note_and_log(root: Path) -> None:
    """Two more staged changes: a note now cites the new source, and a log entry."""
    note = root / "src/content/note" / LOCALE / "note-0001.md"
    text = note.read_text(encoding="utf-8").replace("sources: [", 'sources: ["raw-source-new", ', 1)
    note.write_text(text + "\nOne more line citing `raw-source-new`.\n", encoding="utf-8")
    log = root / "src/content/information" / LOCALE / "kb-log.md"
    log.write_text(
        log.read_text(encoding="utf-8") + "\n## [2026-08-29] ingest | new source\n\nAdded.\n", encoding="utf-8"
    )
    bench_git(root, "add", "-A")


@dataclass(frozen=True)
class Interpreter:
    """``[VAR=value ...] PYTHON``: the python that runs ``-m kbtools``, with extra environment
    (e.g. ``PYTHONPATH=/tmp/old-tree /tmp/old-venv/bin/python`` for an older kbtools)."""

    label: str
    python: str
    env: dict[str, str]

    @classmethod
    def parse(cls, spec: str) -> Interpreter:
        *assignments, python = shlex.split(spec)
        extra = dict(a.split("=", 1) for a in assignments)
        return cls(spec, python, {**RUN_ENV, **extra})

    def kb(self, *args: str) -> list[str]:
        return [self.python, "-m", "kbtools", *args]


@dataclass
class Timings:
    """Wall and CPU seconds (user + sys of the child) of the timed runs of one command."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def shown(self, unit: str = "s") -> str:
        scale, fmt = (1000, ".0f") if unit == "ms" else (1, ".3f")
        wall = f"{min(self.wall) * scale:{fmt}} / {statistics.median(self.wall) * scale:{fmt}} {unit}"
        return f"{wall} (CPU {min(self.cpu) * scale:{fmt}} / {statistics.median(self.cpu) * scale:{fmt}})"


def interleaved(
    runs: int, commands: Sequence[tuple[list[str], Mapping[str, str]]], cwd: Path, ok: tuple[int, ...] = (0,)
) -> list[Timings]:
    """Each command once per round, ``runs`` rounds after a warm-up round, so that a busy
    machine slows them alike; every timed run must exit with a code in ``ok``."""
    timings = [Timings() for _ in commands]
    for round_no in range(runs + 1):
        for (argv, env), timing in zip(commands, timings):
            child = run_child(argv, cwd, stdout=subprocess.DEVNULL, env=env)
            if child.exit not in ok:
                raise SystemExit(f"{' '.join(argv)} exited {child.exit}")
            if round_no:
                timing.wall.append(child.seconds)
                timing.cpu.append(child.cpu_seconds)
    return timings


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def yaml_costs(n: int = 3000) -> dict[str, float]:
    """ms per raw frontmatter for each parser."""
    sys.path.insert(0, str(HERE.parent))
    from ruamel.yaml import YAML

    from kbtools.kb.frontmatter import load_yaml_mapping

    doc = (
        'title: "Raw source 1"\ncapturedAt: 2026-08-07 00:00:00+00:00\nsourceType: gist\n'
        "sourceUrl: https://example.com/raw-source-1\nimmutable: true\n"
    )
    costs = {}
    for name, load in (
        ("YAML(typ='safe', pure=True)", YAML(typ="safe", pure=True).load),
        ("YAML(typ='safe') C-backed", YAML(typ="safe").load),
        ("kb (simple lines by hand, else the lean C parser)", load_yaml_mapping),
    ):
        start = time.perf_counter()
        for _ in range(n):
            load(doc)
        costs[name] = (time.perf_counter() - start) * 1000 / n
    return costs


SHA256SUM = ["sh", "-c", "find src/content/raw -name '*.md' -print0 | xargs -0 sha256sum >/dev/null"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--raws", type=int, default=10_000)
    ap.add_argument("--notes", type=int, default=2_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument(
        "--kb",
        action="append",
        metavar="'[VAR=value ...] PYTHON'",
        help="interpreter running -m kbtools; repeat to compare, the runs take turns (default: this python)",
    )
    ap.add_argument("--keep", type=Path, help="generate into this folder and keep it")
    args = ap.parse_args(argv)
    kbs = [Interpreter.parse(spec) for spec in (args.kb or [sys.executable])]
    tmp = Path(tempfile.mkdtemp(prefix="kb-lint-bench-")) if args.keep is None else args.keep
    try:
        start = time.perf_counter()
        generate_kb(tmp, args.raws, args.notes)
        print(f"generated {args.raws} raw + {args.notes} notes in {time.perf_counter() - start:.1f} s ({tmp})")
        print(f"load average {load_average()} at the start")
        *full, sha = interleaved(args.runs, [*((kb.kb("lint"), kb.env) for kb in kbs), (SHA256SUM, RUN_ENV)], tmp)
        stage_three_changes(tmp)
        staged = interleaved(args.runs, [(kb.kb("lint", "--staged"), kb.env) for kb in kbs], tmp)
        stage_note_and_log(tmp)
        staged5 = interleaved(args.runs, [(kb.kb("lint", "--staged"), kb.env) for kb in kbs], tmp)
        rows = [
            (f"full `kb lint`, {args.raws} raw + {args.notes} notes", [t.shown() for t in full]),
            ("full lint / `sha256sum` (min / min)", [f"{min(t.wall) / min(sha.wall):.2f}x" for t in full]),
            ("`kb lint --staged`, 3 staged files", [t.shown("ms") for t in staged]),
            ("`kb lint --staged`, 5 staged files", [t.shown("ms") for t in staged5]),
        ]
        lines = [
            f"best and median of {args.runs} runs after a warm-up, taking turns; wall (CPU = user + sys of the child)",
            "",
            "| measure | " + " | ".join(f"`{kb.label}`" for kb in kbs) + " |",
            "| --- |" + " --- |" * len(kbs),
            *(f"| {name} | " + " | ".join(cells) + " |" for name, cells in rows),
            "",
            f"`sha256sum` over the raw files (find | xargs), in the same rounds: {sha.shown()}",
            f"load average {load_average()} at the end ({os.cpu_count()} CPUs)",
        ]
        print("\n".join(lines))
        print("\n".join(f"frontmatter parse, {name}: {ms:.3f} ms/document" for name, ms in yaml_costs().items()))
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
