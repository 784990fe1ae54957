"""The candidate rows the search index writes: a row's clustering features are those of its
indexed columns' words, whatever its text."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from kbtools.review.index import (
    _candidate_columns,
    _cluster_features,
    _indexed,
    index_path,
    update_index,
)
from tests.review.conftest import ReviewKb


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
            assert columns == _candidate_columns(row)
            assert features == _cluster_features(columns), (goal, conclusion)


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
        assert features == _cluster_features((topic, goal, body, conclusions))
