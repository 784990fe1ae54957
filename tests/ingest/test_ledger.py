"""Ledger mechanics: the write lock, the append-only journal, the merged prior state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbtools.ingest.ledger import ledger_path, remove_stale_files
from kbtools.ingest.ledger_read import PriorState
from kbtools.ingest.ledger_write import SourceRows, WriteSink
from kbtools.ingest.lock import lock_output
from tests.ingest.conftest import IngestEnv, tech_turn
from tests.testing.cli import run_kb
from tests.testing.sessions import write_omp_session


def manifest(key: str, *, identity: str = "p", count: int = 0, status: str = "processed") -> dict[str, object]:
    return {
        "source_key": key,
        "tool": "omp",
        "record_type": "session",
        "project_key": identity,
        "session_hash": identity,
        "created_at": "",
        "updated_at": "",
        "format": "jsonl",
        "content_hash": key,
        "parse_status": status,
        "redaction_status": "none:v1",
        "candidate_count": count,
        "article_slugs": [],
        "skip_reason": "",
        "error": "",
        "run_at": "",
    }


def candidate(key: str, n: int) -> dict[str, object]:
    return {"candidate_id": f"{key}-{n}", "source_key": key, "text": f"text {n}", "fingerprint": f"f{n}"}


def test_second_concurrent_write_fails_fast_with_one_line(env: IngestEnv) -> None:
    write_omp_session(env.omp, tech_turn(), session_id="s1")
    holder = lock_output(env.out)
    try:
        started = time.monotonic()
        result = run_kb(*env.args())
        assert time.monotonic() - started < 5
    finally:
        os.close(holder)
    assert result.code == 2
    assert result.err.startswith("kb: error: another `kb ingest --write` is running")
    assert len(result.err.strip().splitlines()) == 1 and not result.out
    env.run()  # released: the next write goes ahead


def test_lock_of_a_dead_process_is_taken_over(env: IngestEnv, tmp_path: Path) -> None:
    env.out.mkdir(parents=True)
    # A process that took the lock and died without releasing it.
    code = (
        "import os, sys; from pathlib import Path; from kbtools.ingest.lock import lock_output; "
        f"lock_output(Path({str(env.out)!r})); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert (env.out / ".lock").read_text().strip().isdigit()
    write_omp_session(env.omp, tech_turn(), session_id="s1")
    summary, _ = env.run()
    assert summary["processed"] == 1


def test_journal_is_appended_batch_by_batch(tmp_path: Path) -> None:
    sink = WriteSink(tmp_path, "run-1")
    for i in range(3):
        sink.emit(
            SourceRows.of(manifest(f"k{i}", identity=f"i{i}", count=1), [candidate(f"k{i}", 0)], [], []), journal=True
        )
        sink.persist_partial()
    lines = ledger_path(tmp_path, "manifest", partial=True).read_text().splitlines()
    assert [json.loads(line)["source_key"] for line in lines] == ["k0", "k1", "k2"]
    assert all(json.loads(line)["_run"] == "run-1" for line in lines)
    sink.abort()
    assert not list(tmp_path.glob(".*.tmp"))


def test_journal_rows_of_the_latest_run_win_per_source(tmp_path: Path) -> None:
    main = [manifest("old", count=1)]
    ledger_path(tmp_path, "manifest").write_text("".join(json.dumps(r) + "\n" for r in main))
    ledger_path(tmp_path, "candidates").write_text(json.dumps(candidate("old", 0)) + "\n")
    journal = [
        {**manifest("new", count=2), "_run": "a"},
        {**manifest("new", count=1), "_run": "b"},
    ]
    cands = [
        {**candidate("new", 0), "_run": "a"},
        {**candidate("new", 1), "_run": "a"},
        {**candidate("new", 2), "_run": "b"},
    ]
    ledger_path(tmp_path, "manifest", partial=True).write_text("".join(json.dumps(r) + "\n" for r in journal))
    ledger_path(tmp_path, "candidates", partial=True).write_text("".join(json.dumps(r) + "\n" for r in cands))
    prior = PriorState().load(tmp_path)
    try:
        (digest,) = prior.by_identity["omp\0p\0p"]
        assert digest.source_key == "new" and digest.candidate_count == 1
        assert [c["candidate_id"] for c in prior.rows_for("candidates", "new")] == ["new-2"]
        assert digest.complete
        assert "_run" not in prior.read(digest.location)
    finally:
        prior.close()


def test_journal_rows_without_a_journalled_manifest_row_count_for_nothing(tmp_path: Path) -> None:
    """What a batch cut short, or a committed run killed while deleting its journal, leaves."""
    ledger_path(tmp_path, "manifest").write_text(json.dumps(manifest("k", count=1)) + "\n")
    ledger_path(tmp_path, "candidates").write_text(json.dumps(candidate("k", 0)) + "\n")
    ledger_path(tmp_path, "candidates", partial=True).write_text(json.dumps({**candidate("k", 7), "_run": "a"}) + "\n")
    ledger_path(tmp_path, "events", partial=True).write_text(
        json.dumps({"event": "derived_excluded", "source_key": "k", "_run": "a"}) + "\n"
    )
    prior = PriorState().load(tmp_path)
    try:
        (digest,) = prior.by_identity["omp\0p\0p"]
        assert digest.complete and not digest.from_journal and not prior.has_partial
        assert [c["candidate_id"] for c in prior.rows_for("candidates", "k")] == ["k-0"]
        assert list(prior.rows_for("events", "k")) == []
    finally:
        prior.close()
    remove_stale_files(tmp_path)  # a new journal is not appended to them
    assert not list(tmp_path.glob("*.partial.jsonl"))
    assert ledger_path(tmp_path, "candidates").exists()


def test_prior_state_of_a_missing_folder_is_empty(tmp_path: Path) -> None:
    prior = PriorState().load(tmp_path / "absent")
    assert prior.by_identity == {} and prior.malformed == 0


def test_an_output_dir_that_is_a_file_is_a_one_line_error(env: IngestEnv) -> None:
    (env.root / ".agent").write_text("not a folder")
    result = run_kb(*env.args())
    assert result.code == 2 and result.err.startswith("kb: error: cannot create the output directory")
    assert len(result.err.strip().splitlines()) == 1


def test_prior_rows_read_right_while_a_forked_worker_reads_the_same_open_files(tmp_path: Path) -> None:
    """Worker processes are forked with the prior ledgers open: reads share no file offset."""

    sink = WriteSink(tmp_path, "run-1")
    keys = [f"k{i}" for i in range(40)]
    for i, key in enumerate(keys):
        sink.emit(
            SourceRows.of(manifest(key, identity=f"i{i}", count=3), [candidate(key, n) for n in range(3)], [], []),
            journal=True,
        )
    sink.persist_partial()  # journalled rows: read back line by line, not from the offset index
    sink.abort()
    prior = PriorState().load(tmp_path)
    try:
        want = {key: prior.candidate_lines(key) for key in keys}
        assert all(len(lines) == 3 for lines in want.values())
        child = os.fork()
        if child == 0:  # the worker: reads as fast as it can until killed
            try:
                while True:
                    for key in reversed(keys):
                        prior.candidate_lines(key)
            finally:
                os._exit(0)
        try:
            for _ in range(60):
                for key in keys:
                    assert prior.candidate_lines(key) == want[key], key
        finally:
            os.kill(child, 9)
            os.waitpid(child, 0)
    finally:
        prior.close()


@pytest.mark.parametrize("kernel_copy", [True, False], ids=["copy_file_range", "no-copy_file_range"])
def test_a_range_writer_writes_bytes_and_copied_ranges_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel_copy: bool
) -> None:
    """Bytes and byte ranges of other files (adjacent ones copied in one call, others apart),
    in the order given; a source on another file system (tmpfs, when there is one) gives the
    same bytes, by the kernel or by the read-and-write fallback — which is all a platform
    without os.copy_file_range (macOS, Windows) has."""
    from kbtools.ingest import ledger_write
    from kbtools.ingest.ledger_write import BUFFER, RangeWriter

    if not kernel_copy:
        monkeypatch.setattr(ledger_write, "_copy_file_range", None)
    elif ledger_write._copy_file_range is None:
        pytest.skip("no os.copy_file_range on this platform")

    data = bytes(range(256)) * 64
    roots = [tmp_path, *([Path("/dev/shm")] if Path("/dev/shm").is_dir() else [])]
    for root in roots:
        source = root / f"source-{os.getpid()}-{len(str(root))}"
        source.write_bytes(data)
        try:
            out = tmp_path / "out"
            src = os.open(source, os.O_RDONLY)
            writer = RangeWriter(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
            expected = b""
            for piece in [(0, 10), (10, 300), b"<a>", (5, 5), (300, 301), (7, 9), b"<b>" * 3, (100, len(data))]:
                if isinstance(piece, bytes):
                    writer.write(piece)
                    expected += piece
                else:
                    writer.copy(src, *piece)
                    expected += data[piece[0] : piece[1]]
            writer.write(b"x" * BUFFER)  # a full buffer is written at once
            expected += b"x" * BUFFER
            writer.copy(src, 0, 3)
            expected += data[:3]
            writer.flush()
            writer.close()
            os.close(src)
            assert out.read_bytes() == expected
        finally:
            source.unlink()
