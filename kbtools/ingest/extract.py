"""Extraction: one source read and turned into its rows.

:func:`read_unit` runs the role gate, the control-plane filter per message, the derived
filter per kept record, redaction, and builds turn-sized candidates. It is a pure
top-level function of picklable data, so ``--jobs N`` runs it in N worker processes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from kbtools.ingest import hashing
from kbtools.ingest import rows as rows_schema
from kbtools.ingest.candidates import ROLES, KeptRecord, NoteIndex, SourceMeta, build_candidates
from kbtools.ingest.control_plane import is_internal_text
from kbtools.ingest.hashing import hash_identifier, iso_time, sha256_hex
from kbtools.ingest.ledger_read import PriorSource
from kbtools.ingest.ledger_write import SourceRows
from kbtools.ingest.model import SourceRef, SourceSettings, SourceUnit
from kbtools.ingest.reuse import cacheable_version, locator_key_of, may_reuse
from kbtools.ingest.rows import EventRow, ManifestRow, RejectedRow, Row
from kbtools.ingest.sources.common import CHANGED_DURING_READ, DECISIONS, UNKNOWN, answered
from kbtools.redact import REDACTION_VERSION, Redactor

ERROR_CHARS = 300
HINDSIGHT_CONFIDENCE = 0.55
NOT_SCANNED = "source_not_scanned_this_run"
INTERNAL_FILTERED = "internal_transcript_filtered"
MALFORMED_SOURCE = "malformed_or_unavailable_source"
NO_KNOWLEDGE = "no_reusable_technical_knowledge"
DERIVED_ONLY = "derived_excluded"


class ProcessContext(NamedTuple):
    """Everything :func:`read_unit` needs; all of it pickles."""

    settings: SourceSettings
    redactor: Redactor
    derived: Any  # kbtools.derived.filter.DerivedFilter | None
    notes: NoteIndex
    prior: Mapping[str, list[PriorSource]]
    max_candidate: int
    run_at: str
    by_locator: Mapping[str, PriorSource] = {}  # never changed: a Mapping, shared by default
    # A file modified after this (ns since the epoch) may change again within
    # its mtime granularity: its version is not cached (git's "racy" entries).
    racy_after_ns: int = 0
    # The derived filter's artifact set and threshold (see derived_key), part of
    # every candidate-lines digest: a changed set means stored lines are re-checked.
    derived_key: str = ""


class UnitOutcome(NamedTuple):
    identity: str
    source_key: str
    reuse: PriorSource | None = None  # take the prior rows of this entry
    rows: SourceRows | None = None  # or these fresh ones
    # What the read of a reused source found: created_at, updated_at, locator_key and the
    # version for the stat cache; None when the stat cache reused it unread.
    read: tuple[str, str, str, list[object] | None] | None = None

    @property
    def failed(self) -> bool:
        return self.rows is not None and self.rows.manifest["parse_status"] == "failed"


def read_unit(ref: SourceRef, ctx: ProcessContext) -> UnitOutcome:
    """One source read: its reusable prior entry (see :func:`may_reuse`) or its rows."""
    from kbtools.ingest import sources

    locator_key = locator_key_of(ref)
    unit = sources.load(ref, ctx.settings)
    project_key = hash_identifier(unit.project_identity)
    session_hash = hash_identifier(unit.session_identity)
    identity = hashing.hashed_identity_key(unit.tool, project_key, session_hash)
    key = hashing.source_key_of(identity, unit.content_hash)
    created_at, updated_at = iso_time(unit.created_at), iso_time(unit.updated_at)
    error = redact_error(ctx.redactor, unit.error)
    stat_key = cacheable_version(unit, ctx.racy_after_ns)
    # A missing store is reported as such on every run, never as "unchanged".
    for prior in ctx.prior.get(identity, ()) if unit.format != "unavailable" else ():
        if may_reuse(prior, source_key=key, error=error):
            return UnitOutcome(identity, key, reuse=prior, read=(created_at, updated_at, locator_key, stat_key))
    meta = SourceMeta(key, session_hash, project_key, unit.tool, unit.record_type, unit.format, created_at, updated_at)
    rows = build_rows(unit, meta, error, ctx)
    rows.manifest["locator_key"] = locator_key
    rows.manifest["stat_key"] = stat_key
    return UnitOutcome(identity, key, rows=rows)


def stat_cached(ref: SourceRef, ctx: ProcessContext) -> UnitOutcome | None:
    """The reusable prior entry of a source whose locator and version are unchanged, or None.

    Asked before :func:`read_unit`: a source whose locator and version (size, mtime,
    inode; a DB session's row versions) equal those recorded with a reusable
    prior entry is reused without being read, as git's index does.
    """
    if ref.stat_key is None:
        return None
    cached = ctx.by_locator.get(locator_key_of(ref))
    if cached is None or not may_reuse(cached, version=ref.stat_key):
        return None
    return UnitOutcome(cached.identity, cached.source_key, reuse=cached)


def redact_error(redactor: Redactor, error: str) -> str:
    if not error:
        return ""
    text = redactor.redact(" ".join(error.split())).text
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"


def build_rows(unit: SourceUnit, meta: SourceMeta, error: str, ctx: ProcessContext) -> SourceRows:
    kept, events, labelled, internal = _keep_records(unit, meta, ctx)
    candidates: list[Row] = []
    cut = False
    if not unit.skip_reason and unit.error != CHANGED_DURING_READ and unit.format != "unavailable":
        hindsight = unit.tool == "hindsight"
        candidates, cut = build_candidates(
            meta,
            kept,
            ctx.notes,
            max_candidate=ctx.max_candidate,
            max_text=ctx.settings.max_text,
            base_confidence=HINDSIGHT_CONFIDENCE if hindsight else 0.3,
            require_signal=not hindsight,
        )
    if error and not candidates:
        status, reason = "failed", MALFORMED_SOURCE
    elif candidates:
        status, reason = "processed", ""
    else:
        status = "skipped"
        reason = unit.skip_reason or (DERIVED_ONLY if events and not kept else NO_KNOWLEDGE)
    redacted = labelled or any(c["redactions"] for c in candidates) or error != unit.error
    counts = {name: unit.decisions[name] for name in DECISIONS if unit.decisions.get(name)}
    manifest = rows_schema.as_json(
        ManifestRow(
            source_key=meta.source_key,
            tool=meta.tool,
            record_type=meta.record_type,
            project_key=meta.project_key,
            session_hash=meta.session_key,
            created_at=meta.created_at,
            updated_at=meta.updated_at,
            format=meta.format,
            content_hash=unit.content_hash,
            parse_status=status,
            redaction_status=redaction_status(redacted),
            candidate_count=len(candidates),
            article_slugs=_slugs(candidates),
            skip_reason=reason,
            error=error,
            truncated=unit.truncated or cut,
            internal_filtered=internal,
            records=counts,
            unknown_records=counts.get(UNKNOWN, 0),
            run_at=ctx.run_at,
        )
    )
    rejected = [] if status == "processed" else [rejection(meta.source_key, reason, ctx.run_at)]
    return SourceRows.of(manifest, candidates, rejected, events)


def _keep_records(
    unit: SourceUnit, meta: SourceMeta, ctx: ProcessContext
) -> tuple[list[KeptRecord], list[Row], bool, int]:
    """Role gate → control-plane filter → derived filter → redaction, one message at a time.

    Also returns how many messages the control-plane filter dropped."""
    kept: list[KeptRecord] = []
    events: list[Row] = []
    labelled = False
    internal = 0
    # A source the readers' budget cut may hold stand-ins no reply follows (see ProseBudget).
    for record in answered(unit.records) if unit.truncated else unit.records:
        if record.role not in ROLES:
            continue
        text = _utf8(record.text)
        if not text.strip():
            continue
        if is_internal_text(text):
            internal += 1
            continue
        if ctx.derived is not None and (match := ctx.derived.match(text)) is not None:
            events.append(_derived_event(meta, record.index, record.role, record.created_at, match, ctx))
            continue
        red = ctx.redactor.redact(text)
        if not red.text.strip():
            continue  # nothing left once redacted
        labels = tuple(red.labels)
        labelled = labelled or bool(labels)
        # record.created_at is in iso_time's form already (the readers build records with make_record).
        kept.append(KeptRecord(record.role, red.text, record.created_at, record.index, labels))
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
            created_at=created_at,
            artifact={"name": redact(match.name).text, "path": redact(match.path).text, "sha256": match.sha256},
            overlap=match.overlap,
            threshold=ctx.derived.threshold,
            run_at=ctx.run_at,
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
