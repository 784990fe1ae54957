"""The search index kept in step one source at a time, when ingest's ledger index vouches for
the candidate ledger; any ledger it does not vouch for (edited, truncated, rewritten by hand)
goes the whole-ledger way. Either way the index holds what a fresh build of the ledger holds."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from kbtools.ingest import caches
from kbtools.review.index import _stamp, index_path, update_index
from kbtools.review.source_sync import GAP
from tests.review.conftest import ReviewKb
from tests.review.test_cluster_index import LATER, grown, pool_session_grows
from tests.review.test_clusters import POOL_AGAIN
from tests.testing.sessions import write_omp_session


def content(out: Path, *, clusters: bool = False) -> list[tuple[object, ...]]:
    """Every candidate as the index holds it, in the index's order (positions left out: only
    their order is the ledger's), with its cluster and role if ``clusters``."""
    con = sqlite3.connect(index_path(out))
    try:
        rows = con.execute(
            "SELECT c.candidate_id, c.line_hash, c.tool, c.decision, c.title, f.topic, f.goal, f.body, f.conclusions,"
            " x.features" + (", c.cluster_id, c.cluster_size, c.role" if clusters else "") + " FROM candidate c"
            " JOIN candidate_fts f ON f.rowid = c.id JOIN candidate_features x ON x.id = c.id ORDER BY c.position"
        ).fetchall()
    finally:
        con.close()
    return [tuple(r) for r in rows]


def fresh_build(out: Path, tmp_path: Path) -> list[tuple[object, ...]]:
    """The index a fresh build of the same ledgers holds."""
    fresh = tmp_path / "fresh"
    shutil.rmtree(fresh, ignore_errors=True)
    shutil.copytree(out, fresh)
    for name in ("search-index.sqlite", "search-index.stamp"):
        (fresh / name).unlink()
    assert update_index(fresh).rebuilt == "missing"
    return content(fresh)


def ledger_lines(out: Path) -> list[bytes]:
    return (out / "candidates.jsonl").read_bytes().splitlines(keepends=True)


def positions(out: Path) -> list[int]:
    con = sqlite3.connect(index_path(out))
    try:
        return [p for (p,) in con.execute("SELECT position FROM candidate ORDER BY position")]
    finally:
        con.close()


@pytest.fixture
def big(review_kb: ReviewKb) -> ReviewKb:
    """Fifteen sessions ingested, the index in step (built by the whole-ledger path)."""
    grown(review_kb)
    return review_kb


def grow(kb: ReviewKb) -> None:
    """The Codex session grows by a turn (new candidate ids), and a new OMP session comes."""
    pool_session_grows(kb)
    write_omp_session(kb.env.omp, POOL_AGAIN, session_id="s-pool-2", cwd="/home/bob/api", started=LATER)


def with_index_of(out: Path, saved: Path) -> None:
    """The search index put back as it was in ``saved``."""
    for name in ("search-index.sqlite", "search-index.stamp"):
        shutil.copy2(saved / name, out / name)


def test_the_update_after_growth_reads_only_the_changed_sources(big: ReviewKb, tmp_path: Path) -> None:
    out = big.env.out
    before = set(ledger_lines(out))
    saved = tmp_path / "before"
    shutil.copytree(out, saved)
    grow(big)
    big.env.run()
    grown_lines = ledger_lines(out)
    with_index_of(out, saved)  # to update against the grown ledger
    update = update_index(out)
    new = [line for line in grown_lines if line not in before]
    assert update.ledger_read and update.added == len(new) >= 2 and update.removed >= 1
    assert update.lines_read == len(new) < len(grown_lines)
    assert [row[0] for row in content(out)] == [json.loads(line)["candidate_id"] for line in grown_lines]
    assert content(out) == fresh_build(out, tmp_path)
    # The same update the whole-ledger way (no ledger index to go by): the same rows and clusters.
    whole = tmp_path / "whole"
    shutil.copytree(out, whole)
    with_index_of(whole, saved)
    (whole / caches.LEDGER_INDEX_FILE).unlink()
    assert update_index(whole).lines_read == len(grown_lines)
    assert content(whole, clusters=True) == content(out, clusters=True)
    assert any(row[-3] for row in content(out, clusters=True))  # some clusters to compare


def test_an_unchanged_rerun_reads_no_line(big: ReviewKb, tmp_path: Path) -> None:
    out = big.env.out
    saved = tmp_path / "before"
    shutil.copytree(out, saved)
    big.env.run()  # the ledger written again: a new file, the same lines
    with_index_of(out, saved)
    update = update_index(out)
    assert update.rebuilt == "" and not update.ledger_read and update.lines_read == 0
    assert update.added == update.removed == 0
    assert content(out, clusters=True) == content(saved, clusters=True)


