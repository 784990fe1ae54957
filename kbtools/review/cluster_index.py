"""The near-duplicate clusters in the search index, kept in step one run at a time.

The index holds, beside each candidate's cluster, what placing a later candidate needs
(:mod:`kbtools.review.clusters`): the candidate's role (leader, member, alone, or not placed
yet), the count table of shingles and the changes since it was written (blobs in ``meta``),
and each leader's posting keys (``cluster_posting``). An update that
adds candidates places only them, and the members of a leader that left, in ledger order,
against the leaders already there; candidates that stay keep their cluster. The clusters are
computed from scratch (:func:`rebuild`) when that state is missing or was made with other
settings, when the surviving candidates changed order, and once the candidates placed one
run at a time since the last computation from scratch outnumber half the candidates then.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from kbtools.review import clusters as algo

FRESH, ALONE, LEAD, MEMBER = 0, 1, 2, 3  # candidate.role: not placed yet, in no cluster, leads one, joined one
STATE_KEY, COUNTS_KEY, CHANGES_KEY = "clusters", "cluster_counts", "cluster_count_changes"  # in meta
_MERGE_AT = 1 << 16  # count changes kept apart before they are folded into the stored table
_CHUNK = 500


def _settings() -> str:
    """Everything the stored state depends on: another value means it is computed anew."""
    names = ("THRESHOLD", "MIN_FEATURES", "SKETCH", "VOTERS", "CHECKED", "LATER_KEYS", "COMMON_SHARE", "MIN_COMMON")
    return json.dumps({"state": 1, **{name: getattr(algo, name) for name in names}}, sort_keys=True)


@dataclass(frozen=True)
class Departed:
    """A candidate row about to be deleted, as the clusters knew it."""

    row_id: int
    candidate_id: str
    decision: str
    role: int
    cluster_id: str
    features: bytes


def departing(con: sqlite3.Connection, ids: Sequence[int]) -> list[Departed]:
    """The rows ``ids`` as the clusters need to forget them (call before deleting them)."""
    sql = (
        "SELECT c.id, c.candidate_id, c.decision, c.role, c.cluster_id, f.features FROM candidate c"
        " JOIN candidate_features f ON f.id = c.id WHERE c.id IN"
    )
    return [Departed(*row) for row in select_in(con, sql, ids)]


def select_in(
    con: sqlite3.Connection, sql: str, values: Sequence[object], args: Sequence[object] = ()
) -> Iterator[tuple[Any, ...]]:
    """The rows of ``sql``, which ends with ``IN`` (its other ``?`` given ``args``), for each
    of ``values``: a chunk of them at a time, within SQLite's limit on parameters."""
    for start in range(0, len(values), _CHUNK):
        chunk = list(values[start : start + _CHUNK])
        yield from con.execute(f"{sql} ({','.join('?' * len(chunk))})", [*args, *chunk])


def _chunks(ids: Sequence[int]) -> Iterator[list[int]]:
    for start in range(0, len(ids), _CHUNK):
        yield list(ids[start : start + _CHUNK])


@dataclass
class _Row:
    row_id: int
    candidate_id: str
    session_key: str
    position: int
    decision: str
    role: int
    cluster_id: str
    cluster_size: int
    was: tuple[int, str, int] = field(init=False)  # role, cluster id and size as stored

    def __post_init__(self) -> None:
        self.was = (self.role, self.cluster_id, self.cluster_size)


_ROW_COLUMNS = "id, candidate_id, session_key, position, decision, role, cluster_id, cluster_size"


def _rows(con: sqlite3.Connection, where: str = "1") -> list[_Row]:
    return [_Row(*row) for row in con.execute(f"SELECT {_ROW_COLUMNS} FROM candidate WHERE {where}")]


def _rows_of(con: sqlite3.Connection, where: str, args: Sequence[object], values: Sequence[object]) -> list[_Row]:
    """The rows where ``where`` (its ``?`` given ``args``) and the column it ends with is one of ``values``."""
    return [
        _Row(*row) for row in select_in(con, f"SELECT {_ROW_COLUMNS} FROM candidate WHERE {where} IN", values, args)
    ]


