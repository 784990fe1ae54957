"""The clusters kept in the search index one run at a time, on real ledgers: what a run adds is
placed against the clusters already there, what stays keeps its cluster, and a rebuild (the
index deleted, other settings) computes them from scratch over the whole ledger.

The ledgers come from `kb ingest --write` over sessions in OMP's on-disk format: a dozen
unrelated reports (each names its own made-up module, flag and command, so no two share more
than the way they are written), and the repeated fixes of tests/review/test_clusters.py."""

from __future__ import annotations

import json
import random
import sqlite3
import zlib
from array import array
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from kbtools.review import cluster_index
from kbtools.review import clusters as algo
from kbtools.review.clusters import Member, cluster
from kbtools.review.index import _indexed, _stamp, index_path
from tests.review.conftest import POOL_ANSWER, POOL_PROMPT, ReviewKb, turn
from tests.review.test_clusters import POOL_AGAIN, WAL_AGAIN
from tests.testing.sessions import Msg, write_codex_session, write_omp_session

LATER = datetime(2026, 4, 2, 9, 0, tzinfo=UTC)


def _word(rng: random.Random) -> str:
    return "".join(rng.choice("bdfgklmnprstvz") + rng.choice("aeiou") for _ in range(rng.randint(3, 4)))


def unrelated(rng: random.Random) -> list[Msg]:
    """A report no other session repeats: its own module, option, command and error."""
    module, option, command, error, service = (_word(rng) for _ in range(5))
    return turn(
        f"The {service} build fails with {error.capitalize()}Error in {module}.py when {option} is set. "
        f"Why does the {module} import break, and how do we fix the error?",
        f"The root cause: {module} reads {option} before the {service} config loads. The fix: move the "
        f"{option} lookup into {module}.setup() and run {command} --check to verify; the error is gone.",
    )


def filler(review_kb: ReviewKb, count: int, seed: int) -> None:
    rng = random.Random(seed)
    for n in range(count):
        write_omp_session(
            review_kb.env.omp,
            unrelated(rng),
            session_id=f"s-filler-{seed}-{n}",
            cwd=f"/home/carol/p{seed}-{n}",
            started=LATER - timedelta(days=20 - n),
        )


def db(review_kb: ReviewKb) -> sqlite3.Connection:
    return sqlite3.connect(index_path(review_kb.env.out))


def stored(review_kb: ReviewKb) -> dict[str, tuple[str, int, int]]:
    """Candidate id → (cluster id, cluster size, role) as the index holds them."""
    with db(review_kb) as con:
        rows = con.execute("SELECT candidate_id, cluster_id, cluster_size, role FROM candidate").fetchall()
    return {cid: (cluster_id, size, role) for cid, cluster_id, size, role in rows}


def state(review_kb: ReviewKb) -> dict[str, Any]:
    with db(review_kb) as con:
        (value,) = con.execute("SELECT value FROM meta WHERE key = ?", (cluster_index.STATE_KEY,)).fetchone()
    found: dict[str, Any] = json.loads(value)
    return found


def assert_a_clustering(review_kb: ReviewKb) -> None:
    """Every candidate of the ledger is in exactly one cluster (its own, if alone); a cluster is
    named after its leader, which is in it, from a session none of its members is from, and
    its size is its count."""
    ledger = {r["candidate_id"]: r for r in review_kb.env.rows("candidates")}
    rows = stored(review_kb)
    assert sorted(rows) == sorted(ledger)
    members = Counter(cluster_id for cluster_id, _, _ in rows.values() if cluster_id)
    for cid, (cluster_id, size, role) in rows.items():
        assert role != cluster_index.FRESH
        if not cluster_id:
            assert size == 1 and role in (cluster_index.ALONE, cluster_index.LEAD)
            continue
        assert size == members[cluster_id] >= 2
        leader = rows[cluster_id]
        assert leader[0] == cluster_id and leader[2] == cluster_index.LEAD
        if cid != cluster_id:
            assert role == cluster_index.MEMBER
            assert ledger[cid]["session_key"] != ledger[cluster_id]["session_key"]
            assert ledger[cid]["decision"] != "duplicate"


def from_scratch(review_kb: ReviewKb) -> dict[str, tuple[str, int]]:
    """The clusters of the ledger as it is, computed from its rows alone (not from the index)."""
    rows = [r for r in review_kb.env.rows("candidates") if r["decision"] != "duplicate"]

    def members() -> list[Member]:
        return [Member(str(r["candidate_id"]), str(r["session_key"]), [], _indexed(r)[1]) for r in rows]

    return cluster(members).assigned()


