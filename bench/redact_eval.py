"""Redaction quality and speed: recall and benign-kept per family, MB/s on prose and on secret-dense text.

    .venv/bin/python bench/redact_eval.py [--seed 0] [--prose-mb 10] [--stdlib-files 2500]

1. The labelled corpus of tests/testing/secret_corpus.py (every provider shape and generic
   credential in every surrounding: shell, dotenv, YAML, JSON, JSON-in-JSON, TOML, INI,
   properties, Python, JS/TS, Go, PHP, Ruby, Makefile, Java, C#, XML, Terraform, Markdown,
   prose, logs; benign look-alikes next to them), redacted with `kb redact`'s engine:
   recall (no 12-character run of the secret left) and benign-kept (text unchanged), overall,
   per family group, per surrounding, per benign family, and the weakest single families.
2. Held-out benign material: the running Python's standard library, file by file through
   `find_secrets` (lint check 16): how many files raise a false alarm.
3. Speed, CPU time, one process: prose (bench/redact_bench.py's transcript messages) and
   secret-dense text (the corpus' secret samples, every one holding a credential).
"""

from __future__ import annotations

import argparse
import sys
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.redact_bench import corpus_of, message  # noqa: E402
from kbtools.redact import RULES, Redactor, find_secrets  # noqa: E402
from tests.testing.secret_corpus import Tally, corpus, evaluate  # noqa: E402


def _pct(t: Tally) -> str:
    return f"{100 * t.rate:.1f} % ({t.hit}/{t.total})"


def _table(title: str, rows: dict[str, Tally], limit: int | None = None) -> None:
    print(f"\n| {title} | rate |\n| --- | --- |")
    items = sorted(rows.items(), key=lambda kv: (kv[1].rate, kv[0]))
    for name, tally in items[:limit] if limit else items:
        print(f"| {name} | {_pct(tally)} |")


def _mbps(texts: list[str], redactor: Redactor) -> tuple[float, float]:
    size = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    for t in texts[:200]:
        redactor.redact(t)
    cpu = time.process_time()
    for t in texts:
        redactor.redact(t)
    return size, size / (time.process_time() - cpu)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="redact_eval.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prose-mb", type=float, default=10.0)
    parser.add_argument("--stdlib-files", type=int, default=2500)
    args = parser.parse_args(argv)

    redactor = Redactor()
    samples = corpus(args.seed)
    report = evaluate(samples, lambda text: redactor.redact(text).text)
    n_secret = report.secrets.total
    print(
        f"{len(RULES)} rules ({sum(1 for r in RULES if r.shape)} from provider shapes); corpus seed {args.seed}: "
        f"{n_secret} secrets of {len(report.by_family)} families in {len(report.by_surrounding)} surroundings, "
        f"{report.benign.total} benign samples of {len(report.by_benign)} families"
    )
    print(f"\nsecrets removed: {_pct(report.secrets)}; benign unchanged: {_pct(report.benign)}")
    _table("secret family group", report.by_group)
    _table("surrounding (weakest 12)", report.by_surrounding, 12)
    _table("benign family", report.by_benign)
    _table("single family (weakest 10)", report.by_family, 10)

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(stdlib.rglob("*.py"))[: args.stdlib_files]
    flagged = sum(1 for p in files if find_secrets(p.read_text(encoding="utf-8", errors="replace")))
    print(
        f"\nheld-out benign: Python {sys.version.split()[0]} standard library, {len(files)} files: "
        f"{flagged} with a secret finding ({100 * flagged / max(1, len(files)):.2f} %)"
    )

    prose = corpus_of(message, int(args.prose_mb * 1e6), args.seed)
    size, rate = _mbps(prose, redactor)
    dense = [s.text for s in samples if s.kind == "secret"]
    dsize, drate = _mbps(dense, redactor)
    print(f"\nprose: {size:.1f} MB at {rate:.1f} MB/s per core (CPU)")
    print(
        f"secret-dense: {dsize:.1f} MB ({len(dense)} texts, each with a credential) at {drate:.2f} MB/s per core (CPU)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