def _edit(out: Path, data: bytes, *, keep_inode: bool) -> None:
    ledger = out / "candidates.jsonl"
    if keep_inode:
        with open(ledger, "r+b") as fh:
            fh.write(data)
            fh.truncate()
    else:
        ledger.unlink()
        ledger.write_bytes(data)
    st = ledger.stat()
    os.utime(ledger, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # a second later, as an edit is


def _middle_line_changed(lines: list[bytes], *, same_length: bool) -> list[bytes]:
    middle = len(lines) // 2
    row = json.loads(lines[middle])
    text = str(row["text"])
    row["text"] = text[:-4] + ("ABCD" if same_length else "a longer ending")
    edited = (json.dumps(row, separators=(",", ":")) + "\n").encode()
    if same_length:
        assert len(edited) == len(lines[middle]) and edited != lines[middle]
    return [*lines[:middle], edited, *lines[middle + 1 :]]


@pytest.mark.parametrize(
    "edit",
    ["truncated", "middle line edited", "same length, other bytes", "same length in place", "copied back", "reversed"],
)
def test_a_ledger_changed_by_hand_is_read_whole(big: ReviewKb, tmp_path: Path, edit: str) -> None:
    out = big.env.out
    lines = ledger_lines(out)
    if edit == "truncated":
        data = b"".join(lines)[: -len(lines[-1]) // 2]  # the last line cut in half: malformed
    elif edit == "middle line edited":
        data = b"".join(_middle_line_changed(lines, same_length=False))
    elif edit.startswith("same length"):
        data = b"".join(_middle_line_changed(lines, same_length=True))
    elif edit == "copied back":
        data = b"".join(lines)
    else:
        data = b"".join(reversed(lines))
    _edit(out, data, keep_inode=edit == "same length in place")
    update = update_index(out)
    assert update.rebuilt == "" and update.ledger_read
    assert update.lines_read == len(data.splitlines())
    assert content(out) == fresh_build(out, tmp_path)
    assert positions(out) == [n * GAP for n in range(len(positions(out)))]  # numbered afresh


def test_without_ingests_ledger_index_the_whole_ledger_is_read(big: ReviewKb, tmp_path: Path) -> None:
    out = big.env.out
    write_omp_session(big.env.omp, POOL_AGAIN, session_id="s-pool-2", cwd="/home/bob/api", started=LATER)
    saved = tmp_path / "before"
    shutil.copytree(out, saved)
    big.env.run()
    for name in ("search-index.sqlite", "search-index.stamp"):
        shutil.copy2(saved / name, out / name)
    (out / caches.LEDGER_INDEX_FILE).write_bytes(b"damaged")
    update = update_index(out)
    assert update.lines_read == len(ledger_lines(out))
    assert content(out) == fresh_build(out, tmp_path)


def test_a_ledger_index_for_a_reordered_ledger_sends_it_the_whole_way(big: ReviewKb, tmp_path: Path) -> None:
    """Sources in another order (each one's lines the same): placing one run at a time assumes
    the order of those that stay, so the ledger is read whole and clustered anew."""
    out = big.env.out
    index = caches.read(out, caches.LEDGER_INDEX_FILE)
    _, (context, digests, spans) = index["candidates"]
    data = (out / "candidates.jsonl").read_bytes()
    pieces = {key: data[starts[0] : starts[-1]] for key, starts in spans.items()}
    order = list(reversed(spans))
    ledger = out / "candidates.jsonl"
    ledger.unlink()
    ledger.write_bytes(b"".join(pieces[key] for key in order))
    new_spans, at = {}, 0
    for key in order:
        new_spans[key] = [at + s - spans[key][0] for s in spans[key]]
        at += len(pieces[key])
    index["candidates"] = (caches.stat_key(ledger.stat()), (context, digests, new_spans))
    caches.write(out, caches.LEDGER_INDEX_FILE, index)
    update = update_index(out)
    assert update.lines_read == len(ledger_lines(out))
    assert content(out) == fresh_build(out, tmp_path)


def test_no_room_between_neighbours_numbers_the_rows_afresh(big: ReviewKb, tmp_path: Path) -> None:
    """A source that grows between two whose positions are next to each other: its lines have
    no room, so every row is numbered afresh by the whole-ledger path."""
    out = big.env.out
    con = sqlite3.connect(index_path(out))
    with con:  # squeeze every position together: 0, 1, 2, ...
        ordered = [i for (i,) in con.execute("SELECT id FROM candidate ORDER BY position")]
        con.executemany("UPDATE candidate SET position = ? WHERE id = ?", [(n, i) for n, i in enumerate(ordered)])
        con.execute("UPDATE ledger_source SET first = first / ?, last = last / ?", (GAP, GAP))
    con.close()
    _stamp(index_path(out), out)
    grow(big)
    big.env.run()
    assert positions(out) == [n * GAP for n in range(len(ledger_lines(out)))]
    assert content(out) == fresh_build(out, tmp_path)


def test_an_empty_ledger_and_back(big: ReviewKb, tmp_path: Path) -> None:
    out = big.env.out
    lines = ledger_lines(out)
    _edit(out, b"", keep_inode=False)
    assert update_index(out).removed == len(lines)
    assert content(out) == []
    _edit(out, b"".join(lines), keep_inode=False)
    assert update_index(out).added == len(lines)
    assert content(out) == fresh_build(out, tmp_path)
