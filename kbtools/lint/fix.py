"""`kb lint --fix`: the index rows and the log entry a new raw source or note is missing.

The loop of adding evidence is: write the raw file (``kb raw add``), write the note, list
both in the canonical index, append a dated entry to the log. The last two steps are
bookkeeping a tool can do: :func:`plan_fix` reads what the index check would report and
returns the rows and the entry to add; :func:`apply_fix` appends them. Raw files and
notes are only read, never written; existing index lines and log entries are never
edited (the log is append-only and the index keeps the order its author chose — new
rows go under one heading at its end, to be moved where they belong).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from kbtools.errors import KbError
from kbtools.kb.frontmatter import FrontmatterError, parse_frontmatter
from kbtools.kb.tree import KbFile, read_regular
from kbtools.lint.context import LintContext
from kbtools.lint.index_log import LISTED_STATUSES, index_members, log_entries

FIX_HEADING = "## Added by kb lint --fix"
LOG_OP = "ingest"


@dataclass(frozen=True)
class IndexRow:
    kind: str  # "raw" or "note"
    slug: str
    title: str
    rel: str  # relative to its layer root

    @property
    def line(self) -> str:
        if self.kind == "note":
            return f"- [{self.title}](/note/{self.slug}) — wiki page `{self.rel}`"
        return f"- `{self.slug}` — raw source: {self.title}"


@dataclass(frozen=True)
class FixPlan:
    rows: tuple[IndexRow, ...]
    log_heading: str | None  # None when there is nothing new to log
    log_body: str = ""

    @property
    def empty(self) -> bool:
        return not self.rows


def plan_fix(ctx: LintContext, today: dt.date) -> FixPlan:
    """The index rows missing for live canonical notes and raw sources, and one log entry
    naming them, dated ``today`` (or the log's latest date, if that is later: the log must
    stay in order)."""
    layout = ctx.layout
    try:
        index_text = read_regular(layout.index).decode("utf-8", "replace")
    except OSError:
        index_text = ""
    members = index_members(index_text, ctx)
    rows: list[IndexRow] = []
    for raw in ctx.raw.files:
        if not members.lists_raw(raw.rel, raw.slug, raw.locale):
            rows.append(IndexRow("raw", raw.slug, _title(raw), raw.rel))
    for note in ctx.notes.files:
        if note.locale != ctx.canonical or members.lists_note(note.slug):
            continue
        doc = ctx.note_doc(note)
        if isinstance(doc, FrontmatterError) or str(doc.fields.get("status")) not in LISTED_STATUSES:
            continue
        rows.append(IndexRow("note", note.slug, _title(note, doc.fields.get("title")), note.rel))
    if not rows:
        return FixPlan((), None)
    try:
        latest = max((e.date for e in log_entries(read_regular(layout.log).decode("utf-8", "replace"))), default="")
    except OSError:
        latest = ""
    date = max(today.isoformat(), latest)
    raws = [r for r in rows if r.kind == "raw"]
    notes = [r for r in rows if r.kind == "note"]
    if len(rows) == 1:
        title = rows[0].title
    else:
        parts = [f"{len(raws)} raw source(s)" if raws else "", f"{len(notes)} wiki page(s)" if notes else ""]
        title = ", ".join(p for p in parts if p)
    body = "\n".join(
        [f"- raw source `{r.slug}`: {r.title}" for r in raws] + [f"- wiki page `{r.slug}`: {r.title}" for r in notes]
    )
    return FixPlan(tuple(rows), f"## [{date}] {LOG_OP} | {title}", body)


def _title(file: KbFile, known: object = None) -> str:
    """The ``title`` of the file's frontmatter, else its slug (one line, no brackets that
    would break the row's Markdown)."""
    title = known
    if title is None:
        try:
            title = parse_frontmatter(read_regular(file.abspath)).fields.get("title")
        except (OSError, FrontmatterError):
            title = None
    text = " ".join(str(title).split()) if title not in (None, "") else file.slug
    return text.replace("[", "(").replace("]", ")")


def apply_fix(ctx: LintContext, plan: FixPlan) -> list[str]:
    """Append the plan's rows to the index and its entry to the log; the files written."""
    if plan.empty or plan.log_heading is None:
        return []
    layout = ctx.layout
    rows = "\n".join(row.line for row in plan.rows)
    index_text = _read(layout.index, "# Knowledge Base Index\n")
    headings = [line.rstrip() for line in index_text.split("\n") if line.startswith("## ")]
    if headings[-1:] == [FIX_HEADING]:  # a previous fix's section is still the last one: extend it
        index_text = index_text.rstrip("\n") + "\n"
    else:
        index_text = _ensure_blank_line(index_text) + FIX_HEADING + "\n\n"
    _write(layout.index, index_text + rows + "\n")
    log_text = _read(layout.log, "# Knowledge Base Log\n")
    _write(layout.log, _ensure_blank_line(log_text) + plan.log_heading + "\n\n" + plan.log_body + "\n")
    return [ctx.rel(layout.index), ctx.rel(layout.log)]


def _read(path: Path, fresh: str) -> str:
    try:
        return read_regular(path).decode("utf-8")
    except FileNotFoundError:
        return fresh
    except UnicodeDecodeError:
        raise KbError("not UTF-8 text, not fixed", str(path)) from None
    except OSError as exc:
        raise KbError(f"cannot read: {exc.strerror or exc}, not fixed", str(path)) from None


def _ensure_blank_line(text: str) -> str:
    return text.rstrip("\n") + "\n\n" if text.strip() else text


def _write(path: Path, text: str) -> None:
    from kbtools.fsio import atomic_write_bytes

    try:
        mode = path.stat().st_mode & 0o777  # a tracked file keeps its mode
    except FileNotFoundError:
        mode = 0o644
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, [text.encode("utf-8")], mode=mode)
    except OSError as exc:
        raise KbError(f"cannot write: {exc.strerror or exc}", str(path)) from None
