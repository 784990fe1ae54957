"""`kb ingest`: discover → reuse or process → ledgers.

For every discovered source the pipeline decides, by the contract's four
conditions, whether the prior ledger entry can be reused:

1. the prior ``parse_status`` is not ``failed`` — a failure may have been
   transient (a locked DB, a live writer), so a failed source is **always**
   processed again, even with an unchanged content hash;
2. the content hash is unchanged;
3. the prior ``redaction_status`` ends with the current ``:<REDACTION_VERSION>``
   — text redacted by older rules is never trusted;
4. the prior ledger is complete: as many candidate rows as ``candidate_count``,
   and a source without candidates has a rejected row saying why.

A reused source's candidates are re-checked by the control-plane filter (it
may have learnt new markers); what it drops is recorded as
``internal_transcript_filtered``. Otherwise :func:`read_unit` runs: role
gate, control-plane filter per message, derived filter per kept record,
redaction, turn-sized candidates. It is a pure top-level function of picklable
data, so ``--jobs N`` runs it in N worker processes (results are taken in
discovery order, so the ledgers do not depend on N).

Before reading a source at all, the stat cache compares its locator (hashed)
and version (size, mtime_ns, inode; a DB session's row versions) with those
recorded in the prior manifest: equal, and the entry reusable, means unchanged
bytes, so the source is reused unread, as git's index skips unchanged files.

Prior sources not seen this run are carried forward (``skipped``,
``source_not_scanned_this_run``) unless ``--prune`` is given; advisor rows,
unavailable-store placeholders and legacy prompt-history rows are dropped.
Exact duplicates are marked in ledger order.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import marshal
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from kbtools.config import Config
from kbtools.errors import KbError
from kbtools.ingest import hashing, ledger
from kbtools.ingest import rows as rows_schema
from kbtools.ingest.candidates import (
    ROLES,
    DedupKey,
    Deduplicator,
    KeptRecord,
    NoteIndex,
    SourceMeta,
    StoredKeys,
    build_candidates,
    candidate_id,
    is_internal_candidate,
    marking,
    split_messages,
)
from kbtools.ingest.control_plane import FILTER_VERSION, is_internal_text
from kbtools.ingest.hashing import fingerprint, hash_identifier, iso_time, sha256_hex
from kbtools.ingest.ledger import LedgerSink, PriorSource, PriorState, Row, SourceRows
from kbtools.ingest.memo import EMPTY, INTERNAL, KEPT, MemoStore, SourceMemo, memo_context
from kbtools.ingest.model import SourceRef, SourceSettings, SourceUnit
from kbtools.ingest.rows import EventRow, ManifestRow, RejectedRow
from kbtools.ingest.sources.common import CHANGED_DURING_READ
from kbtools.kb.layout import Layout
from kbtools.redact import REDACTION_VERSION, Redactor
from kbtools.redact.checks import local_account

if TYPE_CHECKING:
    from kbtools.ingest.workers import WorkerPool

# The journal is appended (and fsynced) once this many sources have new rows to journal.
PARTIAL_EVERY = 100
# Files modified this close to the run's start are read again next time (see _cacheable).
RACY_NS = 2_000_000_000
ERROR_CHARS = 300
HINDSIGHT_CONFIDENCE = 0.55

# How a redaction status written under the current rules ends.
_CURRENT_RULES = f":{REDACTION_VERSION}"

NOT_SCANNED = "source_not_scanned_this_run"
INTERNAL_FILTERED = "internal_transcript_filtered"
MALFORMED_SOURCE = "malformed_or_unavailable_source"
NO_KNOWLEDGE = "no_reusable_technical_knowledge"
DERIVED_ONLY = "derived_excluded"


class IngestRequest(NamedTuple):
    config: Config
    layout: Layout
    settings: SourceSettings
    output_dir: Path
    write: bool = False
    prune: bool = False
    derived_filter: bool = True
    jobs: int = 1


class ProcessContext(NamedTuple):
    """Everything :func:`process_unit` needs; all of it pickles."""

    settings: SourceSettings
    redactor: Redactor
    derived: Any  # kbtools.derived.filter.DerivedFilter | None
    notes: NoteIndex
    prior: Mapping[str, list[PriorSource]]
    max_candidate: int
    max_text: int
    run_at: str
    by_locator: Mapping[str, PriorSource] = {}  # never changed: a Mapping, shared by default
    # A file modified after this (ns since the epoch) may change again within
    # its mtime granularity: its version is not cached (git's "racy" entries).
    racy_after_ns: int = 0
    # The derived filter's artifact set and threshold (see derived_key), part of
    # every candidate-lines digest: a changed set means stored lines are re-checked.
    derived_key: str = ""
    # What extracting a changed source again takes from its previous version (see
    # kbtools.ingest.memo): the context memos are valid under, the stored memos and
    # the prior candidate lines of a source_key (both read through the run's own open
    # files: set only where the workers are forked, never pickled), and whether this
    # run's memos are kept.
    memo_context: str = ""
    memo_store: MemoStore | None = None
    prior_lines: Callable[[str], list[bytes]] | None = None
    keep_memos: bool = False


class UnitOutcome(NamedTuple):
    identity: str
    source_key: str
    created_at: str | None  # None: keep the prior row's (the source was not read)
    updated_at: str | None
    reuse: PriorSource | None = None  # take the prior rows of this entry
    rows: SourceRows | None = None  # or these fresh ones
    locator_key: str = ""
    stat_key: list[Any] | None = None  # the version read, for the stat cache
    unread: bool = False  # reused by the stat cache without reading the source

    @property
    def failed(self) -> bool:
        return self.rows is not None and self.rows.manifest["parse_status"] == "failed"


class Counts:
    """What the run tallies, as the summary reports it."""

    FIELDS = (
        "discovered",
        "processed",
        "unchanged",
        "skipped",
        "failed",
        "candidates",
        "rejected",
        "duplicates",
        "errors",
        "derived_excluded",
        "truncated_sources",
        "reused_unread",
        "carried_forward",
        "pruned",
        "internal_filtered",
    )
    __slots__ = FIELDS

    def __init__(self) -> None:
        self.discovered = self.processed = self.unchanged = self.skipped = self.failed = 0
        self.candidates = self.rejected = self.duplicates = self.errors = self.derived_excluded = 0
        self.truncated_sources = self.reused_unread = self.carried_forward = self.pruned = 0
        self.internal_filtered = 0

    def add(self, rows: SourceRows, duplicates: int) -> None:
        """A packed source's rows (see :func:`pack_rows`), ``duplicates`` of its candidates marked so."""
        manifest = rows.manifest
        status = manifest["parse_status"]
        setattr(self, status, getattr(self, status) + 1)
        self.candidates += len(rows.candidate_lines)
        self.duplicates += duplicates
        self.rejected += len(rows.rejected)
        self.errors += bool(manifest.get("error"))
        if rows.events:
            self.derived_excluded += sum(1 for e in rows.events if e.get("event") == DERIVED_ONLY)
        self.truncated_sources += bool(manifest.get("truncated"))
        self.internal_filtered += int(manifest.get("internal_filtered") or 0)


