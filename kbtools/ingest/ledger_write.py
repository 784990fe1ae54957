"""Writing the ledgers (``--write``; a dry run writes none): final ledgers streamed to temp
files and renamed into place at the end, progress appended to the journal (see
:mod:`kbtools.ingest.ledger`).
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from kbtools.fsio import PRIVATE_FILE_MODE, fsync_dir, open_private, stat_key, temp_path_for, write_all
from kbtools.ingest import caches
from kbtools.ingest.dedup import DedupKey, StoredKeys
from kbtools.ingest.ledger import crash_point, ledger_path
from kbtools.ingest.ledger_read import manifest_entry
from kbtools.ingest.rows import COMMIT_ORDER, LEDGERS, RUN_TAG, Row, dumps


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
    candidate_lines: list[bytes] = field(default_factory=list)
    candidate_keys: list[DedupKey] = field(default_factory=list)
    # Or, for trusted prior lines, their keys as the key cache keeps them, and that
    # entry as stored (marshal), to be kept as it is.
    stored_keys: StoredKeys | None = None
    stored_blob: bytes = b""
    # The rows_digest of ``candidate_lines`` as they are, when already known (trusted prior lines).
    lines_digest: str = ""

    @classmethod
    def of(
        cls, manifest: Row, candidates: list[Row], rejected: list[Row], events: list[Row], internal_dropped: int = 0
    ) -> SourceRows:
        """The rows of a source whose candidates are built (or re-checked) here."""
        lines = [dumps(row) for row in candidates]
        return cls(manifest, rejected, events, internal_dropped, lines, [DedupKey.of(row) for row in candidates])


class WriteSink:
    """``--write``: final ledgers streamed to temp files, progress appended to the journal."""

    def __init__(self, output_dir: Path, run_id: str) -> None:
        self.output_dir = output_dir
        self.run_id = run_id
        self._temps = {name: temp_path_for(ledger_path(output_dir, name)) for name in LEDGERS}
        self._final: dict[str, IO[bytes]] = {
            name: os.fdopen(open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL), "wb", buffering=1 << 20)
            for name, tmp in self._temps.items()
        }
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
            spans = self._spans[key] = []
            for line in lines:
                spans.append(self._written)
                self._written += len(line)
            spans.append(self._written)
            self._final["candidates"].write(b"".join(lines))
        if journal:
            self._pending["candidates"].extend(self._tagged(line) for line in lines)
        for name, items in (("rejected", rows.rejected), ("events", rows.events)):
            data = [dumps(row) for row in items]
            self._final[name].write(b"".join(data))
            if journal:
                self._pending[name].extend(map(self._tagged, data))
        line = dumps(rows.manifest)
        self._entries.append((manifest_entry(rows.manifest), self._manifest_size))
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
