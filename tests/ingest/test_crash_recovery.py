"""`kill -9` in the middle of `kb ingest --write`, then a rerun: the same ledgers as an uninterrupted run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from tests.ingest.conftest import IngestEnv, read_jsonl, tech_turn
from tests.testing.sessions import age, write_omp_session

SESSIONS = 250
# Fields that name the run, not the content.
RUN_FIELDS = ("run_at",)


def comparable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k not in RUN_FIELDS} for row in rows]


def ledgers(out: Path) -> dict[str, list[dict[str, Any]]]:
    return {
        name: comparable(read_jsonl(out / f"{name}.jsonl")) for name in ("manifest", "candidates", "rejected", "events")
    }


def test_killed_write_resumes_to_the_ledgers_of_an_uninterrupted_run(env: IngestEnv, tmp_path: Path) -> None:
    _write_sessions(
        env,
        (
            (
                f"session-{i:03d}",
                f"p{i:03d}",
                f"Build {i}: why does the TypeScript build fail with error TS{2300 + i} after the upgrade?",
                f"The root cause of TS{2300 + i} is a missing path alias; the fix is to add it and rerun the tests.",
            )
            for i in range(SESSIONS)
        ),
    )
    reference_out = tmp_path / "reference"
    env.run("--output-dir", str(reference_out))

    # A Hindsight server on 127.0.0.1 that takes the connection and never answers:
    # its discovery comes after every OMP session (each request waits out its
    # deadline), holding the run after the journal of the first 200 sources was
    # persisted. (Session files that are FIFOs are skipped, never opened.)
    stalled = socket.socket()
    stalled.bind(("127.0.0.1", 0))
    stalled.listen(8)
    url = f"http://127.0.0.1:{stalled.getsockname()[1]}"
    # Two workers: the run must die with its workers and not keep its lock.
    proc = subprocess.Popen(
        env.command("--jobs", "2", "--hindsight-url", url), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    partial = env.out / "manifest.partial.jsonl"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if partial.exists() and len(partial.read_text().splitlines()) >= 200:
                break
            time.sleep(0.05)
        time.sleep(0.2)
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
    finally:
        _kill(proc)
        stalled.close()

    journal = read_jsonl(partial)
    keys = [row["source_key"] for row in journal]
    # Appended per batch of 100 (never rewritten): each source once.
    assert len(keys) == 200 and len(set(keys)) == 200
    assert not (env.out / "manifest.jsonl").exists()
    assert "Status: parsing" in env.checkpoint.read_text()

    summary, _ = env.run()
    assert summary["processed"] == SESSIONS
    assert not list(env.out.glob("*.partial.jsonl")) and not list(env.out.glob(".*.tmp"))
    assert ledgers(env.out) == ledgers(reference_out)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL (a no-op if it already exited) and reap."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)


def _write_sessions(env: IngestEnv, sessions: Iterable[tuple[str, str, str, str]]) -> None:
    """OMP sessions of one question and its answer: (session id, dir name, question, answer).

    Each file is aged past ingest's racy-mtime window, so whether a run records a file's stat
    version does not hang on how long the machine took between the runs being compared.
    """
    for session_id, dir_name, question, answer in sessions:
        age(write_omp_session(env.omp, tech_turn(question, answer), session_id=session_id, dir_name=dir_name))


def _grow(env: IngestEnv, pattern: str) -> None:
    for path in sorted(env.omp.glob(pattern)):
        with path.open("a") as fh:
            fh.write(
                '{"type":"message","message":{"role":"user","content":[{"type":"text",'
                '"text":"And the tests of the fix pass?"}]}}\n'
            )
        age(path)


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [0.55, 0.7, 0.85, 1.0])
def test_kill_at_any_moment_then_rerun_equals_an_uninterrupted_run(
    env: IngestEnv, tmp_path: Path, fraction: float
) -> None:
    _write_sessions(
        env,
        (
            (
                f"job-{i:03d}",
                f"j{i:03d}",
                f"Job {i}: the Docker build fails with a config error after the upgrade to {i}.0.",
                f"The root cause of job {i} is a stale cache layer; the fix is to rebuild and rerun the tests.",
            )
            for i in range(300)
        ),
    )
    reference_out = tmp_path / "reference"
    env.run("--output-dir", str(reference_out))
    env.run()  # an earlier complete ledger, so the killed run has prior state to rewrite
    _grow(env, "j[01]*/*.jsonl")  # j000-j199: two thirds of the sessions grow
    started = time.monotonic()
    subprocess.run(env.command("--output-dir", str(reference_out)), check=True, stdout=subprocess.DEVNULL)
    duration = time.monotonic() - started

    proc = subprocess.Popen(env.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(duration * fraction)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    # The kill lands before, during (journal, temp files, renames) or after the run; it
    # had committed once its ledgers are in place and its journal's manifest part is gone.
    finished = not (env.out / "manifest.partial.jsonl").exists() and ledgers(env.out) == ledgers(reference_out)
    if finished:  # it completed before the kill: compare the reruns of both
        env.run("--output-dir", str(reference_out))

    env.run()
    got, want = ledgers(env.out), ledgers(reference_out)
    for name in got:
        diff = [(a, b) for a, b in zip(got[name], want[name]) if a != b]
        assert not diff and len(got[name]) == len(want[name]), (
            name,
            [{k: (a.get(k), b.get(k)) for k in a.keys() | b.keys() if a.get(k) != b.get(k)} for a, b in diff[:3]],
        )


@pytest.mark.slow
def test_crash_drill_kills_at_random_and_named_moments_and_every_rerun_recovers(tmp_path: Path) -> None:
    """bench/crash_drill.py, reduced: every named point (journal appends, final renames, the first
    run's search-index draft stamped but not in place) plus random moments."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from corpus import generate
    from crash_drill import NAMED_POINTS, drill

    corpus = tmp_path / "corpus"
    generate(corpus, total_bytes=1_000_000, seed=5, secret_mode="placeholder")
    lines: list[str] = []
    kills, failures = drill(
        corpus, tmp_path / "drill", kills=len(NAMED_POINTS) + 3, seed=5, jobs=2, report=lines.append
    )
    assert kills == len(NAMED_POINTS) + 3 and len(lines) == kills
    assert failures == 0, [line for line in lines if '"ok": false' in line]
    # The named points really interrupted a run: with its journal on disk, or (the draft)
    # after the ledgers were committed, its index not in place yet.
    named = {row["at"]: row for row in map(json.loads, lines) if row["at"] in NAMED_POINTS}
    assert set(named) == set(NAMED_POINTS)
    draft = named.pop("draft-stamped")
    assert draft["killed"] and draft["committed_before_kill"] and draft["from"] == "fresh"
    assert all(row["killed"] and row["journal_left"] for row in named.values())


def test_a_run_killed_while_holding_the_lock_blocks_no_later_run(env: IngestEnv) -> None:
    _write_sessions(
        env,
        (
            (
                f"lock-{i:02d}",
                f"l{i:02d}",
                f"Why does build {i} fail with a config error after the upgrade?",
                f"The root cause of build {i} is a stale cache; the fix is to rebuild and rerun the tests.",
            )
            for i in range(40)
        ),
    )
    proc = subprocess.Popen(env.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lock = env.out / ".lock"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (lock.exists() and lock.read_text().strip() == str(proc.pid)):
            time.sleep(0.005)
        proc.send_signal(signal.SIGSTOP)  # holding the lock, frozen
        assert lock.read_text().strip() == str(proc.pid)
        busy = subprocess.run(env.command(), capture_output=True, text=True, timeout=30)
        assert busy.returncode == 2 and f"(pid {proc.pid})" in busy.stderr
    finally:
        _kill(proc)
    started = time.monotonic()
    summary, _ = env.run()  # the dead holder's lock is taken over at once
    assert time.monotonic() - started < 20 and summary["processed"] == 40
    assert lock.read_text().strip() != str(proc.pid)


def test_a_run_killed_while_deleting_its_journal_after_committing_counts_as_finished(
    env: IngestEnv, tmp_path: Path
) -> None:
    _write_sessions(
        env,
        (
            (
                f"deploy-{i:02d}",
                f"d{i:02d}",
                f"Deploy {i}: the release job fails with a config error after the upgrade to {i}.0.",
                f"The root cause of deploy {i} is a stale token cache; the fix is to clear it and rerun.",
            )
            for i in range(30)
        ),
    )
    env.run()
    _grow(env, "d0*/*.jsonl")  # ten sessions grow: the next run journals them
    reference = tmp_path / "reference"
    shutil.copytree(env.out, reference)
    env.run("--output-dir", str(reference))
    env.run("--output-dir", str(reference))  # a kill after the commit makes the rerun a second run

    killed = subprocess.run(
        env.command(), stdout=subprocess.DEVNULL, env={**os.environ, "KB_TEST_CRASH_AT": "unlink-manifest"}
    )
    assert killed.returncode == -signal.SIGKILL
    assert not (env.out / "manifest.partial.jsonl").exists() and (env.out / "candidates.partial.jsonl").exists()
    summary, _ = env.run()
    # The journal's remains are neither merged nor left behind.
    assert summary["resumed_from_partial"] is False and summary["processed"] == 0
    assert not list(env.out.glob("*.partial.jsonl"))
    assert ledgers(env.out) == ledgers(reference)