class IngestSummary(NamedTuple):
    values: dict[str, Any]
    warnings: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return dict(self.values)


# --------------------------------------------------------------------------- one source


def process_unit(ref: SourceRef, ctx: ProcessContext) -> UnitOutcome:
    """Load one source and either point at its reusable prior entry or build its rows.

    The stat cache comes first: a source whose locator and version (size, mtime,
    inode; a DB session's row versions) equal those recorded with a reusable
    prior entry is reused without being read, as git's index does.
    """
    cached = stat_cached(ref, ctx)
    return cached if cached is not None else read_unit(ref, ctx)


def read_unit(ref: SourceRef, ctx: ProcessContext) -> UnitOutcome:
    """:func:`process_unit` of a source the stat cache did not answer for: read it."""
    from kbtools.ingest import sources

    locator_key = locator_key_of(ref)
    unit = sources.load(ref, ctx.settings)
    project_key = hash_identifier(unit.project_identity)
    session_hash = hash_identifier(unit.session_identity)
    identity = hashing.hashed_identity_key(unit.tool, project_key, session_hash)
    key = hashing.source_key_of(identity, unit.content_hash)
    created_at, updated_at = iso_time(unit.created_at), iso_time(unit.updated_at)
    error = redact_error(ctx.redactor, unit.error)
    stat_key = _cacheable(unit, ctx)
    # A missing store is reported as such on every run, never as "unchanged".
    for prior in ctx.prior.get(identity, ()) if unit.format != "unavailable" else ():
        if prior.source_key == key and reusable(prior, error):
            return UnitOutcome(
                identity, key, created_at, updated_at, reuse=prior, locator_key=locator_key, stat_key=stat_key
            )
    meta = SourceMeta(key, session_hash, project_key, unit.tool, unit.record_type, unit.format, created_at, updated_at)
    memo = source_memo(identity, meta, ctx)
    rows = pack_rows(build_rows(unit, meta, error, ctx, memo))
    rows.manifest["locator_key"] = locator_key
    rows.manifest["stat_key"] = stat_key
    if memo is not None and memo.messages and ctx.keep_memos:
        rows.memo = memo.blob()
    return UnitOutcome(identity, key, created_at, updated_at, rows=rows, locator_key=locator_key, stat_key=stat_key)


def source_memo(identity: str, meta: SourceMeta, ctx: ProcessContext) -> SourceMemo | None:
    """The memo to extract a source with: seeded with its previous version's, if any."""
    store = ctx.memo_store
    if not ctx.memo_context or store is None:
        return None
    for prior in ctx.prior.get(identity, ()):
        blob = store.get(prior.source_key)
        if blob:
            read = ctx.prior_lines
            lines = functools.partial(read, prior.source_key) if read is not None else None
            return SourceMemo(ctx.memo_context, meta, blob, lines)
    # Nothing to recall: a memo is made only to be kept (not on a dry run).
    return SourceMemo(ctx.memo_context, meta) if ctx.keep_memos else None


def stat_cached(ref: SourceRef, ctx: ProcessContext) -> UnitOutcome | None:
    """The reusable prior entry of a source whose locator and version are unchanged, or None."""
    if ref.stat_key is None:
        return None
    locator_key = locator_key_of(ref)
    cached = ctx.by_locator.get(locator_key)
    if cached is None or cached.stat_key != ledger.stat_json(ref.stat_key) or not reusable(cached, cached.error):
        return None
    return UnitOutcome(
        cached.identity,
        cached.source_key,
        None,
        None,
        reuse=cached,
        locator_key=locator_key,
        stat_key=list(ref.stat_key),
        unread=True,
    )


def locator_key_of(ref: SourceRef) -> str:
    """What the stat cache keys a source by: where it was found, hashed (a locator is never persisted)."""
    return sha256_hex(f"{ref.tool}\0{ref.locator}")


def pack_rows(rows: SourceRows) -> SourceRows:
    """The same rows with each candidate as its ledger line and its :class:`DedupKey`
    (lines not stored yet are serialised here, in the worker that built them)."""
    if rows.packed:
        return rows
    lines = rows.lines_of_candidates()
    keys = [DedupKey.of(candidate) for candidate in rows.candidates]
    return dataclasses.replace(rows, candidates=[], candidate_lines=list(lines), candidate_keys=keys)


def _cacheable(unit: SourceUnit, ctx: ProcessContext) -> list[Any] | None:
    """The version to record for the stat cache, or None when it must be read next time."""
    version = unit.stat_key
    if version is None or unit.error or unit.format == "unavailable":
        return None
    if unit.format in ("jsonl", "json") and len(version) == 3 and isinstance(version[1], int):
        if version[1] > ctx.racy_after_ns:
            return None  # modified too recently to trust its mtime
    return list(version)


def reusable(prior: PriorSource, current_error: str) -> bool:
    """The contract's reuse conditions (the content hash is part of the source key).

    Unlike the reference, a source that keeps the same harmless error (one
    malformed line) is reusable: same bytes, same outcome; it is not
    re-extracted on every run.
    """
    return (
        prior.parse_status != "failed"
        and prior.redaction_status.endswith(_CURRENT_RULES)
        and prior.complete
        and prior.error == current_error
    )


