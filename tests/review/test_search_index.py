"""The FTS5 index beside the ledgers: incremental, and never trusted when damaged."""

from __future__ import annotations

import json
import os
import sqlite3

from kbtools.review.index import INDEX_FILE, index_path, update_index
from tests.review.conftest import ReviewKb
from tests.testing.cli import run_kb_process


def search_ids(review_kb: ReviewKb, query: str) -> list[str]:
    result = review_kb.kb("candidates", "search", query, "--format", "json")
    assert result.code == 0, result.err
    return [r["ref"] for r in json.loads(result.out)["results"]]


def search_titles(review_kb: ReviewKb, query: str) -> list[str]:
    result = review_kb.kb("candidates", "search", query, "--format", "json")
    assert result.code == 0, result.err
    return [r["title"] for r in json.loads(result.out)["results"]]


def test_an_unchanged_rerun_does_not_rebuild_the_index(review_kb: ReviewKb) -> None:
    out = review_kb.env.out
    first = update_index(out)
    db = index_path(out)
    before = db.stat()
    review_kb.ingest()
    again = update_index(out)
    assert again.rebuilt == "" and again.added == again.removed == 0
    assert first.rebuilt in ("", "missing")
    assert db.stat().st_ino == before.st_ino


def test_the_index_file_is_private(review_kb: ReviewKb) -> None:
    update_index(review_kb.env.out)
    assert (index_path(review_kb.env.out).stat().st_mode & 0o777) == 0o600


def test_a_garbled_index_is_rebuilt_and_gives_the_right_answer(review_kb: ReviewKb) -> None:
    wanted = search_ids(review_kb, "connection pool")
    db = index_path(review_kb.env.out)
    data = bytearray(db.read_bytes())
    data[0:100] = b"\x00" * 100  # the header: not a database any more
    db.write_bytes(bytes(data))
    assert search_ids(review_kb, "connection pool") == wanted
    assert update_index(review_kb.env.out).rebuilt == ""  # the rebuilt index is trusted again


def test_a_garbled_index_with_its_old_mtime_is_caught_by_sqlite_and_rebuilt(review_kb: ReviewKb) -> None:
    wanted = search_ids(review_kb, "journal")
    db = index_path(review_kb.env.out)
    st = db.stat()
    with open(db, "r+b") as fh:  # same size, same inode, mtime put back: the stamp still matches
        fh.seek(0)
        fh.write(b"garbage garbage!")
    os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert search_ids(review_kb, "journal") == wanted


def test_an_index_changed_behind_its_back_is_not_trusted(review_kb: ReviewKb) -> None:
    """A valid database whose rows were edited outside kb: it no longer matches its stamp."""
    wanted = search_ids(review_kb, "journal")
    with sqlite3.connect(index_path(review_kb.env.out)) as con:
        con.execute("DELETE FROM candidate_fts")
    assert search_ids(review_kb, "journal") == wanted


def test_a_deleted_index_is_made_again(review_kb: ReviewKb) -> None:
    wanted = search_ids(review_kb, "tsconfig")
    (review_kb.env.out / INDEX_FILE).unlink()
    assert search_ids(review_kb, "tsconfig") == wanted


def _index_content(out: os.PathLike[str] | str) -> list[tuple[object, ...]]:
    con = sqlite3.connect(index_path(out))  # type: ignore[arg-type]
    try:
        rows = con.execute(
            "SELECT c.candidate_id, c.line_hash, c.position, c.title, c.cluster_id, c.cluster_size, f.topic, f.goal,"
            " f.body, f.conclusions FROM candidate c JOIN candidate_fts f ON f.rowid = c.id ORDER BY c.position"
        ).fetchall()
    finally:
        con.close()
    return [tuple(r) for r in rows]


def test_an_updated_index_equals_one_built_from_scratch(review_kb: ReviewKb, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Lines gone, lines moved, a changed line, a hand-edited duplicate id and a malformed
    line: the update in place holds exactly what a fresh build of that ledger holds."""
    import shutil

    out = review_kb.env.out
    update_index(out)
    ledger = out / "candidates.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    assert len(lines) >= 3
    first = json.loads(lines[0])
    changed = dict(first, topic="a changed topic")
    duplicate = dict(json.loads(lines[1]), text="the same id, written again by hand")
    ledger.write_bytes(
        b"".join(lines[2:])
        + b"{not json\n"
        + (json.dumps(changed) + "\n").encode()
        + (json.dumps(duplicate) + "\n").encode()
    )
    updated = update_index(out)
    assert updated.ledger_read and updated.rebuilt == ""
    fresh = tmp_path / "fresh"
    shutil.copytree(out, fresh)
    for name in ("search-index.sqlite", "search-index.stamp"):
        (fresh / name).unlink()
    assert update_index(fresh).rebuilt == "missing"
    assert _index_content(out) == _index_content(fresh)
    assert [r[0] for r in _index_content(out)].count(duplicate["candidate_id"]) == 1


def test_a_lone_surrogate_written_into_the_ledger_by_hand_is_searched_not_a_crash(review_kb: ReviewKb) -> None:
    """JSON lets a line hold ``\\ud800``, which UTF-8 (a terminal, SQLite) cannot: the line is
    read with the surrogate replaced, as the ledger writer replaces one."""
    wanted = search_ids(review_kb, "connection pool")
    ledger = review_kb.env.out / "candidates.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    (at,) = [i for i, line in enumerate(lines) if json.loads(line)["candidate_id"] in wanted[:1]]
    row = json.loads(lines[at])
    row["user_goal"] = "\ud800 " + row["user_goal"]
    row["topic"] = row["topic"] + " \udfff"
    lines[at] = (json.dumps(row, separators=(",", ":")) + "\n").encode("ascii")  # the escapes as written
    assert b"\\ud800" in lines[at]
    ledger.write_bytes(b"".join(lines))
    assert search_ids(review_kb, "connection pool") == wanted
    for command in (("list",), ("list", "--format", "json"), ("show", wanted[0]), ("search", "connection pool")):
        # A child process: its output is encoded as a terminal's is (in process it is a StringIO).
        shown = run_kb_process("candidates", *command, "--root", str(review_kb.root), cwd=review_kb.root)
        assert shown.code == 0 and "Traceback" not in shown.err and "error" not in shown.err, (command, shown.err)
    assert "\\ud800" not in shown.out and "? " in search_titles(review_kb, "connection pool")[0]
