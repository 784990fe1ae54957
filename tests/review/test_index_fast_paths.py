"""The search index's fast paths give what the slow ones do: msgspec's reading of a candidate
line (kbtools.review.rows.indexed_fields) skips exactly the lines kbtools.ingest.rows.decode
finds malformed and reads the same values; the clusters' view of a candidate is the one
heapq.nsmallest gave, by hashes or by numbers."""

from __future__ import annotations

import heapq
import json
import random
from array import array
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbtools.ingest.rows import CandidateRow, as_json, decode, dumps
from kbtools.review import clusters as algo
from kbtools.review.rows import INDEXED_FIELDS, indexed_fields

BASE = as_json(
    CandidateRow(
        candidate_id="c" * 64,
        source_key="s" * 64,
        text="The build fails: error TS2307.",
        fingerprint="f" * 64,
        topic="typescript / build",
        user_goal="Fix the build",
        error_messages=["error TS2307"],
        tool="codex",
        decision="keep",
    )
)
FIELD_NAMES = sorted(BASE)
TEXT = st.text(st.characters(codec=None), max_size=12)  # lone surrogates too
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(1 << 70), max_value=1 << 70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)


def expected(line: bytes) -> dict[str, Any] | None:
    row = decode(line, "candidates")
    return None if row is None else {name: row[name] for name in INDEXED_FIELDS if name in row}


def same_values(a: object, b: object) -> bool:
    """Equal, NaN included (json gives a NaN where the line has one)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) and type(a) is type(b)


@settings(max_examples=600, deadline=None)
@given(
    changes=st.lists(st.tuples(st.sampled_from([*FIELD_NAMES, "extra"]), JSON_VALUES), max_size=3),
    dropped=st.lists(st.sampled_from(FIELD_NAMES), max_size=2),
    ascii_only=st.booleans(),
    cut=st.none() | st.integers(min_value=0, max_value=400),
    junk=st.binary(max_size=3),
)
def test_msgspec_reads_a_candidate_line_as_decode_does(
    changes: list[tuple[str, object]], dropped: list[str], ascii_only: bool, cut: int | None, junk: bytes
) -> None:
    obj: dict[str, object] = dict(BASE)
    for name, value in changes:
        obj[name] = value
    for name in dropped:
        obj.pop(name, None)
    text = json.dumps(obj, ensure_ascii=ascii_only, allow_nan=True)
    line = text.encode("utf-8", "surrogatepass")
    if cut is not None:
        line = line[:cut] + junk + line[cut:]
    want, got = expected(line), indexed_fields(line)
    assert (want is None) == (got is None)
    assert same_values(want, got)


def test_lines_msgspec_refuses_are_read_by_decode() -> None:
    good = dumps(BASE)
    lines = [
        good,
        good.replace(b'"confidence":0.0', b'"confidence":NaN'),  # json reads it; msgspec cannot
        good.replace(b'"topic":"typescript / build"', b'"topic":"\\ud800"'),  # a lone surrogate escape
        good.replace(b'"confidence":0.0', b'"confidence":1e400'),
        good.replace(b'"tool":"codex"', b'"tool":"codex","tool":1'),  # the last of two keys wins
        good.replace(b'"tool":"codex"', b'"tool":1,"tool":"codex"'),
        good.replace(b'"turn_index":0', b'"turn_index":true'),
        good.replace(b'"turn_index":0', b'"turn_index":1.0'),
        good.replace(b'"symptoms":[]', b'"symptoms":{}'),
        good.replace(b'"symptoms":[]', b'"symptoms":[' + b"[" * 600 + b"]" * 600 + b"]"),
        good.replace(b'"candidate_id":"' + b"c" * 64 + b'",', b""),
        b"\xef\xbb\xbf" + good,
        b"[" + good + b"]",
        good[:-5],
        b"",
    ]
    for line in lines:
        assert same_values(expected(line), indexed_fields(line)), line[:80]
    assert indexed_fields(lines[1]) is not None and indexed_fields(lines[6]) is None


def reference_view(table: algo.Table, feats: list[int]) -> tuple[list[int], frozenset[int], list[int]] | None:
    """Table.view as it was written with heapq.nsmallest."""
    counts, slots, cap = table.counts, table.slots, table.cap
    rated = [(count, h) for h in feats if (count := counts[h % slots]) <= cap]
    if len(rated) < algo.MIN_FEATURES:
        return None
    shared = [pair for pair in rated if pair[0] >= 2]
    voters = [h for _, h in heapq.nsmallest(algo.VOTERS, shared)]
    return [h for _, h in rated], frozenset(h for _, h in shared), voters


def reference_keys(table: algo.Table, kept: list[int], voters: list[int]) -> list[int]:
    counts, slots = table.counts, table.slots
    return sorted({*voters, *heapq.nsmallest(algo.LATER_KEYS, kept, key=lambda h: (counts[h % slots], h))})


@settings(max_examples=300, deadline=None)
@given(
    counts=st.lists(st.integers(min_value=0, max_value=12), min_size=1, max_size=64),
    total=st.integers(min_value=0, max_value=900),
    feats=st.sets(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1), max_size=80),
)
def test_a_candidates_view_is_the_one_heapq_gave(counts: list[int], total: int, feats: set[int]) -> None:
    table = algo.Table(array("I", counts), len(counts), total)
    ordered = sorted(feats)  # features are stored sorted
    want, got = reference_view(table, ordered), table.view(ordered)
    if want is None:
        assert got is None
        return
    assert got is not None
    kept, shared, voters = want
    assert sorted(got.kept) == sorted(kept) and got.shared == shared and got.voters == voters
    assert table.keys(got) == reference_keys(table, kept, voters)


@settings(max_examples=300, deadline=None)
@given(
    counts=st.lists(st.integers(min_value=0, max_value=12), min_size=1, max_size=64),
    total=st.integers(min_value=0, max_value=900),
    ledger=st.lists(
        st.sets(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1), max_size=40), min_size=1, max_size=6
    ),
)
def test_a_numbered_view_names_the_features_the_tables_view_gives(
    counts: list[int], total: int, ledger: list[set[int]]
) -> None:
    """The view of a candidate by its features' numbers is, each number read as its hash, the
    view by hashes, and a leader's posting keys are the same."""
    table = algo.Table(array("I", counts), len(counts), total)
    numbered = algo.Numbered(table, set().union(*ledger))
    for feats in ledger:
        want, got = table.view(sorted(feats)), numbered.view(feats)
        assert (want is None) == (got is None)
        if want is None or got is None:
            continue
        hashes = numbered._hashes
        assert [hashes[n] for n in got.kept] == want.kept
        assert {hashes[n] for n in got.shared} == want.shared and [hashes[n] for n in got.voters] == want.voters
        assert numbered.keys(got) == table.keys(want)


