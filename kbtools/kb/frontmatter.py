"""Markdown frontmatter: split the ``---`` block, parse it as YAML, never crash.

A file "has frontmatter" when its first line is ``---``; the block ends at the
next line that is exactly ``---``. Any list style YAML allows (double- or
single-quoted flow lists, plain flow lists, block lists) parses the same.

Speed matters (a lint reads 12,000 of these). A block of the usual shape (one
``key: value`` per line, plain or quoted scalars and one-line flow lists) is read
by hand, giving what the lean C path below gives (tested against it on generated
blocks); any other block is parsed by
ruamel.yaml's C parser and composer, and the node tree is turned into Python
values by a small constructor that keeps dates and numbers as their text —
lint only asks "present?", "which string?", "which list?", and a date that is
not a valid calendar date must not break anything. A block that uses tags,
anchors, aliases or merge keys goes through ruamel's full safe constructor
instead, after :mod:`kbtools.safeyaml` has checked that its aliases do not expand
into a huge value (a YAML bomb is a problem of that note, not a hang). Without the
C extension the pure-Python safe loader is used.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Frontmatter",
    "FrontmatterError",
    "frontmatter_fields",
    "load_yaml_mapping",
    "parse_frontmatter",
    "split_frontmatter",
]

_FENCE = "---"
# A frontmatter block larger than this is refused (real ones are a few hundred bytes).
MAX_FRONTMATTER_BYTES = 256 * 1024
# YAML 1.2 core schema: the plain scalars that are not strings for our purposes.
_PLAIN_CONSTANTS: dict[str, Any] = {
    "": None,
    "~": None,
    "null": None,
    "Null": None,
    "NULL": None,
    "true": True,
    "True": True,
    "TRUE": True,
    "false": False,
    "False": False,
    "FALSE": False,
}


class FrontmatterError(ValueError):
    """The file's frontmatter cannot be read; ``reason`` says why in a few words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Frontmatter:
    """Parsed frontmatter of one file.

    ``fields`` is empty when the file has no frontmatter (``present`` False).
    ``body_line`` is the 1-based line number where the body starts.
    """

    fields: Mapping[str, Any] = field(default_factory=dict)
    present: bool = False
    body: str = ""
    body_line: int = 1


def decode_text(data: bytes) -> str:
    """UTF-8 text of a file, or FrontmatterError for binary / invalid UTF-8 content.

    Only the frontmatter has to be clean: a NUL byte or invalid UTF-8 after the closing
    fence (old captured evidence) is kept as replacement characters.
    """
    try:
        text = data.decode("utf-8")
        bad = -1
    except UnicodeDecodeError as exc:
        text, bad = "", exc.start
    nul = data.find(b"\x00")
    if bad >= 0 or nul >= 0:
        first = min(x for x in (bad, nul) if x >= 0)
        end = _frontmatter_end(data)
        if end < 0 or first < end:
            binary = nul >= 0 and (end < 0 or nul < end)
            raise FrontmatterError("binary file, not UTF-8 text" if binary else f"not valid UTF-8 (byte {bad})")
        text = data.decode("utf-8", "replace")
    return text[1:] if text.startswith("\ufeff") else text


def _frontmatter_end(data: bytes) -> int:
    """Byte offset just past the closing ``---`` line, or -1."""
    if not data.startswith((b"---\n", b"---\r\n", b"--- ", b"\xef\xbb\xbf---")):
        return -1
    pos = data.find(b"\n") + 1
    while 0 < pos < len(data):
        end = data.find(b"\n", pos)
        line = data[pos:] if end < 0 else data[pos:end]
        if line.rstrip() == b"---":
            return len(data) if end < 0 else end + 1
        if end < 0:
            return -1
        pos = end + 1
    return -1


def split_frontmatter(text: str) -> tuple[str | None, str, int]:
    """``(block, body, body_line)``; block is None when the file has no frontmatter.

    Raises FrontmatterError when the opening ``---`` is never closed.
    """
    if text.startswith("---\n"):  # the usual file: its block closed by a bare `---` line, found in one search
        close = text.find("\n---", 3)
        if close >= 0 and text[close + 4 : close + 5] in ("\n", ""):
            block = text[4 : close + 1]  # no earlier line starts with `---`, so none is a fence
            return block, text[close + 5 :], block.count("\n") + 3
    first_end = text.find("\n")
    first = text if first_end < 0 else text[:first_end]
    if first.rstrip() != _FENCE:
        return None, text, 1
    pos = first_end + 1 if first_end >= 0 else len(text)
    line_no = 2
    while pos < len(text):
        end = text.find("\n", pos)
        line = text[pos:] if end < 0 else text[pos:end]
        if line.rstrip() == _FENCE:
            body_start = len(text) if end < 0 else end + 1
            return text[first_end + 1 : pos], text[body_start:], line_no + 1
        if end < 0:
            break
        pos = end + 1
        line_no += 1
    raise FrontmatterError("frontmatter has no closing ---")