def redact_error(redactor: Redactor, error: str) -> str:
    if not error:
        return ""
    text = redactor.redact(" ".join(error.split())).text
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"


def build_rows(
    unit: SourceUnit, meta: SourceMeta, error: str, ctx: ProcessContext, memo: SourceMemo | None = None
) -> SourceRows:
    kept, events, labelled, internal = _keep_records(unit, meta, ctx, memo)
    truncated = unit.truncated
    candidates: list[Row] = []
    if not unit.skip_reason and unit.error != CHANGED_DURING_READ and unit.format != "unavailable":
        hindsight = unit.tool == "hindsight"
        batch = build_candidates(
            meta,
            kept,
            ctx.notes,
            max_candidate=ctx.max_candidate,
            max_text=ctx.max_text,
            base_confidence=HINDSIGHT_CONFIDENCE if hindsight else 0.3,
            require_signal=not hindsight,
            memo=memo,
        )
        candidates = list(batch.candidates)
        truncated = truncated or batch.truncated
    if error and not candidates:
        status, reason = "failed", MALFORMED_SOURCE
    elif candidates:
        status, reason = "processed", ""
    else:
        status = "skipped"
        reason = unit.skip_reason or (DERIVED_ONLY if events and not kept else NO_KNOWLEDGE)
    redacted = labelled or any(c["redactions"] for c in candidates) or error != unit.error
    manifest = manifest_row(
        meta,
        content_hash=unit.content_hash,
        parse_status=status,
        redacted=bool(redacted),
        candidate_count=len(candidates),
        article_slugs=_slugs(candidates),
        skip_reason=reason,
        error=error,
        truncated=truncated,
        internal_filtered=internal,
        run_at=ctx.run_at,
    )
    rejected = [] if status == "processed" else [rejection(meta.source_key, reason, ctx.run_at)]
    return SourceRows(manifest, candidates, rejected, events)


def _keep_records(
    unit: SourceUnit, meta: SourceMeta, ctx: ProcessContext, memo: SourceMemo | None = None
) -> tuple[list[KeptRecord], list[Row], bool, int]:
    """Role gate → control-plane filter → derived filter → redaction, one message at a time
    (or the message's outcome as the ``memo`` recalls it).

    Also returns how many messages the control-plane filter dropped."""
    kept: list[KeptRecord] = []
    events: list[Row] = []
    labelled = False
    internal = 0
    for record in unit.records:
        if record.role not in ROLES:
            continue
        text = _utf8(record.text)
        if not text.strip():
            continue
        key = memo.message_key(record.role, text) if memo is not None else b""
        outcome = memo.recall_message(key) if memo is not None else None
        if outcome is None:
            if is_internal_text(text):
                outcome = INTERNAL
            elif ctx.derived is not None and (match := ctx.derived.match(text)) is not None:
                events.append(_derived_event(meta, record.index, record.role, record.created_at, match, ctx))
                continue  # never memoised: its event is made each time
            else:
                red = ctx.redactor.redact(text)
                outcome = (
                    EMPTY
                    if not red.text.strip()
                    else (red.text, tuple(red.labels))
                    if red.labels or red.text != text
                    else KEPT
                )
        if memo is not None:
            memo.note_message(key, outcome)
        if isinstance(outcome, tuple):
            red_text, labels = outcome
        elif outcome == KEPT:
            red_text, labels = text, ()
        else:
            internal += outcome == INTERNAL
            continue  # dropped: internal, or nothing left once redacted
        labelled = labelled or bool(labels)
        kept.append(KeptRecord(record.role, red_text, iso_time(record.created_at), record.index, labels, key))
    return kept, events, labelled, internal


