"""`kb ingest --jobs N`: the ledgers do not depend on N, nor on the interpreter's hash seed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.ingest.conftest import IngestEnv
from tests.testing.cli import kb_command

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from corpus import generate, ingest_flags  # noqa: E402

LEDGERS = ("manifest", "candidates", "rejected", "events")
RUN_AT = re.compile(rb'"run_at":"[^"]*"')


def _ingest(env: IngestEnv, corpus: Path, out: Path, *, jobs: int, hash_seed: int) -> None:
    args = [
        "ingest",
        "--root",
        str(env.root),
        "--write",
        "--skip-hindsight",
        "--output-dir",
        str(out),
        "--jobs",
        str(jobs),
        *ingest_flags(corpus),
    ]
    subprocess.run(
        [*kb_command(), *args],
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "PYTHONHASHSEED": str(hash_seed)},
    )


def _ledger_bytes(out: Path) -> dict[str, bytes]:
    return {name: RUN_AT.sub(b'"run_at":""', (out / f"{name}.jsonl").read_bytes()) for name in LEDGERS}


def test_one_and_two_workers_write_byte_equal_ledgers_apart_from_run_times(env: IngestEnv, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    generate(corpus, total_bytes=2_000_000, seed=11, secret_mode="placeholder")
    one, two = tmp_path / "one", tmp_path / "two"
    # Different hash seeds: set iteration order must not reach the ledgers.
    _ingest(env, corpus, one, jobs=1, hash_seed=1)
    _ingest(env, corpus, two, jobs=2, hash_seed=2)
    got, want = _ledger_bytes(two), _ledger_bytes(one)
    assert want["candidates"].count(b"\n") > 20  # a corpus that yields candidates at all
    for name in LEDGERS:
        assert got[name] == want[name], name


def test_named_environments_are_ordered_by_first_mention_under_any_hash_seed() -> None:
    # "node" and "nodejs" both name Node.js; which of the two a set yields last
    # must not decide where Node.js ranks.
    probe = (
        "from kbtools.ingest.knowledge import knowledge_fields\n"
        "text = 'node 18 fails; the typescript build then fails again under nodejs'\n"
        "print(knowledge_fields('', [('user', text)], text)['technical_environment'])\n"
    )
    seen = {
        subprocess.run(
            [sys.executable, "-c", probe],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
        ).stdout.strip()
        for seed in range(6)
    }
    assert seen == {"['Node.js', 'TypeScript']"}