def parse_frontmatter(data: bytes | str) -> Frontmatter:
    """Bytes (or text) of a Markdown file → Frontmatter; FrontmatterError on bad input."""
    text = decode_text(data) if isinstance(data, bytes) else data
    block, body, body_line = split_frontmatter(text)
    if block is None:
        return Frontmatter(fields={}, present=False, body=body, body_line=body_line)
    return Frontmatter(fields=load_yaml_mapping(block, first_line=2), present=True, body=body, body_line=body_line)


def frontmatter_fields(data: bytes) -> Mapping[str, Any]:
    """``parse_frontmatter(data).fields`` (same errors), decoding only the block when the file
    opens with a ``---`` line and the block is clean UTF-8 closed by a bare ``---`` line: a
    raw file's fields are read without decoding or copying its body."""
    if data.startswith(b"---\n"):
        close = data.find(b"\n---", 3)
        after = close + 4
        if close >= 0 and data[after : after + 1] in (b"\n", b""):
            block = data[4 : close + 1]
            if b"\x00" not in block:
                try:
                    text = block.decode("utf-8")
                except UnicodeDecodeError:
                    pass  # the error names a byte of the whole file: the full path reports it
                else:
                    return load_yaml_mapping(text, first_line=2) if text else {}
    return parse_frontmatter(data).fields


def load_yaml_mapping(block: str, *, first_line: int = 1) -> dict[str, Any]:
    """A YAML document that must be a mapping (or empty) → dict; FrontmatterError otherwise.

    ``first_line`` is the file line of the block's first line, for error messages.
    """
    if not block.strip():
        return {}
    # The usual block first, with nothing else around it (12,000 of them per lint): far under
    # the size bound (check_size cannot refuse it) and nothing for the full constructor.
    full = _needs_full_constructor(block)
    small = len(block) * 4 <= MAX_FRONTMATTER_BYTES
    if small and not full and (simple := _simple_load(block)) is not None:
        return simple
    from kbtools.safeyaml import YamlLimitError, check_size

    try:
        check_size(block, MAX_FRONTMATTER_BYTES)
        if full:
            data = _full_load(block)
        elif not small and (simple := _simple_load(block)) is not None:  # not tried above
            return simple
        elif _lean_parser_class() is not None:
            data = _lean_load(block)
        else:
            data = _full_load(block)
    except FrontmatterError:
        raise
    except YamlLimitError as exc:
        where = f" (line {first_line + exc.line - 1})" if exc.line else ""
        raise FrontmatterError(exc.reason + where) from None
    except Exception as exc:  # ruamel raises many types (scanner, parser, constructor, value errors)
        raise FrontmatterError(f"invalid YAML: {_yaml_problem(exc, first_line)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise FrontmatterError(f"frontmatter is a {type(data).__name__}, not a mapping")
    return {str(k): v for k, v in data.items()}


def _yaml_problem(exc: Exception, first_line: int) -> str:
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if problem and mark is not None:
        return f"{problem} (line {first_line + mark.line})"
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return lines[0] if lines else type(exc).__name__


def _needs_full_constructor(block: str) -> bool:
    # Tags, anchors/aliases and merge keys have semantics the lean constructor skips.
    return "!" in block or "&" in block or "*" in block or "<<" in block


# The block shape nearly every frontmatter has: one `key: value` per line at column 0, the
# value a plain scalar, a one-line quoted string or a one-line flow list of such. Parsed here
# with the lean loader's result (tests/lint/test_frontmatter.py compares the two on generated
# blocks); anything else (comments, block lists, escapes, `: ` or ` #` in a plain value,
# characters YAML treats specially) returns None and goes to the C parser.
_QUOTED = re.compile(r'"([^"\\]*)"|\'([^\']*)\'')
_FLOW_ITEM = re.compile(r' *(?:"([^"\\]*)"|\'([^\']*)\'|(\w[\w./+-]*(?: +[\w./+-]+)*)) *(?:,|(\]))')
_PLAIN_FIRST_BAD = frozenset("-?:,[]{}#&*!|>'\"%@`")


# A block of such lines and blank (or all-space) lines, each ending in a newline, is told in one
# pass and its keys and values read in one more (a loop over the lines cost 10,000 raw files
# 40 ms); no part of either pattern can match the same text two ways, so neither backtracks.
_SIMPLE_BLOCK = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_-]{0,127}:(?: .*)?\n| *\n)*")
_SIMPLE_PAIRS = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]{0,127}):(?: +(.*))?$", re.MULTILINE)  # YAML caps a key at 1024


