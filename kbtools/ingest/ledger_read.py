"""Reading the prior ledgers: the previous final ledgers merged with the journal of an
interrupted run, indexed by byte offset (:class:`PriorState`); only the manifest digests
(:class:`PriorSource`) live in memory, every other row is read back from disk when used.

A prior row that does not parse or lacks a required field is skipped and counted
(``malformed_prior_rows``), never a crash.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple, overload

from kbtools.ingest import caches
from kbtools.ingest.hashing import hashed_identity_key
from kbtools.ingest.ledger import candidate_keys, ledger_path, lines_of, open_ledger, stat_json
from kbtools.ingest.rows import LEDGERS, RUN_TAG, ManifestRow, Row, decode


class PriorSource(NamedTuple):
    """What the reuse decision needs of one prior manifest row (the row itself stays on disk).

    The fields up to ``rows_digest`` are the row's *entry* (:data:`ENTRY_FIELDS`), what
    the ledger index keeps of it."""

    source_key: str
    tool: str
    record_type: str
    project_key: str
    session_hash: str
    format: str
    content_hash: str
    parse_status: str
    redaction_status: str
    candidate_count: int
    skip_reason: str
    error: str
    truncated: bool
    internal_filtered: int
    # The stat cache: which locator (hashed) this row was read from, and the
    # version read (compact JSON), so an unchanged file is reused unread.
    locator_key: str
    stat_key: str
    rows_digest: str  # of the candidate lines this row was written with (see reemit.rows_digest)
    location: tuple[int, int] = (0, 0)  # (file number, byte offset)
    complete: bool = False
    from_journal: bool = False  # written by an interrupted run, not yet final
    identity: str = ""  # tool, project_key and session_hash (see hashing.hashed_identity_key)


ENTRY_FIELDS = PriorSource._fields[: PriorSource._fields.index("rows_digest") + 1]
MANIFEST_DEFAULTS = {f.name: f.default for f in dataclasses.fields(ManifestRow)}


def manifest_entry(row: Mapping[str, object]) -> tuple[object, ...]:
    """The :class:`PriorSource` entry of a manifest row (absent fields take their defaults)."""
    values = {**MANIFEST_DEFAULTS, **row}
    values["stat_key"] = stat_json(values["stat_key"])
    return tuple(values[name] for name in ENTRY_FIELDS)


Spans = dict[str, list[tuple[int, int]]]


@dataclass
class PriorState:
    """The previous ledgers merged with the partial journal, indexed by byte offset."""

    by_identity: dict[str, list[PriorSource]] = field(default_factory=dict)
    by_locator: dict[str, PriorSource] = field(default_factory=dict)
    # Where each source's rows start, per ledger but the manifest (file number, offset).
    rows: dict[str, Spans] = field(default_factory=dict)
    malformed: int = 0
    has_partial: bool = False
    # Dedup keys of trusted candidate lines by their rows_digest (see KEY_CACHE_FILE).
    key_cache: dict[str, bytes] = field(default_factory=dict)
    # The ledger files open for reading, by file number (see ``location``).
    _handles: list[IO[bytes]] = field(default_factory=list)
    # Where each source's candidate lines start in the final ledger, and where the
    # last one ends, when the ledger index answered (file number ``_indexed_file``):
    # its lines are then read in one go. These sources are not in ``rows``.
    _indexed: dict[str, list[int]] = field(default_factory=dict)
    _indexed_file: int = -1
    # What the ledger index says those lines were written as: the digest context of the run
    # that wrote them and each source's rows_digest (see reemit.rows_digest).
    _indexed_manifest: int = -1  # the file number of the final manifest, when the index gave its rows
    _indexed_context: str = ""
    _indexed_digests: dict[str, str] = field(default_factory=dict)

    def _open(self, path: Path) -> tuple[int, IO[bytes] | None]:
        """Open a ledger once (its file number, or -1 if absent): it is indexed now and read back
        through the same handle later, so a file replaced meanwhile (a concurrent ``--write``)
        cannot shift offsets."""
        handle = open_ledger(path)
        if handle is None:
            return -1, None
        self._handles.append(handle)
        return len(self._handles) - 1, handle

    def load(self, output_dir: Path) -> PriorState:
        """The ledgers of ``output_dir`` indexed into this (empty) state; files it opens are
        closed by :meth:`close`, even when loading fails half-way."""
        self.key_cache = caches.read(output_dir, caches.KEY_CACHE_FILE) or {}
        index = caches.read(output_dir, caches.LEDGER_INDEX_FILE)
        main_groups = self._manifest_groups(ledger_path(output_dir, "manifest"), index, journal=False)
        partial_groups = self._manifest_groups(ledger_path(output_dir, "manifest", partial=True), None, journal=True)
        self.has_partial = bool(partial_groups)
        # A source is journalled once its manifest row is (a batch appends it last):
        # other journal rows are of a batch cut short, or of a run that committed
        # them and was killed while deleting its journal (the manifest part first).
        owned = {d.source_key for group in partial_groups.values() for d in group}
        for name in LEDGERS[1:]:
            rows = self.rows[name] = self._row_index(ledger_path(output_dir, name), name, index, journal=False)
            journal = self._row_index(ledger_path(output_dir, name, partial=True), name, None, journal=True)
            # A journalled source takes its rows from the journal only
            # (partial wins per source_key, even when the journal has none of a kind).
            for key in owned:
                rows.pop(key, None)
            rows.update((key, spans) for key, spans in journal.items() if key in owned)
        for key in owned:
            self._indexed.pop(key, None)
        self.by_identity = {**main_groups, **partial_groups}
        candidates, indexed, rejected = self.rows["candidates"], self._indexed, self.rows["rejected"]
        for group in self.by_identity.values():
            for i, digest in enumerate(group):
                # Complete: every promised candidate is there, and a source without
                # candidates says why (a rejected row).
                count = digest.candidate_count
                spans = indexed.get(digest.source_key)
                found = len(spans) - 1 if spans is not None else len(candidates.get(digest.source_key, ()))
                if found == count and (count > 0 or digest.source_key in rejected):
                    group[i] = digest._replace(complete=True)
        if caches.enabled():  # the stat cache
            self.by_locator = {
                d.locator_key: d for group in self.by_identity.values() for d in group if d.locator_key and d.stat_key
            }
        return self

    def _lines(self, handle: IO[bytes], ledger: str) -> Iterator[tuple[Row | None, str, object, int]]:
        """``(row, source_key, run tag, offset)`` of each valid line; candidate lines are not
        parsed (row None) when their keys can be read off the line (most of the ledger's
        bytes: a candidate is parsed, or its bytes checked by digest, when reused)."""
        for line, offset in lines_of(handle):
            key, run = candidate_keys(line) if ledger == "candidates" else (None, None)
            row = None
            if key is None:
                row = decode(line, ledger)
                if row is None:
                    self.malformed += 1
                    continue
                key, run = row["source_key"], row.get(RUN_TAG)
            yield row, key, run, offset

    def _manifest_groups(self, path: Path, index: object, *, journal: bool) -> dict[str, list[PriorSource]]:
        """Prior sources by identity (``journal``: rows tagged by run, the latest run's win)."""
        groups: dict[str, list[PriorSource]] = {}
        number, handle = self._open(path)
        if handle is None:
            return groups
        cached = caches.index_part(index, "manifest", os.fstat(handle.fileno()))
        if cached is not None:
            self._indexed_manifest = number
            # Every row of the file, as entries, in file order (one row per source_key).
            for entry, offset in cached:
                identity = hashed_identity_key(entry[1], entry[3], entry[4])
                digest = PriorSource._make((*entry, (number, offset), False, False, identity))
                groups.setdefault(identity, []).append(digest)
            return groups
        runs: dict[str, object] = {}
        for row, key, run, offset in self._lines(handle, "manifest"):
            assert row is not None
            identity = hashed_identity_key(row["tool"], row["project_key"], row["session_hash"])
            digest = PriorSource._make((*manifest_entry(row), (number, offset), False, journal, identity))
            group = groups.setdefault(identity, [])
            if journal and runs.get(identity) != run:
                runs[identity] = run
                group.clear()
            # One row per source_key: a later row for the same source wins.
            group[:] = [d for d in group if d.source_key != key]
            group.append(digest)
        return groups

    def _row_index(self, path: Path, ledger: str, index: object, *, journal: bool) -> Spans:
        """Where each source's rows of ``ledger`` start (``journal``: as in :meth:`_manifest_groups`)."""
        rows: Spans = {}
        number, handle = self._open(path)
        if handle is None:
            return rows
        if ledger == "candidates":
            cached = caches.index_part(index, ledger, os.fstat(handle.fileno()))
            if cached is not None:
                self._indexed_context, self._indexed_digests, self._indexed = cached
                self._indexed_file = number
                return rows
        runs: dict[str, object] = {}
        for _, key, run, offset in self._lines(handle, ledger):
            if journal and runs.get(key) != run:
                runs[key] = run
                rows[key] = []
            rows.setdefault(key, []).append((number, offset))
        return rows

    def read_line(self, location: tuple[int, int]) -> bytes:
        """The line at ``location``, by ``pread``: worker processes are forked with these
        files open, so no file offset is shared."""
        number, offset = location
        fd = self._handles[number].fileno()
        pieces: list[bytes] = []
        while data := os.pread(fd, 8192, offset):
            end = data.find(b"\n")
            if end >= 0:
                pieces.append(data[: end + 1])
                break
            pieces.append(data)
            offset += len(data)
        return b"".join(pieces)

    def read(self, location: tuple[int, int]) -> Row:
        row: dict[str, Any] = json.loads(self.read_line(location))
        row.pop(RUN_TAG, None)
        return row

    def vouched_row(self, digest: PriorSource) -> bool:
        """Whether ``digest``'s manifest line is in the final ledger as the ledger index says:
        written by this version's writer, from a row of these fields (see LEDGER_INDEX_FILE)."""
        return not digest.from_journal and digest.location[0] == self._indexed_manifest

    def _locations(self, ledger: str, source_key: str) -> list[tuple[int, int]]:
        spans = self._indexed.get(source_key) if ledger == "candidates" else None
        if spans is not None:
            return [(self._indexed_file, at) for at in spans[:-1]]
        return self.rows[ledger].get(source_key, [])

    def candidate_lines(self, source_key: str) -> list[bytes]:
        """The stored candidate lines of one source, as bytes (newline-terminated)."""
        spans = self._indexed.get(source_key)
        if spans is not None and len(spans) > 1:  # contiguous, in order: in one go
            data = os.pread(self._handles[self._indexed_file].fileno(), spans[-1] - spans[0], spans[0])
            lines = data.splitlines(keepends=True)
            if len(lines) == len(spans) - 1:
                return lines
        lines = [self.read_line(location) for location in self._locations("candidates", source_key)]
        return [line if line.endswith(b"\n") else line + b"\n" for line in lines]

    def vouched_lines(self, source_key: str, rows_digest: str, context: str) -> PriorLines | None:
        """The candidate lines of ``source_key`` unread, when the ledger index vouches that they
        are what ``rows_digest`` was computed from under ``context`` (see reemit.digest_context):
        the final ledger is the very file the index was written with, and the run that wrote it
        computed this digest of these lines in this context. None otherwise (they are then read
        and hashed)."""
        spans = self._indexed.get(source_key)
        if (
            spans is None
            or len(spans) < 2
            or not rows_digest
            or context != self._indexed_context
            or self._indexed_digests.get(source_key) != rows_digest
        ):
            return None
        return PriorLines(self, source_key, self._handles[self._indexed_file].fileno(), spans)

    def rows_for(self, ledger: str, source_key: str) -> list[Row]:
        return [self.read(location) for location in self._locations(ledger, source_key)]

    def close(self) -> None:
        for handle in self._handles:
            handle.close()
        self._handles.clear()


class PriorLines(Sequence[bytes]):
    """One source's candidate lines in the final prior ledger, read only when looked at: as
    they are, they are copied from file to file by their byte range (see WriteSink.emit).
    ``spans``: each line's offset in the file ``fd``, then where the last one ends."""

    def __init__(self, prior: PriorState, source_key: str, fd: int, spans: list[int]) -> None:
        self._prior, self._key, self.fd, self.spans = prior, source_key, fd, spans
        self._lines: list[bytes] | None = None

    @property
    def lines(self) -> list[bytes]:
        if self._lines is None:
            self._lines = self._prior.candidate_lines(self._key)
        return self._lines

    def __len__(self) -> int:
        return len(self.spans) - 1

    @overload
    def __getitem__(self, index: int) -> bytes: ...
    @overload
    def __getitem__(self, index: slice) -> list[bytes]: ...
    def __getitem__(self, index: int | slice) -> bytes | list[bytes]:
        return self.lines[index]

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.lines)

    def __eq__(self, other: object) -> bool:
        return self.lines == list(other) if isinstance(other, list | PriorLines) else NotImplemented

    __hash__ = None  # type: ignore[assignment]
