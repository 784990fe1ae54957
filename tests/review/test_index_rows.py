"""The candidate rows the search index writes: inserted a batch at a time, each row has the
id SQLite gives a row inserted alone, and its clustering features are those of its indexed
columns' words, whatever its text."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

from kbtools.review.clusters import packed_features
from kbtools.review.index import (
    _INSERT_BATCH,
    _as_text,
    _indexed,
    build_draft,
    index_path,
    normalised,
    update_index,
)
from tests.review.conftest import ReviewKb


def columns_of(row: dict[str, Any]) -> tuple[str, str, str, str]:
    """A candidate's FTS columns by their definition: each field normalised alone."""
    conclusions = "\n".join(
        _as_text(row.get(name)) for name in ("root_cause", "final_solution", "error_messages", "symptoms")
    )
    return (
        normalised(str(row.get("topic") or "").replace(" / ", " ")),
        normalised(str(row.get("user_goal") or "")),
        normalised(str(row.get("text") or "")),
        normalised(conclusions),
    )


def features_of(columns: tuple[str, str, str, str]) -> bytes:
    """A candidate's clustering features by their definition: those of the words of its
    stored prompt and conclusions columns."""
    _, goal, _, conclusions = columns
    return packed_features(f"{goal} {conclusions}".encode().split())


def _variants(review_kb: ReviewKb, count: int, start: int = 0) -> list[dict[str, Any]]:
    base = review_kb.env.rows("candidates")[0]
    return [
        dict(
            base, candidate_id=f"cand-{n:05d}", user_goal=f"{base['user_goal']} (case {n})", text=f"{base['text']} {n}"
        )
        for n in range(start, start + count)
    ]


def _line(row: dict[str, Any]) -> bytes:
    return (json.dumps(row) + "\n").encode()


def _ids(path: Path) -> dict[str, int]:
    con = sqlite3.connect(path)
    try:
        ids = dict(con.execute("SELECT candidate_id, id FROM candidate").fetchall())
        # Every row has its features and its FTS row under its id, and nothing else has.
        assert [i for (i,) in con.execute("SELECT id FROM candidate_features ORDER BY id")] == sorted(ids.values())
        assert [i for (i,) in con.execute("SELECT rowid FROM candidate_fts ORDER BY rowid")] == sorted(ids.values())
        return ids
    finally:
        con.close()


def _one_at_a_time(held: dict[str, int], fresh: list[dict[str, Any]]) -> dict[str, int]:
    """The ids SQLite gives ``fresh`` inserted one by one after the rows ``held`` (a row with
    a candidate id already there replacing it)."""
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, cid TEXT NOT NULL UNIQUE)")
    con.executemany("INSERT INTO t(id, cid) VALUES(?, ?)", [(i, cid) for cid, i in held.items()])
    for row in fresh:
        con.execute("DELETE FROM t WHERE cid = ?", (row["candidate_id"],))
        con.execute("INSERT INTO t(cid) VALUES(?)", (row["candidate_id"],))
    return dict(con.execute("SELECT cid, id FROM t").fetchall())


def test_a_batched_build_numbers_its_rows_as_inserting_them_one_by_one(review_kb: ReviewKb, tmp_path: Path) -> None:
    """Duplicate ids written by hand, one replacing the row just inserted (whose id is then
    given again), one replacing an early row, on both sides of a batch boundary."""
    rows = _variants(review_kb, 2 * _INSERT_BATCH + 10)
    rows.insert(_INSERT_BATCH, dict(rows[_INSERT_BATCH - 1], text="the row before, written again"))
    rows.insert(_INSERT_BATCH + 5, dict(rows[3], text="an early row, written again"))
    rows.append(dict(rows[-1], text="the last row, written again"))
    draft = tmp_path / "draft.sqlite"
    build_draft(draft, io.BytesIO(b"".join(map(_line, rows))), "r1")
    assert _ids(draft) == _one_at_a_time({}, rows)


def test_an_update_in_place_numbers_its_new_rows_as_inserting_them_one_by_one(review_kb: ReviewKb) -> None:
    out = review_kb.env.out
    ledger = out / "candidates.jsonl"
    first = _variants(review_kb, _INSERT_BATCH + 40)
    ledger.write_bytes(b"".join(map(_line, first)))
    update_index(out)
    held = _ids(index_path(out))
    assert held == _one_at_a_time({}, first)
    # The last rows gone (their ids free again), some early ones too, and new lines after.
    kept = first[5:20] + first[30 : _INSERT_BATCH - 10]
    fresh = _variants(review_kb, _INSERT_BATCH + 3, start=10_000)
    fresh.insert(7, dict(kept[-1], text="a kept row, written again"))
    ledger.write_bytes(b"".join(map(_line, kept + fresh)))
    assert update_index(out).rebuilt == ""
    gone = {row["candidate_id"] for row in first} - {row["candidate_id"] for row in kept}
    assert _ids(index_path(out)) == _one_at_a_time({c: i for c, i in held.items() if c not in gone}, fresh)


ODD_TEXTS = [
    "plain ascii words about tsconfig paths",
    "Café naïve résumé: the ﬁx for ＦＵＬＬＷＩＤＴＨ text",
    "数据库 locked: 切换 WAL モード 데이터베이스",
    "a lone surrogate \ud800 inside",
    "a replacement character \ufffd written as such",
    "ΣΊΣΥΦΟΣ final sigma",
    "",
]


def test_features_are_those_of_the_indexed_columns_whatever_the_text() -> None:
    """Shingled from the words as normalised, they equal the features of the columns split
    again: also where a column's bytes are not UTF-8 (a lone surrogate) and were replaced."""
    for goal in ODD_TEXTS:
        for conclusion in ODD_TEXTS:
            row: dict[str, Any] = {
                "candidate_id": "c",
                "topic": "a / topic",
                "user_goal": f"{goal} {goal} the connection pool error repeated",
                "text": goal,
                "root_cause": conclusion,
                "final_solution": [conclusion, "add the alias to compilerOptions paths"],
            }
            columns, features = _indexed(row)
            assert columns == columns_of(row)
            assert features == features_of(columns), (goal, conclusion)


def test_the_stored_features_are_those_of_the_stored_columns(review_kb: ReviewKb) -> None:
    out = review_kb.env.out
    rows = _variants(review_kb, 3)
    for row, text in zip(rows, [ODD_TEXTS[1], ODD_TEXTS[2], ODD_TEXTS[4]], strict=True):
        row["user_goal"] = row["root_cause"] = text
    ledger = out / "candidates.jsonl"
    ledger.write_bytes(ledger.read_bytes() + b"".join(map(_line, rows)))
    update_index(out)
    con = sqlite3.connect(index_path(out))
    try:
        stored = con.execute(
            "SELECT t.topic, t.goal, t.body, t.conclusions, f.features FROM candidate_fts t"
            " JOIN candidate_features f ON f.id = t.rowid"
        ).fetchall()
    finally:
        con.close()
    assert len(stored) >= 6
    for topic, goal, body, conclusions, features in stored:
        assert features == features_of((topic, goal, body, conclusions))
