"""Near-duplicate clusters: candidates from different sessions that report the same error,
fix or decision, so that a reviewer reads one per cluster.

Exact duplicates (same fingerprint) are marked by ingest (``decision: duplicate``); a
cluster is looser. Two sessions rarely describe a fix in the same sentences, but
they name the same things: the error text, the module, the option, the command.
So a candidate's features are its *content words* (the derived filter's normal
form, :func:`kbtools.derived.normalise.tokens`, without stopwords and words of two
letters or fewer) shingled by the derived filter's shingler
(:func:`kbtools.derived.shingles.shingle_hash_set`) into 1- and 2-word shingles, and
two candidates are similar when the share of the smaller feature set found in the
other (containment, as the derived filter measures) reaches :data:`THRESHOLD`.

A shingle found in many candidates of the ledger (more than :data:`COMMON_SHARE` of them,
and more than :data:`MIN_COMMON`) says how this team's sessions are written, not what one
of them found ("the root cause", "run the tests", a project's recurring module names); it
is left out of every feature set, the way a search engine discounts frequent terms.

Measured on hand-written pairs (tests/review/test_clusters.py): the same fix told in
other words scores 0.26-0.30; different fixes in the same vocabulary (two Postgres
connection errors, two SQLite errors) 0.12 or less. On the bundled example sessions,
generated from templates that share much of their wording, 99 % of the pairs of
different sessions score under 0.18. The threshold sits between.

Clustering is leader-based: a candidate joins the cluster of the first leader from
another session it is similar to, else it leads a new one. :func:`cluster` takes a
whole ledger in ledger order (so its result is a function of the ledger alone);
:mod:`kbtools.review.cluster_index` places the candidates a run adds with
:func:`place` against the leaders already there. A cluster's id is its leader's
candidate id (as ``duplicate_of`` names the canonical twin), and one similar pair
never chains two unrelated clusters together. Feature sets are capped
at the :data:`SKETCH` smallest hashes (a bottom-k sketch; exact for turn-sized
candidates). Which leaders a candidate is compared with is proposed by its rarest
shingles that another candidate shares (:data:`VOTERS` of them), so the cost per
candidate stays flat as the ledger grows.
"""

from __future__ import annotations

import heapq
import math
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from itertools import chain, islice, repeat
from operator import itemgetter

THRESHOLD = 0.2
MIN_FEATURES = 8  # fewer content shingles than this: too little to compare
SKETCH = 256
VOTERS = 24  # a candidate's rarest shared shingles, which propose the leaders to compare with
CHECKED = 8  # leaders compared exactly, the ones most proposed
LATER_KEYS = 24  # a leader's rarest shingles, shared or not, it is also posted under (see Table.keys)
COMMON_SHARE = 0.01
MIN_COMMON = 3
_DF_SLOTS = 1 << 22  # counts of shingle hashes modulo this (collisions only make a count higher)
_FLUSH_AT = 1 << 18  # distinct shingle hashes counted exactly before they go into their slots
SMALL_LEDGER = 2_000  # up to this many candidates, features are computed once and kept
KEPT_BYTES = 32 << 20  # packed features of a larger ledger kept between its passes, up to this much
SHINGLE_SIZES = (1, 2)
SPARSE_SHARE = 32  # a large table with at most this share (1/32) of its slots in use is stored as those
MIN_WORD = 3
_second = itemgetter(1)
PARAMS = {
    "threshold": THRESHOLD,
    "measure": "containment",
    "shingles": "content words, 1- and 2-word",
    "sketch": SKETCH,
    "common": f"in more than {COMMON_SHARE:.0%} of the candidates (and {MIN_COMMON}): left out",
}


@dataclass(frozen=True)
class Member:
    """What clustering needs of a candidate: its id, session and normalised words."""

    candidate_id: str
    session_key: str
    words: list[bytes]
    packed: bytes | None = None  # its features already computed, as :func:`packed_features` stores them

    def features(self) -> Collection[int]:
        return unpack(self.packed) if self.packed is not None else features(self.words)


