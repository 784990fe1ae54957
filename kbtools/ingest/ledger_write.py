"""Writing the ledgers (``--write``; a dry run writes none): final ledgers streamed to temp
files and renamed into place at the end, progress appended to the journal (see
:mod:`kbtools.ingest.ledger`).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Protocol

from kbtools.fsio import PRIVATE_FILE_MODE, fsync_dir, open_private, stat_key, temp_path_for, write_all
from kbtools.ingest import caches
from kbtools.ingest.dedup import DedupKey, StoredKeys
from kbtools.ingest.ledger import crash_point, ledger_path
from kbtools.ingest.ledger_read import PriorLines, manifest_entry
from kbtools.ingest.rows import COMMIT_ORDER, LEDGERS, RUN_TAG, Row, dumps


class Reemitted(NamedTuple):
    """A prior manifest row written again with only its run_at changed: its line (the prior
    line with the new run_at) and entry, valid while the row's rows_digest is this one. The
    SourceRows' manifest then holds only the row's entry fields (but stat_key) and run_at."""

    line: bytes
    rows_digest: str
    entry: tuple[object, ...]


@dataclass
class SourceRows:
    """Everything one source contributes to the ledgers.

    Each candidate as its ledger line (``candidate_lines``) with what the duplicate
    marking needs of it (``candidate_keys``): made where the candidate is built, as
    a worker process sends it back (bytes pickle in a copy; a row of fifty fields
    does not). See :meth:`of`.
    """

    manifest: Row
    rejected: list[Row] = field(default_factory=list)
    events: list[Row] = field(default_factory=list)
    # Prior candidates the control-plane filter dropped on this run.
    internal_dropped: int = 0
    candidate_lines: Sequence[bytes] = field(default_factory=list)  # or prior ones unread (PriorLines)
    candidate_keys: list[DedupKey] = field(default_factory=list)
    # Or, for trusted prior lines, their keys as the key cache keeps them, and that
    # entry as stored (marshal), to be kept as it is.
    stored_keys: StoredKeys | None = None
    stored_blob: bytes = b""
    # The rows_digest of ``candidate_lines`` as they are, when already known (trusted prior lines).
    lines_digest: str = ""
    reemitted: Reemitted | None = None  # the manifest's line, when known (see reemit.prior_rows)

    @classmethod
    def of(
        cls, manifest: Row, candidates: list[Row], rejected: list[Row], events: list[Row], internal_dropped: int = 0
    ) -> SourceRows:
        """The rows of a source whose candidates are built (or re-checked) here."""
        lines = [dumps(row) for row in candidates]
        return cls(manifest, rejected, events, internal_dropped, lines, [DedupKey.of(row) for row in candidates])


class _Output(Protocol):
    def write(self, data: bytes, /) -> int: ...
    def flush(self) -> None: ...
    def fileno(self) -> int: ...
    def close(self) -> None: ...


BUFFER = 1 << 20
# Linux only; elsewhere the ranges are read and written by the process.
_copy_file_range = getattr(os, "copy_file_range", None)


class RangeWriter:
    """A file written in order from bytes and from byte ranges of other files, the ranges
    copied by the kernel (``copy_file_range``) without passing through the process; adjacent
    ranges of one file are copied in one call. Bytes are buffered up to :data:`BUFFER`."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer: list[bytes] = []
        self._buffered = 0
        self._range: tuple[int, int, int] | None = None  # (fd, start, end) to copy

    def fileno(self) -> int:
        return self._fd

    def write(self, data: bytes) -> int:
        if self._range is not None:
            self._copy()
        self._buffer.append(data)
        self._buffered += len(data)
        if self._buffered >= BUFFER:
            self._write_buffer()
        return len(data)

    def copy(self, fd: int, start: int, end: int) -> None:
        """Bytes ``start`` to ``end`` of the file ``fd`` written next (read by offset: the
        file's own offset is left alone)."""
        if self._buffer:
            self._write_buffer()
        if self._range is not None:
            if self._range[0] == fd and self._range[2] == start:
                self._range = (fd, self._range[1], end)
                return
            self._copy()
        self._range = (fd, start, end)

    def flush(self) -> None:
        if self._range is not None:
            self._copy()
        self._write_buffer()

    def close(self) -> None:
        self._buffer.clear()
        self._range = None
        os.close(self._fd)

    def _write_buffer(self) -> None:
        if self._buffer:
            write_all(self._fd, b"".join(self._buffer))
            self._buffer.clear()
            self._buffered = 0

    def _copy(self) -> None:
        assert self._range is not None
        fd, start, end = self._range
        self._range = None
        while _copy_file_range is not None and start < end:
            try:
                done = _copy_file_range(fd, self._fd, end - start, start)
            except OSError:  # not between these files (another file system, an old kernel)
                done = 0
            if not done:  # a file shorter than its index says is caught by the size check below
                break
            start += done
        while start < end:
            data = os.pread(fd, min(end - start, BUFFER), start)
            if not data:
                raise OSError(f"prior ledger shorter than its index ({start} < {end})")
            write_all(self._fd, data)
            start += len(data)


