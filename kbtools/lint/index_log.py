"""Checks 13–15: the canonical index lists every live note and raw source; the log is
dated, in order and append-only."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from kbtools.kb.frontmatter import FrontmatterError
from kbtools.lint.context import LintContext
from kbtools.lint.notes import site_note_target, strip_brackets
from kbtools.lint.problem import Problem
from kbtools.lint.raw import append_only_violations

LISTED_STATUSES = ("active", "provisional")
# The index is read as text, in one pass (it lists thousands of entries): `[text](target)`
# and `![alt](target)` targets, reference definitions, and code fences around log entries.
INLINE_LINK = re.compile(r"\]\(\s*(<[^>\n]*>|[^)\s]+)")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_BACKTICKED = re.compile(r"`([^`\n]+)`")
_DATED_ENTRY = re.compile(r"^## \[(\d{4}-\d{2}-\d{2})\] .+")
_LEVEL2 = re.compile(r"^## ")
_REFERENCE_DEF_ML = re.compile(r"^ {0,3}\[(?!\^)[^\]\n]+\]:[ \t]*(<[^>\n]*>|\S+)", re.MULTILINE)


@dataclass(frozen=True)
class IndexMembers:
    """What an index lists: exact link targets and backticked names, never substrings."""

    notes: frozenset[str]  # canonical note slugs linked to
    raw: frozenset[str]  # raw paths (relative to the raw root) linked to
    backticked: frozenset[str]

    def lists_note(self, slug: str) -> bool:
        return slug in self.notes or slug in self.backticked

    def lists_raw(self, rel: str, slug: str, locale: str) -> bool:
        return rel in self.raw or slug in self.backticked or f"{locale}/{slug}" in self.backticked


@dataclass(frozen=True)
class LogEntry:
    heading: str
    date: str
    line: int
    text: str  # heading and body up to the next level-2 heading, trailing blank lines dropped


def check_index_log(ctx: LintContext) -> list[Problem]:
    return _check_index(ctx) + _check_log(ctx)


def index_members(text: str, ctx: LintContext) -> IndexMembers:
    index_dir = ctx.layout.index.parent
    note_dir = os.path.normpath(ctx.layout.note_root / ctx.canonical)
    raw_dir = os.path.normpath(ctx.layout.raw_root)
    notes: set[str] = set()
    raw: set[str] = set()
    for target in link_targets(text):
        site = site_note_target(target)
        if site is not None:
            if site[0] in (None, ctx.canonical):
                notes.add(site[1])
            continue
        if target.startswith("/") or "://" in target or target.startswith("#"):
            continue
        resolved = os.path.normpath(index_dir / target.split("#", 1)[0])
        for base, bucket in ((note_dir, notes), (raw_dir, raw)):
            if resolved.startswith(base + os.sep):
                rel = Path(resolved[len(base) + 1 :]).as_posix()
                bucket.add(rel[:-3] if bucket is notes and rel.endswith(".md") else rel)
    backticked = {m.group(1).strip() for m in _BACKTICKED.finditer(text)}
    return IndexMembers(frozenset(notes), frozenset(raw), frozenset(backticked))


def link_targets(text: str) -> set[str]:
    """Every inline link and reference-definition target of a whole document.

    One pass over the text rather than line by line: an index lists thousands of entries.
    """
    found = {strip_brackets(m.group(1)) for m in INLINE_LINK.finditer(text)}
    found |= {strip_brackets(m.group(1)) for m in _REFERENCE_DEF_ML.finditer(text)}
    return found


def _check_index(ctx: LintContext) -> list[Problem]:
    layout = ctx.layout
    index_rel = ctx.rel(layout.index)
    try:
        text = ctx.files.read(index_rel).decode("utf-8", "replace")
    except OSError:  # missing, a folder, or not a regular file
        return [Problem("index-log-missing", f"missing canonical index: {index_rel}", index_rel)]
    members = index_members(text, ctx)
    problems: list[Problem] = []
    dropped = _dropped_from_index(ctx, members)
    for note in ctx.notes.files:
        if note.locale != ctx.canonical or members.lists_note(note.slug):
            continue
        if not (ctx.note_in_scope(note.rel) or note.slug in dropped):
            continue
        doc = ctx.note_doc(note)
        if isinstance(doc, FrontmatterError):
            continue  # reported by the notes checks
        if str(doc.fields.get("status")) in LISTED_STATUSES:
            problems.append(
                Problem("index-membership", f"active/provisional wiki page missing from index: {note.rel}", index_rel)
            )
    for raw in ctx.raw.files:
        if not members.lists_raw(raw.rel, raw.slug, raw.locale):
            problems.append(Problem("index-membership", f"raw source missing from index: {raw.slug}", index_rel))
    return problems


def _dropped_from_index(ctx: LintContext, members: IndexMembers) -> set[str]:
    """Slugs the staged index no longer lists (``--staged`` checks only these unchanged notes)."""
    if ctx.scope is None or ctx.history is None:
        return set()
    (step,) = ctx.history.steps
    old = step.text("old", ctx.rel(ctx.layout.index))
    new = step.text("new", ctx.rel(ctx.layout.index))
    if old is None or new is None:
        return set()
    # Only lines the staged index removed can have dropped a note from it.
    removed_lines = set(old.split("\n")) - set(new.split("\n"))
    before = index_members("\n".join(sorted(removed_lines)), ctx)
    return {s for s in before.notes | before.backticked if not members.lists_note(s)}


def log_entries(text: str) -> list[LogEntry]:
    """Dated ``## [YYYY-MM-DD] <op> | <title>`` entries in file order (code fences skipped)."""
    entries: list[LogEntry] = []
    current: list[str] | None = None
    fence: str | None = None
    lines = text.split("\n")

    def close() -> None:
        if current is not None:
            while current and not current[-1].strip():
                current.pop()
            entries[-1] = LogEntry(entries[-1].heading, entries[-1].date, entries[-1].line, "\n".join(current))

    for line_no, line in enumerate(lines, start=1):
        fence_match = FENCE.match(line)
        if fence is not None:
            if fence_match and fence_match.group(1)[0] == fence[0]:
                fence = None
        elif fence_match:
            fence = fence_match.group(1)
        elif _LEVEL2.match(line):
            close()
            dated = _DATED_ENTRY.match(line)
            if dated:
                heading = line.rstrip()
                entries.append(LogEntry(heading, dated.group(1), line_no, heading))
                current = [line.rstrip()]
            else:
                current = None
            continue
        if current is not None:
            current.append(line.rstrip())
    close()
    return entries


