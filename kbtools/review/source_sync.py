"""The candidate rows of the search index brought in step one source at a time.

Ingest writes, with the candidate ledger, where each source's lines lie in it and the
``rows_digest`` they were written with (its ledger index, :data:`kbtools.ingest.caches.LEDGER_INDEX_FILE`),
and keeps that only for the file it wrote: same size, mtime and inode. When it vouches for
the ledger on disk, the search index need not read the whole ledger: its ``ledger_source``
table keeps, per source, the digest its rows were indexed from, the positions of the first
and last of them and their row ids in line order. A source with the same digest and as many
lines is unchanged, its rows untouched; only the lines of the others are read (by their byte
range), hashed and matched with the rows of the sources that changed or went.

A row's ``position`` orders the candidates as the ledger does. Numbered afresh, consecutive
lines are :data:`GAP` apart, so the lines of a source that changed take new positions between
the unchanged neighbours' without renumbering them. Whatever this path cannot do exactly (no
ledger index for this file, lines that do not tile it, unchanged sources in another order, a
line that moved out of its window, no room left between neighbours, duplicate lines or ids)
it leaves to the whole-ledger path, which reads every line and numbers them afresh.
"""

from __future__ import annotations

import os
import sqlite3
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import IO

GAP = 1 << 20  # between consecutive positions when numbered afresh
_CHUNK = 500


@dataclass(frozen=True)
class LedgerSource:
    """One source's candidate lines in the ledger on disk, as ingest's ledger index says."""

    source_key: str
    rows_digest: str
    starts: list[int]  # each line's offset, then where the last one ends


@dataclass(frozen=True)
class Indexed:
    """A ``ledger_source`` row: one source's lines as the index holds them."""

    rows_digest: str
    first: int  # position of its first line, and of its last
    last: int
    ids: array[int]  # row id of each line in order (0: a line not indexed, e.g. malformed)


def vouched_sources(output_dir: Path, ledger: IO[bytes]) -> list[LedgerSource] | None:
    """The sources of the open ``ledger`` in file order, when ingest's ledger index was written
    with this very file and its lines tile it exactly; else None."""
    from kbtools.ingest import caches

    try:
        st = os.fstat(ledger.fileno())
    except (OSError, ValueError, AttributeError):  # no file (an empty ledger)
        return None
    part = caches.index_part(caches.read(output_dir, caches.LEDGER_INDEX_FILE, shared=True), "candidates", st)
    try:
        _, digests, spans = part
        found = [LedgerSource(key, str(digests.get(key) or ""), list(starts)) for key, starts in spans.items()]
    except (TypeError, ValueError, AttributeError):  # None, or not the shape written
        return None
    found.sort(key=lambda s: s.starts[0] if s.starts else -1)
    end = 0
    for source in found:
        starts = source.starts
        if len(starts) < 2 or starts[0] != end or any(a >= b for a, b in pairwise(starts)):
            return None
        end = starts[-1]
    return found if end == st.st_size else None


def indexed_sources(con: sqlite3.Connection) -> dict[str, Indexed]:
    out: dict[str, Indexed] = {}
    for key, digest, first, last, packed in con.execute(
        "SELECT source_key, rows_digest, first, last, ids FROM ledger_source"
    ):
        ids = array("q")
        ids.frombytes(packed)
        out[key] = Indexed(digest, first, last, ids)
    return out


def write_sources(
    con: sqlite3.Connection, rows: Sequence[tuple[LedgerSource, Sequence[int], Sequence[int]]], *, replace_all: bool
) -> None:
    """Record each source's lines as indexed: (source, their positions, their row ids)."""
    if replace_all:
        con.execute("DELETE FROM ledger_source")
    else:
        forget(con, [source.source_key for source, _, _ in rows])
    con.executemany(
        "INSERT INTO ledger_source(source_key, rows_digest, first, last, ids) VALUES(?, ?, ?, ?, ?)",
        [
            (s.source_key, s.rows_digest, positions[0], positions[-1], array("q", ids).tobytes())
            for s, positions, ids in rows
        ],
    )


def forget(con: sqlite3.Connection, keys: Sequence[str]) -> None:
    """The sources ``keys`` no longer recorded (their rows are deleted by the caller)."""
    for start in range(0, len(keys), _CHUNK):
        chunk = list(keys[start : start + _CHUNK])
        con.execute(f"DELETE FROM ledger_source WHERE source_key IN ({','.join('?' * len(chunk))})", chunk)


@dataclass(frozen=True)
class _Old:
    """A row of a source that changed or went, as the index holds it."""

    row_id: int
    line_hash: str
    position: int