def clustered(review_kb: ReviewKb) -> dict[str, tuple[str, int]]:
    return {cid: (cluster_id, size) for cid, (cluster_id, size, _) in stored(review_kb).items() if cluster_id}


def groups(assigned: dict[str, tuple[str, int]]) -> set[frozenset[str]]:
    by_cluster: dict[str, set[str]] = {}
    for cid, (cluster_id, _) in assigned.items():
        by_cluster.setdefault(cluster_id, set()).add(cid)
    return {frozenset(members) for members in by_cluster.values()}


def grown(review_kb: ReviewKb) -> None:
    """The dozen unrelated sessions, ingested: clusters computed from scratch over 15 candidates."""
    filler(review_kb, 12, seed=1)
    review_kb.ingest()
    assert state(review_kb)["since"] == 0 and state(review_kb)["built"] == 15


def pool_session_grows(review_kb: ReviewKb) -> None:
    """The Codex session of the pool report grows by a second turn."""
    write_codex_session(
        review_kb.env.codex,
        [*turn(POOL_PROMPT, POOL_ANSWER), *unrelated(random.Random(7))],
        session_id="0199pool",
        cwd="/home/alice/api",
        started=datetime(2026, 3, 5, 9, 0, tzinfo=UTC),
    )


def test_a_later_session_that_repeats_a_fix_joins_its_cluster(review_kb: ReviewKb) -> None:
    grown(review_kb)
    write_omp_session(review_kb.env.omp, POOL_AGAIN, session_id="s-pool-2", cwd="/home/bob/api", started=LATER)
    review_kb.ingest()
    assert state(review_kb)["since"] == 1  # placed, not computed from scratch
    pool = review_kb.candidate("psycopg2.OperationalError: too many")["candidate_id"]
    again = review_kb.candidate("Friday")["candidate_id"]
    assert clustered(review_kb) == {pool: (pool, 2), again: (pool, 2)}  # named after the one there first
    # The same grouping as the whole ledger computed from scratch, where the later session comes
    # first in ledger order (OMP's sessions before Codex's) and names the cluster.
    assert groups(clustered(review_kb)) == groups(from_scratch(review_kb))
    assert from_scratch(review_kb)[pool] == (again, 2)
    assert_a_clustering(review_kb)


def test_a_grown_leader_is_replaced_and_its_members_follow(review_kb: ReviewKb) -> None:
    """A session that grows gets new candidate ids: its leader leaves, its new version is
    placed, and the members of the old one are placed again beside it."""
    grown(review_kb)
    write_omp_session(review_kb.env.omp, WAL_AGAIN, session_id="s-wal-2", cwd="/home/bob/export", started=LATER)
    write_omp_session(review_kb.env.omp, POOL_AGAIN, session_id="s-pool-2", cwd="/home/bob/api", started=LATER)
    review_kb.ingest()
    before = clustered(review_kb)
    pool = review_kb.candidate("psycopg2.OperationalError: too many")["candidate_id"]
    assert before[pool] == (pool, 2)
    # The pool report came from Codex; it grows there by a second turn.
    pool_session_grows(review_kb)
    review_kb.ingest()
    assert state(review_kb)["since"] > 0
    after = clustered(review_kb)
    new_pool = review_kb.candidate("psycopg2.OperationalError: too many")["candidate_id"]
    again = review_kb.candidate("Friday")["candidate_id"]
    assert new_pool != pool and pool not in stored(review_kb)
    # Placed again in ledger order, where the repeat (an OMP session) comes first: it leads now.
    assert after[new_pool] == after[again] == (again, 2)
    assert pool not in {cluster_id for cluster_id, _ in after.values()}
    assert_a_clustering(review_kb)
    with db(review_kb) as con:  # the postings of the leader that left went with it
        posted = {lead for (lead,) in con.execute("SELECT DISTINCT lead FROM cluster_posting")}
        leads = {i for (i,) in con.execute("SELECT id FROM candidate WHERE role = ?", (cluster_index.LEAD,))}
    assert posted == leads


