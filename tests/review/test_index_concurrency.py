"""Two kb processes on one search index: a busy index is waited for, never rebuilt, and two
updates of one ledger index its lines once.

Real SQLite files and real connections: one holds a write lock while another runs the update."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kbtools.errors import KbError
from kbtools.review import index
from kbtools.review.index import STAMP_FILE, index_path, update_index
from tests.review.conftest import ReviewKb, turn
from tests.review.test_search_index import _index_content
from tests.testing.sessions import write_claude_session

# A child process running one update; it reports each BEGIN it starts (SQLite's statement
# trace, fired before the lock is taken), then what the update did.
_UPDATER = """
import contextlib, dataclasses, json, sys
from pathlib import Path
from kbtools.review import index
opened = index._connect
def traced(path):
    con = opened(path)
    con.set_trace_callback(lambda sql: print("SQL " + sql, flush=True) if sql.startswith("BEGIN") else None)
    return con
index._connect = traced
if sys.argv[2:] == ["--without-lock-file"]:
    index._index_lock = lambda output_dir: contextlib.nullcontext()
print("DONE " + json.dumps(dataclasses.asdict(index.update_index(Path(sys.argv[1])))), flush=True)
"""


def _holder(db: Path, mode: str) -> sqlite3.Connection:
    """Another connection holding the index's write lock (``mode``: IMMEDIATE or EXCLUSIVE)."""
    con = sqlite3.connect(db, isolation_level=None, timeout=0, check_same_thread=False)
    con.execute(f"BEGIN {mode}")
    return con


