"""Bad input through `kb ingest --write`: an error row with a clear reason, the run completes,
earlier ledger rows survive."""

from __future__ import annotations

import importlib.util
import os
import sqlite3
from typing import Any

import pytest

from tests.ingest.conftest import FakeHindsight, IngestEnv, tech_turn
from tests.testing.cli import run_kb
from tests.testing.sessions import OmpSession, OpenCodeDb, write_omp_session

MEMORY = "The Docker build cache is keyed on the lockfile; a changed lockfile rebuilds every layer."


def _baseline(env: IngestEnv) -> dict[str, Any]:
    write_omp_session(env.omp, tech_turn(), session_id="good", dir_name="good")
    env.run()
    (candidate,) = env.rows("candidates")
    return candidate


def _row_for(env: IngestEnv, **match: Any) -> dict[str, Any]:
    rows = env.rows("manifest", **match)
    assert len(rows) == 1, rows
    return rows[0]


def test_bad_jsonl_files_give_error_rows_and_earlier_rows_survive(env: IngestEnv) -> None:
    kept = _baseline(env)
    live = OmpSession(session_id="live").add(tech_turn()).write(env.omp, dir_name="live")
    with live.open("ab") as fh:
        fh.write(b'{"type":"message","message":{"role":"user","content":"half a li')
    (env.omp / "utf8").mkdir()
    (env.omp / "utf8" / "bad.jsonl").write_bytes(b'{"type":"session","id":"u8"}\n{"x":"\xff\xfe\xfd"}\n')
    (env.omp / "binary").mkdir()
    (env.omp / "binary" / "blob.jsonl").write_bytes(bytes(range(256)) * 64)

    summary, result = env.run()
    assert result.code == 0
    assert summary["discovered"] >= 4 and summary["errors"] >= 3

    live_rows = [r for r in env.rows("manifest", tool="omp") if r["error"].startswith("truncated_last_line")]
    assert len(live_rows) == 1 and live_rows[0]["parse_status"] == "processed"
    assert any(c["source_key"] == live_rows[0]["source_key"] for c in env.rows("candidates"))
    errors = [r["error"] for r in env.rows("manifest", tool="omp") if r["error"]]
    assert any("utf" in e.lower() or "malformed" in e for e in errors), errors
    assert all(len(e) <= 300 and "\n" not in e for e in errors)
    # The good source is untouched and reused.
    assert kept["candidate_id"] in {c["candidate_id"] for c in env.rows("candidates")}
    # Same bytes, same harmless error: the live session is reused, not re-extracted every run.
    summary, _ = env.run()
    assert summary["processed"] == 0


@pytest.mark.skipif(importlib.util.find_spec("kbtools.ingest.sources.opencode") is None, reason="no OpenCode source")
def test_corrupt_and_locked_sqlite_give_error_rows_and_earlier_rows_survive(env: IngestEnv) -> None:
    kept = _baseline(env)
    db = OpenCodeDb(env.opencode_db, wal=False)
    db.session(tech_turn(), session_id="ses-1")
    db.close()
    env.run()
    opencode_candidates = [c for c in env.rows("candidates") if c["tool"] == "opencode"]
    assert len(opencode_candidates) == 1

    # Locked by a writer: one error row; the session's earlier rows are carried forward.
    holder = sqlite3.connect(env.opencode_db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        summary, _ = env.run()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    (locked,) = [r for r in env.rows("manifest", tool="opencode") if r["parse_status"] == "failed"]
    assert "locked" in locked["error"]
    assert opencode_candidates[0]["candidate_id"] in {c["candidate_id"] for c in env.rows("candidates")}

    # Not a database at all.
    env.opencode_db.write_bytes(b"SQLite format 3\x00" + os.urandom(4096))
    summary, result = env.run()
    assert result.code == 0
    (corrupt,) = [r for r in env.rows("manifest", tool="opencode") if r["parse_status"] == "failed"]
    assert corrupt["error"].startswith("opencode_db_unreadable")
    ids = {c["candidate_id"] for c in env.rows("candidates")}
    assert kept["candidate_id"] in ids and opencode_candidates[0]["candidate_id"] in ids


@pytest.mark.skipif(importlib.util.find_spec("kbtools.ingest.sources.hindsight") is None, reason="no Hindsight source")
@pytest.mark.parametrize("mode", ["500", "garbage", "hang"])
def test_broken_hindsight_gives_an_error_row_and_the_run_completes(
    env: IngestEnv, hindsight: tuple[str, type[FakeHindsight]], mode: str
) -> None:
    kept = _baseline(env)
    url, handler = hindsight
    handler.memories = [{"id": "mem-1", "text": MEMORY, "created_at": "2026-03-01T00:00:00Z"}]
    (env.root / ".kb.yaml").write_text("ingest:\n  hindsight_timeout: 0.5\n  hindsight_retries: 1\n")
    args = [a for a in env.args() if a != "--skip-hindsight"]
    assert run_kb(*args, "--hindsight-url", url).code == 0
    (memory,) = [c for c in env.rows("candidates") if c["tool"] == "hindsight"]
    handler.mode = mode
    for _ in range(2):  # a second failing run does not pile up rows
        result = run_kb(*args, "--hindsight-url", url)
        assert result.code == 0, result.err
        (failed,) = env.rows("manifest", tool="hindsight", parse_status="failed")
        assert failed["error"].startswith("hindsight_unavailable")
        assert url.split("//")[1] not in failed["error"]
        ids = {c["candidate_id"] for c in env.rows("candidates")}
        assert kept["candidate_id"] in ids and memory["candidate_id"] in ids
        keys = [r["source_key"] for r in env.rows("manifest")]
        assert len(keys) == len(set(keys))


def test_prune_keeps_the_rows_of_a_store_that_failed_to_read(env: IngestEnv) -> None:
    db = OpenCodeDb(env.opencode_db, wal=False)
    db.session(tech_turn(), session_id="ses-1")
    db.close()
    env.run()
    (kept,) = [c for c in env.rows("candidates") if c["tool"] == "opencode"]
    env.opencode_db.write_bytes(b"SQLite format 3\x00" + os.urandom(4096))
    summary, _ = env.run("--prune")
    assert kept["candidate_id"] in {c["candidate_id"] for c in env.rows("candidates")}
    assert summary["pruned"] == 0