def _topical_ledger(rng: random.Random, size: int) -> list[algo.Member]:
    """Candidates of ``size`` sessions, each on one of a few hundred topics, packed."""
    vocabulary = [f"word{i}".encode() for i in range(400)]
    topics = [rng.sample(vocabulary, 30) for _ in range(300)]
    return [
        algo.Member(
            f"{i:064x}",
            f"session{i % 700}",
            [],
            algo.packed_features([*rng.sample(topics[rng.randrange(300)], 20), *rng.sample(vocabulary, 6)]),
        )
        for i in range(size)
    ]


def test_a_ledger_of_more_shingles_than_are_counted_at_once_is_clustered_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Counted in slots several times (the view by hashes) or all at once (by numbers), the
    clusters, posting keys and counts are the same."""
    members = _topical_ledger(random.Random(23), algo.SMALL_LEDGER + 300)
    at_once = algo.cluster(lambda: members)
    monkeypatch.setattr(algo, "_FLUSH_AT", 64)
    flushed = algo.cluster(lambda: members)
    assert at_once.joined and at_once.leads
    assert (at_once.joined, at_once.leads, at_once.table) == (flushed.joined, flushed.leads, flushed.table)


def test_a_ledger_whose_features_are_kept_is_clustered_as_one_read_three_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past SMALL_LEDGER, the members read once and kept with their packed features give the
    clusters the three reads gave."""
    members = _topical_ledger(random.Random(17), algo.SMALL_LEDGER + 500)
    reads: list[int] = []

    def read() -> list[algo.Member]:
        reads.append(1)
        return members

    kept = algo.cluster(read)
    assert len(reads) == 1
    monkeypatch.setattr(algo, "KEPT_BYTES", 0)
    reads.clear()
    again = algo.cluster(read)
    assert len(reads) == 3
    assert kept.joined and (kept.joined, kept.leads, kept.table) == (again.joined, again.leads, again.table)


@settings(max_examples=300, deadline=None)
@given(
    votes=st.dictionaries(st.integers(min_value=0, max_value=5000), st.integers(min_value=1, max_value=6), max_size=90)
)
def test_the_leaders_compared_are_the_most_voted_then_the_earliest(votes: dict[int, int]) -> None:
    sorted_pairs = sorted([(-count, position) for position, count in votes.items()])[: algo.CHECKED]
    assert algo._most_voted(votes) == sorted(position for _, position in sorted_pairs)


@settings(max_examples=200, deadline=None)
@given(words=st.lists(st.sampled_from([b"alpha", b"beta", b"gamma", b"delta", b"\xe8\xb7\xaf"]), max_size=40))
def test_the_shingle_set_is_the_union_of_the_window_hashes(words: list[bytes]) -> None:
    from kbtools.derived import shingles

    for builtin in (True, False):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(shingles, "BUILTIN_HASH", builtin)
            want = set(shingles.shingle_hashes(words, 1)) | set(shingles.shingle_hashes(words, 2))
            assert shingles.shingle_hash_set(words, (1, 2)) == want