def _utf8(text: str) -> str:
    """Lone surrogates (a `\\ud800` escape in a source) cannot be hashed or written as UTF-8."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


def _derived_event(meta: SourceMeta, index: int, role: str, created_at: str, match: Any, ctx: ProcessContext) -> Row:
    redact = ctx.redactor.redact
    return rows_schema.as_json(
        EventRow(
            event_id=sha256_hex(f"{meta.source_key}\0{DERIVED_ONLY}\0{index}"),
            event=DERIVED_ONLY,
            source_key=meta.source_key,
            tool=meta.tool,
            record_type=meta.record_type,
            message_index=index,
            role=role,
            created_at=iso_time(created_at),
            artifact={"name": redact(match.name).text, "path": redact(match.path).text, "sha256": match.sha256},
            overlap=match.overlap,
            threshold=ctx.derived.threshold,
            run_at=ctx.run_at,
        )
    )


def manifest_row(
    meta: SourceMeta,
    *,
    content_hash: str,
    parse_status: str,
    redacted: bool,
    candidate_count: int,
    article_slugs: list[str],
    skip_reason: str,
    error: str,
    truncated: bool,
    run_at: str,
    internal_filtered: int = 0,
) -> Row:
    return rows_schema.as_json(
        ManifestRow(
            source_key=meta.source_key,
            tool=meta.tool,
            record_type=meta.record_type,
            project_key=meta.project_key,
            session_hash=meta.session_key,
            created_at=meta.created_at,
            updated_at=meta.updated_at,
            format=meta.format,
            content_hash=content_hash,
            parse_status=parse_status,
            redaction_status=redaction_status(redacted),
            candidate_count=candidate_count,
            article_slugs=article_slugs,
            skip_reason=skip_reason,
            error=error,
            truncated=truncated,
            internal_filtered=internal_filtered,
            run_at=run_at,
        )
    )


def redaction_status(redacted: bool) -> str:
    return f"{'redacted' if redacted else 'none'}:{REDACTION_VERSION}"


def rejection(source_key: str, reason: str, run_at: str) -> Row:
    return rows_schema.as_json(
        RejectedRow(
            rejection_id=sha256_hex(f"{source_key}\0{reason}"), source_key=source_key, reason=reason, run_at=run_at
        )
    )


def _slugs(candidates: list[Row]) -> list[str]:
    return sorted({slug for c in candidates for slug in c.get("note_matches") or ()})


# --------------------------------------------------------------------------- prior rows


def prior_rows(
    prior: PriorState,
    digest: PriorSource,
    ctx: ProcessContext,
    *,
    run_at: str,
    status: str,
    skip_reason: str | None,
    created_at: str | None = None,
    updated_at: str | None = None,
    locator: tuple[str, list[Any] | None] | None = None,
) -> SourceRows:
    """A prior entry re-emitted (unchanged or carried forward), its candidates re-checked.

    Candidate lines whose digest says they were written under this control-plane
    filter, these redaction rules and this derived filter's artifact set are
    trusted as they are (never even parsed whole). Any other line is re-checked:
    control-plane text and text derived from the wiki's own pages are dropped
    (the latter logged as a ``derived_excluded`` event). A reused entry was
    redacted by the current rules (the reuse gate says so); a carried-forward
    one may be older: its text is redacted again before it is written back, so
    no text reaches disk without the current rules.
    """
    current = digest.redaction_status.endswith(_CURRENT_RULES)
    segment = (
        prior.trusted_segment(digest.source_key, digest.rows_digest, digest_context(ctx.derived_key))
        if current
        else None
    )
    rejected = [dict(r, run_at=run_at) for r in prior.rows_for("rejected", digest.source_key)]
    events = prior.rows_for("events", digest.source_key)
    dropped = 0
    redacted = False
    lines: list[bytes] = []
    if segment is not None:
        # The offset index vouches for these bytes (written with this digest, under
        # these rules, into the very file still open): copied unread.
        trusted = same_status = True  # lines copied unread leave the redaction status to the prior row
        count = len(segment.starts)
        rows = SourceRows(
            {}, [], rejected, events, candidate_lines=[None] * count, lines_digest=digest.rows_digest, segment=segment
        )
        _stored_keys(rows, prior, digest, segment.read, count)
    else:
        lines = prior.lines_for("candidates", digest.source_key)
        trusted = current and bool(digest.rows_digest) and rows_digest(lines, ctx.derived_key) == digest.rows_digest
        if trusted:
            rows = SourceRows({}, [], rejected, events, candidate_lines=list(lines), lines_digest=digest.rows_digest)
            _stored_keys(rows, prior, digest, lambda: lines, len(lines))
            redacted = any(b'"redactions":[' in line and b'"redactions":[]' not in line for line in lines)
            same_status = (
                redaction_status(redacted or digest.redaction_status.startswith("redacted:")) == digest.redaction_status
            )
    if trusted:
        # A row re-emitted as it was but for run_at: its line is copied, not re-encoded.
        if (
            same_status
            and len(rows.candidate_lines) == digest.candidate_count
            and _as_before(digest, status, skip_reason, created_at, locator)
        ):
            line = prior.restamped_manifest_line(digest, _json_bytes(run_at))
            if line is not None:
                return _verbatim(rows, digest, line)
        row = prior.manifest_row(digest)
        slugs = list(row.get("article_slugs") or ())
    else:
        row = prior.manifest_row(digest)
        kept: list[Row] = []
        for line in lines:
            try:
                candidate = json.loads(line)
            except ValueError:  # its keys looked whole when indexed (see ledger._candidate_keys)
                prior.malformed += 1
                continue
            candidate.pop(rows_schema.RUN_TAG, None)
            text = str(candidate.get("text", ""))
            if is_internal_candidate(text):
                dropped += 1
                continue
            if ctx.derived is not None and _derived_candidate(candidate, digest, ctx, events, run_at):
                continue
            if not current:
                candidate = _redact_again(candidate, ctx.redactor)
            kept.append(rows_schema.ordered(candidate, "candidates"))
        rows = SourceRows(row, kept, rejected, events, dropped)
        redacted = any(c.get("redactions") for c in kept)
        slugs = _slugs(kept)
    if dropped and not any(r.get("reason") == INTERNAL_FILTERED for r in rejected):
        rejected.append(rejection(digest.source_key, INTERNAL_FILTERED, run_at))
    return _reemitted(
        rows,
        row,
        digest,
        ctx,
        run_at=run_at,
        status=status,
        skip_reason=skip_reason,
        created_at=created_at,
        updated_at=updated_at,
        locator=locator,
        redacted=redacted,
        slugs=slugs,
        current=current,
        dropped=dropped,
    )


def _reemitted(
    rows: SourceRows,
    row: Row,
    digest: PriorSource,
    ctx: ProcessContext,
    *,
    run_at: str,
    status: str,
    skip_reason: str | None,
    created_at: str | None,
    updated_at: str | None,
    locator: tuple[str, list[Any] | None] | None,
    redacted: bool,
    slugs: list[str],
    current: bool,
    dropped: int,
) -> SourceRows:
    """The prior manifest ``row`` updated for this run (the tail of :func:`prior_rows`)."""
    error = str(row.get("error", ""))
    if not current:
        error = redact_error(ctx.redactor, error)
    row.update(
        parse_status=status,
        candidate_count=rows.candidate_count,
        article_slugs=slugs,
        error=error,
        run_at=run_at,
        redaction_status=redaction_status(redacted or digest.redaction_status.startswith("redacted:")),
    )
    row.setdefault("truncated", False)
    row["internal_filtered"] = int(row.get("internal_filtered") or 0) + dropped
    if skip_reason is not None:
        row["skip_reason"] = skip_reason
    if created_at is not None:
        row["created_at"], row["updated_at"] = created_at, updated_at
    if locator is not None:
        row["locator_key"], row["stat_key"] = locator
    row.setdefault("locator_key", "")
    row.setdefault("stat_key", None)
    row.setdefault("rows_digest", "")
    rows.manifest = rows_schema.ordered(row, "manifest")
    return rows


def _as_before(
    digest: PriorSource,
    status: str,
    skip_reason: str | None,
    created_at: str | None,
    locator: tuple[str, list[Any] | None] | None,
) -> bool:
    """Whether :func:`_reemitted` would leave the prior row as it was but for run_at
    (given candidate lines and a redaction status that stay the same)."""
    return (
        not digest.from_journal
        and digest.parse_status == status
        and (skip_reason is None or digest.skip_reason == skip_reason)
        and created_at is None  # the source was not read: its times are the prior row's
        and (locator is None or (locator[0] == digest.locator_key and ledger.stat_json(locator[1]) == digest.stat_key))
    )


@functools.lru_cache(maxsize=4)
def _json_bytes(value: str) -> bytes:
    return json.dumps(value).encode()


def _verbatim(rows: SourceRows, digest: PriorSource, line: bytes) -> SourceRows:
    """``rows`` with the prior manifest row ``line`` (already restamped) as their manifest."""
    rows.manifest_line = line
    rows.entry = digest.entry
    # What the run reads of a manifest row (see SourceRows.full_manifest for the rest).
    rows.manifest = {
        "source_key": digest.source_key,
        "tool": digest.tool,
        "record_type": digest.record_type,
        "format": digest.format,
        "parse_status": digest.parse_status,
        "error": digest.error,
        "truncated": digest.truncated,
        "internal_filtered": digest.internal_filtered,
        "rows_digest": digest.rows_digest,
    }
    return rows


def _stored_keys(
    rows: SourceRows, prior: PriorState, digest: PriorSource, lines: Callable[[], list[bytes]], count: int
) -> None:
    """The dedup keys of ``count`` trusted lines into ``rows``: from the key cache (see
    :class:`StoredKeys`), else read off the lines."""
    blob = prior.key_cache.get(digest.rows_digest, b"")
    try:
        cached = marshal.loads(blob) if blob else None
    except (ValueError, EOFError, TypeError):
        cached = None  # a damaged entry is a miss
    if isinstance(cached, tuple) and len(cached) == len(StoredKeys._fields) and len(cached[0]) == count:
        rows.stored_keys, rows.stored_blob = cached, blob
    else:
        rows.candidate_keys = [DedupKey.of_line(line) for line in lines()]


def _derived_candidate(
    candidate: Row, digest: PriorSource, ctx: ProcessContext, events: list[Row], run_at: str
) -> bool:
    """A stored candidate one of whose messages the derived filter now matches
    (the artifact set changed since it was written): logged, to be dropped."""
    for number, (role, message) in enumerate(split_messages(str(candidate.get("text", "")))):
        match = ctx.derived.match(message)
        if match is not None:
            meta = SourceMeta(
                digest.source_key, digest.session_hash, "", digest.tool, digest.record_type, digest.format, "", ""
            )
            # The source's message number is not stored with a candidate: the event is
            # placed by turn and message within it (unique, so is its event_id).
            index = int(candidate.get("turn_index") or 0) * 1000 + number
            events.append(_derived_event(meta, index, role, str(candidate.get("created_at") or ""), match, ctx))
            return True
    return False


# Candidate fields that hold text from the source (the rest are hashes, numbers, enums).
_TEXT_FIELDS = frozenset(rows_schema.KNOWLEDGE_FIELDS) - {"confidence", "source_refs"} | {"text", "summary"}


def _redact_again(candidate: Row, redactor: Redactor) -> Row:
    """Prior candidate text under the current rules (fingerprint and id follow the text)."""
    out = dict(candidate)
    labels = list(out.get("redactions") or [])

    def clean(value: str) -> str:
        red = redactor.redact(value)
        labels.extend(label for label in red.labels if label not in labels)
        return red.text

    for name in _TEXT_FIELDS:
        value = out.get(name)
        if isinstance(value, str):
            out[name] = clean(value)
        elif isinstance(value, list):
            out[name] = [clean(v) if isinstance(v, str) else v for v in value]
    out["redactions"] = labels
    if out["text"] != candidate.get("text"):
        out["fingerprint"] = fingerprint(str(out["text"]))
        turn, chunk = out.get("turn_index"), out.get("chunk_index")
        if isinstance(turn, int) and isinstance(chunk, int):
            out["candidate_id"] = candidate_id(str(out["source_key"]), out["fingerprint"], turn, chunk)
    return out


# Lines written with other candidate fields are re-checked (and written with these) once.
_CANDIDATE_SCHEMA = ",".join(rows_schema.ledger_fields("candidates"))


@functools.lru_cache(maxsize=4)
def digest_context(derived_key: str) -> str:
    """What a rows_digest is computed under: this control-plane filter, these
    redaction rules, this derived filter (``derived_key``) and these candidate fields."""
    return f"{FILTER_VERSION}\0{REDACTION_VERSION}\0{derived_key}\0{_CANDIDATE_SCHEMA}\0"


def rows_digest(lines: Iterable[bytes], derived_key: str) -> str:
    """What a source's candidate lines were written as, under :func:`digest_context`."""
    digest = hashlib.sha256(digest_context(derived_key).encode())
    for line in lines:
        digest.update(line)
    return digest.hexdigest()


