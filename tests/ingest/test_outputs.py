"""Outputs that cannot be redirected and errors that say what happened (issue 18):
symlinks in or as the output folder, a folder of another user, a full disk, a
transient "database is locked", stale skip reasons, advisor rows of an unavailable
store, and the mode of a memo file that was made world-writable."""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbtools.ingest.rows import LEDGERS
from tests.ingest.conftest import IngestEnv, tech_turn
from tests.testing.cli import run_kb
from tests.testing.sessions import (
    OpenCodeDb,
    age,
    assistant,
    user,
    write_omp_advisor,
    write_omp_session,
)


def _one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kb: error: "), err
    assert "Traceback" not in err and "internal error" not in err
    return lines[0]


def _snapshot(out: Path) -> dict[str, bytes]:
    return {name: (out / f"{name}.jsonl").read_bytes() for name in LEDGERS}


# --------------------------------------------------------------------------- outputs redirected


@pytest.mark.parametrize("name", [".lock", "manifest.partial.jsonl", "candidates.partial.jsonl", "candidates.jsonl"])
def test_a_symlink_in_the_output_folder_is_refused_and_its_target_untouched(env: IngestEnv, name: str) -> None:
    """A committed symlink (``.lock``, a journal file, a ledger) pointing at a tracked note."""
    write_omp_session(env.omp, tech_turn(), session_id="s1")
    note = env.root / "wiki" / "note.md"
    note.parent.mkdir(parents=True)
    note.write_text("# A tracked note\n")
    env.out.mkdir(parents=True)
    (env.out / name).symlink_to(note)
    result = run_kb(*env.args())
    assert result.code == 2
    line = _one_error_line(result.err)
    assert "symlink" in line and name in line
    assert note.read_text() == "# A tracked note\n"
    assert (env.out / name).is_symlink()


def test_an_output_folder_that_is_a_symlink_is_refused(env: IngestEnv, tmp_path: Path) -> None:
    write_omp_session(env.omp, tech_turn(), session_id="s1")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    env.out.parent.mkdir(parents=True)
    env.out.symlink_to(elsewhere)
    result = run_kb(*env.args())
    assert result.code == 2
    assert "symlink" in _one_error_line(result.err)
    assert list(elsewhere.iterdir()) == []
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o755  # not even tightened through the link


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_an_output_folder_owned_by_another_user_is_refused(env: IngestEnv) -> None:
    write_omp_session(env.omp, tech_turn(), session_id="s1")
    env.out.mkdir(parents=True)
    os.chown(env.out, 54321, 54321)
    result = run_kb(*env.args())
    assert result.code == 2
    assert "owned by another user" in _one_error_line(result.err)
    assert list(env.out.iterdir()) == []


# --------------------------------------------------------------------------- a full disk


@pytest.fixture
def small_disk(env: IngestEnv) -> Iterator[Path]:
    """The output folder on a tmpfs of 320 KiB (needs root and mount)."""
    env.out.mkdir(parents=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=320k,mode=0700", "tmpfs", str(env.out)], capture_output=True
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.decode(errors='replace').strip()}")
    try:
        yield env.out
    finally:
        subprocess.run(["umount", "-l", str(env.out)], check=False)


def _long_sessions(env: IngestEnv, count: int) -> None:
    for n in range(count):
        turns = []
        for t in range(6):
            turns += tech_turn(
                f"Session {n} turn {t}: why does the build fail with error TS2307 after the upgrade? " * 4,
                f"Session {n} turn {t}: the root cause is a missing path alias; fix tsconfig.json, run pnpm build. "
                * 6,
            )
        age(write_omp_session(env.omp, turns, session_id=f"s{n:03d}"))


