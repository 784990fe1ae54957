"""`kb ingest`: discover → reuse or extract → ledgers. The run loop.

Where the contract lives:

- :func:`kbtools.ingest.reuse.may_reuse`: when a prior entry is reused (the four
  conditions; the stat cache's "unchanged bytes");
- :mod:`kbtools.ingest.extract`: a source read and turned into rows;
- :mod:`kbtools.ingest.reemit`: a prior source's rows written again (reused, carried forward);
- :mod:`kbtools.ingest.reports`: counts, summary, run-summary.md, the checkpoint;
- :mod:`kbtools.ingest.rows`: the row schema; ``ledger_read``, ``ledger_write``, ``lock``:
  the ledgers on disk; :mod:`kbtools.ingest.caches`: what is kept only for speed.

Prior sources not seen this run are carried forward (``skipped``,
``source_not_scanned_this_run``) unless ``--prune`` is given; unavailable-store
placeholders and legacy prompt-history rows are dropped. Exact duplicates are
marked in ledger order.
"""

from __future__ import annotations

import json
import marshal
import os
import secrets
from collections import deque
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from kbtools.config import Config
from kbtools.errors import KbError
from kbtools.ingest import caches, ledger
from kbtools.ingest.candidates import NoteIndex
from kbtools.ingest.control_plane import is_internal_text
from kbtools.ingest.dedup import Deduplicator, StoredKeys, marking
from kbtools.ingest.extract import (
    NOT_SCANNED,
    ProcessContext,
    UnitOutcome,
    read_unit,
    stat_cached,
)
from kbtools.ingest.hashing import sha256_hex
from kbtools.ingest.ledger_read import PriorState
from kbtools.ingest.ledger_write import SourceRows, WriteSink
from kbtools.ingest.lock import lock_output
from kbtools.ingest.model import SourceRef, SourceSettings
from kbtools.ingest.reemit import digest_context, dropped_on_carry, prior_rows, rows_digest
from kbtools.ingest.reports import Counts, IngestSummary, iso_moment, summary_of, write_checkpoint, write_reports
from kbtools.ingest.reuse import RACY_NS
from kbtools.ingest.rows import dumps
from kbtools.kb.layout import Layout
from kbtools.redact import Redactor

if TYPE_CHECKING:
    from kbtools.derived.filter import DerivedFilter
    from kbtools.ingest.workers import WorkerPool
    from kbtools.review.index_builder import IndexDraft

# The journal is appended (and fsynced) once this many sources have new rows to journal.
PARTIAL_EVERY = 100


class IngestRequest(NamedTuple):
    config: Config
    layout: Layout
    settings: SourceSettings
    output_dir: Path
    write: bool = False
    prune: bool = False
    derived_filter: bool = True
    jobs: int = 1


def new_run_id(moment: datetime) -> str:
    """Unique per run (the reference used the date alone, so a day's runs shared one id)."""
    return f"kb-ingest-{moment.strftime('%Y%m%dT%H%M%S')}{moment.microsecond // 1000:03d}Z-{secrets.token_hex(3)}"


def load_derived_filter(
    request: IngestRequest, redactor: Redactor
) -> tuple[DerivedFilter | None, dict[str, object], list[str]]:
    """(filter or None, settings for the summary, warnings); paths in them are redacted."""
    if not request.derived_filter or not request.config.derived.enabled:
        return (
            None,
            {"enabled": False, "reason": "disabled"},
            ["derived filter DISABLED: transcripts that quote the wiki's own pages are ingested as evidence"],
        )
    from kbtools.derived.filter import DerivedFilter

    # On --write the index is kept next to the ledgers and reused while no artifact changed.
    cache_dir = request.output_dir if request.write and request.output_dir.is_dir() and caches.enabled() else None
    derived = DerivedFilter.load(request.layout, threshold=request.config.derived.threshold, cache_dir=cache_dir)
    settings: dict[str, object] = {
        k: redactor.redact(v).text if isinstance(v, str) else v for k, v in derived.settings.items()
    }
    settings.setdefault("enabled", True)
    settings.setdefault("threshold", derived.threshold)
    settings.setdefault("artifact_count", derived.artifact_count)
    return derived, settings, [redactor.redact(w).text for w in derived.warnings]


def derived_key(derived: DerivedFilter | None) -> str:
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


def _warm_up(ctx: ProcessContext) -> None:
    """What a worker prepares once, when its first task arrives (a rerun with nothing
    to read never pays for it): the source readers (each registry name is its
    module) and the control-plane rules. Redaction rules stay compiled on first use:
    all of them cost a worker 0.3 s, and a store wakes a tenth of them."""
    from kbtools.ingest import sources

    sources.import_readers(ctx.settings)
    is_internal_text("")


