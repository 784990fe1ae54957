"""Checks 9–12: every note names its kind, status and raw sources, and its links resolve."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

from kbtools.kb.frontmatter import FrontmatterError
from kbtools.kb.tree import KbFile
from kbtools.lint.context import LintContext
from kbtools.lint.problem import Problem

NOTE_REQUIRED_FIELDS = ("kind", "status", "sources")

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# `/note/<slug>` or `/<locale>/note/<slug>` (site links), optional trailing slash.
_SITE_NOTE = re.compile(r"^/(?:([^/]+)/)?note/(.+?)/?$")


def check_notes(ctx: LintContext) -> list[Problem]:
    problems: list[Problem] = []
    for note in ctx.notes.files:
        if ctx.note_in_scope(note.rel):
            problems += _check_note(ctx, note)
    return problems


def _check_note(ctx: LintContext, note: KbFile) -> Iterator[Problem]:
    path = ctx.note_prefix + "/" + note.rel
    doc = ctx.note_doc(note)
    if isinstance(doc, FrontmatterError):
        yield Problem("note-metadata", f"wiki page invalid frontmatter: {note.rel} ({doc.reason})", path, 1)
        return
    fields = doc.fields
    enums = {"kind": ctx.layout.config.enums.kind, "status": ctx.layout.config.enums.status}
    for name in NOTE_REQUIRED_FIELDS:
        value = fields.get(name)
        if value is None or value == "" or value == []:
            yield Problem("note-metadata", f"wiki page missing {name}: {note.rel}", path, 1)
        elif name in enums and str(value) not in enums[name]:
            yield Problem("note-enum", f"wiki page invalid {name} '{value}': {note.rel}", path, 1)
    raw_tables = ctx.raw_slugs_for(note.locale)
    for slug in slug_list(fields.get("sources")):
        if not any(slug in table for table in raw_tables):
            yield Problem("note-source", f"wiki page {note.rel} references missing raw source: {slug}", path, 1)
    note_tables = ctx.notes_for(note.locale)
    for slug in slug_list(fields.get("related")):
        if not any(slug in table for table in note_tables):
            yield Problem("note-link", f"wiki page {note.rel} has broken link: {slug}", path, 1)
    for line_no, target in markdown_links(doc.body, doc.body_line):
        if not _resolves(ctx, note, target):
            yield Problem("note-link", f"wiki page {note.rel} has broken link: {target}", path, line_no)


def slug_list(value: object) -> list[str]:
    """A frontmatter list of slugs (a lone string counts as one)."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if v is not None]
    return [str(value).strip()]


def markdown_links(body: str, first_line: int = 1) -> Iterator[tuple[int, str]]:
    """``(line, target)`` of every link, image and link reference definition of a note body,
    as a Markdown parser (CommonMark, markdown-it-py) sees them: text inside fenced or
    indented code, code spans and HTML comments is not a link.

    Cost is kept to what can hold a link: a body without ``](`` or ``]:`` is not parsed at
    all; a body with nothing that makes a block that hides links (no fence, no indented line,
    no ``<``, no reference definition) is split into paragraphs at blank lines without the
    block pass; only paragraphs that contain ``](`` (or a bracket, when definitions exist)
    are parsed inline, and one whose links are all of the plain ``[text](target)`` form is
    read by :func:`plain_links` without markdown-it (imported on first use)."""
    if "](" not in body and "]:" not in body:
        return
    env: dict[str, Any] = {}
    if not _hiding_block(body):
        for line, text in _paragraphs(body, first_line):
            if "](" in text:
                plain = plain_links(text, line)
                yield from plain if plain is not None else _inline_links(_markdown(), env, text, line, set())
        return
    md = _markdown()
    tokens = md.parse(body, env)
    references = bool(env.get("references"))
    used: set[str] = set()
    for token in tokens:
        if token.type != "inline" or token.map is None:
            continue
        text = token.content
        if "](" in text or (references and "]" in text):
            yield from _inline_links(md, env, text, first_line + token.map[0], used)
    for definition in env.get("references", {}).values():
        target = str(definition.get("href", ""))
        if target not in used:  # an unused definition still names a target that must resolve
            yield first_line + (definition.get("map") or [0])[0], target


def _hiding_block(body: str) -> bool:
    """Whether ``body`` has what can make a block in which a `[x](y)` is not a link (or a
    definition elsewhere): a code fence, an indented line (code, or a list continuation),
    HTML (blocks, comments), `]:`. Substring tests: a regex with a line anchor costs ~4x."""
    return (
        "```" in body
        or "~~~" in body
        or "<" in body
        or "]:" in body
        or "\n    " in body
        or "\n\t" in body
        or body.startswith(("    ", "\t"))
    )