def test_a_full_disk_is_one_clear_line_no_temp_file_stays_and_the_ledgers_are_intact(
    env: IngestEnv, small_disk: Path
) -> None:
    _long_sessions(env, 2)
    env.run()
    before = _snapshot(small_disk)
    _long_sessions(env, 60)  # far more than 320 KiB of candidates
    result = run_kb(*env.args())
    assert result.code == 2, result.err
    line = _one_error_line(result.err)
    assert "No space left on device" in line
    assert _snapshot(small_disk) == before
    assert not [p.name for p in small_disk.iterdir() if p.name.endswith(".tmp")]


# --------------------------------------------------------------------------- errors that linger


def test_a_transient_locked_database_leaves_no_error_row_once_it_reads_again(env: IngestEnv) -> None:
    db = OpenCodeDb(env.opencode_db, wal=False)
    db.session(tech_turn(), session_id="ses-1")
    db.close()
    env.run()
    holder = sqlite3.connect(env.opencode_db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        env.run()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert env.rows("manifest", tool="opencode", parse_status="failed")
    for _ in range(2):
        summary, _ = env.run()
        assert not env.rows("manifest", tool="opencode", parse_status="failed")
        assert not [r for r in env.rows("manifest") if r["error"]]
        assert summary["errors"] == 0 and summary["failed"] == 0


def test_a_source_found_again_does_not_keep_the_not_scanned_reason(env: IngestEnv, tmp_path: Path) -> None:
    processed = write_omp_session(env.omp, tech_turn(), session_id="s1")
    skipped = write_omp_session(env.omp, [user("hello"), assistant("hi")], session_id="s2")
    env.run()
    reasons = {r["parse_status"]: r["skip_reason"] for r in env.rows("manifest", tool="omp")}
    assert reasons == {"processed": "", "skipped": "no_reusable_technical_knowledge"}
    away = tmp_path / "away"
    away.mkdir()
    for path in (processed, skipped):
        path.rename(away / path.name)
    env.run()
    assert {r["skip_reason"] for r in env.rows("manifest", tool="omp")} == {"source_not_scanned_this_run"}
    for path in (processed, skipped):
        (away / path.name).rename(path)  # the same bytes back where they were
    summary, _ = env.run()
    assert summary["unchanged"] == 2
    rows = env.rows("manifest", tool="omp")
    assert {r["parse_status"] for r in rows} == {"unchanged"}
    by_count = {r["candidate_count"] > 0: r["skip_reason"] for r in rows}
    assert by_count == {True: "", False: "no_reusable_technical_knowledge"}


def test_advisor_rows_stay_while_their_store_is_unavailable(env: IngestEnv, tmp_path: Path) -> None:
    session = write_omp_session(env.omp, tech_turn(), session_id="s1")
    write_omp_advisor(session, tech_turn("Advise: why does the TS2307 build fail after the upgrade? " * 3))
    env.run()
    advisor = env.rows("manifest", record_type="advisor")
    assert advisor
    env.omp.rename(tmp_path / "omp-moved")  # the store is gone (moved, an unset variable)
    env.run()
    assert [r["source_key"] for r in env.rows("manifest", record_type="advisor")] == [r["source_key"] for r in advisor]
    (tmp_path / "omp-moved").rename(env.omp)
    session.with_name("__advisor.jsonl").unlink(missing_ok=True)
    for path in env.omp.rglob("*advisor*"):
        path.unlink()
    env.run()  # the store is back and the advisor file deleted: its rows leave
    assert not env.rows("manifest", record_type="advisor")


def test_a_world_writable_lock_is_made_private_and_an_earlier_versions_memo_removed(env: IngestEnv) -> None:
    write_omp_session(env.omp, tech_turn(), session_id="s1")
    env.run()
    memo = env.out / "extraction-memo.bin"  # what versions with extraction memos kept
    memo.write_bytes(b"x" * 100)
    lock = env.out / ".lock"
    os.chmod(lock, 0o666)
    age(
        write_omp_session(
            env.omp, [*tech_turn(), *tech_turn("Another: why does pnpm build fail with TS2307? " * 3)], session_id="s1"
        )
    )
    env.run()
    assert not memo.exists()
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in env.out.iterdir() if p.is_file())