@dataclass
class Plan:
    """What a sync one source at a time writes: the rows gone, those kept at a new position,
    the lines to insert (line, its hash, its position), and each source that changed with the
    positions and row ids of its lines (0 for a line to insert, filled in by :meth:`inserted`)."""

    gone: list[int]
    moved: list[tuple[int, int]]  # (position, row id)
    fresh: list[tuple[bytes, str, int]]
    sources: list[tuple[LedgerSource, list[int], list[int]]]
    gone_keys: list[str]

    def inserted(self, ids: Sequence[int]) -> None:
        """The row ids the fresh lines got, in order (0 for one not indexed)."""
        new = iter(ids)
        for _, _, row_ids in self.sources:
            row_ids[:] = [i or next(new) for i in row_ids]


def plan(
    con: sqlite3.Connection, ledger: IO[bytes], sources: list[LedgerSource], line_hash: Callable[[bytes], str]
) -> Plan | None:
    """How to bring the rows in step source by source, or None if this path cannot (see the
    module's docstring). Reads only the lines of the sources that changed; writes nothing."""
    indexed = indexed_sources(con)
    if not indexed and sources:
        return None  # made by the whole-ledger path without a ledger index to go by
    current = {s.source_key for s in sources}
    gone_keys = [key for key in indexed if key not in current]
    # Runs of consecutive sources that changed, each between the positions of the unchanged
    # lines around it (None: no bound).
    runs: list[tuple[int | None, int | None, list[LedgerSource]]] = []
    pending: list[LedgerSource] = []
    lower: int | None = None
    for source in sources:
        old = indexed.get(source.source_key)
        if (
            old is None
            or not source.rows_digest
            or old.rows_digest != source.rows_digest
            or len(old.ids) != len(source.starts) - 1
        ):
            pending.append(source)
            continue
        if lower is not None and old.first <= lower:
            return None  # unchanged sources in another order
        if pending:
            runs.append((lower, old.first, pending))
            pending = []
        lower = old.last
    if pending:
        runs.append((lower, None, pending))
    leaving = [*gone_keys, *(s.source_key for _, _, run in runs for s in run)]
    old_rows = _old_rows(con, [i for key in leaving if key in indexed for i in indexed[key].ids if i])
    if old_rows is None:
        return None
    by_hash = {row.line_hash: row for row in old_rows}
    if len(by_hash) != len(old_rows):
        return None  # two rows of one line
    kept: set[int] = set()
    done = Plan([], [], [], [], gone_keys)
    for low, high, run in runs:
        lines = [_lines(ledger, source) for source in run]
        at, step = _spacing(low, high, sum(map(len, lines)))
        if step < 1:
            return None  # no room between the neighbours: numbered afresh
        previous = low  # kept rows keep their order, inside the window
        for source, found in zip(run, lines, strict=True):
            positions: list[int] = []
            ids: list[int] = []
            for line in found:
                at += step
                digest = line_hash(line)
                positions.append(at)
                row = by_hash.get(digest)
                if row is None:
                    ids.append(0)
                    done.fresh.append((line, digest, at))
                    continue
                if (
                    row.row_id in kept
                    or (previous is not None and row.position <= previous)
                    or (high is not None and row.position >= high)
                ):
                    return None  # a line twice, or one that left its place
                kept.add(row.row_id)
                previous = row.position
                ids.append(row.row_id)
                if row.position != at:
                    done.moved.append((at, row.row_id))
            done.sources.append((source, positions, ids))
    done.gone = [row.row_id for row in old_rows if row.row_id not in kept]
    return done


def _spacing(low: int | None, high: int | None, count: int) -> tuple[int, int]:
    """Where to number ``count`` lines between the positions ``low`` and ``high`` (None: no
    bound): the position before the first, and the step."""
    if low is None and high is None:
        return 0, GAP
    if low is None:
        assert high is not None
        return high - GAP * (count + 1), GAP
    if high is None:
        return low, GAP
    return low, (high - low) // (count + 1)


def _lines(ledger: IO[bytes], source: LedgerSource) -> list[bytes]:
    starts = source.starts
    data = os.pread(ledger.fileno(), starts[-1] - starts[0], starts[0])
    base = starts[0]
    return [data[a - base : b - base] for a, b in pairwise(starts)]


def _old_rows(con: sqlite3.Connection, ids: Sequence[int]) -> list[_Old] | None:
    from kbtools.review.cluster_index import select_in

    out = [_Old(*row) for row in select_in(con, "SELECT id, line_hash, position FROM candidate WHERE id IN", ids)]
    return out if len(out) == len(ids) else None  # a row the table does not hold: not in step