def _check_log(ctx: LintContext) -> list[Problem]:
    layout = ctx.layout
    log_rel = ctx.rel(layout.log)
    name = layout.log.name
    try:
        text = ctx.files.read(log_rel).decode("utf-8", "replace")
    except OSError:
        return [Problem("index-log-missing", f"missing canonical log: {log_rel}", log_rel)]
    entries = log_entries(text)
    problems: list[Problem] = []
    if not entries:
        problems.append(Problem("log-entries", f"{name} has no parseable dated entry", log_rel))
    latest = ""
    for entry in entries:
        if entry.date < latest:
            problems.append(Problem("log-entries", f"{name} entry out of order: {entry.heading}", log_rel, entry.line))
        latest = max(latest, entry.date)
    if ctx.history is not None:
        for step in ctx.history.steps:
            status = step.status_of(log_rel)
            old, new = step.text("old", log_rel), step.text("new", log_rel)
            if status is None or status.status[0] != "M" or old is None or new is None:
                continue
            before = log_entries(old)
            heading_of = {e.text: e.heading for e in before}
            changed = append_only_violations([e.text for e in before], [e.text for e in log_entries(new)])
            for entry_text in changed:
                problems.append(
                    Problem(
                        "log-entries",
                        f"{name} history rewritten: {heading_of[entry_text]}{ctx.step_label(step)}",
                        log_rel,
                    )
                )
    return problems
