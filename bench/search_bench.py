"""Search and index upkeep on a large candidate ledger (the review commands' FTS5 index).

    python bench/search_bench.py [--candidates 100000] [--out bench/.out/search]

Writes a ledger of N candidate rows (turn-sized texts drawn from realistic fragments:
error lines, fixes, commands, file names; each with its own identifiers), then measures in
milliseconds: the first index build, an update after appending 1 % more candidates, an
update with nothing changed, ranked searches (median and p95 of 30 runs each, cold process
state aside), and `kb candidates search` wall time as a child process. The machine is
shared: compare figures from one run.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kbtools.review.index import search_candidates, update_index  # noqa: E402

ERRORS = [
    "psycopg2.OperationalError: FATAL: too many connections for role {name}",
    "sqlite3.OperationalError: database is locked",
    "error TS2307: Cannot find module '@/{name}/api' or its corresponding type declarations",
    "ModuleNotFoundError: No module named '{name}'",
    "thread 'main' panicked at src/{name}.rs:42:9: called `Option::unwrap()` on a `None` value",
    "ReferenceError: process is not defined at parseEntry ({name}.js:12:5)",
    "KeyError: '{name}' in compute_row_state",
    "java.lang.OutOfMemoryError: Java heap space in {name}Worker",
]
FIXES = [
    "The root cause is a missing {name} entry in the config; add it and rerun the build to verify.",
    "Each request opened its own {name} connection; a shared pool with max_size=10 fixes it.",
    "We decided to enable WAL and a busy_timeout of 5000 ms for the {name} exporter.",
    "Pin {name} to the previous minor version until upstream ships the fix, then run the tests again.",
    "The cache key did not include the lockfile, so CI reused a stale {name} environment; bump it.",
    "Move {name} from the dev extra into the main dependencies in pyproject.toml.",
]
PROMPTS = [
    "Why does `pnpm build` fail after upgrading {name}? Please find the root cause.",
    "The nightly job crashes in {name}; what changed and how do we fix it?",
    "Can you profile {name} and tell me where the time goes on CI?",
    "Decision needed: should {name} keep its own connection or share the pool?",
]
WORDS = "ledger render queue parser sync export billing index session cache worker proxy router loader".split()
# Filler prose from a vocabulary of 6,000 made-up words (syllable pairs, Zipf-like draws), so
# that two candidates share their template's error and fix, not most of their words.
SYLLABLES = "ka lo mi ne ru sa te vo zi da fe gu hi jo pa qu ri so tu wa xe yo ba ce di fo ga he".split()
VOCABULARY = [a + b + c for a in SYLLABLES for b in SYLLABLES for c in SYLLABLES[:7]]
WEIGHTS = [1 / (rank + 1) for rank in range(len(VOCABULARY))]


def candidate(rng: random.Random, i: int) -> dict[str, object]:
    name = f"{rng.choice(WORDS)}_{rng.randrange(10_000)}"
    prompt = rng.choice(PROMPTS).format(name=name)
    error = rng.choice(ERRORS).format(name=name)
    fix = rng.choice(FIXES).format(name=name)
    filler = " ".join(rng.choices(VOCABULARY, WEIGHTS, k=rng.randrange(40, 160)))
    text = f"[user] {prompt}\n```\n{error}\n```\n[assistant] I looked at {filler}.\n\n{fix}"
    cid = f"{i:064x}"
    return {
        "topic": " / ".join(rng.sample(WORDS, 3)),
        "user_goal": prompt,
        "error_messages": [error],
        "root_cause": fix,
        "final_solution": fix,
        "candidate_id": cid,
        "source_key": f"{i // 4:064x}",
        "session_key": f"{i // 4:064x}",
        "project_key": f"{i % 37:064x}",
        "tool": rng.choice(["omp", "codex", "claude", "opencode"]),
        "text": text,
        "created_at": f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T09:00:00.000Z",
        "decision": "jotting",
        "fingerprint": cid,
    }


def write_ledger(path: Path, start: int, count: int, rng: random.Random, mode: str) -> None:
    with path.open(mode, encoding="utf-8") as fh:
        for i in range(start, start + count):
            fh.write(json.dumps(candidate(rng, i), separators=(",", ":")) + "\n")


def timed(fn: object) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()  # type: ignore[operator]
    return (time.perf_counter() - start) * 1000, result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--candidates", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=Path("bench/.out/search"))
    args = parser.parse_args()
    out: Path = args.out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    ledger = out / "candidates.jsonl"
    rng = random.Random(1)
    n = args.candidates
    write_ledger(ledger, 0, n, rng, "w")
    print(f"ledger: {n:,} candidates, {ledger.stat().st_size / 1e6:.1f} MB")
    ms, update = timed(lambda: update_index(out, run_id="bench-1"))
    print(f"first build: {ms:,.0f} ms ({update})")
    ms, update = timed(lambda: update_index(out, run_id="bench-1"))
    print(f"unchanged update: {ms:,.1f} ms")
    write_ledger(ledger, n, n // 100, rng, "a")
    ms, update = timed(lambda: update_index(out, run_id="bench-2"))
    print(f"update after appending {n // 100:,}: {ms:,.0f} ms ({update})")
    print(f"index size: {(out / 'search-index.sqlite').stat().st_size / 1e6:.1f} MB")
    for query in ("too many connections", "database locked", "TS2307", "pyproject dev extra", "worker_42*"):
        runs = []
        hits = []
        for _ in range(30):
            ms, hits = timed(lambda q=query: search_candidates(out, q, limit=20))
            runs.append(ms)
        runs.sort()
        print(
            f"search {query!r}: median {statistics.median(runs):.1f} ms, p95 {runs[int(len(runs) * 0.95) - 1]:.1f} ms,"
            f" {len(hits)} results"  # type: ignore[arg-type]
        )
    cmd = [sys.executable, "-m", "kbtools", "candidates", "search", "database locked", "--output-dir", str(out)]
    walls = []
    for _ in range(5):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=out)
        walls.append((time.perf_counter() - start) * 1000)
    print(f"`kb candidates search` wall (child process, 5 runs): median {statistics.median(walls):.0f} ms")


if __name__ == "__main__":
    main()
