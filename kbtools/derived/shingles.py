"""Word n-gram shingles with a stable 64-bit hash.

Each word gets a stable id, ``blake3(word)`` reduced modulo the Mersenne prime
2**61 - 1; a shingle is the hash of the tuple of its ``n`` word ids, computed
with the xxHash-style lane mixing that CPython's ``hash(tuple)`` uses.

Why this and not ``blake3(shingle)``: ingest shingles every kept record, and a
blake3 call costs about 300 ns of object overhead per tiny input (measured in
``bench/derived_bench.py``); the word id is cached per process, and the
builtin tuple hash runs the mixing in C for about 20 ns a shingle. The values
are stable across processes and runs: an int below 2**61 - 1 hashes to itself
(no per-process salt, unlike ``str``), and the tuple mixing is written out in
:func:`reference_shingle_hash`. At import the builtin is checked against that
reference; an interpreter that disagrees (another algorithm, a 32-bit hash)
uses the reference, slower but giving identical values.
"""

from __future__ import annotations

import base64
import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence

from blake3 import blake3

from kbtools.derived.normalise import NORMALISER_HASH, NORMALISER_VERSION

SHINGLE_N = 5  # words; background containment of unrelated prose stays low (docs/derived-filter.md table)
HASH_NAME = "xxh-lanes64(blake3-61 word ids)"

_P61 = (1 << 61) - 1
_M64 = (1 << 64) - 1
_XXPRIME_1 = 11400714785074694791
_XXPRIME_2 = 14029467366897019727
_XXPRIME_5 = 2870177450012600261
_WORD_CACHE_LIMIT = 1 << 20

SHINGLE_PARAMS: dict[str, object] = {
    "n": SHINGLE_N,
    "unit": "word",
    "normaliser": NORMALISER_VERSION,
    "normaliser_hash": NORMALISER_HASH,
    "hash": HASH_NAME,
    "encoding": "base64 sorted int64 little-endian",
}

_word_ids: dict[bytes, int] = {}


def _word_id(word: bytes) -> int:
    return int.from_bytes(blake3(word).digest(length=8), "little") % _P61


def word_ids(words: Sequence[bytes]) -> list[int]:
    """Stable ids of ``words`` (cached: a session's vocabulary repeats)."""
    cache = _word_ids
    ids = list(map(cache.get, words))
    if None in ids:
        if len(cache) > _WORD_CACHE_LIMIT:
            cache.clear()
        for i, value in enumerate(ids):
            if value is None:
                word = words[i]
                ids[i] = cache[word] = _word_id(word)
    return ids  # type: ignore[return-value]


def reference_shingle_hash(ids: Sequence[int]) -> int:
    """The shingle hash written out (CPython's tuple hash over ids below 2**61 - 1)."""
    acc = _XXPRIME_5
    for lane in ids:
        acc = (acc + lane * _XXPRIME_2) & _M64
        acc = ((acc << 31) | (acc >> 33)) & _M64
        acc = (acc * _XXPRIME_1) & _M64
    acc = (acc + (len(ids) ^ (_XXPRIME_5 ^ 3527539))) & _M64
    if acc == _M64:
        return 1546275796
    return acc - (1 << 64) if acc >= 1 << 63 else acc


def _builtin_agrees() -> bool:
    if sys.hash_info.width != 64:
        return False
    samples = [(0, 1, 2, 3, 4), (_P61 - 1, 7, _P61 - 2, 12345678901234567, 99), (5, 5, 5, 5, 5)]
    return all(hash(s) == reference_shingle_hash(s) for s in samples)


BUILTIN_HASH = _builtin_agrees()


def shingle_hashes(words: Sequence[bytes], n: int = SHINGLE_N) -> list[int]:
    """Hashes of every n-word window of ``words``, in order (repeats kept)."""
    if len(words) < n:
        return []
    return list(_window_hashes(word_ids(words), n))


def shingle_hash_set(words: Sequence[bytes], sizes: Iterable[int]) -> set[int]:
    """The distinct hashes of every n-word window of ``words``, for each n in ``sizes``
    (the words' ids looked up once for all of them)."""
    ids = word_ids(words)
    found: set[int] = set()
    for n in sizes:
        found.update(_window_hashes(ids, n))
    return found


def _window_hashes(ids: list[int], n: int) -> Iterator[int]:
    windows = zip(*(ids[i:] for i in range(n)))
    return map(hash, windows) if BUILTIN_HASH else map(reference_shingle_hash, windows)


def pack(shingles: Iterable[int]) -> str:
    """Shingle hashes as the manifest stores them: sorted signed 64-bit little-endian, base64.

    About 11 characters a shingle instead of 19 for a JSON list of hex strings,
    and decoded in C (a 1,000-page manifest loads several times faster).
    """
    values = array("q", sorted(shingles))
    if sys.byteorder != "little":
        values.byteswap()
    return base64.b64encode(values.tobytes()).decode("ascii")


def unpack(text: str) -> list[int]:
    raw = base64.b64decode(text, validate=True)
    if len(raw) % 8:
        raise ValueError("shingle data is not a whole number of 64-bit values")
    values = array("q")
    values.frombytes(raw)
    if sys.byteorder != "little":
        values.byteswap()
    return values.tolist()


def body_hash(words: Sequence[bytes]) -> str:
    """Hash of the normalised body, for artifacts too short to shingle usefully."""
    return blake3(b" ".join(words)).hexdigest()