def _dropped_on_carry(digest: PriorSource, scanned_prompt_tools: set[str]) -> bool:
    """Prior rows that describe no source any more."""
    if digest.tool == "omp" and digest.record_type == "advisor":
        return True  # a deleted advisor file leaves the ledger
    if digest.format == "unavailable":
        return True  # a placeholder for a missing store path, not a source
    # The older prompt-history scheme keyed the file by its content hash.
    return (
        digest.record_type == "prompt-history"
        and digest.tool in scanned_prompt_tools
        and digest.session_hash == hash_identifier(digest.content_hash)
    )


# --------------------------------------------------------------------------- the run


def new_run_id(moment: datetime) -> str:
    """Unique per run (the reference used the date alone, so a day's runs shared one id)."""
    return f"kb-ingest-{moment.strftime('%Y%m%dT%H%M%S')}{moment.microsecond // 1000:03d}Z-{secrets.token_hex(3)}"


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(moment: datetime) -> str:
    return iso_time(moment.timestamp() * 1000)


def load_derived_filter(request: IngestRequest, redactor: Redactor) -> tuple[Any, dict[str, Any], list[str]]:
    """(filter or None, settings for the summary, warnings); paths in them are redacted."""
    if not request.derived_filter or not request.config.derived.enabled:
        return (
            None,
            {"enabled": False, "reason": "disabled"},
            ["derived filter DISABLED: transcripts that quote the wiki's own pages are ingested as evidence"],
        )
    from kbtools.derived.filter import DerivedFilter

    # On --write the index is kept next to the ledgers and reused while no artifact changed.
    cache_dir = request.output_dir if request.write and request.output_dir.is_dir() else None
    derived = DerivedFilter.load(request.layout, threshold=request.config.derived.threshold, cache_dir=cache_dir)
    settings = {k: redactor.redact(v).text if isinstance(v, str) else v for k, v in derived.settings.items()}
    settings.setdefault("enabled", True)
    settings.setdefault("threshold", derived.threshold)
    settings.setdefault("artifact_count", derived.artifact_count)
    return derived, settings, [redactor.redact(w).text for w in derived.warnings]


