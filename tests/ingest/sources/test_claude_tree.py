"""The record tree of a Claude Code transcript held to its definition.

:meth:`Tree.abandoned_lines` looks up only the parents that are not the entry just
before; these tests compare it with the definition computed the plain way (a table of
every id's first entry, each root found by walking up), on trees with what real
transcripts hold: rewinds (two children of one entry), sidechains, lines with several
ids (a line not parsed takes every ``uuid`` in it), an id written twice, a parent that
comes later in the file or never, and unknown parents.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kbtools.ingest.sources._claude_tree import ROOT, UNKNOWN_PARENT, Tree, id_hash


def _defined(tree: Tree) -> set[int]:
    if tree.leaf is None:
        return set()
    ids, parents, lines, n = list(tree.ids), list(tree.parents), list(tree.lines), len(tree.ids)
    first: dict[int, int] = {}
    for pos, uid in enumerate(ids):
        first.setdefault(uid, pos)

    def parent_of(pos: int) -> int | None:
        if parents[pos] in (ROOT, UNKNOWN_PARENT):
            return None
        j = first.get(parents[pos], n)
        return j if j < pos else None

    def root(pos: int) -> int:
        while parents[pos] != ROOT:
            up = parent_of(pos)
            if up is None:
                return UNKNOWN_PARENT
            pos = up
        return ids[pos]

    active = root(tree.leaf)
    if active == UNKNOWN_PARENT:
        return set()
    path: set[int] = set()
    at: int | None = tree.leaf
    while at is not None:
        path.add(at)
        at = parent_of(at)
    on_path_lines = {lines[p] for p in path}
    return {
        lines[p]
        for p in range(n)
        if tree.main[p] and p not in path and lines[p] not in on_path_lines and root(p) == active
    }


_names = st.integers(min_value=0, max_value=40).map(lambda i: f"{i:08x}-0000-4000-8000-000000000000")
# "previous": the last id of the line before, as most entries of a real transcript have it.
_parent = st.one_of(st.just("root"), st.just("unknown"), st.just("previous"), st.just("previous"), _names)
_line = st.tuples(st.lists(_names, min_size=1, max_size=3), _parent, st.booleans(), st.integers(1, 3))


def _tree(spec: list[tuple[list[str], str, bool, int]]) -> Tree:
    tree = Tree()
    line_no = 0
    for names, parent, main, gap in spec:
        line_no += gap
        if parent == "root":
            parent_id = ROOT
        elif parent == "unknown" or (parent == "previous" and not tree.ids):
            parent_id = UNKNOWN_PARENT
        elif parent == "previous":
            parent_id = tree.ids[-1]
        else:
            parent_id = id_hash(parent)
        tree.add(line_no, [id_hash(name) for name in names], parent_id, main=main)
    return tree


@settings(max_examples=400, deadline=None)
@given(st.lists(_line, max_size=60))
def test_abandoned_lines_are_those_of_the_definition(spec: list[tuple[list[str], str, bool, int]]) -> None:
    tree = _tree(spec)
    assert tree.abandoned_lines() == _defined(tree)


def _chain(tree: Tree, start: int, count: int, parent: str | None, line_no: int) -> int:
    """``count`` main entries, each the child of the one before; returns the next line number."""
    for i in range(start, start + count):
        name = f"{i:08x}-0000-4000-8000-000000000000"
        tree.add(line_no, [id_hash(name)], ROOT if parent is None else id_hash(parent), main=True)
        parent, line_no = name, line_no + 1
    return line_no


def test_a_rewind_leaves_the_branch_it_left_and_nothing_else() -> None:
    tree = Tree()
    line = _chain(tree, 0, 5, None, 1)  # lines 1-5: entries 0-4
    # Rewound to entry 2: a new branch from it, lines 6-8 (entries 100-102).
    _chain(tree, 100, 3, "00000002-0000-4000-8000-000000000000", line)
    assert tree.abandoned_lines() == {4, 5}
    assert _defined(tree) == {4, 5}


def test_an_id_written_twice_is_its_first_entry() -> None:
    """The second entry with an id is no parent: a child of that id hangs from the first."""
    tree = Tree()
    a, b, c = (f"{i:08x}-0000-4000-8000-000000000000" for i in range(3))
    tree.add(1, [id_hash(a)], ROOT, main=True)
    tree.add(2, [id_hash(b)], id_hash(a), main=True)
    tree.add(3, [id_hash(a)], id_hash(b), main=True)  # a again (a nested uuid, say)
    tree.add(4, [id_hash(c)], id_hash(a), main=True)  # the child of line 1, not of line 3
    assert tree.abandoned_lines() == {2, 3} == _defined(tree)


def test_a_parent_written_after_its_child_is_not_followed() -> None:
    tree = Tree()
    a, b = (f"{i:08x}-0000-4000-8000-000000000000" for i in range(2))
    tree.add(1, [id_hash(a)], ROOT, main=True)
    tree.add(2, [id_hash(b)], id_hash("ffffffff-0000-4000-8000-000000000000"), main=True)
    tree.add(3, [id_hash("ffffffff-0000-4000-8000-000000000000")], id_hash(a), main=True)
    # Line 2 hangs from an entry after it: it is in no known tree, so not in the leaf's.
    assert tree.abandoned_lines() == set() == _defined(tree)
    tree.add(4, [id_hash("eeeeeeee-0000-4000-8000-000000000000")], id_hash(b), main=True)
    # Now the leaf hangs from line 2: its path cannot be followed to a root, nothing is abandoned.
    assert tree.abandoned_lines() == set() == _defined(tree)