@cache
def _stopwords() -> frozenset[bytes]:
    from kbtools.ingest.candidates import STOPWORDS

    return frozenset(w.encode() for w in STOPWORDS)


def features(words: Iterable[bytes]) -> frozenset[int]:
    """The content-word shingles of normalised words (bottom-k if there are many)."""
    return frozenset(_sorted_features(words))


def _sorted_features(words: Iterable[bytes]) -> list[int]:
    from kbtools.derived.shingles import shingle_hash_set

    stop = _stopwords()
    found = shingle_hash_set([w for w in words if len(w) >= MIN_WORD and w not in stop], SHINGLE_SIZES)
    return heapq.nsmallest(SKETCH, found) if len(found) > SKETCH else sorted(found)


def packed_features(words: Iterable[bytes]) -> bytes:
    """:func:`features` as bytes (signed 64-bit hashes, sorted), to be stored."""
    return array("q", _sorted_features(words)).tobytes()


def unpack(packed: bytes) -> array[int]:
    """Stored features (distinct, sorted), as an array: iterated, never looked up in."""
    found = array("q")
    found.frombytes(packed)
    return found


def containment(a: frozenset[int], b: frozenset[int]) -> float:
    smaller = min(len(a), len(b))
    return len(a & b) / smaller if smaller else 0.0


def slots_for(total: int) -> int:
    """The size of the count table for a ledger of ``total`` candidates (a small one for a small ledger)."""
    return 1 << max(10, (64 * total).bit_length()) if total < SMALL_LEDGER else _DF_SLOTS


class StaleTable(Exception):
    """The stored counts do not match the candidates they are said to count."""


@dataclass
class Table:
    """How many candidates have each shingle, counted per slot (hash modulo ``slots``;
    a collision only makes a count higher), and how many candidates were counted."""

    counts: array[int] | dict[int, int]  # or, read back from its used slots, a defaultdict(int) of them
    slots: int
    total: int
    used: list[int] | None = None  # the slots holding a count, when counted and few (see cluster)

    @property
    def cap(self) -> int:
        """Above this count a shingle is common: left out of every feature set."""
        return max(MIN_COMMON, math.ceil(COMMON_SHARE * self.total))

    def count(self, feats: Iterable[int], step: int, changes: Counter[int]) -> None:
        """Count one candidate in (``step`` 1) or out (-1), adding the change to ``changes``."""
        counts, slots = self.counts, self.slots
        for h in feats:
            slot = h % slots
            if counts[slot] + step < 0:
                raise StaleTable(slot)
            counts[slot] += step
            changes[slot] += step
        self.total += step

    def lead(self, candidate_id: str, session_key: str, feats: Iterable[int]) -> Lead:
        """A leader as this table sees it now."""
        counts, slots, cap = self.counts, self.slots, self.cap
        kept = [h for h in feats if counts[h % slots] <= cap]
        return Lead(candidate_id, session_key, frozenset(h for h in kept if counts[h % slots] >= 2), len(kept))

    def view(self, feats: Iterable[int]) -> View | None:
        """What placing a candidate needs of its features, or None if too few are not common."""
        counts, slots, cap = self.counts, self.slots, self.cap
        # (count, hash) of each feature that is not common, rarest first (feats are distinct:
        # no two pairs are equal, and sorting them gives what heapq.nsmallest would).
        rated = sorted([(count, h) for h in feats if (count := counts[h % slots]) <= cap])
        if len(rated) < MIN_FEATURES:
            return None
        return _view(list(map(_second, rated)), bisect_left(rated, (2,)))

    def keys(self, view: View) -> list[int]:
        """What a leader is posted under: its voters, and its :data:`LATER_KEYS` rarest
        shingles, shared or not yet, by which a candidate added later (a session that repeats
        this one) can still find it."""
        return sorted({*view.voters, *view.kept[:LATER_KEYS]})


def _view(kept: list[int], shared_from: int) -> View:
    """The view of a candidate's features that are not common, rarest first, those from
    ``shared_from`` on being shared."""
    shared = kept[shared_from:]
    return View(kept, frozenset(shared), shared[:VOTERS])