def redaction_key(redactor: Redactor) -> str:
    """What the redaction of a text depends on besides the text: the rules' version, the
    settings and the account running kb (its name is redacted)."""
    return sha256_hex(f"{REDACTION_VERSION}\0{redactor.config!r}\0{local_account()}")


def derived_key(derived: Any) -> str:
    """The derived filter's artifact set (paths and content hashes), threshold and
    shingling, as one digest ("" without a filter)."""
    if derived is None:
        return ""
    artifacts = sorted((a.path, a.sha256) for a in derived.index.artifacts)
    shingles = sorted((derived.settings.get("shingle_params") or {}).items())
    return sha256_hex(json.dumps([derived.threshold, shingles, artifacts], separators=(",", ":")))


# Outcomes the workers may run ahead of the ledger writer, per worker.
WORKER_WINDOW = 16
WORKER_BATCH = 8
# Sources discovery may run ahead of the ledger writer (a reused one holds no rows).
LOOKAHEAD = 4096


def worker_pool(ctx: ProcessContext, jobs: int, inherited: tuple[int, ...] = ()) -> WorkerPool | None:
    """``jobs`` processes that run :func:`read_unit` on batches of refs (None for
    one job: :func:`process_unit` runs in the run's own process). Made before any thread starts (see
    :mod:`kbtools.ingest.workers`); ``inherited``: descriptors a worker must close (the lock)."""
    if jobs <= 1:
        return None
    from kbtools.ingest.workers import WorkerPool

    return WorkerPool(
        jobs, lambda task: [read_unit(ref, ctx) for ref in task], inherited=inherited, init=lambda: _warm_up(ctx)
    )


def _warm_up(ctx: ProcessContext) -> None:
    """What a worker prepares once, when its first task arrives (a rerun with nothing
    to read never pays for it): the source readers (each registry name is its
    module), the control-plane rules and every redaction rule."""
    from kbtools.ingest import sources

    sources.import_readers(ctx.settings)
    is_internal_text("")
    for rule in ctx.redactor.rules:
        _ = rule.regex, rule.anchor_set


def outcomes(refs: Iterator[SourceRef], ctx: ProcessContext, pool: WorkerPool | None) -> Iterator[UnitOutcome]:
    """:func:`process_unit` over ``refs``, in discovery order (the ledgers and the
    duplicate marking depend on it); with a ``pool`` it runs in worker processes,
    ``WORKER_BATCH`` sources a task (a task costs a pickle and a pipe round trip),
    at most ``jobs × WORKER_WINDOW`` sources in flight, so memory stays bounded
    (outcomes of reused sources waiting behind them hold no rows).

    The stat cache is asked here first: a source it answers for is never sent to
    a worker. Discovery runs up to ``LOOKAHEAD`` sources ahead of what is
    yielded, so the sources to read reach the workers before the run writes the
    reused ones. The pool is closed when ``refs`` are done, killed on any failure.
    """
    if pool is None:
        for ref in refs:
            yield process_unit(ref, ctx)
        return
    from collections import deque

    # A worker's ticket and how many sources its task holds, or an outcome at hand.
    window: deque[tuple[int, int] | UnitOutcome] = deque()
    batch: list[SourceRef] = []
    in_flight = 0  # sources
    ahead = pool.jobs * WORKER_WINDOW

    def submit() -> None:
        nonlocal in_flight
        window.append((pool.submit(tuple(batch)), len(batch)))
        in_flight += len(batch)
        batch.clear()

    def pop() -> list[UnitOutcome]:
        nonlocal in_flight
        item = window.popleft()
        if isinstance(item, UnitOutcome):
            return [item]
        ticket, size = item
        in_flight -= size
        return pool.result(ticket)  # type: ignore[no-any-return]

    try:
        for ref in refs:
            cached = stat_cached(ref, ctx)
            if cached is not None:
                if batch:
                    submit()  # what came before it goes first
                window.append(cached)
            else:
                batch.append(ref)
                if len(batch) >= WORKER_BATCH:
                    submit()
            # Wait on a worker only when enough tasks are in flight: a rerun's few
            # sources to read then overlap instead of each costing a round trip.
            while window and (in_flight >= ahead or len(window) >= LOOKAHEAD):
                yield from pop()
            pool.pump()  # keep the workers busy while discovery goes on
        if batch:
            submit()
        while window:
            yield from pop()
            pool.pump()
    except BaseException:
        pool.kill()
        raise
    pool.close()


def discover(settings: SourceSettings) -> Iterator[SourceRef]:
    from kbtools.ingest import sources

    return sources.discover_all(settings)