def recluster(con: sqlite3.Connection, departed: Sequence[Departed], *, reordered: bool) -> None:
    """Bring the clusters in step after rows were added (role :data:`FRESH`) and ``departed``
    deleted, inside the caller's transaction: one run at a time if the stored state allows,
    else from scratch."""
    state = _state(con)
    if state is None or reordered:
        rebuild(con)
        return
    try:
        if _extend(con, state, departed):
            return
    except (algo.StaleTable, OverflowError, IndexError, ValueError, zlib.error):  # counts that do not add up
        pass
    rebuild(con)


def rebuild(con: sqlite3.Connection) -> None:
    """The clusters of the whole ledger from scratch, and the state to extend them later."""
    rows = _rows(con)

    def members() -> Iterator[algo.Member]:
        found = con.execute(
            "SELECT c.candidate_id, c.session_key, f.features FROM candidate c JOIN candidate_features f ON f.id = c.id"
            " WHERE c.decision != 'duplicate' ORDER BY c.position"  # an exact duplicate is marked, not clustered
        )
        for cid, session, packed in found:
            yield algo.Member(cid, session, [], packed)

    done = algo.cluster(members)
    assigned = done.assigned()
    role = {cid: LEAD for cid in done.leads} | {cid: MEMBER for cid in done.joined}
    for row in rows:
        row.role = role.get(row.candidate_id, ALONE)
    _write_rows(con, rows, {row.candidate_id: assigned.get(row.candidate_id, ("", 1)) for row in rows})
    row_id = {row.candidate_id: row.row_id for row in rows}
    con.execute("DELETE FROM cluster_posting")
    con.execute("DROP INDEX IF EXISTS cluster_posting_hash")  # the rows first, then the index: several times faster
    con.executemany(
        "INSERT INTO cluster_posting(hash, lead) VALUES(?, ?)",
        ((h, row_id[cid]) for cid, keys in done.leads.items() for h in keys),
    )
    con.execute("CREATE INDEX cluster_posting_hash ON cluster_posting(hash, lead)")
    total = done.table.total
    _set_state(
        con, {"settings": _settings(), "total": total, "built": total, "since": 0, **_write_table(con, done.table)}
    )