def test_a_rerun_with_nothing_new_changes_nothing(review_kb: ReviewKb) -> None:
    grown(review_kb)
    write_omp_session(review_kb.env.omp, POOL_AGAIN, session_id="s-pool-2", cwd="/home/bob/api", started=LATER)
    review_kb.ingest()
    with db(review_kb) as con:
        tables = ("candidate", "candidate_features", "cluster_posting", "meta")
        before = {t: con.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in tables}
    review_kb.ingest()
    assert review_kb.kb("candidates", "list").code == 0
    with db(review_kb) as con:
        after = {t: con.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in tables}
    changed = [t for t in tables if before[t] != after[t]]
    assert changed in ([], ["meta"])  # the run id and the ledger's stamp, nothing of the clusters
    assert [r for r in before["meta"] if r[0] == cluster_index.STATE_KEY] == [
        r for r in after["meta"] if r[0] == cluster_index.STATE_KEY
    ]


def test_a_deleted_index_is_rebuilt_with_the_clusters_of_the_whole_ledger(review_kb: ReviewKb) -> None:
    grown(review_kb)
    for n, repeat in enumerate((POOL_AGAIN, WAL_AGAIN)):
        write_omp_session(review_kb.env.omp, repeat, session_id=f"s-again-{n}", cwd="/home/bob/x", started=LATER)
        filler(review_kb, 1, seed=10 + n)
        review_kb.ingest()
    assert state(review_kb)["since"] == 4
    assert_a_clustering(review_kb)
    index_path(review_kb.env.out).unlink()
    assert review_kb.kb("candidates", "list").code == 0
    assert state(review_kb)["since"] == 0 and state(review_kb)["built"] == 19
    assert_a_clustering(review_kb)
    assert clustered(review_kb) == from_scratch(review_kb)


def test_clusters_made_with_other_settings_are_computed_anew(review_kb: ReviewKb) -> None:
    grown(review_kb)
    con = db(review_kb)
    with con:
        con.execute("UPDATE meta SET value = ? WHERE key = ?", (json.dumps({"settings": "older"}), "clusters"))
    con.close()
    _stamp(index_path(review_kb.env.out), review_kb.env.out)  # as kb would have written it
    write_omp_session(review_kb.env.omp, POOL_AGAIN, session_id="s-pool-2", cwd="/home/bob/api", started=LATER)
    review_kb.ingest()
    assert state(review_kb)["since"] == 0 and state(review_kb)["built"] == 16
    assert_a_clustering(review_kb)


def test_placing_one_run_at_a_time_is_bounded(review_kb: ReviewKb) -> None:
    """Once more candidates were placed one run at a time than half of those the clusters were
    last computed from scratch over, they are computed from scratch again."""
    grown(review_kb)
    placed = 0
    for seed in range(20, 30):
        filler(review_kb, 1, seed=seed)
        review_kb.ingest()
        placed += 1
        if placed > 15 // 2:
            break
        assert state(review_kb)["since"] == placed
    assert state(review_kb)["since"] == 0 and state(review_kb)["built"] == 15 + placed
    assert_a_clustering(review_kb)


def test_counts_that_do_not_add_up_are_computed_anew(review_kb: ReviewKb) -> None:
    """A count table that says fewer candidates hold a shingle than are leaving with it was not
    written with these candidates: the clusters are computed from scratch, not patched."""
    grown(review_kb)
    con = db(review_kb)
    with con:
        (stored,) = con.execute("SELECT value FROM meta WHERE key = ?", (cluster_index.COUNTS_KEY,)).fetchone()
        zeros = zlib.compress(bytes(len(zlib.decompress(stored))))
        con.execute("UPDATE meta SET value = ? WHERE key = ?", (zeros, cluster_index.COUNTS_KEY))
    con.close()
    _stamp(index_path(review_kb.env.out), review_kb.env.out)
    write_codex_session(  # the pool report grows: its candidate leaves, counted out of the zeros
        review_kb.env.codex,
        [*turn(POOL_PROMPT, POOL_ANSWER), *unrelated(random.Random(7))],
        session_id="0199pool",
        cwd="/home/alice/api",
        started=datetime(2026, 3, 5, 9, 0, tzinfo=UTC),
    )
    review_kb.ingest()
    assert state(review_kb)["since"] == 0 and state(review_kb)["built"] == 16
    assert_a_clustering(review_kb)
    assert clustered(review_kb) == from_scratch(review_kb)