def run_ingest(request: IngestRequest, *, progress: Callable[[int], None] | None = None) -> IngestSummary:
    started = _now()
    run_id = new_run_id(started)
    run_at = _iso(started)
    config = request.config
    redactor = Redactor(config.redaction)
    derived, derived_settings, warnings = load_derived_filter(request, redactor)
    out = request.output_dir
    lock = ledger.IngestLock(out) if request.write else None
    prior = PriorState()
    memos = MemoStore(out)
    sink: LedgerSink = LedgerSink()
    pool: WorkerPool | None = None
    try:
        prior = PriorState.load(out)
        rules = redaction_key(redactor)
        memos = MemoStore.open(out, rules, purge=request.write)
        notes = NoteIndex.load(request.layout.note_root)
        dkey = derived_key(derived)
        ctx = ProcessContext(
            settings=request.settings,
            redactor=redactor,
            derived=derived,
            notes=notes,
            prior=prior.by_identity,
            max_candidate=config.ingest.max_candidate,
            max_text=request.settings.max_text,
            run_at=run_at,
            by_locator=prior.by_locator,
            racy_after_ns=int(started.timestamp() * 1e9) - RACY_NS,
            derived_key=dkey,
            memo_context=memo_context(FILTER_VERSION, rules, dkey, notes.key(), config.ingest.max_candidate),
            memo_store=memos,
            prior_lines=functools.partial(prior.lines_for, "candidates"),
            keep_memos=request.write,
        )
        # The workers first: the ledger writer below starts a thread.
        pool = worker_pool(ctx, request.jobs, (lock.fileno,) if lock is not None else ())
        if request.write:
            ledger.remove_stale_files(out)
            sink = ledger.WriteSink(out, run_id)
            sink.digest_context = digest_context(ctx.derived_key)
        counts = Counts()
        dedup = Deduplicator()
        state = _RunState(run_id, request, sink, counts, dedup, ctx)
        for outcome in outcomes(discover(request.settings), ctx, pool):
            counts.discovered += 1
            state.take(outcome, prior, run_at)
            if state.journalled >= PARTIAL_EVERY:
                state.persist()
            if progress is not None:
                progress(counts.discovered)
        scanned_prompt_tools = state.prompt_tools
        for identity, group in prior.by_identity.items():
            if identity in state.seen:
                continue
            for digest in group:
                if digest.source_key in state.emitted or _dropped_on_carry(digest, scanned_prompt_tools):
                    continue
                if digest.parse_status == "failed" and identity in state.discovered:
                    continue  # an old failure of a source that failed again (or differently) now
                # A store that failed this run may be back next run: its rows are kept.
                if request.prune and digest.tool not in state.failed_tools:
                    counts.pruned += 1
                    continue
                rows = prior_rows(prior, digest, ctx, run_at=run_at, status="skipped", skip_reason=NOT_SCANNED)
                counts.carried_forward += 1
                state.emit(rows, journal=False)
        state.persist()
        finished = _now()
        summary = _summary(run_id, started, finished, request, counts, dedup, prior, derived_settings)
        if request.write:
            sink.commit()
            if state.key_cache != prior.key_cache:
                ledger.write_key_cache(out, state.key_cache)
            memos.commit(compact=counts.pruned > 0)
            _write_reports(request, summary, redactor)
        return IngestSummary(summary, tuple(warnings))
    except OSError as exc:
        sink.abort()
        where = exc.filename if isinstance(exc.filename, str) else str(out)
        raise KbError(f"cannot write the ingest ledgers: {exc.strerror or exc}", where) from None
    except BaseException:
        sink.abort()
        raise
    finally:
        if pool is not None:
            pool.kill()  # a no-op once outcomes() closed it
        prior.close()
        memos.close()
        if lock is not None:
            lock.release()


class _RunState:
    """What the loop accumulates: dedup, counts, journal cadence, seen identities."""

    def __init__(
        self,
        run_id: str,
        request: IngestRequest,
        sink: LedgerSink,
        counts: Counts,
        dedup: Deduplicator,
        ctx: ProcessContext,
    ) -> None:
        self.run_id = run_id
        self.ctx = ctx
        self.request = request
        self.sink = sink
        self.counts = counts
        self.dedup = dedup
        self.seen: set[str] = set()
        self.discovered: set[str] = set()
        self.failed_tools: set[str] = set()
        self.emitted: set[str] = set()
        self.prompt_tools: set[str] = set()
        self.last_key = ""
        self.batches = 0
        # Sources journalled since the last persist: what a kill -9 could lose
        # (reused sources need no journal — they are in the prior ledgers).
        self.journalled = 0
        self.key_cache: dict[str, bytes] = {}

    def take(self, outcome: UnitOutcome, prior: PriorState, run_at: str) -> None:
        if outcome.source_key in self.emitted:
            return  # the same source (same identity and bytes) found twice, e.g. a copied file
        self.discovered.add(outcome.identity)
        if outcome.rows is not None and (outcome.failed or outcome.rows.manifest["format"] == "unavailable"):
            # --prune keeps this tool's rows: its store was not read (a missing
            # store may be a moved one or an unset CODEX_HOME, not deleted sessions).
            self.failed_tools.add(outcome.rows.manifest["tool"])
        if not outcome.failed:
            # A failed read does not supersede what earlier runs kept of this source.
            self.seen.add(outcome.identity)
        if outcome.reuse is not None:
            # Resuming an interrupted run: what it processed counts as processed, so
            # the ledgers equal those of an uninterrupted run.
            digest = outcome.reuse
            status = digest.parse_status if digest.from_journal else "unchanged"
            # An unread source's locator and version are the prior row's (the stat cache said so).
            rows = prior_rows(
                prior,
                digest,
                self.ctx,
                run_at=run_at,
                status=status,
                skip_reason=None,
                created_at=outcome.created_at,
                updated_at=outcome.updated_at,
                locator=None if outcome.unread else (outcome.locator_key, outcome.stat_key),
            )
            self.counts.reused_unread += outcome.unread
            # Unchanged rows are already in the prior ledgers: journal them only if they changed.
            self.emit(rows, journal=rows.internal_dropped > 0)
        else:
            assert outcome.rows is not None
            self.emit(outcome.rows, journal=True)
        row = outcome.rows.manifest if outcome.rows is not None else None
        if row is not None and row["record_type"] == "prompt-history":
            self.prompt_tools.add(row["tool"])
        elif outcome.reuse is not None and outcome.reuse.record_type == "prompt-history":
            self.prompt_tools.add(outcome.reuse.tool)
        self.last_key = outcome.source_key

    def emit(self, rows: SourceRows, *, journal: bool) -> None:
        self.emitted.add(rows.manifest["source_key"])
        rows = pack_rows(rows)
        if rows.stored_keys is not None:
            stored = StoredKeys._make(rows.stored_keys)
            duplicates, twins = self.dedup.mark_stored(stored)
            if twins is None:  # every line keeps its marking: written as it is
                self._write(rows, rows.lines_digest, rows.stored_blob, duplicates, journal=journal)
                return
            marks: list[tuple[object, object]] = [marking(twin) for twin in twins]
            written = stored.markings
            stored = stored.marked(marks)
        else:
            keys = rows.candidate_keys
            marks = [marking(self.dedup.mark(key)) for key in keys]
            written = [key.marking for key in keys]
            stored = StoredKeys.of(keys, marks)
        remarked = marks != written
        if rows.segment is not None and remarked:
            rows.materialize()  # rare: a line to mark again must be read
        duplicates = 0
        lines: list[bytes | None] = []
        for line, mark, was in zip(rows.candidate_lines, marks, written):
            duplicates += mark[0] == "duplicate"
            if mark != was:  # rare: parse, mark, serialise again
                assert line is not None
                candidate = json.loads(line)
                candidate["decision"], candidate["duplicate_of"] = mark
                line = rows_schema.dumps(candidate)
            lines.append(line)
        rows.candidate_lines = lines
        # Trusted lines written back as they are keep the digest they were checked against.
        digest = (
            rows.lines_digest
            if rows.lines_digest and not remarked
            else rows_digest((line for line in lines if line is not None), self.ctx.derived_key)
        )
        blob = marshal.dumps(stored.plain())  # type: ignore[arg-type]
        self._write(rows, digest, blob, duplicates, journal=journal)

    def _write(self, rows: SourceRows, digest: str, keys_blob: bytes, duplicates: int, *, journal: bool) -> None:
        """``rows`` to the sink: their candidate lines, ``duplicates`` of them marked so, are
        as ``digest`` says, and ``keys_blob`` is their :class:`StoredKeys` for the key cache."""
        if rows.manifest["rows_digest"] != digest:
            rows.full_manifest()["rows_digest"] = digest
        self.key_cache[digest] = keys_blob
        if self.ctx.memo_store is not None:
            self.ctx.memo_store.keep(rows.manifest["source_key"], rows.memo)
        self.counts.add(rows, duplicates)
        self.sink.emit(rows, journal=journal)
        self.journalled += journal

    def persist(self) -> None:
        if not self.request.write or not self.sink.pending:
            return  # nothing new since the last checkpoint (an unchanged rerun writes none)
        self.sink.persist_partial()
        self.batches += 1
        self.journalled = 0
        c = self.counts
        ledger.write_private_text(
            self.request.layout.checkpoint,
            "\n".join(
                [
                    "# Current task",
                    "",
                    f"- Run ID: {self.run_id}",
                    "- Status: parsing",
                    f"- Current batch: {c.discovered} source records",
                    f"- Resume cursor: {self.last_key}",
                    f"- Persisted batches: {self.batches}",
                    f"- Processed: {c.processed}",
                    f"- Candidates: {c.candidates}",
                    f"- Rejected: {c.rejected}",
                    f"- Failed: {c.failed}",
                    "- Next action: rerun `kb ingest --write`; partial ledgers and unchanged content hashes are reused",
                    "",
                ]
            ),
        )