def _simple_load(block: str) -> dict[str, Any] | None:
    if "\r" in block:
        block = block.replace("\r\n", "\n")  # a lone CR is a line break to YAML: not printable below
    if not block.endswith("\n"):
        block += "\n"
    if not block.replace("\n", "").isprintable():  # tabs, control characters, other line breaks, BOMs
        return None
    if _SIMPLE_BLOCK.fullmatch(block) is None:
        return None  # an indented line (a block list or a continuation), a comment, ...
    result: dict[str, Any] = {}
    for key, spaced in _SIMPLE_PAIRS.findall(block):
        value = spaced.rstrip(" ")
        if key in result or key in _PLAIN_CONSTANTS:
            return None  # the C parser reports the duplicate; `true:` is not a string key
        if not value:
            result[key] = None
        elif value[0] == "[":
            items = _simple_flow_list(value)
            if items is None:
                return None
            result[key] = items
        elif value[0] in "\"'":
            quoted = _QUOTED.fullmatch(value)
            if quoted is None:
                return None
            result[key] = quoted.group(1) if quoted.group(1) is not None else quoted.group(2)
        elif value[0] in _PLAIN_FIRST_BAD or ": " in value or " #" in value or value.endswith(":"):
            return None
        else:
            result[key] = _PLAIN_CONSTANTS.get(value, value)
    return result


def _simple_flow_list(value: str) -> list[Any] | None:
    """``[a, "b", 'c']`` on one line → its items, or None."""
    if value[1:-1].strip(" ") == "" and value[-1] == "]":
        return []
    items: list[Any] = []
    pos = 1
    while True:
        match = _FLOW_ITEM.match(value, pos)
        if match is None:
            return None
        double, single, plain, close = match.groups()
        if double is not None:
            items.append(double)
        elif single is not None:
            items.append(single)
        else:
            items.append(_PLAIN_CONSTANTS.get(plain, plain))
        pos = match.end()
        if close is not None:
            return items if pos == len(value) else None


_LEAN_PARSER: Any = None


def _lean_parser_class() -> Any:
    """C parser + composer whose implicit tags are left unresolved (the constructor decides);
    None without the C extension. Imported on first use: the hook may parse nothing."""
    global _LEAN_PARSER
    if _LEAN_PARSER is None:
        try:  # the C extension ships with ruamel.yaml.clib on CPython
            from _ruamel_yaml import CParser  # type: ignore[import-not-found]
        except ImportError:  # pragma: no cover - pure-Python fallback
            _LEAN_PARSER = False
            return None

        class _LeanParser(CParser):  # type: ignore[misc]
            def resolve(self, kind: Any, value: Any, implicit: Any) -> None:
                return None

            def descend_resolver(self, parent: Any, index: Any) -> None:
                return None

            def ascend_resolver(self) -> None:
                return None

        _LEAN_PARSER = _LeanParser
    return _LEAN_PARSER or None


def _lean_load(block: str) -> Any:
    parser = _lean_parser_class()(block)
    try:
        node = parser.get_single_node()
    finally:
        parser.dispose()
    return None if node is None else _construct(node)


def _construct(node: Any) -> Any:
    kind = type(node).__name__  # ScalarNode, MappingNode or SequenceNode
    if kind == "ScalarNode":
        # The C composer marks plain scalars with an empty style.
        return node.value if node.style else _PLAIN_CONSTANTS.get(node.value, node.value)
    if kind == "MappingNode":
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _construct(key_node)
            if isinstance(key, (dict, list)):
                raise FrontmatterError("invalid YAML: a mapping key must be a scalar")
            if key in result:
                raise FrontmatterError(f"invalid YAML: duplicate key '{key}'")
            result[key] = _construct(value_node)
        return result
    return [_construct(item) for item in node.value]


_FULL_LOADER: Any = None


def _full_load(block: str) -> Any:
    from kbtools.safeyaml import compose, construct

    return construct(compose(block, max_bytes=MAX_FRONTMATTER_BYTES, loader_class=_full_loader_class()))


def _full_loader_class() -> Any:
    """ruamel's safe loader (C-backed when available) that keeps timestamps as text."""
    global _FULL_LOADER
    if _FULL_LOADER is None:
        from kbtools.safeyaml import safe_loader_class

        base: Any = safe_loader_class()

        class _TextDatesLoader(base):  # type: ignore[misc]
            pass

        _TextDatesLoader.add_constructor(
            "tag:yaml.org,2002:timestamp", lambda loader, node: str(loader.construct_scalar(node))
        )
        _FULL_LOADER = _TextDatesLoader
    return _FULL_LOADER