def _extend(con: sqlite3.Connection, state: dict[str, int], departed: Sequence[Departed]) -> bool:
    """Place the new candidates, and the members of leaders that left; False if the clusters
    are due to be computed from scratch instead. Reads and writes only the rows placed and
    those of the clusters they join or leave, not the whole table."""
    gone_leads = {d.candidate_id for d in departed if d.role == LEAD}
    # One pass over the rows' roles and clusters (what _extend writes is only written at the
    # end): the rows to place, every leader's position (so that votes are counted without
    # reading the rows they name) and each cluster's rows; the rows needed whole are then read
    # by id.
    position_of: dict[int, int] = {}
    in_cluster: dict[str, list[int]] = {}
    to_place: list[int] = []
    for row_id, role, cluster_id, position in con.execute("SELECT id, role, cluster_id, position FROM candidate"):
        if role == LEAD:
            position_of[row_id] = position
        elif role == FRESH or (role == MEMBER and cluster_id in gone_leads):
            to_place.append(row_id)
        if cluster_id:
            in_cluster.setdefault(cluster_id, []).append(row_id)
    batch = _rows_of(con, "id", [], to_place)
    if state["since"] + len(batch) > state["built"] // 2:
        return False
    found = _read_table(con, state)
    if found is None:
        return False
    table, stored_changes = found
    changes: Counter[int] = Counter(stored_changes)
    for d in departed:
        if d.role != FRESH and d.decision != "duplicate":
            table.count(algo.unpack(d.features), -1, changes)
    features = _features(con, [row.row_id for row in batch])
    for row in batch:
        if row.role == FRESH and row.decision != "duplicate":
            table.count(features[row.row_id], 1, changes)
        row.role = FRESH
    # The postings of leaders that left go first: a row inserted since may have one's id.
    for chunk in _chunks([d.row_id for d in departed if d.role == LEAD]):
        con.execute(f"DELETE FROM cluster_posting WHERE lead IN ({','.join('?' * len(chunk))})", chunk)
    # A leader's id and session are read when it is compared.
    lead_at = {position: row_id for row_id, position in position_of.items()}
    placed = {row.row_id: row for row in batch}
    leads: dict[int, algo.Lead] = {}

    def posted(voters: list[int]) -> dict[int, int]:
        """Leader position → votes from the postings of the leaders there."""
        if not voters:
            return {}
        marks = ",".join("?" * len(voters))
        found = con.execute(f"SELECT lead, COUNT(*) FROM cluster_posting WHERE hash IN ({marks}) GROUP BY lead", voters)
        return {position_of[row_id]: count for row_id, count in found if row_id in position_of}

    def lead(position: int) -> algo.Lead:
        row_id = lead_at[position]
        if row_id not in leads:
            row = placed.get(row_id)
            cid, session = (
                (row.candidate_id, row.session_key)
                if row is not None
                else con.execute("SELECT candidate_id, session_key FROM candidate WHERE id = ?", (row_id,)).fetchone()
            )
            feats = features.get(row_id) or _features(con, [row_id])[row_id]
            leads[row_id] = table.lead(cid, session, feats)
        return leads[row_id]

    for row in sorted(batch, key=lambda r: r.position):
        view = table.view(features[row.row_id]) if row.decision != "duplicate" else None
        leader = None if view is None else algo.place(view, row.session_key, posted, lead)
        if view is None:
            row.role, row.cluster_id = ALONE, ""
        elif leader is not None:
            row.role, row.cluster_id = MEMBER, leader.candidate_id
        else:
            row.role, row.cluster_id = LEAD, ""
            position_of[row.row_id], lead_at[row.position] = row.position, row.row_id
            con.executemany(
                "INSERT INTO cluster_posting(hash, lead) VALUES(?, ?)", ((h, row.row_id) for h in table.keys(view))
            )
    # The clusters whose size changed: those joined, and those a member left (not those whose
    # leader left: their members were all placed again).
    touched = {row.cluster_id for row in batch if row.role == MEMBER}
    touched |= {d.cluster_id for d in departed if d.role == MEMBER and d.cluster_id not in gone_leads}
    touched.discard("")
    rows = {
        row.row_id: row for row in _rows_of(con, "id", [], sorted({i for c in touched for i in in_cluster.get(c, ())}))
    }
    rows.update((row.row_id, row) for row in _rows_of(con, "candidate_id", [], sorted(touched)))
    rows.update((row.row_id, row) for row in batch)  # as placed, not as stored
    _write_rows(con, list(rows.values()), _cluster_sizes(rows.values()))
    layout = _write_changes(con, table, {slot: n for slot, n in changes.items() if n})
    _set_state(con, {**state, **layout, "total": table.total, "since": state["since"] + len(batch)})
    return True


def _cluster_sizes(rows: Iterable[_Row]) -> dict[str, tuple[str, int]]:
    """Candidate id → (cluster id, cluster size) of each row, from the roles of ``rows``: every
    row of the clusters they are in (members and leaders alike)."""
    rows = list(rows)
    sizes = Counter(row.cluster_id for row in rows if row.role == MEMBER)
    wanted = {}
    for row in rows:
        if row.role == MEMBER:
            wanted[row.candidate_id] = (row.cluster_id, sizes[row.cluster_id] + 1)
        elif row.role == LEAD and sizes[row.candidate_id]:
            wanted[row.candidate_id] = (row.candidate_id, sizes[row.candidate_id] + 1)
        else:
            wanted[row.candidate_id] = ("", 1)
    return wanted


def _features(con: sqlite3.Connection, ids: Sequence[int]) -> dict[int, array[int]]:
    sql = "SELECT id, features FROM candidate_features WHERE id IN"
    return {row_id: algo.unpack(packed) for row_id, packed in select_in(con, sql, ids)}


def _write_rows(con: sqlite3.Connection, rows: Sequence[_Row], wanted: dict[str, tuple[str, int]]) -> None:
    """Write each row's role and cluster where they changed."""
    con.executemany(
        "UPDATE candidate SET role = ?, cluster_id = ?, cluster_size = ? WHERE id = ?",
        [
            (row.role, *wanted[row.candidate_id], row.row_id)
            for row in rows
            if (row.role, *wanted[row.candidate_id]) != row.was
        ],
    )


# --------------------------------------------------------------------------- the stored state


