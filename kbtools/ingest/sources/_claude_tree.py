"""The record tree of a Claude Code transcript: ``uuid``/``parentUuid`` links as
arrays of numbers, and the lines a rewind abandoned (see :mod:`kbtools.ingest.sources.claude`)."""

from __future__ import annotations

from array import array
from bisect import bisect_left

# The parent of a root, and of a record whose parent is not known (see Tree).
ROOT = 0
UNKNOWN_PARENT = 1


def id_hash(value: str | bytes) -> int:
    """A uuid as a 64-bit number (never 0 or 1, the markers): a million-line
    transcript's tree costs arrays of numbers, not a million strings."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return (hash(value) & 0x3FFF_FFFF_FFFF_FFFF) | 0x4000_0000_0000_0000


class Tree:
    """The ``uuid``/``parentUuid`` links of every line, as parallel arrays in
    file order (a parent precedes its children in an append-only file): a
    million-line transcript costs a few arrays of numbers, not a dict of
    strings."""

    __slots__ = ("ids", "parents", "lines", "main", "leaf")

    def __init__(self) -> None:
        self.ids = array("q")
        self.parents = array("q")
        self.lines = array("l")
        self.main = bytearray()
        self.leaf: int | None = None  # position of the last main-chain entry

    def add(self, line_no: int, ids: list[int], parent: int, *, main: bool) -> None:
        for uid in ids:
            self.ids.append(uid)
            self.parents.append(parent)
            self.lines.append(line_no)
            self.main.append(main)
        if ids and main:
            self.leaf = len(self.ids) - len(ids)

    def abandoned_lines(self) -> set[int]:
        """Lines of the main chain's tree off the path from its last entry to
        the root: the branches a rewind left. Nothing when that path cannot
        be followed to a root; other trees of the file (a root of its own) are
        never touched."""
        if self.leaf is None:
            return set()
        ids, parents, n = self.ids, self.parents, len(self.ids)
        order = sorted(range(n), key=ids.__getitem__)
        sorted_ids = array("q", (ids[i] for i in order))
        where = array("l", order)
        del order

        def find(uid: int) -> int:
            k = bisect_left(sorted_ids, uid)
            return where[k] if k < n and sorted_ids[k] == uid else -1

        tree = array("q", bytes(8 * n))
        for pos in range(n):
            parent = parents[pos]
            if parent == ROOT:
                tree[pos] = ids[pos]
            elif parent == UNKNOWN_PARENT:
                tree[pos] = UNKNOWN_PARENT
            else:
                j = find(parent)
                tree[pos] = tree[j] if 0 <= j < pos else UNKNOWN_PARENT
        active = tree[self.leaf]
        if active == UNKNOWN_PARENT:
            return set()
        on_path = bytearray(n)
        pos = self.leaf
        while 0 <= pos and not on_path[pos]:
            on_path[pos] = 1
            parent = parents[pos]
            if parent in (ROOT, UNKNOWN_PARENT):
                break
            pos = find(parent)
        kept = {self.lines[p] for p in range(n) if on_path[p]}
        return {
            self.lines[p]
            for p in range(n)
            if self.main[p] and tree[p] == active and not on_path[p] and self.lines[p] not in kept
        }