class WriteSink:
    """``--write``: final ledgers streamed to temp files, progress appended to the journal."""

    def __init__(self, output_dir: Path, run_id: str) -> None:
        self.output_dir = output_dir
        self.run_id = run_id
        self._temps = {name: temp_path_for(ledger_path(output_dir, name)) for name in LEDGERS}
        self._final: dict[str, _Output] = {
            name: os.fdopen(open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL), "wb", buffering=BUFFER)
            for name, tmp in self._temps.items()
            if name != "candidates"
        }
        # Prior lines written again as they were are copied from the prior ledger by byte range.
        self._candidates = RangeWriter(open_private(self._temps["candidates"], os.O_WRONLY | os.O_CREAT | os.O_EXCL))
        self._final["candidates"] = self._candidates
        self._pending: dict[str, list[bytes]] = {name: [] for name in LEDGERS}
        # The offset index of the candidates ledger being written (see LEDGER_INDEX_FILE).
        self._spans: dict[str, list[int]] = {}
        self._written = 0
        self._digests: dict[str, str] = {}
        # The rest of the ledger index: each manifest row's entry and offset.
        self._entries: list[tuple[tuple[object, ...], int]] = []
        self._manifest_size = 0
        # What every rows_digest of this run was computed under (set by the pipeline).
        self.digest_context = ""
        self._tag = b',"' + RUN_TAG.encode() + b'":' + json.dumps(run_id).encode() + b"}\n"

    def emit(self, rows: SourceRows, *, journal: bool) -> None:
        key, lines = rows.manifest["source_key"], rows.candidate_lines  # a source is emitted once
        if lines:
            self._digests[key] = rows.manifest.get("rows_digest") or ""
            if isinstance(lines, PriorLines):  # as the prior ledger holds them (read or not)
                start, shift = lines.spans[0], self._written - lines.spans[0]
                self._spans[key] = [at + shift for at in lines.spans]
                self._written += lines.spans[-1] - start
                self._candidates.copy(lines.fd, start, lines.spans[-1])
            else:
                spans = self._spans[key] = []
                for line in lines:
                    spans.append(self._written)
                    self._written += len(line)
                spans.append(self._written)
                self._candidates.write(b"".join(lines))
        if journal:
            self._pending["candidates"].extend(self._tagged(line) for line in lines)
        for name, items in (("rejected", rows.rejected), ("events", rows.events)):
            if not items:  # most sources: nothing to write
                continue
            data = [dumps(row) for row in items]
            self._final[name].write(b"".join(data))
            if journal:
                self._pending[name].extend(map(self._tagged, data))
        known, row = rows.reemitted, rows.manifest
        if known is not None and known.rows_digest == row.get("rows_digest"):
            line, entry = known.line, known.entry
        else:
            if known is not None:  # a row kept unparsed whose rows_digest the run changed
                row = {**json.loads(known.line), "rows_digest": row.get("rows_digest")}
            line, entry = dumps(row), manifest_entry(row)
        self._entries.append((entry, self._manifest_size))
        self._manifest_size += len(line)
        self._final["manifest"].write(line)
        if journal:
            self._pending["manifest"].append(self._tagged(line))

    def _tagged(self, line: bytes) -> bytes:
        """``dumps({**row, RUN_TAG: run_id})`` of the row a line holds, without parsing it."""
        if len(line) > 3 and line.endswith(b"}\n"):
            return line[:-2] + self._tag
        return dumps({**json.loads(line), RUN_TAG: self.run_id})

    @property
    def pending(self) -> bool:
        return any(self._pending.values())

    def persist_partial(self) -> None:
        for name in COMMIT_ORDER:
            lines = self._pending[name]
            path = ledger_path(self.output_dir, name, partial=True)
            fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
            try:
                write_all(fd, b"".join(lines))
                os.fsync(fd)
            finally:
                os.close(fd)
            lines.clear()
            crash_point(f"journal-{name}")
        fsync_dir(self.output_dir)

    def commit(self) -> None:
        written: dict[str, os.stat_result] = {}
        for name in COMMIT_ORDER:
            out = self._final.pop(name)
            out.flush()
            os.fsync(out.fileno())
            written[name] = os.fstat(out.fileno())
            out.close()
            os.chmod(self._temps[name], PRIVATE_FILE_MODE)
            os.replace(self._temps[name], ledger_path(self.output_dir, name))
            crash_point(f"rename-{name}")
        fsync_dir(self.output_dir)
        for name in LEDGERS:  # the manifest part first: the rest is then ignored (see PriorState.load)
            ledger_path(self.output_dir, name, partial=True).unlink(missing_ok=True)
            crash_point(f"unlink-{name}")
        fsync_dir(self.output_dir)
        index = {
            "manifest": (stat_key(written["manifest"]), self._entries),
            "candidates": (stat_key(written["candidates"]), (self.digest_context, self._digests, self._spans)),
        }
        caches.write(self.output_dir, caches.LEDGER_INDEX_FILE, index)

    def abort(self) -> None:
        """Every temp file closed and removed; what cannot be written now (a full disk) is
        dropped, never raised over the error that aborted the run."""
        for out in self._final.values():
            with contextlib.suppress(OSError):  # its buffer could not be written: the file goes anyway
                out.close()
        self._final.clear()
        for tmp in self._temps.values():
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