def _touch_ledger(out: Path) -> None:
    """The ledger looks changed (new mtime), so an update must write to the index."""
    ledger = out / "candidates.jsonl"
    st = ledger.stat()
    os.utime(ledger, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


@pytest.mark.parametrize("mode", ["IMMEDIATE", "EXCLUSIVE"])
def test_an_index_locked_past_the_busy_timeout_is_an_error_not_a_rebuild(
    review_kb: ReviewKb, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    out = review_kb.env.out
    update_index(out)
    db = index_path(out)
    inode = db.stat().st_ino
    _touch_ledger(out)
    monkeypatch.setattr(index, "BUSY_TIMEOUT", 0.3, raising=False)
    holder = _holder(db, mode)
    try:
        with pytest.raises(KbError, match="busy") as caught:
            update_index(out)
        assert "\n" not in str(caught.value) and str(db) in str(caught.value)
        assert db.stat().st_ino == inode  # the file the other process writes is still the index
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    again = update_index(out)
    assert again.rebuilt == "" and again.ledger_read
    assert db.stat().st_ino == inode


def test_an_update_waits_for_a_short_lock_and_does_not_rebuild(review_kb: ReviewKb) -> None:
    out = review_kb.env.out
    update_index(out)
    db = index_path(out)
    inode = db.stat().st_ino
    _touch_ledger(out)
    holder = _holder(db, "EXCLUSIVE")
    started = time.monotonic()

    try:
        done = _update_meanwhile(out, lambda: holder.execute("ROLLBACK"))
    finally:
        holder.close()
    assert time.monotonic() - started >= 0.5
    assert done.rebuilt == "" and done.ledger_read
    assert db.stat().st_ino == inode


def _update_meanwhile(out: Path, release: Callable[[], object]) -> index.IndexUpdate:
    """An update of ``out`` while, half a second into it, another thread calls ``release``."""

    def later() -> None:
        time.sleep(0.5)
        release()

    thread = threading.Thread(target=later)
    thread.start()
    try:
        return update_index(out)
    finally:
        thread.join()


def _start_updater(out: Path, *flags: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _UPDATER, str(out), *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _wait_for_begin(proc: subprocess.Popen[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("SQL BEGIN"):
            return
        assert not line.startswith("DONE"), line
    raise AssertionError(proc.stderr.read() if proc.stderr else "the updater ended")


def _finish(proc: subprocess.Popen[str]) -> dict[str, object]:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    (done,) = [line for line in out.splitlines() if line.startswith("DONE ")]
    result: dict[str, object] = json.loads(done[5:])
    return result


def test_two_concurrent_updates_index_the_new_lines_once(review_kb: ReviewKb, tmp_path: Path) -> None:
    """Both updates find the ledger grown while a third connection holds the lock; the one
    that writes second must see what the first wrote, not replay its plan over it. The lock
    file that keeps kb processes apart is left out: the write transaction alone must do."""
    out = review_kb.env.out
    update_index(out)
    aside = tmp_path / "aside"
    aside.mkdir()
    # The index as it was before the ledger grew, moved aside (inode and mtime kept, so its
    # stamp still holds) while an ingest run appends a session and updates its own index.
    for name in (index.INDEX_FILE, STAMP_FILE):
        os.rename(out / name, aside / name)
    before = len(_index_content(aside))
    write_claude_session(
        review_kb.env.claude,
        turn(
            "Why does the nightly export stop with a disk full error on the build host?",
            "The root cause is the export writing temporary files to /tmp; the fix is to set "
            "TMPDIR to the data volume, and I ran the export again to verify it completes.",
        ),
        session_id="c-disk",
        cwd="/home/alice/api",
    )
    review_kb.ingest()
    grown = len(_index_content(out))
    assert grown > before
    for name in (index.INDEX_FILE, STAMP_FILE):
        os.replace(aside / name, out / name)
    db = index_path(out)
    holder = _holder(db, "IMMEDIATE")
    first, second = (_start_updater(out, "--without-lock-file") for _ in range(2))
    try:
        _wait_for_begin(first)
        _wait_for_begin(second)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    results = [_finish(first), _finish(second)]
    assert sorted((r["added"], r["removed"]) for r in results) == [(0, 0), (grown - before, 0)]
    assert all(r["rebuilt"] == "" for r in results)
    fresh = tmp_path / "fresh"
    shutil.copytree(out, fresh)
    for name in (index.INDEX_FILE, STAMP_FILE):
        (fresh / name).unlink()
    assert update_index(fresh).rebuilt == "missing"
    # Same rows in the same order (the positions of lines placed between others differ).
    assert [r[:2] + r[3:] for r in _index_content(out)] == [r[:2] + r[3:] for r in _index_content(fresh)]
    # The record of which source's lines are which survived: the next growth reads one source.
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT COUNT(*) FROM ledger_source").fetchone()[0] == 4


# A child building the index that stops after its first commit, before it stamps the file
# (the moment the file no longer matches its stamp), until told to go on.
_PAUSED_BUILDER = """
import dataclasses, json, sys
from pathlib import Path
from kbtools.review import index
stamp, calls = index._stamp, []
def paused(path, output_dir):
    calls.append(path)
    if len(calls) == 2:  # the first stamps the empty file it made; the second follows the rows' commit
        print("COMMITTED", flush=True)
        sys.stdin.readline()
    stamp(path, output_dir)
index._stamp = paused
print("DONE " + json.dumps(dataclasses.asdict(index.update_index(Path(sys.argv[1])))), flush=True)
"""


def test_an_index_being_built_by_another_process_is_waited_for_not_rebuilt(review_kb: ReviewKb) -> None:
    """Between another process's commit and its stamp the file does not match the stamp: that
    is a write in progress, not an edit behind kb's back."""
    out = review_kb.env.out
    for name in (index.INDEX_FILE, STAMP_FILE):
        (out / name).unlink()
    builder = subprocess.Popen(
        [sys.executable, "-c", _PAUSED_BUILDER, str(out)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert builder.stdout is not None and builder.stdin is not None
    try:
        for line in builder.stdout:
            if line.startswith("COMMITTED"):
                break
        else:
            raise AssertionError(builder.stderr.read() if builder.stderr else "the builder ended")
        inode = index_path(out).stat().st_ino

        stdin = builder.stdin
        done = _update_meanwhile(out, lambda: (stdin.write("\n"), stdin.flush()))
    finally:
        built = _finish(builder)
    assert built["rebuilt"] == "missing"
    assert done.rebuilt == "" and index_path(out).stat().st_ino == inode
    assert update_index(out).rebuilt == ""