def test_a_ledger_rewritten_in_another_order_is_clustered_anew(review_kb: ReviewKb) -> None:
    """Placing one run at a time assumes the candidates that stay keep their order; a ledger
    rewritten otherwise (by hand: reversed, one line gone) has its clusters computed anew."""
    grown(review_kb)
    write_omp_session(review_kb.env.omp, POOL_AGAIN, session_id="s-pool-2", cwd="/home/bob/api", started=LATER)
    review_kb.ingest()
    assert state(review_kb)["since"] == 1
    rows = review_kb.env.rows("candidates")
    review_kb.env.write_rows("candidates", list(reversed(rows))[1:])
    assert review_kb.kb("candidates", "list").code == 0
    assert state(review_kb)["since"] == 0 and state(review_kb)["built"] == len(rows) - 1
    assert_a_clustering(review_kb)
    assert clustered(review_kb) == from_scratch(review_kb)


def _table_db() -> sqlite3.Connection:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value NOT NULL)")
    return con


def _large_table(rng: random.Random, used: int) -> algo.Table:
    slots = algo.slots_for(algo.SMALL_LEDGER)
    counts = array("I", bytes(4 * slots))
    for slot in rng.sample(range(slots), used):
        counts[slot] = rng.randrange(1, 300)
    return algo.Table(counts, slots, 5000, sorted(s for s in range(slots) if counts[s]) if used < 99_999 else None)


def test_a_large_table_with_few_slots_in_use_is_stored_as_them_and_reads_back_the_same() -> None:
    """A table of a large ledger whose slots in use are few is stored as those slots; read back
    (with the changes since folded in), it gives every count, view and leader the dense table
    gives."""
    rng = random.Random(5)
    table = _large_table(rng, 3000)
    con = _table_db()
    layout = cluster_index._write_table(con, table)
    assert layout["sparse"] == 3000 and len(cluster_index._blob(con, cluster_index.COUNTS_KEY) or b"") == 3000 * 12
    used = list(table.used or [])
    changes = {used[0]: 2, used[1]: -1, 7: 1}
    cluster_index._write_changes(con, table, changes)
    for slot, n in changes.items():
        table.counts[slot] += n
    found = cluster_index._read_table(con, {**layout, "total": table.total})
    assert found is not None
    sparse, stored_changes = found
    assert stored_changes == changes and isinstance(sparse.counts, dict)
    assert {s: n for s, n in sparse.counts.items() if n} == {s: table.counts[s] for s in [*used, 7] if table.counts[s]}
    hashes = [rng.choice(used) + rng.randrange(-3, 4) * table.slots for _ in range(4000)]
    for _ in range(50):
        feats = sorted(set(rng.sample(hashes, 60)))
        want, got = table.view(feats), sparse.view(feats)
        assert (want is None) == (got is None)
        if want is not None and got is not None:
            assert (got.kept, got.shared, got.voters, sparse.keys(got)) == (
                want.kept,
                want.shared,
                want.voters,
                table.keys(want),
            )
        assert sparse.lead("c", "s", feats) == table.lead("c", "s", feats)
    # Written again from its dict (once the changes are many), it is the same table.
    again = cluster_index._write_table(con, sparse)
    assert again == {**layout, "sparse": 3001}
    reread = cluster_index._read_table(con, {**again, "total": table.total})
    assert reread is not None and dict(reread[0].counts) == {s: n for s, n in sparse.counts.items() if n}


def test_a_table_with_many_slots_in_use_or_changes_that_do_not_fit_is_not_read_sparse() -> None:
    rng = random.Random(6)
    dense = _large_table(rng, algo.slots_for(algo.SMALL_LEDGER) // algo.SPARSE_SHARE + 1)
    con = _table_db()
    dense.used = sorted(s for s in range(dense.slots) if dense.counts[s])
    layout = cluster_index._write_table(con, dense)
    assert layout["sparse"] == 0 and len(cluster_index._blob(con, cluster_index.COUNTS_KEY) or b"") == 4 * dense.slots
    found = cluster_index._read_table(con, {**layout, "total": dense.total})
    assert found is not None and found[0].counts == dense.counts
    sparse = _large_table(rng, 100)
    layout = cluster_index._write_table(con, sparse)
    state = {**layout, "total": sparse.total}
    assert cluster_index._read_table(con, state) is not None
    for changes in ({sparse.slots: 1}, {-1: 1}, {next(iter(sparse.used or [])): -1000}):
        cluster_index._write_changes(con, sparse, changes)
        assert cluster_index._read_table(con, state) is None  # as the dense table: computed anew
    cluster_index._write_changes(con, sparse, {})
    assert cluster_index._read_table(con, {**state, "sparse": 99}) is None  # not the length stored