def _state(con: sqlite3.Connection) -> dict[str, int] | None:
    found = con.execute("SELECT value FROM meta WHERE key = ?", (STATE_KEY,)).fetchone()
    try:
        state = json.loads(found[0]) if found else None
    except ValueError:
        return None
    if not isinstance(state, dict) or state.get("settings") != _settings():
        return None
    if not all(isinstance(state.get(key), int) for key in ("total", "built", "since", "slots", "small")):
        return None
    return state


def _set_state(con: sqlite3.Connection, state: dict[str, object]) -> None:
    con.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", (STATE_KEY, json.dumps(state, sort_keys=True)))


def _blob(con: sqlite3.Connection, key: str) -> bytes | None:
    found = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return found[0] if found and isinstance(found[0], bytes) else None


def _set_blob(con: sqlite3.Connection, key: str, data: bytes) -> None:
    con.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", (key, data))


def _read_table(con: sqlite3.Connection, state: dict[str, int]) -> tuple[algo.Table, dict[int, int]] | None:
    """The stored count table with the changes since it was written folded in, and those
    changes; None if there is none, or it does not add up."""
    stored, changed = _blob(con, COUNTS_KEY), _blob(con, CHANGES_KEY)
    if stored is None or changed is None:
        return None
    pairs = array("q")
    pairs.frombytes(zlib.decompress(changed))
    changes = dict(zip(pairs[::2], pairs[1::2], strict=True))
    slots, used = state["slots"], state.get("sparse", 0)
    if not isinstance(used, int) or used < 0:
        return None
    if not used:
        counts = array("I")
        counts.frombytes(zlib.decompress(stored) if state["small"] else stored)
        if len(counts) != slots:
            return None
        for slot, n in changes.items():
            counts[slot] += n
        return algo.Table(counts, slots, state["total"]), changes
    # Only the slots in use (sorted), then their counts: every other slot holds 0.
    at, values = array("q"), array("I")
    if len(stored) != used * (at.itemsize + values.itemsize):
        return None
    at.frombytes(stored[: used * at.itemsize])
    values.frombytes(stored[used * at.itemsize :])
    if at[0] < 0 or at[-1] >= slots:
        return None
    sparse: defaultdict[int, int] = defaultdict(int, zip(at, values, strict=True))
    for slot, n in changes.items():
        if not 0 <= slot < slots or sparse[slot] + n < 0:
            return None  # what the dense table refuses (IndexError, OverflowError)
        sparse[slot] += n
    return algo.Table(sparse, slots, state["total"]), changes


def _write_table(con: sqlite3.Connection, table: algo.Table) -> dict[str, int]:
    """The count table stored (compressed if it is a small ledger's: mostly zeros; a large
    one's is read every run, faster as it is, or only its slots in use when they are few:
    :data:`kbtools.review.clusters.SPARSE_SHARE`); returns what the state says of it."""
    small = table.slots < algo.slots_for(algo.SMALL_LEDGER)
    counts, used = table.counts, None
    if not small:
        if isinstance(counts, dict):
            used = sorted(slot for slot, n in counts.items() if n)
        elif table.used is not None:
            used = [slot for slot in table.used if counts[slot]]
    if used is not None and 0 < len(used) <= table.slots // algo.SPARSE_SHARE:
        data = array("q", used).tobytes() + array("I", [counts[slot] for slot in used]).tobytes()
    else:
        if isinstance(counts, dict):
            dense = array("I", bytes(4 * table.slots))
            for slot, n in counts.items():
                dense[slot] = n
            counts = dense
        data = counts.tobytes()
        data, used = zlib.compress(data, 1) if small else data, []
    _set_blob(con, COUNTS_KEY, data)
    _set_blob(con, CHANGES_KEY, zlib.compress(b""))
    return {"slots": table.slots, "small": int(small), "sparse": len(used)}


def _write_changes(con: sqlite3.Connection, table: algo.Table, changes: dict[int, int]) -> dict[str, int]:
    """Keep the count changes since the table was written apart from it (writing its megabytes
    again each run would cost more than the placing), until there are many; returns what the
    state says of the table if it was written again."""
    if len(changes) > _MERGE_AT:
        return _write_table(con, table)
    _set_blob(con, CHANGES_KEY, zlib.compress(array("q", chain.from_iterable(changes.items())).tobytes(), 1))
    return {}
