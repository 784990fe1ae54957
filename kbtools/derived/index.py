"""Inverted index from shingle hash to artifacts, and the overlap measure.

The measure (why not Jaccard, why two containments):

- A short artifact quoted inside a long record: what matters is how much of
  the artifact the record contains, ``|R ∩ A| / |A|`` (Broder's containment of
  A in R). Jaccard divides by the union, which the long record dominates, so
  an exact quote inside a long message would score near 0.
- A record that is mostly an artifact (a page pasted with a line of comment,
  or a large part of a long page): ``|R ∩ A| / |R|``, the containment of the
  record in the artifact.

``overlap = max(containment of A in R, containment of R in A)``, each term
guarded against chance on tiny sets: the first counts only for an artifact
with at least :data:`MIN_ARTIFACT_SHINGLES` distinct shingles, the second only
for a record with at least :data:`MIN_RECORD_SHINGLES`. An artifact below the
minimum is matched by its normalised body hash only: a record that is exactly
that artifact. A record that names a page or skill ("I used the
infra-root-causes skill") shares at most a shingle or two with it and scores
near 0; a record discussing the same topic in its own words shares few
5-word runs (docs/derived-filter.md, for the measured distribution).

Cost per record: one dict probe per record shingle, plus work proportional to
the postings it hits; it does not grow with the number of artifacts (only the
memory latency of a larger dict does: bench/RESULTS.md, "Derived filter").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from itertools import chain
from operator import truediv
from typing import Any, NamedTuple

from kbtools.derived.shingles import SHINGLE_N, body_hash, shingle_hashes

MIN_ARTIFACT_SHINGLES = 12
MIN_RECORD_SHINGLES = 20
# A shingle found in more distinct artifact paths than this is boilerplate (a
# stock phrase, a shared template paragraph): it says nothing about which page
# a record quotes, and its long posting list would make every record that uses
# the phrase pay for all of them. It is left out of the index and out of each
# artifact's size, so containment is measured on informative shingles only.
# Versions of one page share a path and do not count against this.
STOP_PATHS = 16
# An artifact shorter than this many words never matches, not even by hash: a
# two-word page would otherwise exclude every record that says those words.
MIN_BODY_WORDS = 3
_UNREACHABLE = 1 << 62  # the size given an artifact too small for containment
INDEX_PARAMS = (MIN_ARTIFACT_SHINGLES, MIN_RECORD_SHINGLES, STOP_PATHS, MIN_BODY_WORDS)


class Artifact(NamedTuple):
    """One emitted artifact version, as the index needs it."""

    name: str
    path: str
    sha256: str
    body_hash: str
    shingles: frozenset[int]
    words: int  # normalised word count of the body


class ArtifactRef(NamedTuple):
    """What a match names; the index keeps only this and the shingle count."""

    name: str
    path: str
    sha256: str


class Overlap(NamedTuple):
    artifact: ArtifactRef
    overlap: float


class ArtifactIndex:
    """Shingle hash → artifacts holding it; normalised body hash → tiny artifact."""

    def __init__(self, artifacts: Iterable[Artifact]) -> None:
        artifacts = tuple(artifacts)
        # The filter is pickled into every ingest worker: keep references and
        # sizes, not a second copy of every shingle set.
        self.artifacts = tuple(ArtifactRef(a.name, a.path, a.sha256) for a in artifacts)
        sizes = [len(a.shingles) for a in artifacts]
        # A posting is the tuple of artifact numbers holding the shingle. Most
        # shingles belong to one artifact: those all share that artifact's one
        # 1-tuple, so they cost no memory of their own (pickle and marshal keep
        # the sharing) and a match counts hits with C-level map/chain/Counter.
        # Built with set and dict operations that run in C too: a Python loop
        # per shingle made loading 1,000 notes cost more than a 50 MB ingest.
        postings: dict[int, tuple[int, ...]] = {}
        shared: dict[int, list[int]] = {}
        bodies: dict[str, int] = {}
        for number, artifact in enumerate(artifacts):
            shingles = artifact.shingles
            if len(shingles) < MIN_ARTIFACT_SHINGLES:
                if artifact.body_hash:
                    bodies.setdefault(artifact.body_hash, number)
                continue
            common = postings.keys() & shingles
            for shingle in common:
                numbers = shared.get(shingle)
                if numbers is None:
                    shared[shingle] = [*postings[shingle], number]
                else:
                    numbers.append(number)
            postings.update(dict.fromkeys(shingles - common if common else shingles, (number,)))
        paths = [a.path for a in artifacts]
        for shingle, numbers in shared.items():
            if len(numbers) > STOP_PATHS and len({paths[n] for n in numbers}) > STOP_PATHS:
                del postings[shingle]
                for number in numbers:
                    sizes[number] -= 1
            else:
                postings[shingle] = tuple(numbers)
        self._postings = postings
        # Containment of artifact n in a record = shared shingles / this size; an
        # artifact below the minimum gets a size no count can reach (ratio ≈ 0).
        self._sizes = [size if size >= MIN_ARTIFACT_SHINGLES else _UNREACHABLE for size in sizes]
        self._bodies = bodies
        # Equal bodies have equal word counts: only a record no longer than the
        # longest tiny artifact needs its body hashed.
        self._body_words_max = max(
            (a.words for number, a in enumerate(artifacts) if bodies.get(a.body_hash) == number),
            default=0,
        )
        self._size_min = min(self._sizes, default=_UNREACHABLE)

    def __len__(self) -> int:
        return len(self.artifacts)

    def to_state(self) -> tuple[Any, ...]:
        """Plain data (ints, strings, tuples, dicts) for the on-disk index cache."""
        return (
            [(a.name, a.path, a.sha256) for a in self.artifacts],
            self._sizes,
            self._postings,
            self._bodies,
            self._body_words_max,
        )

    @classmethod
    def from_state(cls, state: tuple[Any, ...]) -> ArtifactIndex:
        index = cls.__new__(cls)
        refs, index._sizes, index._postings, index._bodies, index._body_words_max = state
        index.artifacts = tuple(ArtifactRef(*ref) for ref in refs)
        index._size_min = min(index._sizes, default=_UNREACHABLE)
        return index

    def best(self, words: list[bytes], above: float | None = None) -> Overlap | None:
        """The artifact overlapping most with a record of these normalised words.

        With ``above``: None also when no artifact can overlap more than that or
        contain the record fully, decided from the number of distinct shingles the
        record shares with the index before any of them is counted per artifact.
        """
        count = len(words)
        if self._bodies and MIN_BODY_WORDS <= count <= self._body_words_max:
            number = self._bodies.get(body_hash(words))
            if number is not None:
                return Overlap(self.artifacts[number], 1.0)
        postings = self._postings
        if not postings or count < SHINGLE_N:
            return None
        record = shingle_hashes(words)
        # keys() & list probes the dict for each record shingle in one C loop.
        hits = postings.keys() & record
        if not hits:
            return None
        record_size = len(set(record))
        if above is not None and not self._can_exceed(len(hits), record_size, above):
            return None
        shared = Counter(chain.from_iterable(map(postings.__getitem__, hits)))
        # Scores with map/max (C loops): a record sharing stock sentences with
        # many pages has over a hundred candidate artifacts.
        numbers = list(shared)
        commons = list(shared.values())
        in_record = list(map(truediv, commons, map(self._sizes.__getitem__, numbers)))
        best = max(range(len(numbers)), key=in_record.__getitem__)
        best_number, best_overlap = numbers[best], in_record[best]
        if record_size >= MIN_RECORD_SHINGLES:
            most = max(commons)
            if most / record_size > best_overlap:
                best_number, best_overlap = numbers[commons.index(most)], most / record_size
        return Overlap(self.artifacts[best_number], best_overlap)

    def _can_exceed(self, hit_count: int, record_size: int, above: float) -> bool:
        """Whether some artifact may overlap this record more than ``above`` (or be 1.0).

        Conservative: an artifact shares at most ``hit_count`` shingles with the
        record and holds at least ``_size_min``; the record holds ``record_size``
        distinct shingles, at least ``hit_count``. Division rounds monotonically, so the
        bounds hold for the float ratios :meth:`best` compares, not only exactly.
        Half the records of a real ingest stop here, before the posting count
        that costs the most per record.
        """
        if hit_count / self._size_min > above or hit_count >= self._size_min:
            return True
        return record_size >= MIN_RECORD_SHINGLES and (hit_count / record_size > above or hit_count >= record_size)
