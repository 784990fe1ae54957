"""The FTS5 index beside the ledgers: incremental, and never trusted when damaged."""

from __future__ import annotations

import json
import os
import sqlite3

from kbtools.review.index import INDEX_FILE, index_path, update_index
from tests.review.conftest import ReviewKb


def search_ids(review_kb: ReviewKb, query: str) -> list[str]:
    result = review_kb.kb("candidates", "search", query, "--format", "json")
    assert result.code == 0, result.err
    return [r["ref"] for r in json.loads(result.out)["results"]]


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