# The next code span delimiter or bracket, and a link or image whose text holds no bracket or
# backtick and whose target is bare (no space, parenthesis, `<`, backslash or backtick).
_NEXT_MARK = re.compile(r"`+|\[")
_PLAIN_LINK = re.compile(r"\[([^\[\]`]*)\]\(([^\x00-\x20\x7f()<\\`]*)\)")
# Targets markdown-it refuses as links (its validateLink): left to it.
_UNSAFE_TARGET = re.compile(r"\s*(?:vbscript|javascript|file|data):", re.IGNORECASE)


def plain_links(text: str, line: int) -> list[tuple[int, str]] | None:
    """``(line, target)`` of the links and images of a paragraph, as markdown-it's inline
    parse finds them (:func:`_inline_links`), when every bracket outside code spans opens a
    plain ``[text](target)`` or ``![alt](src)``; None when anything else could make or unmake
    a link (a backslash, an entity, HTML, nested brackets, a title, a bracket that is not a
    link), for markdown-it to read. Lines advance at each line break outside code spans,
    link targets and image text, as the parser's break tokens do.

    tests/lint/test_links_index.py compares the two on generated paragraphs."""
    if "\\" in text or "&" in text or "<" in text:
        return None
    found: list[tuple[int, str]] = []
    pos = 0
    while (mark := _NEXT_MARK.search(text, pos)) is not None:
        start = mark.start()
        if mark.group()[0] == "`":
            line += text.count("\n", pos, start)
            close = _closing_backticks(text, mark.end(), len(mark.group()))
            pos = mark.end() if close < 0 else close  # a run without its closing run is text
            continue
        link = _PLAIN_LINK.match(text, start)
        if link is None or _UNSAFE_TARGET.match(link.group(2)):
            return None
        line += text.count("\n", pos, start)
        found.append((line, link.group(2)))
        if not (start and text[start - 1] == "!"):  # a link's text is inline content; an image's is not
            line += link.group(1).count("\n")
        pos = link.end()
    return found


def _closing_backticks(text: str, pos: int, length: int) -> int:
    """End of the next run of exactly ``length`` backticks from ``pos``, or -1."""
    while (run := _BACKTICKS.search(text, pos)) is not None:
        if run.end() - run.start() == length:
            return run.end()
        pos = run.end()
    return -1


_BACKTICKS = re.compile(r"`+")


def _paragraphs(body: str, first_line: int) -> Iterator[tuple[int, str]]:
    """``(line of its first line, text)`` of each run of non-blank lines."""
    start, lines = first_line, list[str]()
    for offset, line in enumerate(body.split("\n")):
        if line.strip():
            if not lines:
                start = first_line + offset
            lines.append(line)
        elif lines:
            yield start, "\n".join(lines)
            lines = []
    if lines:
        yield start, "\n".join(lines)


def _inline_links(md: Any, env: dict[str, Any], text: str, line: int, used: set[str]) -> Iterator[tuple[int, str]]:
    children: list[Any] = []
    md.inline.parse(text, md, env, children)
    for child in children:
        if child.type in ("softbreak", "hardbreak"):
            line += 1
        elif child.type == "link_open" or child.type == "image":
            target = str(child.attrs.get("href" if child.type == "link_open" else "src", ""))
            used.add(target)
            yield line, target


_MARKDOWN: Any = None


def _markdown() -> Any:
    """A CommonMark parser for the block pass only (inline parsing is done per paragraph that
    can hold a link), keeping link targets as written (no percent-encoding), so a broken
    link is reported the way the author typed it."""
    global _MARKDOWN
    if _MARKDOWN is None:
        from markdown_it import MarkdownIt

        parser = MarkdownIt("commonmark")
        parser.disable("inline")
        parser.normalizeLink = lambda url: url  # type: ignore[method-assign]
        _MARKDOWN = parser
    return _MARKDOWN


def strip_brackets(target: str) -> str:
    return target[1:-1].strip() if target.startswith("<") and target.endswith(">") else target


def site_note_target(target: str) -> tuple[str | None, str] | None:
    """``(locale or None, slug)`` for a site link to a note, else None."""
    path = target.split("#", 1)[0].split("?", 1)[0]
    match = _SITE_NOTE.match(unquote(path))
    if match is None:
        return None
    return match.group(1), match.group(2)


def _resolves(ctx: LintContext, note: KbFile, target: str) -> bool:
    if not target or target.startswith("#") or target.startswith("//") or _SCHEME.match(target):
        return True  # an anchor in this page or an external URL: not ours to check
    site = site_note_target(target)
    if site is not None:
        locale, slug = site
        tables = [ctx.notes_by_locale.get(locale, {})] if locale else ctx.notes_for(note.locale)
        return any(slug in table for table in tables)
    if target.startswith("/"):
        return True  # another page of the site (not a note)
    rel = unquote(target.split("#", 1)[0].split("?", 1)[0])
    if not rel:
        return True
    base = os.path.join(os.path.dirname(note.abspath), rel)
    return os.path.exists(base) or (not os.path.splitext(rel)[1] and os.path.exists(base.rstrip("/") + ".md"))
