"""Reading the prior ledgers: the previous final ledgers merged with the journal of an
interrupted run, indexed by byte offset (:class:`PriorState`); only the manifest digests
(:class:`PriorSource`) live in memory, every other row is read back from disk when used.

A prior row that does not parse or lacks a required field is skipped and counted
(``malformed_prior_rows``), never a crash.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, NamedTuple

from kbtools.ingest import caches
from kbtools.ingest.caches import LedgerIndex, read_key_cache, read_ledger_index
from kbtools.ingest.hashing import hashed_identity_key
from kbtools.ingest.ledger import Row, Segment, candidate_keys, ledger_path, lines_of, open_ledger, restamped, stat_json
from kbtools.ingest.rows import LEDGERS, RUN_TAG, decode


class PriorSource(NamedTuple):
    """What the reuse decision needs of one prior manifest row (the row itself stays on disk).

    The fields up to ``rows_digest`` are the row's *entry*, what the ledger index
    keeps of it (see LEDGER_INDEX_FILE)."""

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
    # Digest of the candidate lines this row was written with (see the pipeline).
    rows_digest: str
    location: tuple[int, int] = (0, 0)  # (file number, byte offset)
    length: int = 0  # of the row's line, newline included (0: unknown)
    complete: bool = False
    from_journal: bool = False  # written by an interrupted run, not yet final
    identity: str = ""  # tool, project_key and session_hash (see hashing.hashed_identity_key)

    @property
    def entry(self) -> tuple[object, ...]:
        return tuple(self[:ENTRY_SIZE])


ENTRY_SIZE = PriorSource._fields.index("rows_digest") + 1  # the fields a manifest row gives


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def manifest_entry(row: Mapping[str, object]) -> tuple[object, ...]:
    """The :class:`PriorSource` entry of a manifest row."""
    return (
        row["source_key"],
        row["tool"],
        row["record_type"],
        row["project_key"],
        row["session_hash"],
        row["format"],
        row["content_hash"],
        row["parse_status"],
        row["redaction_status"],
        row["candidate_count"],
        row.get("skip_reason") or "",
        row.get("error") or "",
        row.get("truncated") is True,
        _count(row.get("internal_filtered")),
        row.get("locator_key") or "",
        stat_json(row.get("stat_key")),
        row.get("rows_digest") or "",
    )


_COMPLETE = PriorSource._fields.index("complete")


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
    key_cache: dict[str, bytes] = field(default_factory=dict)
    # The ledger files open for reading, by file number (see ``location``).
    _handles: list[IO[bytes]] = field(default_factory=list)
    # Where each source's candidate lines start in the final ledger, and where the
    # last one ends, when the ledger index answered (file number ``_indexed_file``):
    # its lines are then read in one go. These sources are not in ``rows``.
    _indexed: dict[str, list[int]] = field(default_factory=dict)
    _indexed_file: int = -1
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
        """Open a ledger once (its file number, or -1 if absent): it is indexed now and read back
        through the same handle later, so a file replaced meanwhile (a concurrent ``--write``)
        cannot shift offsets."""
        handle = open_ledger(path)
        if handle is None:
            return -1, None
        self._handles.append(handle)
        return len(self._handles) - 1, handle

    def _load(self, output_dir: Path) -> None:
        index = read_ledger_index(output_dir)
        main_groups = self._manifest_groups(ledger_path(output_dir, "manifest"), index, journal=False)
        partial_groups = self._manifest_groups(ledger_path(output_dir, "manifest", partial=True), None, journal=True)
        self.has_partial = bool(partial_groups)
        # A source is journalled once its manifest row is (a batch appends it last):
        # other journal rows are of a batch cut short, or of a run that committed
        # them and was killed while deleting its journal (the manifest part first).
        owned = {d.source_key for group in partial_groups.values() for d in group}
        journal: dict[str, dict[str, list[tuple[int, int]]]] = {}
        for name in self.rows:
            self.rows[name] = self._row_index(ledger_path(output_dir, name), name, index, journal=False)
            journal[name] = self._row_index(ledger_path(output_dir, name, partial=True), name, None, journal=True)
        # A journalled source takes its rows from the journal only
        # (partial wins per source_key, even when the journal has none of a kind).
        for name, rows in self.rows.items():
            for key in owned:
                if key in journal[name]:
                    rows[key] = journal[name][key]
                else:
                    rows.pop(key, None)
        for key in owned:
            self._indexed.pop(key, None)
        self.by_identity = {**main_groups, **partial_groups}
        candidates, indexed, rejected = self.rows["candidates"], self._indexed, self.rows["rejected"]
        make = PriorSource._make
        for group in self.by_identity.values():
            for i, digest in enumerate(group):
                # Complete: every promised candidate is there, and a source without
                # candidates says why (a rejected row).
                count = digest.candidate_count
                spans = indexed.get(digest.source_key)
                found = len(spans) - 1 if spans is not None else len(candidates.get(digest.source_key, ()))
                if found == count and (count > 0 or digest.source_key in rejected):
                    group[i] = make((*digest[:_COMPLETE], True, *digest[_COMPLETE + 1 :]))  # _replace, faster
        if not caches.enabled():
            return  # no stat cache: every source is read
        self.by_locator = {
            d.locator_key: d for group in self.by_identity.values() for d in group if d.locator_key and d.stat_key
        }

    def _manifest_groups(self, path: Path, index: LedgerIndex | None, *, journal: bool) -> dict[str, list[PriorSource]]:
        """Prior sources by identity (``journal``: rows tagged by run, the latest run's win)."""
        groups: dict[str, list[PriorSource]] = {}
        runs: dict[str, object] = {}
        number, handle = self._open(path)
        if handle is None:
            return groups
        cached = index.manifest(os.fstat(handle.fileno())) if index is not None else None
        if cached is not None:
            # Every row of the file, as entries, in file order (one row per source_key).
            make = PriorSource._make
            for entry, offset, length in cached:
                identity = f"{entry[1]}\0{entry[3]}\0{entry[4]}"  # hashed_identity_key, inlined
                digest = make((*entry, (number, offset), length, False, False, identity))
                groups.setdefault(identity, []).append(digest)
            return groups
        for line, offset in lines_of(handle):
            row = decode(line, "manifest")
            if row is None:
                self.malformed += 1
                continue
            # No length: a row not vouched for by the index is never re-emitted as it is.
            entry = manifest_entry(row)
            identity = hashed_identity_key(row["tool"], row["project_key"], row["session_hash"])
            digest = PriorSource._make((*entry, (number, offset), 0, False, journal, identity))
            group = groups.setdefault(identity, [])
            if journal and runs.get(identity) != row.get(RUN_TAG):
                runs[identity] = row.get(RUN_TAG)
                group.clear()
            # One row per source_key: a later row for the same source wins.
            group[:] = [d for d in group if d.source_key != digest.source_key]
            group.append(digest)
        return groups

    def _row_index(
        self, path: Path, ledger: str, index: LedgerIndex | None, *, journal: bool
    ) -> dict[str, list[tuple[int, int]]]:
        """Where each source's rows of ``ledger`` start (``journal``: as in :meth:`_manifest_groups`)."""
        rows: dict[str, list[tuple[int, int]]] = {}
        runs: dict[str, object] = {}
        number, handle = self._open(path)
        if handle is None:
            return rows
        if index is not None:
            stat = os.fstat(handle.fileno())
            if ledger == "candidates":
                cached = index.candidates(stat)
                if cached is not None:
                    self._digest_context, self._digests, self._indexed = cached
                    self._indexed_file = number
                    return rows
            else:
                offsets = index.offsets(ledger, stat)
                if offsets is not None:
                    return {source_key: [(number, at) for at in starts] for source_key, starts in offsets.items()}
        for line, start in lines_of(handle):
            if ledger == "candidates":
                # Most of the ledger's bytes: its keys are read off the line, not parsed
                # (a candidate is parsed, or its bytes checked by digest, when reused).
                key, run = candidate_keys(line)
            else:
                key = run = None
            if key is None:
                row = decode(line, ledger)
                if row is None:
                    self.malformed += 1
                    continue
                key, run = row["source_key"], row.get(RUN_TAG)
            if journal and runs.get(key) != run:
                runs[key] = run
                rows[key] = []
            rows.setdefault(key, []).append((number, start))
        return rows

    def trusted_segment(self, source_key: str, rows_digest: str, context: str) -> Segment | None:
        """The byte range of the final ledger holding exactly one source's candidate
        lines, when the offset index answered for it (lines contiguous, in order) and
        says these lines were written with ``rows_digest`` under ``context``: the
        digest check of :func:`pipeline.prior_rows` without reading the lines."""
        if not rows_digest or context != self._digest_context or self._digests.get(source_key) != rows_digest:
            return None
        return self._segment(source_key)

    def _segment(self, source_key: str) -> Segment | None:
        """Where one source's candidate lines lie in the final ledger, if the index says."""
        spans = self._indexed.get(source_key)
        if spans is None or len(spans) < 2:
            return None
        return Segment(self._handles[self._indexed_file].fileno(), tuple(spans[:-1]), spans[-1])

    def read_line(self, location: tuple[int, int]) -> bytes:
        """The line at ``location`` (validated when indexed, same open file), by ``pread``:
        worker processes read through the same open files, so no file offset is shared."""
        number, offset = location
        fd = self._handles[number].fileno()
        pieces: list[bytes] = []
        size = 8192
        while True:
            data = os.pread(fd, size, offset)
            end = data.find(b"\n")
            if end >= 0 or not data:
                pieces.append(data[: end + 1] if end >= 0 else data)
                return b"".join(pieces)
            pieces.append(data)
            offset += len(data)
            size = min(size * 2, 1 << 22)

    def read(self, location: tuple[int, int]) -> Row:
        row = json.loads(self.read_line(location))
        row.pop(RUN_TAG, None)
        return row  # type: ignore[no-any-return]

    def _locations(self, ledger: str, source_key: str) -> Sequence[tuple[int, int]]:
        spans = self._indexed.get(source_key) if ledger == "candidates" else None
        if spans is not None:
            return [(self._indexed_file, at) for at in spans[:-1]]
        return self.rows[ledger].get(source_key, ())

    def lines_for(self, ledger: str, source_key: str) -> list[bytes]:
        """The stored lines of one source, as bytes (newline-terminated)."""
        segment = self._segment(source_key) if ledger == "candidates" else None
        if segment is not None:
            try:
                return segment.read()
            except OSError:
                pass  # not as indexed: line by line
        lines = [self.read_line(location) for location in self._locations(ledger, source_key)]
        return [line if line.endswith(b"\n") else line + b"\n" for line in lines]

    def manifest_row(self, digest: PriorSource) -> Row:
        return self.read(digest.location)

    def restamped_manifest_line(self, digest: PriorSource, run_at: bytes) -> bytes | None:
        """The prior row's line as it is but for a new ``run_at`` (JSON), when the ledger
        index vouches for it (written by this version, so in canonical form), else None."""
        if not digest.length or digest.from_journal:
            return None
        line = self.read_line(digest.location)
        return restamped(line, run_at) if len(line) == digest.length else None

    def rows_for(self, ledger: str, source_key: str) -> list[Row]:
        return [self.read(location) for location in self._locations(ledger, source_key)]

    def close(self) -> None:
        for handle in self._handles:
            handle.close()
        self._handles.clear()