class Numbered:
    """A table's shingles that are not common, numbered from 1 rarest first (by count, then
    hash), for candidates whose features are all among the ``hashes`` counted: a view as
    :meth:`Table.view` gives it, of those numbers, costs a lookup per feature and a sort of
    small ints. :func:`cluster` compares, posts and votes by numbers as by hashes (one names
    the other); a leader's posting keys are hashes (:meth:`keys`)."""

    def __init__(self, table: Table, hashes: Iterable[int]) -> None:
        counts, slots, cap = table.counts, table.slots, table.cap
        rated = sorted([(count, h) for h in hashes if (count := counts[h % slots]) <= cap])
        self._hashes = [0, *map(_second, rated)]  # number → hash
        self._number = {h: number for number, h in enumerate(self._hashes) if number}.get
        self._shared_from = bisect_left(rated, (2,)) + 1

    def view(self, feats: Iterable[int]) -> View | None:
        kept = sorted(filter(None, map(self._number, feats)))  # None, for a common one, is dropped
        if len(kept) < MIN_FEATURES:
            return None
        return _view(kept, bisect_left(kept, self._shared_from))

    def keys(self, view: View) -> list[int]:
        """:meth:`Table.keys` of the view :meth:`Table.view` gives."""
        return sorted(map(self._hashes.__getitem__, {*view.voters, *view.kept[:LATER_KEYS]}))


@dataclass(frozen=True)
class View:
    kept: list[int]  # its shingles that are not common, rarest first
    shared: frozenset[int]  # those some other candidate has too
    voters: list[int]  # the rarest of those: they propose the leaders to compare with


@dataclass(frozen=True)
class Lead:
    """A cluster's leader, as a candidate placed after it is compared with it."""

    candidate_id: str
    session_key: str
    shared: frozenset[int]
    kept: int


def place(
    view: View,
    session_key: str,
    votes: Callable[[list[int]], Mapping[int, int]],
    lead: Callable[[int], Lead | None],
    threshold: float = THRESHOLD,
) -> Lead | None:
    """The leader a candidate joins, or None if it leads a cluster of its own.

    ``votes(voters)`` maps the ledger position of every leader posted under some of the
    voters to how many; the :data:`CHECKED` named most are compared exactly, and the first
    of them in ledger order from another session that is similar enough is the one.
    ``lead(position)`` is the leader at a position."""
    shared, kept = view.shared, len(view.kept)
    for position in _most_voted(votes(view.voters)):
        found = lead(position)
        if found is None or found.kept < MIN_FEATURES or found.session_key == session_key:
            continue
        if len(shared & found.shared) / min(kept, found.kept) >= threshold:
            return found
    return None


def _all_packed(head: list[Member], rest: Iterator[Member]) -> list[Member] | None:
    """``head`` and the members after it, if every one has its features packed and they take
    no more than :data:`KEPT_BYTES` (a fraction of the ints they unpack to); else None."""
    kept: list[Member] = []
    size = 0
    for member in chain(head, rest):
        if member.packed is None or (size := size + len(member.packed)) > KEPT_BYTES:
            return None
        kept.append(member)
    return kept


def _most_voted(votes: Mapping[int, int]) -> list[int]:
    """The :data:`CHECKED` positions with the most votes (the earlier of two with as many), in
    ledger order (what sorting a (-votes, position) pair per position gave). Each position has
    a vote at least; those with two or more are few, and when they are not enough the rest are
    the earliest of those with one."""
    if len(votes) <= CHECKED:
        return sorted(votes)
    most = sorted([position for position, count in votes.items() if count > 1])
    if len(most) > CHECKED:
        most.sort(key=votes.__getitem__, reverse=True)  # stable: the earlier first among as many
        del most[CHECKED:]
        most.sort()
    elif len(most) < CHECKED:
        room = CHECKED - len(most)
        for position in sorted(votes):
            if votes[position] == 1:
                most.append(position)
                room -= 1
                if not room:
                    break
        most.sort()
    return most


