"""Checks 9–12: every note names its kind, status and raw sources, and its links resolve."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from urllib.parse import unquote

from kbtools.kb.frontmatter import FrontmatterError
from kbtools.kb.tree import KbFile
from kbtools.lint.context import LintContext
from kbtools.lint.problem import Problem

NOTE_REQUIRED_FIELDS = ("kind", "status", "sources")

# `[text](target "title")` and `![alt](target)`: the target is what matters.
INLINE_LINK = re.compile(r"\]\(\s*(<[^>\n]*>|[^)\s]+)")
# `[label]: target` reference definitions (not footnotes `[^1]: …`).
_REFERENCE_DEF = re.compile(r"^ {0,3}\[(?!\^)[^\]]+\]:\s*(<[^>\n]*>|\S+)")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
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
    """``(line, target)`` of every inline link, image and reference definition outside code."""
    fence: str | None = None
    for offset, line in enumerate(body.split("\n")):
        match = FENCE.match(line)
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
            continue
        if match:
            fence = match.group(1)
            continue
        if "](" not in line and "]:" not in line:
            continue
        if "`" in line:
            line = _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)
        for m in INLINE_LINK.finditer(line):
            yield first_line + offset, strip_brackets(m.group(1))
        ref = _REFERENCE_DEF.match(line)
        if ref:
            yield first_line + offset, strip_brackets(ref.group(1))


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
