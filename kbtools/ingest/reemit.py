"""Re-emission: a prior source's rows written again (reused unchanged, or carried forward)."""

from __future__ import annotations

import functools
import hashlib
import json
import marshal
import operator
from collections.abc import Iterable, Sequence

from kbtools.ingest import rows as rows_schema
from kbtools.ingest.candidates import SourceMeta, candidate_id, is_internal_candidate, split_messages
from kbtools.ingest.control_plane import FILTER_VERSION
from kbtools.ingest.dedup import DedupKey, StoredKeys
from kbtools.ingest.extract import (
    INTERNAL_FILTERED,
    NO_KNOWLEDGE,
    NOT_SCANNED,
    ProcessContext,
    _derived_event,
    _slugs,
    redact_error,
    redaction_status,
    rejection,
)
from kbtools.ingest.hashing import fingerprint, hash_identifier
from kbtools.ingest.ledger_read import ENTRY_FIELDS, MANIFEST_DEFAULTS, PriorSource, PriorState
from kbtools.ingest.ledger_write import Reemitted, SourceRows
from kbtools.ingest.reuse import CURRENT_RULES
from kbtools.ingest.rows import Row
from kbtools.redact import REDACTION_VERSION, Redactor


def prior_rows(
    prior: PriorState,
    digest: PriorSource,
    ctx: ProcessContext,
    *,
    status: str,
    skip_reason: str | None,
    read: tuple[str, str, str, list[object] | None] | None = None,
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

    ``read`` (see UnitOutcome) None: the source was not read, its times, locator and
    version are the prior row's.
    """
    key, run_at = digest.source_key, ctx.run_at
    current = digest.redaction_status.endswith(CURRENT_RULES)
    rejected = [dict(r, run_at=run_at) for r in prior.rows_for("rejected", key)]
    events = prior.rows_for("events", key)
    if skip_reason is None and digest.skip_reason == NOT_SCANNED:
        # Found again: its reason is its own again, not the carry-forward's.
        skip_reason = (
            ""
            if digest.candidate_count
            else next((str(r["reason"]) for r in rejected if r.get("reason") != INTERNAL_FILTERED), NO_KNOWLEDGE)
        )
    redacted = digest.redaction_status.startswith("redacted:")
    dropped = 0
    # Lines the ledger index vouches for need not be read, nor hashed again (see
    # PriorState.vouched_lines); others are read and their digest checked.
    vouched = prior.vouched_lines(key, digest.rows_digest, digest_context(ctx.derived_key)) if current else None
    lines: Sequence[bytes] = vouched if vouched is not None else prior.candidate_lines(key)
    if current and (
        vouched is not None or (bool(digest.rows_digest) and rows_digest(lines, ctx.derived_key) == digest.rows_digest)
    ):
        count = len(lines)
        rows = SourceRows({}, rejected, events, candidate_lines=lines, lines_digest=digest.rows_digest)
        # Their dedup keys: from the key cache (see StoredKeys), else read off the lines.
        blob = prior.key_cache.get(digest.rows_digest, b"")
        cached = marshal.loads(blob) if blob else None  # whole: the key cache file is checksummed
        if isinstance(cached, tuple) and len(cached) == len(StoredKeys._fields) and len(cached[0]) == count:
            rows.stored_keys, rows.stored_blob = StoredKeys._make(cached), blob
        else:
            rows.candidate_keys = [DedupKey.of_line(line) for line in lines]
        redacted = redacted or any(b'"redactions":[' in line and b'"redactions":[]' not in line for line in lines)
        if read is None and skip_reason is None and _only_run_at(digest, status, count, redaction_status(redacted)):
            # Written by this writer and unchanged but for run_at: its line is kept, unparsed.
            kept_line = _with_run_at(prior.read_line(digest.location), run_at) if prior.vouched_row(digest) else b""
            if kept_line:
                rows.manifest = dict(zip(_KEPT_FIELDS, operator.itemgetter(*_KEPT_AT)(digest), strict=True))
                rows.manifest["run_at"] = run_at
                rows.reemitted = Reemitted(kept_line, digest.rows_digest, tuple(digest[: len(ENTRY_FIELDS)]))
                return rows
        row = prior.read(digest.location)
        slugs = list(row.get("article_slugs") or ())
    else:
        row = prior.read(digest.location)
        kept: list[Row] = []
        for line in lines:
            try:
                candidate = json.loads(line)
            except ValueError:  # its keys looked whole when indexed (see ledger.candidate_keys)
                prior.malformed += 1
                continue
            if is_internal_candidate(str(candidate.get("text", ""))):
                dropped += 1
                continue
            if ctx.derived is not None and _derived_candidate(candidate, digest, ctx, events):
                continue
            if not current:
                candidate = _redact_again(candidate, ctx.redactor)
            kept.append(rows_schema.ordered(candidate, "candidates"))
        rows = SourceRows.of(row, kept, rejected, events, dropped)
        redacted = redacted or any(c.get("redactions") for c in kept)
        slugs = _slugs(kept)
    if dropped and not any(r.get("reason") == INTERNAL_FILTERED for r in rejected):
        rejected.append(rejection(key, INTERNAL_FILTERED, run_at))
    error = str(row.get("error", ""))
    row.update(
        parse_status=status,
        candidate_count=len(rows.candidate_lines),
        article_slugs=slugs,
        error=error if current else redact_error(ctx.redactor, error),
        run_at=run_at,
        redaction_status=redaction_status(redacted),
        internal_filtered=int(row.get("internal_filtered") or 0) + dropped,
    )
    if skip_reason is not None:
        row["skip_reason"] = skip_reason
    if read is not None:
        row["created_at"], row["updated_at"], row["locator_key"], row["stat_key"] = read
    for name in ("truncated", "locator_key", "stat_key", "rows_digest"):  # fields older rows lack
        row.setdefault(name, MANIFEST_DEFAULTS[name])
    rows.manifest = rows_schema.ordered(row, "manifest")
    return rows


def _only_run_at(digest: PriorSource, status: str, count: int, redaction: str) -> bool:
    """Whether a trusted row re-emitted unread (no new times, no skip reason) would change in
    nothing but run_at: every field prior_rows sets is the value it sets, of the type it sets
    (``0 == False``, not their JSON). For a row of the final ledger the index vouches for (see
    PriorState.vouched_row): every line there was written with all these fields (by build_rows,
    or by prior_rows, which sets them), article_slugs a list, error a string."""
    return (
        not digest.from_journal
        and status == "unchanged" == digest.parse_status
        and type(digest.candidate_count) is int
        and digest.candidate_count == count
        and digest.redaction_status == redaction
        and type(digest.internal_filtered) is int
        and type(digest.error) is str
    )


_RUN_AT = b'"run_at":"'
# What a manifest row kept unparsed holds: its entry's fields but stat_key (kept as JSON there).
_KEPT_FIELDS = tuple(name for name in ENTRY_FIELDS if name != "stat_key")
_KEPT_AT = tuple(ENTRY_FIELDS.index(name) for name in _KEPT_FIELDS)


@functools.lru_cache(maxsize=4)
def _plain(value: str) -> bool:
    """Whether JSON writes ``value`` as it is between its quotes (a run's run_at, asked once)."""
    return json.dumps(value) == f'"{value}"'


def _with_run_at(line: bytes, run_at: str) -> bytes:
    """A manifest line written by :func:`kbtools.ingest.rows.dumps` with ``run_at`` as the
    value of its one run_at field (an ISO moment: nothing in it to escape); b"" if the line
    does not have exactly one such field with a plain value."""
    at = line.find(_RUN_AT)
    if at < 0 or line.find(_RUN_AT, at + 1) >= 0 or not _plain(run_at) or not line.endswith(b"}\n"):
        return b""
    start = at + len(_RUN_AT)
    end = line.find(b'"', start)
    if end < 0 or b"\\" in line[start:end]:
        return b""
    return line[:start] + run_at.encode() + line[end:]


def _derived_candidate(candidate: Row, digest: PriorSource, ctx: ProcessContext, events: list[Row]) -> bool:
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
_CANDIDATE_SCHEMA = ",".join(rows_schema.FIELDS[rows_schema.CandidateRow])


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


def dropped_on_carry(digest: PriorSource, scanned_prompt_tools: set[str], unread_tools: set[str]) -> bool:
    """Prior rows that describe no source any more (``unread_tools``: tools whose store
    could not be read on this run, so that nothing is known about their sources)."""
    if digest.tool == "omp" and digest.record_type == "advisor":
        # A deleted advisor file leaves the ledger; one of a store that is not there
        # (moved, an unset variable) stays, as its session's rows do.
        return digest.tool not in unread_tools
    if digest.format == "unavailable":
        return True  # a placeholder for a missing store path, not a source
    # The older prompt-history scheme keyed the file by its content hash.
    return (
        digest.record_type == "prompt-history"
        and digest.tool in scanned_prompt_tools
        and digest.session_hash == hash_identifier(digest.content_hash)
    )