@dataclass
class Clustering:
    """The clusters of a ledger, and what placing later candidates needs: the count table,
    and each leader's posting keys (:meth:`View.keys`)."""

    table: Table
    joined: dict[str, str]  # candidate id → the leader of its cluster (leaders not included)
    leads: dict[str, list[int]]  # leader's candidate id → its posting keys

    def assigned(self) -> dict[str, tuple[str, int]]:
        """Candidate id → (cluster id, cluster size) for every candidate in a cluster of two or more."""
        sizes = Counter(self.joined.values())
        out = {cid: (lead, sizes[lead] + 1) for cid, lead in self.joined.items()}
        out.update((lead, (lead, size + 1)) for lead, size in sizes.items())
        return out


def clusters(members: Callable[[], Iterable[Member]], threshold: float = THRESHOLD) -> dict[str, tuple[str, int]]:
    """Candidate id → (cluster id, cluster size) for every candidate in a cluster of two or more."""
    return cluster(members, threshold).assigned()


def cluster(members: Callable[[], Iterable[Member]], threshold: float = THRESHOLD) -> Clustering:
    """The clusters of the candidates ``members()`` yields in ledger order.

    ``members()`` is called once when the features can be kept between the passes (the first
    pass counts how many candidates each shingle is in): a ledger of fewer than
    :data:`SMALL_LEDGER` candidates, or one whose packed features take no more than
    :data:`KEPT_BYTES`; else three times. A candidate's :data:`VOTERS` rarest shingles that
    some other candidate has too propose the leaders to compare it with, and the
    :data:`CHECKED` leaders they name most are compared exactly; a leader keeps only the
    shingles another candidate has, and its feature count."""
    found = iter(members())
    head = list(islice(found, SMALL_LEDGER))
    slots = slots_for(len(head))
    first: list[Collection[int]] = []
    kept: list[Member] | None = head
    if len(head) < SMALL_LEDGER:  # a small ledger: a small table, its features computed once
        first = [member.features() for member in head]
        feature_sets: Iterable[Collection[int]] = first
    else:
        kept = _all_packed(head, found)
        feature_sets = (member.features() for member in (members() if kept is None else kept))
    # Exact counts first (in C), added into their slots whenever they hold _FLUSH_AT hashes,
    # so memory stays bounded however long the ledger.
    counts = array("I", bytes(4 * slots))
    exact: Counter[int] = Counter()
    # The slots in use, while they are few enough to be stored alone (see SPARSE_SHARE).
    used: set[int] | None = set() if slots >= slots_for(SMALL_LEDGER) else None

    def flush() -> None:
        nonlocal used
        for h, count in exact.items():
            counts[h % slots] += count
        if used is not None:
            used.update(h % slots for h in exact)
            if len(used) > slots // SPARSE_SHARE:
                used = None
        exact.clear()

    total = 0
    every = True  # whether exact holds every hash counted (it was not flushed before the end)
    for feats in feature_sets:
        total += 1
        exact.update(feats)
        if len(exact) >= _FLUSH_AT:
            flush()
            every = False
    hashes = list(exact) if every else []
    flush()
    table = Table(counts, slots, total, None if used is None else sorted(used))
    view_of, keys_of = table.view, table.keys
    if every:  # then every feature a candidate has is numbered
        numbered = Numbered(table, hashes)
        view_of, keys_of = numbered.view, numbered.keys
    leaders: dict[int, Lead] = {}
    postings: dict[int, list[int]] = {}
    done = Clustering(table, {}, {})

    def posted(voters: list[int]) -> Counter[int]:
        return Counter(chain.from_iterable(map(postings.get, voters, repeat(()))))

    for position, member in enumerate(members() if kept is None else kept):
        view = view_of(first[position] if first else member.features())
        if view is None:
            continue
        leader = place(view, member.session_key, posted, leaders.get, threshold)
        if leader is not None:
            done.joined[member.candidate_id] = leader.candidate_id
            continue
        leaders[position] = Lead(member.candidate_id, member.session_key, view.shared, len(view.kept))
        for h in view.voters:
            postings.setdefault(h, []).append(position)
        done.leads[member.candidate_id] = keys_of(view)
    return done
