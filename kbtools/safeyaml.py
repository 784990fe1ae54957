"""YAML that cannot hang or exhaust the process: bounded size, bounded alias expansion.

An alias is a reference, so a 1 kB document of nested aliases ("billion laughs") or of
merge keys (``<<: [*a, *a, ...]``, which ruamel flattens by copying) describes an
exponentially large value: building it, or printing it later, takes minutes and
gigabytes. Here a document is composed first (the C parser, linear in its size), then the
size of the value it describes is measured over the node graph (each shared node once,
so this is linear too) and refused above a bound, before anything is constructed.

Used by ``.kb.yaml`` (:mod:`kbtools.config`) and by frontmatter blocks that use anchors,
aliases, tags or merge keys (:mod:`kbtools.kb.frontmatter`); plain frontmatter takes a
faster path that has no aliases to expand.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_NODES", "Document", "YamlLimitError", "check_size", "compose", "construct", "expanded_size", "load"]

# A value of more nodes than this (aliases counted each time they are used) is refused. A
# hand-written frontmatter or config has a few hundred; a generated one a few thousand.
MAX_NODES = 100_000


class YamlLimitError(ValueError):
    """The document is larger than allowed, or its aliases expand past :data:`MAX_NODES`."""

    def __init__(self, reason: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line  # 1-based, when known
        self.column = column


@dataclass(frozen=True)
class Document:
    """A composed document and the loader that composed it (to construct values from it)."""

    node: Any  # the root node (None for an empty document)
    loader: Any


def compose(text: str, *, max_bytes: int, loader_class: Any = None) -> Document:
    """Compose ``text`` into nodes and check its bounds; ruamel errors pass through.

    The caller must :func:`construct` (or drop) the result; the loader is disposed there.
    """
    check_size(text, max_bytes)
    loader = (loader_class or safe_loader_class())(text)
    try:
        node = loader.get_single_node()
        if node is not None and _uses_references(text):
            expanded_size(node)
    except BaseException:
        loader.dispose()
        raise
    return Document(node, loader)


def check_size(text: str, max_bytes: int) -> None:
    """YamlLimitError when ``text`` is over ``max_bytes`` in UTF-8 (encoded only when it could be)."""
    if len(text) * 4 <= max_bytes:
        return
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise YamlLimitError(f"YAML document of {size:,} bytes is over the {max_bytes:,}-byte limit")


def construct(doc: Document) -> Any:
    """The Python value of a composed document (plain dicts, lists, scalars)."""
    try:
        return None if doc.node is None else doc.loader.construct_document(doc.node)
    finally:
        doc.loader.dispose()


def load(text: str, *, max_bytes: int) -> Any:
    """:func:`compose` then :func:`construct`."""
    return construct(compose(text, max_bytes=max_bytes))


def _uses_references(text: str) -> bool:
    # Without an alias nothing is shared: the node count is bounded by the size already.
    return "*" in text


def expanded_size(root: Any, limit: int = MAX_NODES) -> int:
    """Nodes of the value ``root`` describes, an alias counted each time it is used.

    Iterative (a deeply nested document must not hit the recursion limit) and memoised
    by node identity, so shared nodes are measured once; a recursive alias is refused.
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, closing = stack.pop()
        key = id(node)
        if closing:
            open_nodes.discard(key)
            total = 1 + sum(sizes[id(child)] for child in _children(node))
            if total > limit:
                mark = getattr(node, "start_mark", None)
                raise YamlLimitError(
                    f"YAML aliases expand to more than {limit:,} nodes",
                    None if mark is None else mark.line + 1,
                    None if mark is None else mark.column + 1,
                )
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise YamlLimitError("YAML alias refers to itself")
        open_nodes.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in open_nodes:
                raise YamlLimitError("YAML alias refers to itself")
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def _children(node: Any) -> Iterator[Any]:
    kind = type(node).__name__
    if kind == "SequenceNode":
        yield from node.value
    elif kind == "MappingNode":
        for key, value in node.value:
            yield key
            yield value


_SAFE_LOADER: Any = None


def safe_loader_class() -> Any:
    """ruamel's safe loader, C-backed when ``ruamel.yaml.clib`` is installed; imported on first use."""
    global _SAFE_LOADER
    if _SAFE_LOADER is None:
        try:
            from ruamel.yaml.cyaml import CSafeLoader

            _SAFE_LOADER = CSafeLoader
        except ImportError:  # pragma: no cover - pure-Python fallback
            from ruamel.yaml.loader import SafeLoader

            _SAFE_LOADER = SafeLoader
    return _SAFE_LOADER
