"""What a run reports: its counts, the summary, ``run-summary.md`` and the checkpoint note."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from kbtools.fsio import atomic_write_text, ensure_private_dir
from kbtools.ingest.dedup import Deduplicator
from kbtools.ingest.extract import DERIVED_ONLY
from kbtools.ingest.hashing import iso_time
from kbtools.ingest.ledger import SUMMARY_FILE
from kbtools.ingest.ledger_read import PriorState
from kbtools.ingest.ledger_write import SourceRows
from kbtools.ingest.sources.common import DECISIONS
from kbtools.redact import REDACTION_VERSION, Redactor


class Counts:
    """What the run tallies, in the summary's order (a class, not a dataclass: see docs/performance.md)."""

    FIELDS = (
        "discovered",
        "processed",
        "unchanged",
        "skipped",
        "failed",
        "candidates",
        "rejected",
        "duplicates",
        "duplicate_code_blocks",
        "duplicate_error_logs",
        "errors",
        "derived_excluded",
        "internal_filtered",
        "records",
        "unknown_records",
        "truncated_sources",
        "reused_unread",
        "carried_forward",
        "pruned",
    )
    __slots__ = FIELDS

    def __init__(self) -> None:
        self.discovered = self.processed = self.unchanged = self.skipped = self.failed = 0
        self.candidates = self.rejected = self.duplicates = self.errors = self.derived_excluded = 0
        self.duplicate_code_blocks = self.duplicate_error_logs = self.internal_filtered = self.unknown_records = 0
        self.truncated_sources = self.reused_unread = self.carried_forward = self.pruned = 0
        # Records of the sources read this run, per reader decision.
        self.records: dict[str, int] = {}

    def add(self, rows: SourceRows, duplicates: int) -> None:
        """A source's rows, ``duplicates`` of its candidates marked so."""
        manifest = rows.manifest
        status = manifest["parse_status"]
        setattr(self, status, getattr(self, status) + 1)
        self.candidates += len(rows.candidate_lines)
        self.duplicates += duplicates
        self.rejected += len(rows.rejected)
        self.errors += bool(manifest.get("error"))
        self.derived_excluded += sum(1 for e in rows.events if e.get("event") == DERIVED_ONLY)
        self.truncated_sources += bool(manifest.get("truncated"))
        self.internal_filtered += int(manifest.get("internal_filtered") or 0)
        read = manifest.get("records")
        if status != "unchanged" and isinstance(read, dict):
            for name, count in read.items():
                if isinstance(count, int):
                    self.records[name] = self.records.get(name, 0) + count
            self.unknown_records += int(manifest.get("unknown_records") or 0)


class IngestSummary(NamedTuple):
    values: dict[str, object]
    warnings: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        return dict(self.values)


def summary_of(
    run_id: str,
    started: datetime,
    finished: datetime,
    dry_run: bool,
    counts: Counts,
    dedup: Deduplicator,
    prior: PriorState,
    derived_settings: dict[str, object],
) -> dict[str, object]:
    counts.duplicate_code_blocks = dedup.duplicate_code_blocks
    counts.duplicate_error_logs = dedup.duplicate_error_logs
    tally = {name: getattr(counts, name) for name in Counts.FIELDS}
    tally["records"] = {name: counts.records[name] for name in DECISIONS if counts.records.get(name)}
    return {
        "run_id": run_id,
        "started_at": iso_moment(started),
        "finished_at": iso_moment(finished),
        "dry_run": dry_run,
        **tally,
        "malformed_prior_rows": prior.malformed,
        "resumed_from_partial": prior.has_partial,
        "redaction_version": REDACTION_VERSION,
        "derived_filter": derived_settings,
    }


_SUMMARY_LABELS = (
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
)


def write_reports(output_dir: Path, checkpoint: Path, summary: dict[str, object], redactor: Redactor) -> None:
    """``run-summary.md`` in ``output_dir`` and the checkpoint note of a finished run."""
    found = summary["derived_filter"]
    derived = found if isinstance(found, dict) else {}
    derived_line = (
        f"enabled, threshold {derived.get('threshold')}, {derived.get('artifact_count', 0)} artifact(s)"
        if derived.get("enabled")
        else "DISABLED"
    )
    lines = ["# KB ingest run summary", "", "- Status: parsed; synthesis pending", "- Dry run: no"]
    lines += [f"- {label}: {summary[key]}" for label, key in _SUMMARY_LABELS]
    lines += [f"- Derived filter: {derived_line}", ""]
    _write_private(output_dir / SUMMARY_FILE, redactor.redact("\n".join(lines)).text)
    note = _note(
        summary["run_id"],
        "parsing complete; synthesis pending",
        *(f"{label}: {summary[key]}" for label, key in _SUMMARY_LABELS[3:10]),
        f"Current batch: {summary['discovered']}/{summary['discovered']}",
        "Next action: review candidates and match existing knowledge",
        "Resume: rerun; partial ledgers and unchanged identity/content hashes are reused",
    )
    _write_private(checkpoint, redactor.redact(note).text)


def iso_moment(moment: datetime) -> str:
    return iso_time(moment.timestamp() * 1000)


def write_checkpoint(path: Path, run_id: str, c: Counts, batches: int, last_key: str) -> None:
    """The checkpoint note of a run in progress, once it persisted a batch of its journal."""
    note = _note(
        run_id,
        "parsing",
        f"Current batch: {c.discovered} source records",
        f"Resume cursor: {last_key}",
        f"Persisted batches: {batches}",
        f"Processed: {c.processed}",
        f"Candidates: {c.candidates}",
        f"Rejected: {c.rejected}",
        f"Failed: {c.failed}",
        "Next action: rerun `kb ingest --write`; partial ledgers and unchanged content hashes are reused",
    )
    _write_private(path, note)


def _note(run_id: object, status: str, *items: str) -> str:
    """The checkpoint note: what the run is at, one item a line."""
    return "\n".join(
        ["# Current task", "", f"- Run ID: {run_id}", f"- Status: {status}", *(f"- {i}" for i in items), ""]
    )


def _write_private(path: Path, text: str) -> None:
    ensure_private_dir(path.parent)
    atomic_write_text(path, text)
