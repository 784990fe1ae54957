"""The ingest ledgers on disk: field order, streaming readers, crash-safe writers, the lock.

Files in the output directory (directories 0700, files 0600):

- ``manifest.jsonl``   one row per source (``source_key``, hashes, status, counts)
- ``candidates.jsonl`` redacted, turn-sized evidence candidates
- ``rejected.jsonl``   why a source yielded nothing (or what was filtered later)
- ``events.jsonl``     per-source events (``derived_excluded``)
- ``*.partial.jsonl``  the journal of an unfinished ``--write`` run
- ``run-summary.md``   the last run's counts
- ``.lock``            held (``flock``) by the running ``--write``

Final ledgers are streamed to temp files and renamed into place at the end
(candidates, rejected, events, then the manifest), so a reader sees the old or
the new ledger, never a mix. Progress is journalled by *appending* each batch
to the partial files (candidates, rejected, events first, the manifest rows
last, each fsynced), so a run over N sources writes O(N) rows in total and a
``kill -9`` loses at most the batch in flight: its manifest rows are missing,
so those sources are simply processed again. Partial rows carry the ``_run``
that wrote them; for one source the rows of the latest run win.

A prior ledger row that does not parse or lacks a required field is skipped
and counted (``malformed_prior_rows``), never a crash.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from kbtools.errors import KbError
from kbtools.fsio import (
    PRIVATE_DIR_MODE,
    PRIVATE_FILE_MODE,
    atomic_write_bytes,
    atomic_write_text,
    ensure_private_dir,
    fsync_dir,
    temp_path_for,
)

LEDGERS = ("manifest", "candidates", "rejected", "events")
# Rename order of a final write: the manifest last, so it never names rows that are not there yet.
COMMIT_ORDER = ("candidates", "rejected", "events", "manifest")
LOCK_FILE = ".lock"
SUMMARY_FILE = "run-summary.md"
RUN_TAG = "_run"

PARSE_STATUSES = ("processed", "unchanged", "skipped", "failed")

MANIFEST_FIELDS = (
    "source_key", "tool", "record_type", "project_key", "session_hash", "created_at", "updated_at",
    "format", "content_hash", "parse_status", "redaction_status", "candidate_count", "article_slugs",
    "skip_reason", "error", "truncated", "internal_filtered", "locator_key", "stat_key", "rows_digest", "run_at",
)

# The reference's 24 knowledge fields, then metadata. Dropped from the reference:
# `cluster_id` and `cluster_size` (buckets of 8 by first keyword, not clusters).
# Added: `turn_index` and `chunk_index` (the candidate's place in its source).
KNOWLEDGE_FIELDS = (
    "topic", "user_goal", "technical_environment", "software_versions", "symptoms", "error_messages",
    "trigger_conditions", "investigation_steps", "attempted_solutions", "failed_solutions", "root_cause",
    "final_solution", "changes", "validation_commands", "validation_results", "applicability",
    "non_applicability", "risks_side_effects", "rollback", "reusable_lessons", "unresolved_questions",
    "confidence", "source_refs", "existing_kb_status",
)
CANDIDATE_FIELDS = KNOWLEDGE_FIELDS + (
    "candidate_id", "source_key", "session_key", "project_key", "tool", "record_type", "format", "text",
    "summary", "language", "created_at", "updated_at", "note_matches", "redactions", "conclusion_status",
    "scores", "decision", "topic_keys", "fingerprint", "duplicate_of", "turn_index", "chunk_index",
)
REJECTED_FIELDS = ("rejection_id", "source_key", "reason", "run_at")
EVENT_FIELDS = (
    "event_id", "event", "source_key", "tool", "record_type", "message_index", "role", "created_at",
    "artifact", "overlap", "threshold", "run_at",
)

Row = dict[str, Any]


# --------------------------------------------------------------------------- rows


def rejected_row(rejection_id: str, source_key: str, reason: str, run_at: str) -> Row:
    return {"rejection_id": rejection_id, "source_key": source_key, "reason": reason, "run_at": run_at}


def stat_json(stat_key: Any) -> str:
    """A source version as compact JSON ("" for none): equal strings, equal versions."""
    if stat_key is None or isinstance(stat_key, str) or not isinstance(stat_key, (list, tuple)):
        return ""
    return json.dumps(list(stat_key), separators=(",", ":"))


def ordered(row: Mapping[str, Any], fields: Sequence[str]) -> Row:
    """``row`` in ``fields`` order; unknown extra keys of an older ledger are kept at the end."""
    out: Row = {name: row[name] for name in fields if name in row}
    out.update((k, v) for k, v in row.items() if k not in out and k != RUN_TAG)
    return out


def dumps(row: Mapping[str, Any]) -> bytes:
    # Lone surrogates (from a `\ud800` escape in a source) cannot be UTF-8: replace them.
    return (json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8", "replace")


# --------------------------------------------------------------------------- validation

def _is_str(row: Mapping[str, Any], *names: str) -> bool:
    return all(isinstance(row.get(n), str) for n in names)


def _valid_manifest(row: Mapping[str, Any]) -> bool:
    count = row.get("candidate_count")
    return (
        _is_str(row, "source_key", "tool", "record_type", "project_key", "session_hash", "format",
                "content_hash", "redaction_status")
        and row.get("parse_status") in PARSE_STATUSES
        and isinstance(count, int) and not isinstance(count, bool) and count >= 0
        and isinstance(row.get("error", ""), str)
        and isinstance(row.get("skip_reason", ""), str)
    )


def _valid_candidate(row: Mapping[str, Any]) -> bool:
    return _is_str(row, "candidate_id", "source_key", "text", "fingerprint")


def _valid_rejected(row: Mapping[str, Any]) -> bool:
    return _is_str(row, "rejection_id", "source_key", "reason")


def _valid_event(row: Mapping[str, Any]) -> bool:
    return _is_str(row, "event", "source_key")


_VALIDATORS: dict[str, Callable[[Mapping[str, Any]], bool]] = {
    "manifest": _valid_manifest,
    "candidates": _valid_candidate,
    "rejected": _valid_rejected,
    "events": _valid_event,
}


def _parse(line: bytes, ledger: str) -> Row | None:
    try:
        row = json.loads(line)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    if not isinstance(row, dict) or not _VALIDATORS[ledger](row):
        return None
    return row


def ledger_path(output_dir: Path, ledger: str, *, partial: bool = False) -> Path:
    return output_dir / (f"{ledger}.partial.jsonl" if partial else f"{ledger}.jsonl")


def open_ledger(path: Path) -> IO[bytes] | None:
    """The ledger file opened for reading, or None when it does not exist."""
    try:
        return open(path, "rb")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise KbError(f"cannot read ledger: {exc.strerror}", str(path)) from None


def scan_ledger(fh: IO[bytes], ledger: str) -> Iterator[tuple[Row | None, int]]:
    """``(row or None if malformed, byte offset)`` per non-blank line of an open ledger."""
    offset = 0
    for line in fh:
        start, offset = offset, offset + len(line)
        if line.strip():
            yield _parse(line, ledger), start


def iter_ledger(path: Path, ledger: str) -> Iterator[tuple[Row | None, int]]:
    """:func:`scan_ledger` of a path; nothing if the file is absent."""
    fh = open_ledger(path)
    if fh is None:
        return
    with fh:
        yield from scan_ledger(fh, ledger)


_SOURCE_KEY = b'"source_key":"'
_RUN_KEY = b'"' + RUN_TAG.encode() + b'":"'
_CANDIDATE_KEYS = (b'"candidate_id":"', b'"text":"', b'"fingerprint":"')


def _candidate_keys(line: bytes) -> tuple[str | None, str | None]:
    """(source_key, run tag) of a whole candidate line as written here, or
    (None, None) when it must be parsed. A key with its quotes occurs unescaped
    only as a key: inside a string value every quote is escaped."""
    if not (line.startswith(b'{"') and line.endswith(b'}\n')) or not all(k in line for k in _CANDIDATE_KEYS):
        return None, None
    values: list[str | None] = []
    for name in (_SOURCE_KEY, _RUN_KEY):
        at = line.find(name)
        if at < 0:
            values.append(None)
            continue
        end = line.find(b'"', at + len(name))
        value = line[at + len(name):end]
        if end < 0 or b"\\" in value or not value.isascii():
            return None, None
        values.append(value.decode("ascii"))
    return (values[0], values[1]) if values[0] else (None, None)


# --------------------------------------------------------------------------- prior state


@dataclass(frozen=True)
class PriorSource:
    """What the reuse decision needs of one prior manifest row (the row itself stays on disk)."""

    identity: str
    source_key: str
    content_hash: str
    parse_status: str
    redaction_status: str
    error: str
    candidate_count: int
    tool: str
    record_type: str
    format: str
    session_hash: str
    location: tuple[int, int]  # (file number, byte offset)
    complete: bool = False
    from_journal: bool = False  # written by an interrupted run, not yet final
    # The stat cache: which locator (hashed) this row was read from, and the
    # version read (compact JSON), so an unchanged file is reused unread.
    locator_key: str = ""
    stat_key: str = ""
    # Digest of the candidate lines this row was written with (see the pipeline).
    rows_digest: str = ""


@dataclass
class PriorState:
    """The previous ledgers merged with the partial journal, indexed by byte offset.

    Only the manifest digests live in memory; candidate, rejected and event rows
    are read back from disk one source at a time.
    """

    by_identity: dict[str, list[PriorSource]] = field(default_factory=dict)
    by_locator: dict[str, PriorSource] = field(default_factory=dict)
    rows: dict[str, dict[str, list[tuple[int, int]]]] = field(default_factory=dict)
    malformed: int = 0
    has_partial: bool = False
    # Dedup keys of trusted candidate lines by their rows_digest (see KEY_CACHE_FILE).
    key_cache: dict[str, list[Any]] = field(default_factory=dict)
    _files: list[Path] = field(default_factory=list)
    _handles: dict[int, IO[bytes]] = field(default_factory=dict)
    # Where each source's candidate lines end in the final ledger (file number, end
    # offset), when the offset index answered: its lines are then read in one go.
    _ends: dict[str, tuple[int, int]] = field(default_factory=dict)
    # The rows_digest each source's lines were written with, and under what (see WriteSink.digest_context).
    _digests: dict[str, str] = field(default_factory=dict)
    _digest_context: str = ""

    @classmethod
    def load(cls, output_dir: Path) -> PriorState:
        state = cls(rows={name: {} for name in LEDGERS if name != "manifest"})
        state._load(output_dir)
        state.key_cache = read_key_cache(output_dir)
        return state

    def _open(self, path: Path) -> tuple[int, IO[bytes] | None]:
        """Open a ledger once: it is indexed now and read back through the same handle
        later, so a file replaced meanwhile (a concurrent ``--write``) cannot shift offsets."""
        number = len(self._files)
        self._files.append(path)
        handle = open_ledger(path)
        if handle is not None:
            self._handles[number] = handle
        return number, handle

    def _load(self, output_dir: Path) -> None:
        main_groups = self._manifest_groups(ledger_path(output_dir, "manifest"), journal=False)
        partial_groups = self._manifest_groups(ledger_path(output_dir, "manifest", partial=True), journal=True)
        self.has_partial = any(ledger_path(output_dir, n, partial=True).exists() for n in LEDGERS)
        owned = {d.source_key for group in partial_groups.values() for d in group}
        journal: dict[str, dict[str, list[tuple[int, int]]]] = {}
        for name in self.rows:
            self.rows[name] = self._row_index(ledger_path(output_dir, name), name, journal=False)
            journal[name] = self._row_index(ledger_path(output_dir, name, partial=True), name, journal=True)
            owned.update(journal[name])
        # A source the journal touched takes its rows from the journal only
        # (partial wins per source_key, even when the journal has none of a kind).
        for name, index in self.rows.items():
            for key in owned:
                if key in journal[name]:
                    index[key] = journal[name][key]
                else:
                    index.pop(key, None)
        self.by_identity = {**main_groups, **partial_groups}
        for identity, group in self.by_identity.items():
            self.by_identity[identity] = [self._with_completeness(d) for d in group]
        self.by_locator = {
            d.locator_key: d for group in self.by_identity.values() for d in group if d.locator_key and d.stat_key
        }

    def _with_completeness(self, digest: PriorSource) -> PriorSource:
        # Complete: every promised candidate is there, and a source without
        # candidates says why (a rejected row).
        found = len(self.rows["candidates"].get(digest.source_key, ()))
        complete = found == digest.candidate_count and (
            digest.candidate_count > 0 or bool(self.rows["rejected"].get(digest.source_key))
        )
        return PriorSource(**{**digest.__dict__, "complete": complete})

    def _manifest_groups(self, path: Path, *, journal: bool) -> dict[str, list[PriorSource]]:
        groups: dict[str, list[PriorSource]] = {}
        runs: dict[str, object] = {}
        number, handle = self._open(path)
        for row, offset in scan_ledger(handle, "manifest") if handle is not None else ():
            if row is None:
                self.malformed += 1
                continue
            identity = "\0".join((row["tool"], row["project_key"], row["session_hash"]))
            digest = PriorSource(
                identity=identity,
                source_key=row["source_key"],
                content_hash=row["content_hash"],
                parse_status=row["parse_status"],
                redaction_status=row["redaction_status"],
                error=row.get("error", ""),
                candidate_count=row["candidate_count"],
                tool=row["tool"],
                record_type=row["record_type"],
                format=row["format"],
                session_hash=row["session_hash"],
                location=(number, offset),
                from_journal=journal,
                locator_key=row.get("locator_key") or "",
                stat_key=stat_json(row.get("stat_key")),
                rows_digest=row.get("rows_digest") or "",
            )
            group = groups.setdefault(identity, [])
            if journal and runs.get(identity) != row.get(RUN_TAG):
                runs[identity] = row.get(RUN_TAG)
                group.clear()
            # One row per source_key: a later row for the same source wins.
            group[:] = [d for d in group if d.source_key != digest.source_key]
            group.append(digest)
        return groups

    def _row_index(self, path: Path, ledger: str, *, journal: bool) -> dict[str, list[tuple[int, int]]]:
        index: dict[str, list[tuple[int, int]]] = {}
        runs: dict[str, object] = {}
        number, handle = self._open(path)
        if handle is None:
            return index
        if ledger == "candidates" and not journal:
            cached = read_candidate_index(path.parent, os.fstat(handle.fileno()))
            if cached is not None:
                self._digest_context, self._digests, spans_by_key = cached
                for cached_key, spans in spans_by_key.items():
                    index[cached_key] = [(number, at) for at in spans[:-1]]
                    self._ends[cached_key] = (number, spans[-1])
                return index
        offset = 0
        for line in handle:
            start, offset = offset, offset + len(line)
            if ledger == "candidates":
                # Most of the ledger's bytes: its keys are read off the line, not parsed
                # (a candidate is parsed, or its bytes checked by digest, when reused).
                key, run = _candidate_keys(line)
            else:
                key = run = None
            if key is None:
                if not line.strip():
                    continue
                row = _parse(line, ledger)
                if row is None:
                    self.malformed += 1
                    continue
                key, run = row["source_key"], row.get(RUN_TAG)
            if journal and runs.get(key) != run:
                runs[key] = run
                index[key] = []
            index.setdefault(key, []).append((number, start))
        return index

    def trusted_segment(self, source_key: str, rows_digest: str, context: str) -> Segment | None:
        """The byte range of the final ledger holding exactly one source's candidate
        lines, when the offset index answered for it (lines contiguous, in order) and
        says these lines were written with ``rows_digest`` under ``context``: the
        digest check of :func:`pipeline.prior_rows` without reading the lines."""
        if not rows_digest or context != self._digest_context or self._digests.get(source_key) != rows_digest:
            return None
        locations = self.rows["candidates"].get(source_key, ())
        end = self._ends.get(source_key)
        if not locations or end is None or any(number != end[0] for number, _ in locations):
            return None
        return Segment(self._handles[end[0]].fileno(), tuple(at for _, at in locations), end[1])

    def read_line(self, location: tuple[int, int]) -> bytes:
        number, offset = location
        handle = self._handles[number]  # validated when indexed, same open file
        handle.seek(offset)
        return handle.readline()

    def read(self, location: tuple[int, int]) -> Row:
        row = json.loads(self.read_line(location))
        row.pop(RUN_TAG, None)
        return row  # type: ignore[no-any-return]

    def lines_for(self, ledger: str, source_key: str) -> list[bytes]:
        """The stored lines of one source, as bytes (newline-terminated)."""
        locations = self.rows[ledger].get(source_key, ())
        end = self._ends.get(source_key) if ledger == "candidates" else None
        if locations and end is not None and all(number == end[0] for number, _ in locations):
            first = locations[0][1]
            data = os.pread(self._handles[end[0]].fileno(), end[1] - first, first)
            lines = data.splitlines(keepends=True)
            if len(lines) == len(locations):
                return lines
        lines = [self.read_line(location) for location in locations]
        return [line if line.endswith(b"\n") else line + b"\n" for line in lines]

    def manifest_row(self, digest: PriorSource) -> Row:
        return self.read(digest.location)

    def rows_for(self, ledger: str, source_key: str) -> Iterator[Row]:
        for location in self.rows[ledger].get(source_key, ()):
            yield self.read(location)

    def close(self) -> None:
        for handle in self._handles.values():
            handle.close()
        self._handles.clear()


# --------------------------------------------------------------------------- writers


@dataclass(frozen=True)
class Segment:
    """Candidate lines of one source still in the prior ledger: where each starts, where the last ends."""

    fd: int
    starts: tuple[int, ...]
    end: int

    def read(self) -> list[bytes]:
        first = self.starts[0]
        lines = os.pread(self.fd, self.end - first, first).splitlines(keepends=True)
        if len(lines) != len(self.starts):
            raise OSError(errno.EIO, "the candidates ledger changed while read")
        return lines


@dataclass
class SourceRows:
    """Everything one source contributes to the ledgers.

    Candidates come as rows (``candidates``, each with its stored line in
    ``candidate_lines`` when it may be written back as it is, else None), or
    *packed*: ``candidates`` empty, ``candidate_lines`` every line as bytes and
    ``candidate_keys`` what the duplicate marking needs of each — what a worker
    process sends back (bytes pickle in a copy; a row of fifty fields does not).
    """

    manifest: Row
    candidates: list[Row] = field(default_factory=list)
    rejected: list[Row] = field(default_factory=list)
    events: list[Row] = field(default_factory=list)
    # Prior candidates the control-plane filter dropped on this run.
    internal_dropped: int = 0
    candidate_lines: list[bytes | None] = field(default_factory=list)
    candidate_keys: list[Any] = field(default_factory=list)
    # The rows_digest of ``candidate_lines`` as they are, when already known (trusted prior lines).
    lines_digest: str = ""
    # Trusted prior lines not read yet (``candidate_lines`` all None): copied as a byte range.
    segment: Segment | None = None

    def materialize(self) -> None:
        """Read the lines of :attr:`segment` into :attr:`candidate_lines`."""
        if self.segment is not None:
            self.candidate_lines = list(self.segment.read())
            self.segment = None

    @property
    def packed(self) -> bool:
        return not self.candidates

    def lines_of_candidates(self) -> list[bytes]:
        if self.packed:
            return [line for line in self.candidate_lines if line is not None]
        stored = self.candidate_lines if len(self.candidate_lines) == len(self.candidates) else ()
        return [line or dumps(row) for row, line in zip(self.candidates, stored or [None] * len(self.candidates))]

    def by_ledger(self) -> Iterator[tuple[str, list[Row]]]:
        yield "rejected", self.rejected
        yield "events", self.events
        yield "manifest", [self.manifest]


class LedgerSink:
    """A dry run: rows are counted by the pipeline and go nowhere."""

    def emit(self, rows: SourceRows, *, journal: bool) -> None:
        pass

    @property
    def pending(self) -> bool:
        """Rows journalled since the last :meth:`persist_partial`."""
        return False

    def persist_partial(self) -> None:
        pass

    def commit(self) -> None:
        pass

    def abort(self) -> None:
        pass


class WriteSink(LedgerSink):
    """``--write``: final ledgers streamed to temp files, progress appended to the journal."""

    def __init__(self, output_dir: Path, run_id: str) -> None:
        self.output_dir = output_dir
        self.run_id = run_id
        self._temps: dict[str, Path] = {}
        self._final: dict[str, IO[bytes]] = {}
        for name in LEDGERS:
            path = ledger_path(output_dir, name)
            tmp = temp_path_for(path)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
            self._temps[name] = tmp
            self._final[name] = os.fdopen(fd, "wb")
        self._pending: dict[str, list[bytes]] = {name: [] for name in LEDGERS}
        # The offset index of the candidates ledger being written (see CANDIDATE_INDEX_FILE).
        self._spans: dict[str, list[int]] = {}
        self._written = 0
        self._pending_copy: tuple[int, int, int] | None = None  # (fd, start, end) of the prior ledger
        self._digests: dict[str, str] = {}
        # What every rows_digest of this run was computed under (set by the pipeline).
        self.digest_context = ""
        self._tag = b',"' + RUN_TAG.encode() + b'":' + json.dumps(run_id).encode() + b"}\n"

    def emit(self, rows: SourceRows, *, journal: bool) -> None:
        if journal:
            rows.materialize()
        segment = rows.segment
        if segment is not None:
            self._spans[rows.manifest["source_key"]] = [
                self._written + at - segment.starts[0] for at in (*segment.starts, segment.end)]
            self._copy(segment)
            lines: list[bytes] = []
        else:
            lines = rows.lines_of_candidates()
        if lines or segment is not None:
            self._digests[rows.manifest["source_key"]] = rows.manifest.get("rows_digest") or ""
        if lines:
            spans = self._spans.setdefault(rows.manifest["source_key"], [])
            if spans:
                spans.pop()  # the same source emitted again: its lines continue here
            for line in lines:
                spans.append(self._written)
                self._written += len(line)
            spans.append(self._written)
            self._flush_copy()
            self._final["candidates"].write(b"".join(lines))
        if journal:
            self._pending["candidates"].extend(self._tagged(line) for line in lines)
        for name, items in rows.by_ledger():
            self._final[name].write(b"".join(dumps(row) for row in items))
            if journal:
                self._pending[name].extend(dumps({**row, RUN_TAG: self.run_id}) for row in items)

    def _copy(self, segment: Segment) -> None:
        """Queue a byte range of the prior ledger; adjacent ranges are copied as one."""
        start, end = segment.starts[0], segment.end
        self._written += end - start
        if self._pending_copy is not None and self._pending_copy[0] == segment.fd and self._pending_copy[2] == start:
            self._pending_copy = (segment.fd, self._pending_copy[1], end)
            return
        self._flush_copy()
        self._pending_copy = (segment.fd, start, end)

    def _flush_copy(self) -> None:
        """Copy the queued range into the candidates temp file (in the kernel where it can)."""
        if self._pending_copy is None:
            return
        fd, start, end = self._pending_copy
        self._pending_copy = None
        out = self._final["candidates"]
        out.flush()
        dst = out.fileno()
        while start < end:
            try:
                done = os.copy_file_range(fd, dst, end - start, start)
            except (OSError, AttributeError):  # another filesystem, an old kernel, not Linux
                done = 0
            if done <= 0:
                data = os.pread(fd, end - start, start)
                if len(data) != end - start:  # the prior ledger shrank under the run: never a short ledger
                    raise OSError(errno.EIO, "the candidates ledger changed while copied")
                out.write(data)
                out.flush()
                break
            start += done

    def _tagged(self, line: bytes) -> bytes:
        """``dumps({**row, RUN_TAG: run_id})`` of the row a line holds, without parsing it."""
        if len(line) > 3 and line.endswith(b"}\n"):
            return line[:-2] + self._tag
        return dumps({**json.loads(line), RUN_TAG: self.run_id})

    @property
    def pending(self) -> bool:
        return any(self._pending.values())

    def persist_partial(self) -> None:
        if not self.pending:
            return
        for name in COMMIT_ORDER:
            lines = self._pending[name]
            path = ledger_path(self.output_dir, name, partial=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE_MODE)
            try:
                os.write(fd, b"".join(lines)) if lines else None
                os.fsync(fd)
            finally:
                os.close(fd)
            lines.clear()
            crash_point(f"journal-{name}")
        fsync_dir(self.output_dir)

    def commit(self) -> None:
        identity: os.stat_result | None = None
        self._flush_copy()
        for name in COMMIT_ORDER:
            out = self._final[name]
            out.flush()
            os.fsync(out.fileno())
            if name == "candidates":
                identity = os.fstat(out.fileno())
            out.close()
            os.chmod(self._temps[name], PRIVATE_FILE_MODE)
            os.replace(self._temps[name], ledger_path(self.output_dir, name))
            crash_point(f"rename-{name}")
        fsync_dir(self.output_dir)
        for name in LEDGERS:
            try:
                os.unlink(ledger_path(self.output_dir, name, partial=True))
            except FileNotFoundError:
                pass
        fsync_dir(self.output_dir)
        if identity is not None:
            write_candidate_index(self.output_dir, identity, self.digest_context, self._digests, self._spans)

    def abort(self) -> None:
        for name, out in self._final.items():
            out.close()
            try:
                os.unlink(self._temps[name])
            except FileNotFoundError:
                pass


CRASH_ENV = "KB_TEST_CRASH_AT"


def crash_point(name: str) -> None:
    """``kill -9`` of this process at a named moment when ``$KB_TEST_CRASH_AT`` names
    it (bench/crash_drill.py and the crash tests; unset, it costs a dict lookup).
    Points: ``journal-<ledger>`` after that partial file is appended and fsynced,
    ``rename-<ledger>`` after that final ledger is renamed into place."""
    if os.environ.get(CRASH_ENV) == name:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


# What the duplicate marking needs of each stored candidate, by the rows_digest of
# its source's lines: a pure cache (same digest, same bytes, same keys), so an
# unchanged rerun need not decode code blocks and error messages again. Any
# damage is a cache miss.
KEY_CACHE_FILE = "dedup-keys.marshal"
_KEY_CACHE_FORMAT = 1


def read_key_cache(output_dir: Path) -> dict[str, list[Any]]:
    import marshal

    try:
        fmt, cache = marshal.loads((output_dir / KEY_CACHE_FILE).read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    return cache if fmt == _KEY_CACHE_FORMAT and isinstance(cache, dict) else {}


def write_key_cache(output_dir: Path, cache: dict[str, list[Any]]) -> None:
    import marshal

    atomic_write_bytes(output_dir / KEY_CACHE_FILE, [marshal.dumps((_KEY_CACHE_FORMAT, cache))])


# Where each source's lines start (and the last one ends) in candidates.jsonl, so
# a rerun need not scan the whole ledger to index it: a pure cache, valid only for
# the file it was written with (size, mtime, inode); any damage or mismatch is a
# miss and the ledger is scanned as before.
CANDIDATE_INDEX_FILE = "candidates-index.marshal"
_CANDIDATE_INDEX_FORMAT = 2


def _file_identity(stat: os.stat_result) -> tuple[int, int, int]:
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino)


def read_candidate_index(output_dir: Path, stat: os.stat_result
                         ) -> tuple[str, dict[str, str], dict[str, list[int]]] | None:
    """(digest context, rows_digest by source, line starts + end by source) of the file ``stat`` describes."""
    import marshal

    try:
        fmt, identity, context, digests, spans = marshal.loads((output_dir / CANDIDATE_INDEX_FILE).read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if fmt != _CANDIDATE_INDEX_FORMAT or identity != _file_identity(stat):
        return None
    if not (isinstance(context, str) and isinstance(digests, dict) and isinstance(spans, dict)):
        return None
    if not all(isinstance(v, list) and len(v) >= 2 and all(isinstance(n, int) for n in v) for v in spans.values()):
        return None
    return context, digests, spans


def write_candidate_index(output_dir: Path, stat: os.stat_result, context: str, digests: dict[str, str],
                          spans: dict[str, list[int]]) -> None:
    import marshal

    try:
        atomic_write_bytes(output_dir / CANDIDATE_INDEX_FILE, [marshal.dumps(
            (_CANDIDATE_INDEX_FORMAT, _file_identity(stat), context, digests, spans))])
    except OSError:
        pass  # only a cache: the next run scans the ledger


def remove_stale_temps(output_dir: Path) -> None:
    """Temp files of a killed run (``.<ledger>.jsonl.<pid>.<hex>.tmp``): never read, just litter."""
    for path in output_dir.glob(".*.tmp"):
        try:
            path.unlink()
        except OSError:
            pass


def make_private_dirs(path: Path) -> None:
    """``path`` and every folder created for it 0700 (``.agent/`` too, not only the leaf)."""
    missing = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        folder.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)
        os.chmod(folder, PRIVATE_DIR_MODE)
    ensure_private_dir(path)


def write_private_text(path: Path, text: str) -> None:
    make_private_dirs(path.parent)
    atomic_write_text(path, text)


# --------------------------------------------------------------------------- lock


class IngestLock:
    """One ``--write`` per output directory at a time.

    ``flock`` on ``<output>/.lock``: the kernel releases it when the holder
    dies, so a lock left by a killed run (a dead pid) is simply taken over.
    """

    def __init__(self, output_dir: Path) -> None:
        import fcntl

        path = output_dir / LOCK_FILE
        try:
            make_private_dirs(output_dir)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE)
        except OSError as exc:
            raise KbError(f"cannot create the output directory: {exc.strerror or exc}", str(output_dir)) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                who = f" (pid {holder})" if holder.isdigit() else ""
                raise KbError(f"another `kb ingest --write` is running on this output directory{who}",
                              str(output_dir)) from None
            raise KbError(f"cannot lock the output directory: {exc.strerror}", str(output_dir)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd: int | None = fd

    @property
    def fileno(self) -> int:
        assert self._fd is not None
        return self._fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None