def _summary(
    run_id: str,
    started: datetime,
    finished: datetime,
    request: IngestRequest,
    c: Counts,
    dedup: Deduplicator,
    prior: PriorState,
    derived_settings: dict[str, Any],
) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "started_at": _iso(started),
        "finished_at": _iso(finished),
        "dry_run": not request.write,
        "discovered": c.discovered,
        "processed": c.processed,
        "unchanged": c.unchanged,
        "skipped": c.skipped,
        "failed": c.failed,
        "candidates": c.candidates,
        "rejected": c.rejected,
        "duplicates": c.duplicates,
        "duplicate_code_blocks": dedup.duplicate_code_blocks,
        "duplicate_error_logs": dedup.duplicate_error_logs,
        "errors": c.errors,
        "derived_excluded": c.derived_excluded,
        "internal_filtered": c.internal_filtered,
        "truncated_sources": c.truncated_sources,
        "reused_unread": c.reused_unread,
        "carried_forward": c.carried_forward,
        "pruned": c.pruned,
        "malformed_prior_rows": prior.malformed,
        "resumed_from_partial": prior.has_partial,
        "redaction_version": REDACTION_VERSION,
        "derived_filter": derived_settings,
    }


def _write_reports(request: IngestRequest, summary: dict[str, Any], redactor: Redactor) -> None:
    labels = [
        ("Run ID", "run_id"),
        ("Started", "started_at"),
        ("Finished", "finished_at"),
        ("Discovered records", "discovered"),
        ("Processed", "processed"),
        ("Unchanged", "unchanged"),
        ("Skipped", "skipped"),
        ("Failed", "failed"),
        ("Candidates", "candidates"),
        ("Rejected", "rejected"),
        ("Exact duplicates", "duplicates"),
        ("Duplicate code blocks", "duplicate_code_blocks"),
        ("Duplicate error logs", "duplicate_error_logs"),
        ("Errors", "errors"),
        ("Derived excluded", "derived_excluded"),
        ("Internal text filtered", "internal_filtered"),
        ("Truncated sources", "truncated_sources"),
        ("Carried forward", "carried_forward"),
        ("Pruned", "pruned"),
        ("Malformed prior rows", "malformed_prior_rows"),
        ("Redaction version", "redaction_version"),
    ]
    derived = summary["derived_filter"]
    derived_line = (
        f"enabled, threshold {derived.get('threshold')}, {derived.get('artifact_count', 0)} artifact(s)"
        if derived.get("enabled")
        else "DISABLED"
    )
    lines = ["# KB ingest run summary", "", "- Status: parsed; synthesis pending", "- Dry run: no"]
    lines += [f"- {label}: {summary[key]}" for label, key in labels]
    lines += [f"- Derived filter: {derived_line}", ""]
    text = redactor.redact("\n".join(lines)).text
    ledger.write_private_text(request.output_dir / ledger.SUMMARY_FILE, text)
    c = summary
    ledger.write_private_text(
        request.layout.checkpoint,
        redactor.redact(
            "\n".join(
                [
                    "# Current task",
                    "",
                    f"- Run ID: {c['run_id']}",
                    "- Status: parsing complete; synthesis pending",
                    f"- Discovered records: {c['discovered']}",
                    f"- Processed: {c['processed']}",
                    f"- Unchanged: {c['unchanged']}",
                    f"- Skipped: {c['skipped']}",
                    f"- Failed: {c['failed']}",
                    f"- Candidates: {c['candidates']}",
                    f"- Rejected: {c['rejected']}",
                    f"- Current batch: {c['discovered']}/{c['discovered']}",
                    "- Next action: review candidates and match existing knowledge",
                    "- Resume: rerun; partial ledgers and unchanged identity/content hashes are reused",
                    "",
                ]
            )
        ).text,
    )
