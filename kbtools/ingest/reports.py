"""What a run reports: its counts, the summary, ``run-summary.md`` and the checkpoint note."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from kbtools.ingest.dedup import Deduplicator
from kbtools.ingest.extract import DERIVED_ONLY
from kbtools.ingest.hashing import iso_time
from kbtools.ingest.ledger import SUMMARY_FILE, write_private_text
from kbtools.ingest.ledger_read import PriorState
from kbtools.ingest.ledger_write import SourceRows
from kbtools.ingest.sources.common import DECISIONS
from kbtools.redact import REDACTION_VERSION, Redactor


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
        "unknown_records",
    )
    __slots__ = (*FIELDS, "records")

    def __init__(self) -> None:
        self.discovered = self.processed = self.unchanged = self.skipped = self.failed = 0
        self.candidates = self.rejected = self.duplicates = self.errors = self.derived_excluded = 0
        self.truncated_sources = self.reused_unread = self.carried_forward = self.pruned = 0
        self.internal_filtered = self.unknown_records = 0
        # Records of the sources read this run, per reader decision.
        self.records: dict[str, int] = {}

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
    c: Counts,
    dedup: Deduplicator,
    prior: PriorState,
    derived_settings: dict[str, object],
) -> dict[str, object]:
    return {
        "run_id": run_id,
        "started_at": iso_moment(started),
        "finished_at": iso_moment(finished),
        "dry_run": dry_run,
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
        "records": {name: c.records[name] for name in DECISIONS if c.records.get(name)},
        "unknown_records": c.unknown_records,
        "truncated_sources": c.truncated_sources,
        "reused_unread": c.reused_unread,
        "carried_forward": c.carried_forward,
        "pruned": c.pruned,
        "malformed_prior_rows": prior.malformed,
        "resumed_from_partial": prior.has_partial,
        "redaction_version": REDACTION_VERSION,
        "derived_filter": derived_settings,
    }


def write_reports(output_dir: Path, checkpoint: Path, summary: dict[str, object], redactor: Redactor) -> None:
    """``run-summary.md`` in ``output_dir`` and the checkpoint note of a finished run."""
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
    found = summary["derived_filter"]
    derived = found if isinstance(found, dict) else {}
    derived_line = (
        f"enabled, threshold {derived.get('threshold')}, {derived.get('artifact_count', 0)} artifact(s)"
        if derived.get("enabled")
        else "DISABLED"
    )
    lines = ["# KB ingest run summary", "", "- Status: parsed; synthesis pending", "- Dry run: no"]
    lines += [f"- {label}: {summary[key]}" for label, key in labels]
    lines += [f"- Derived filter: {derived_line}", ""]
    text = redactor.redact("\n".join(lines)).text
    write_private_text(output_dir / SUMMARY_FILE, text)
    c = summary
    write_private_text(
        checkpoint,
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


def iso_moment(moment: datetime) -> str:
    return iso_time(moment.timestamp() * 1000)


def write_checkpoint(path: Path, run_id: str, c: Counts, batches: int, last_key: str) -> None:
    """The checkpoint note of a run in progress, once it persisted a batch of its journal."""
    write_private_text(
        path,
        "\n".join(
            [
                "# Current task",
                "",
                f"- Run ID: {run_id}",
                "- Status: parsing",
                f"- Current batch: {c.discovered} source records",
                f"- Resume cursor: {last_key}",
                f"- Persisted batches: {batches}",
                f"- Processed: {c.processed}",
                f"- Candidates: {c.candidates}",
                f"- Rejected: {c.rejected}",
                f"- Failed: {c.failed}",
                "- Next action: rerun `kb ingest --write`; partial ledgers and unchanged content hashes are reused",
                "",
            ]
        ),
    )
