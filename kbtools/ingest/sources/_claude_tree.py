"""The record tree of a Claude Code transcript: ``uuid``/``parentUuid`` links as
arrays of numbers, and the lines a rewind abandoned (see :mod:`kbtools.ingest.sources.claude`)."""

from __future__ import annotations

from array import array
from itertools import islice

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
        never touched. An entry's parent is the first entry with its id, and
        only one before it counts."""
        if self.leaf is None:
            return set()
        ids, parents, lines, main, n = self.ids, self.parents, self.lines, self.main, len(self.ids)
        up = self._parent_positions()
        tree = array("q", bytes(8 * n))  # the id of each entry's root, or UNKNOWN_PARENT
        for pos in range(n):
            j = up[pos]
            if j >= 0:
                tree[pos] = tree[j]
            elif parents[pos] == ROOT:
                tree[pos] = ids[pos]
            else:
                tree[pos] = UNKNOWN_PARENT
        active = tree[self.leaf]
        if active == UNKNOWN_PARENT:
            return set()
        # The path up from the leaf (it reaches the root: every step goes to an earlier entry).
        on_path = bytearray(n)
        kept = bytearray(max(lines) + 1)  # the lines of the path
        pos = self.leaf
        while pos >= 0:
            on_path[pos] = 1
            kept[lines[pos]] = 1
            pos = up[pos]
        return {
            line for p, line in enumerate(lines) if main[p] and not on_path[p] and not kept[line] and tree[p] == active
        }

    def _parent_positions(self) -> array[int]:
        """The position of each entry's parent: the first entry with the parent's id, if it
        comes before (-1 for a root, an unknown parent, one not found or not before). Most
        parents are the entry just before, so only the others are looked up, by a scan that
        notes the first position of the ids wanted: no table of every id."""
        ids, parents, n = self.ids, self.parents, len(self.ids)
        ordered = sorted(ids)
        twice = {a for a, b in zip(ordered, islice(ordered, 1, None)) if a == b}
        del ordered
        up = array("q", [-1]) * n
        far: list[int] = []  # positions whose parent is not the entry before it
        previous = -1  # no id or marker
        for pos in range(n):
            parent = parents[pos]
            if parent == previous and parent not in twice:
                up[pos] = pos - 1
            elif parent != ROOT and parent != UNKNOWN_PARENT:
                far.append(pos)
            previous = ids[pos]
        if far:
            wanted = {parents[pos] for pos in far}
            first: dict[int, int] = {}
            for pos, uid in enumerate(ids):
                if uid in wanted and uid not in first:
                    first[uid] = pos
            for pos in far:
                j = first.get(parents[pos], -1)
                if j < pos:
                    up[pos] = j
        return up