def outcomes(refs: Iterator[SourceRef], ctx: ProcessContext, pool: WorkerPool | None) -> Iterator[UnitOutcome]:
    """:func:`stat_cached` or else :func:`read_unit` of each of ``refs``, in discovery order (the ledgers and the
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
            cached = stat_cached(ref, ctx)
            yield cached if cached is not None else read_unit(ref, ctx)
        return
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


def run_ingest(
    request: IngestRequest,
    *,
    progress: Callable[[int], None] | None = None,
    on_discovered: Callable[[int], None] | None = None,
    index_draft: IndexDraft | None = None,
) -> IngestSummary:
    """``progress`` is called with the number of sources done after each; ``on_discovered``,
    if given, once with the number of sources found before any is read (discovery is then
    finished first, so that a progress bar has its total). ``index_draft`` is started on a
    first run with workers (no prior ledgers): it builds the search index of the candidate
    lines as they are written (:mod:`kbtools.review.index_builder`); the caller adopts it."""
    started = datetime.now(UTC)
    run_id = new_run_id(started)
    run_at = iso_moment(started)
    config = request.config
    redactor = Redactor(config.redaction)
    out = request.output_dir
    # The lock first: it checks the output folder before anything is written into it.
    lock = lock_output(out) if request.write else None
    try:
        derived, derived_settings, warnings = load_derived_filter(request, redactor)
    except BaseException:
        if lock is not None:
            os.close(lock)
        raise
    prior = PriorState()
    sink: WriteSink | None = None
    pool: WorkerPool | None = None
    draft: IndexDraft | None = None
    try:
        prior.load(out)
        ctx = ProcessContext(
            settings=request.settings,
            redactor=redactor,
            derived=derived,
            notes=NoteIndex.load(request.layout.note_root),
            prior=prior.by_identity,
            max_candidate=config.ingest.max_candidate,
            run_at=run_at,
            by_locator=prior.by_locator,
            racy_after_ns=int(started.timestamp() * 1e9) - RACY_NS,
            derived_key=derived_key(derived),
        )
        if request.write:
            from kbtools.review.index_builder import remove_draft

            remove_draft(out)  # a killed run's
        if request.jobs > 1:  # else read_unit runs in the run's own process
            from kbtools.ingest.workers import WorkerPool

            # Made before any thread starts (see kbtools.ingest.workers); a worker closes the lock.
            inherited: tuple[int, ...] = (lock,) if lock is not None else ()
            if index_draft is not None and request.write and not prior.by_identity:
                draft = index_draft
                inherited += (draft.start(run_id, inherited),)
            pool = WorkerPool(
                request.jobs,
                lambda task: [read_unit(ref, ctx) for ref in task],
                inherited=inherited,
                init=lambda: _warm_up(ctx),
            )
        if request.write:
            ledger.remove_stale_files(out)
            sink = WriteSink(out, run_id)
            sink.digest_context = digest_context(ctx.derived_key)
        state = _RunState(request, sink, ctx, prior)
        state.draft = draft
        counts = state.counts
        from kbtools.ingest import sources

        refs = sources.discover_all(request.settings)
        if on_discovered is not None:
            found = list(refs)
            on_discovered(len(found))
            refs = iter(found)
        for outcome in outcomes(refs, ctx, pool):
            counts.discovered += 1
            state.take(outcome)
            if state.journalled >= PARTIAL_EVERY:
                state.persist()
            if progress is not None:
                progress(counts.discovered)
        for identity, group in prior.by_identity.items():
            if identity in state.seen:
                continue
            for digest in group:
                if digest.source_key in state.emitted or dropped_on_carry(
                    digest, state.prompt_tools, state.failed_tools
                ):
                    continue
                if digest.parse_status == "failed" and (
                    identity in state.discovered or digest.tool in state.read_tools
                ):
                    # An old failure of a source that failed again (or differently) now, or of
                    # a store read this run (a transient "database is locked"): not carried.
                    continue
                # A store that failed this run may be back next run: its rows are kept.
                if request.prune and digest.tool not in state.failed_tools:
                    counts.pruned += 1
                    continue
                rows = prior_rows(prior, digest, ctx, status="skipped", skip_reason=NOT_SCANNED)
                counts.carried_forward += 1
                state.emit(rows, journal=False)
        if draft is not None:
            draft.end_feed()
        state.persist()
        summary = summary_of(
            run_id, started, datetime.now(UTC), sink is None, counts, state.dedup, prior, derived_settings
        )
        if sink is not None:
            sink.commit()
            if state.key_cache != prior.key_cache:
                caches.write(out, caches.KEY_CACHE_FILE, state.key_cache)
            write_reports(out, request.layout.checkpoint, summary, redactor)
        return IngestSummary(summary, tuple(warnings))
    except BaseException as exc:
        if draft is not None:
            draft.discard()
        if sink is not None:
            sink.abort()
        if isinstance(exc, OSError):
            where = exc.filename if isinstance(exc.filename, str) else str(out)
            raise KbError(f"cannot write the ingest ledgers: {exc.strerror or exc}", where) from None
        raise
    finally:
        if pool is not None:
            pool.kill()  # a no-op once outcomes() closed it
        prior.close()
        if lock is not None:
            os.close(lock)  # closing drops the flock


class _RunState:
    """What the loop accumulates: dedup, counts, journal cadence, seen identities."""

    def __init__(self, request: IngestRequest, sink: WriteSink | None, ctx: ProcessContext, prior: PriorState) -> None:
        self.request, self.ctx, self.prior = request, ctx, prior
        self.sink = sink  # None: a dry run
        self.counts = Counts()
        self.dedup = Deduplicator()
        self.seen: set[str] = set()
        self.discovered: set[str] = set()
        self.failed_tools: set[str] = set()
        self.read_tools: set[str] = set()  # tools with a source read (or reused) without failing
        self.emitted: set[str] = set()
        self.prompt_tools: set[str] = set()
        self.last_key = ""
        self.batches = 0
        # Sources journalled since the last persist: what a kill -9 could lose
        # (reused sources need no journal — they are in the prior ledgers).
        self.journalled = 0
        self.key_cache: dict[str, bytes] = {}
        self.draft: IndexDraft | None = None  # fed the candidate lines as the sink writes them

    def take(self, outcome: UnitOutcome) -> None:
        if outcome.source_key in self.emitted:
            return  # the same source (same identity and bytes) found twice, e.g. a copied file
        self.discovered.add(outcome.identity)
        digest = outcome.reuse
        if digest is None:
            assert outcome.rows is not None
            manifest = outcome.rows.manifest
            tool, record_type, fmt = manifest["tool"], manifest["record_type"], manifest["format"]
        else:
            tool, record_type, fmt = digest.tool, digest.record_type, digest.format
        unavailable = fmt == "unavailable"
        if outcome.failed or unavailable:
            # --prune keeps this tool's rows: its store was not read (a missing
            # store may be a moved one or an unset CODEX_HOME, not deleted sessions).
            self.failed_tools.add(tool)
        if not outcome.failed:
            # A failed read does not supersede what earlier runs kept of this source.
            self.seen.add(outcome.identity)
            if not unavailable:
                self.read_tools.add(tool)
        if record_type == "prompt-history":
            self.prompt_tools.add(tool)
        self.last_key = outcome.source_key
        if digest is None:
            assert outcome.rows is not None
            self.emit(outcome.rows, journal=True)
            return
        # Resuming an interrupted run: what it processed counts as processed, so
        # the ledgers equal those of an uninterrupted run.
        rows = prior_rows(
            self.prior,
            digest,
            self.ctx,
            status=digest.parse_status if digest.from_journal else "unchanged",
            skip_reason=None,
            read=outcome.read,
        )
        self.counts.reused_unread += outcome.read is None
        # Unchanged rows are already in the prior ledgers: journal them only if they changed.
        self.emit(rows, journal=rows.internal_dropped > 0)

    def emit(self, rows: SourceRows, *, journal: bool) -> None:
        """``rows`` marked for duplicates, counted and written to the sink."""
        self.emitted.add(rows.manifest["source_key"])
        keys = rows.candidate_keys
        stored = rows.stored_keys or StoredKeys.of(keys)
        duplicates, twins = self.dedup.mark_stored(stored)
        # Trusted lines written back as they are keep the digest they were checked against.
        digest, blob = rows.lines_digest, rows.stored_blob
        if twins is not None:  # rare: lines to mark again (read, parsed, serialised again)
            marks = [marking(twin) for twin in twins]
            lines: list[bytes] = []
            for line, mark, was in zip(rows.candidate_lines, marks, stored.markings):
                if mark != was:
                    candidate = json.loads(line)
                    candidate["decision"], candidate["duplicate_of"] = mark
                    line = dumps(candidate)
                lines.append(line)
            rows.candidate_lines = lines
            stored = stored.marked(marks)
            digest, blob = "", b""
        if not digest:
            digest = rows_digest(rows.candidate_lines, self.ctx.derived_key)
        if rows.manifest["rows_digest"] != digest:
            rows.manifest["rows_digest"] = digest
        self.key_cache[digest] = blob or marshal.dumps(tuple(stored))  # type: ignore[arg-type]
        self.counts.add(rows, duplicates)
        if self.sink is not None:
            self.sink.emit(rows, journal=journal)
            if self.draft is not None:
                self.draft.feed(rows.candidate_lines)
        self.journalled += journal

    def persist(self) -> None:
        if self.sink is None or not self.sink.pending:
            return  # nothing new since the last checkpoint (an unchanged rerun writes none)
        self.sink.persist_partial()
        self.batches += 1
        self.journalled = 0
        write_checkpoint(self.request.layout.checkpoint, self.sink.run_id, self.counts, self.batches, self.last_key)
