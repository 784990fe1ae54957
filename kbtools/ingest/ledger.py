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
import marshal
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple

from kbtools.errors import KbError
from kbtools.fsio import (
    PRIVATE_FILE_MODE,
    atomic_write_bytes,
    atomic_write_text,
    ensure_private_dir,
    fsync_dir,
    stat_key,
    temp_path_for,
    write_all,
)
from kbtools.ingest.hashing import hashed_identity_key
from kbtools.ingest.rows import (
    COMMIT_ORDER,
    LEDGERS,
    RUN_TAG,
    SCHEMA_KEY,
    decode,
    dumps,
)

_CANDIDATE_REQUIRED = ("candidate_id", "text", "fingerprint")

LOCK_FILE = ".lock"
SUMMARY_FILE = "run-summary.md"

Row = dict[str, Any]


def stat_json(stat_key: Any) -> str:
    """A source version as compact JSON ("" for none): equal strings, equal versions."""
    if stat_key is None or isinstance(stat_key, str) or not isinstance(stat_key, (list, tuple)):
        return ""
    if len(stat_key) == 3 and type(stat_key[0]) is type(stat_key[1]) is type(stat_key[2]) is int:
        return f"[{stat_key[0]:d},{stat_key[1]:d},{stat_key[2]:d}]"  # a file's (size, mtime_ns, inode): as json.dumps has it
    return json.dumps(list(stat_key), separators=(",", ":"))


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


def _lines(fh: IO[bytes]) -> Iterator[tuple[bytes, int]]:
    """``(line, byte offset)`` per non-blank line of an open file."""
    offset = 0
    for line in fh:
        start, offset = offset, offset + len(line)
        if line.strip():
            yield line, start


def iter_ledger(path: Path, ledger: str) -> Iterator[Row | None]:
    """Each non-blank line's row (None if malformed); nothing if the file is absent."""
    fh = open_ledger(path)
    if fh is None:
        return
    with fh:
        for line, _ in _lines(fh):
            yield decode(line, ledger)


_RUN_AT = b',"run_at":'


def restamped(line: bytes, run_at: bytes) -> bytes | None:
    """A row line written by :func:`dumps` whose last field is ``run_at``, with a new
    ``run_at`` (a JSON string); None for any other line."""
    at = line.rfind(_RUN_AT)
    if at < 0 or not line.endswith(b'"}\n') or line[at + len(_RUN_AT) : at + len(_RUN_AT) + 1] != b'"':
        return None
    old = line[at + len(_RUN_AT) + 1 : -3]
    if b'"' in old or b"\\" in old:
        return None
    return b"".join((line[:at], _RUN_AT, run_at, b"}\n"))


_SOURCE_KEY = b'"source_key":"'
_RUN_KEY = b'"' + RUN_TAG.encode() + b'":"'
_CANDIDATE_KEYS = tuple(f'"{name}":"'.encode() for name in _CANDIDATE_REQUIRED)


def _candidate_keys(line: bytes) -> tuple[str | None, str | None]:
    """(source_key, run tag) of a whole candidate line as written here, or
    (None, None) when it must be parsed. A key with its quotes occurs unescaped
    only as a key: inside a string value every quote is escaped."""
    if not (line.startswith(b'{"') and line.endswith(b"}\n")) or not all(k in line for k in _CANDIDATE_KEYS):
        return None, None
    values: list[str | None] = []
    for name in (_SOURCE_KEY, _RUN_KEY):
        at = line.find(name)
        if at < 0:
            values.append(None)
            continue
        end = line.find(b'"', at + len(name))
        value = line[at + len(name) : end]
        if end < 0 or b"\\" in value or not value.isascii():
            return None, None
        values.append(value.decode("ascii"))
    return (values[0], values[1]) if values[0] else (None, None)


# --------------------------------------------------------------------------- prior state


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
    def entry(self) -> tuple[Any, ...]:
        return tuple(self[:ENTRY_SIZE])


ENTRY_SIZE = PriorSource._fields.index("rows_digest") + 1  # the fields a manifest row gives


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def manifest_entry(row: Mapping[str, Any]) -> tuple[Any, ...]:
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


_READ_AHEAD = 256 * 1024
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
    # The bytes last read ahead (file number, offset, bytes; see read_line): rows are read
    # back mostly in file order, so one read serves many (a read a row cost more than the row).
    _ahead: tuple[int, int, bytes] = (-1, 0, b"")

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
        for line, offset in _lines(handle):
            row = decode(line, "manifest")
            if row is None:
                self.malformed += 1
                continue
            # No length: a row not vouched for by the index is never re-emitted as it is.
            entry = manifest_entry(row)
            identity = hashed_identity_key(entry[1], entry[3], entry[4])
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
        for line, start in _lines(handle):
            if ledger == "candidates":
                # Most of the ledger's bytes: its keys are read off the line, not parsed
                # (a candidate is parsed, or its bytes checked by digest, when reused).
                key, run = _candidate_keys(line)
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
        worker processes read through the same open files, so no file offset is shared.
        Rows are mostly read in file order: one read serves the lines that follow."""
        number, offset = location
        ahead_number, start, data = self._ahead
        if ahead_number == number and start <= offset < start + len(data):
            end = data.find(b"\n", offset - start)
            if end >= 0:
                return data[offset - start : end + 1]
        fd = self._handles[number].fileno()
        pieces: list[bytes] = []
        size = _READ_AHEAD
        while True:
            data = os.pread(fd, size, offset)
            if not pieces:
                self._ahead = (number, offset, data)
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


# --------------------------------------------------------------------------- writers


class Segment(NamedTuple):
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

    Candidates come as rows (``candidates``), or *packed*: ``candidates`` empty,
    ``candidate_lines`` every line as bytes and ``candidate_keys`` what the
    duplicate marking needs of each — what a worker process sends back (bytes
    pickle in a copy; a row of fifty fields does not).
    """

    manifest: Row
    candidates: list[Row] = field(default_factory=list)
    rejected: list[Row] = field(default_factory=list)
    events: list[Row] = field(default_factory=list)
    # Prior candidates the control-plane filter dropped on this run.
    internal_dropped: int = 0
    candidate_lines: list[bytes | None] = field(default_factory=list)
    candidate_keys: list[Any] = field(default_factory=list)
    # Or, for trusted prior lines, their keys as the key cache keeps them (candidates.StoredKeys),
    # and that entry as stored (marshal), to be kept as it is.
    stored_keys: tuple[Any, ...] | None = None
    stored_blob: bytes = b""
    # The rows_digest of ``candidate_lines`` as they are, when already known (trusted prior lines).
    lines_digest: str = ""
    # Trusted prior lines not read yet (``candidate_lines`` all None): copied as a byte range.
    segment: Segment | None = None
    # The manifest row as it is written, when a prior row is re-emitted as it was
    # (but for ``run_at``): ``manifest`` then holds only what the run reads of it,
    # and ``entry`` is its PriorSource entry. See :meth:`full_manifest`.
    manifest_line: bytes | None = None
    entry: tuple[Any, ...] | None = None
    # The source's extraction memo, when it was extracted on this run (see kbtools.ingest.memo).
    memo: bytes = b""

    def materialize(self) -> None:
        """Read the lines of :attr:`segment` into :attr:`candidate_lines`."""
        if self.segment is not None:
            self.candidate_lines = list(self.segment.read())
            self.segment = None

    def full_manifest(self) -> Row:
        """:attr:`manifest` as a whole row, to be changed (drops :attr:`manifest_line`)."""
        if self.manifest_line is not None:
            self.manifest = json.loads(self.manifest_line)
            self.manifest_line = self.entry = None
        return self.manifest

    @property
    def packed(self) -> bool:
        return not self.candidates

    @property
    def candidate_count(self) -> int:
        return len(self.candidate_lines) if self.packed else len(self.candidates)

    def lines_of_candidates(self) -> list[bytes]:
        if self.packed:
            return [line for line in self.candidate_lines if line is not None]
        return [dumps(row) for row in self.candidates]


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


class _BackgroundWriter:
    """A temp ledger written by a thread of its own: byte ranges copied from the prior
    ledger (in the kernel where it can), new lines appended, the data synced to disk
    as it goes. The run's thread only queues (the syscalls release the GIL), so a
    rerun's tens of MB of unchanged lines cost it no copying and little waiting at
    the final fsync. A failure is raised in the run's thread at its next call."""

    SYNC_EVERY = 16 << 20  # bytes written between two fdatasync
    CHUNK = 1 << 20  # lines are queued in pieces of about this size

    def __init__(self, fd: int) -> None:
        import queue
        import threading

        self.fd = fd
        self._ops: queue.Queue[bytes | tuple[int, int, int] | None] = queue.Queue(maxsize=16)
        self._buffer: list[bytes] = []
        self._buffered = 0
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="kb-ledger-writer", daemon=True)
        self._thread.start()

    def write(self, data: bytes) -> None:
        self._buffer.append(data)
        self._buffered += len(data)
        if self._buffered >= self.CHUNK:
            self._push()

    def copy(self, fd: int, start: int, end: int) -> None:
        self._push()
        self._put((fd, start, end))

    def finish(self) -> os.stat_result:
        """Everything written and fsynced; the file's stat."""
        self._push()
        self._stop()
        os.fsync(self.fd)
        return os.fstat(self.fd)

    def close(self) -> None:
        if self._thread.is_alive():
            self._error = self._error or OSError(errno.ECANCELED, "abandoned")
            self._ops.put(None)
            self._thread.join()
        os.close(self.fd)

    def _push(self) -> None:
        if self._buffer:
            data = b"".join(self._buffer)
            self._buffer.clear()
            self._buffered = 0
            self._put(data)

    def _put(self, op: bytes | tuple[int, int, int]) -> None:
        if self._error is not None:
            raise self._error
        self._ops.put(op)

    def _stop(self) -> None:
        self._ops.put(None)
        self._thread.join()
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        unsynced = 0
        while True:
            op = self._ops.get()
            if op is None:
                return
            if self._error is not None:
                continue  # failed: drain until told to stop
            try:
                if isinstance(op, bytes):
                    write_all(self.fd, op)
                    unsynced += len(op)
                else:
                    unsynced += _copy_range(op[0], self.fd, op[1], op[2])
                if unsynced >= self.SYNC_EVERY:
                    os.fdatasync(self.fd)
                    unsynced = 0
            except BaseException as exc:
                self._error = exc


def _copy_range(src: int, dst: int, start: int, end: int) -> int:
    """Append ``src[start:end]`` to ``dst`` (in the kernel where it can); the bytes copied."""
    total = end - start
    while start < end:
        try:
            done = os.copy_file_range(src, dst, end - start, start)
        except (OSError, AttributeError):  # another filesystem, an old kernel, not Linux
            done = 0
        if done <= 0:
            data = os.pread(src, end - start, start)
            if len(data) != end - start:  # the prior ledger shrank under the run: never a short ledger
                raise OSError(errno.EIO, "the candidates ledger changed while copied")
            write_all(dst, data)
            break
        start += done
    return total


class WriteSink(LedgerSink):
    """``--write``: final ledgers streamed to temp files, progress appended to the journal.

    The candidates ledger, most of the bytes, is written by a :class:`_BackgroundWriter`."""

    COPY_PIECE = 4 << 20

    def __init__(self, output_dir: Path, run_id: str) -> None:
        self.output_dir = output_dir
        self.run_id = run_id
        self._temps: dict[str, Path] = {}
        self._final: dict[str, IO[bytes]] = {}
        self._candidates: _BackgroundWriter | None = None
        for name in LEDGERS:
            path = ledger_path(output_dir, name)
            tmp = temp_path_for(path)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
            self._temps[name] = tmp
            if name == "candidates":
                self._candidates = _BackgroundWriter(fd)
            else:
                self._final[name] = os.fdopen(fd, "wb", buffering=1 << 20)
        self._pending: dict[str, list[bytes]] = {name: [] for name in LEDGERS}
        # The offset index of the candidates ledger being written (see LEDGER_INDEX_FILE).
        self._spans: dict[str, list[int]] = {}
        self._written = 0
        self._pending_copy: tuple[int, int, int] | None = None  # (fd, start, end) of the prior ledger
        self._digests: dict[str, str] = {}
        # The rest of the ledger index: manifest entries, rejected and event row starts.
        self._entries: list[tuple[tuple[Any, ...], int, int]] = []
        self._starts: dict[str, dict[str, list[int]]] = {"rejected": {}, "events": {}}
        self._sizes = {"manifest": 0, "rejected": 0, "events": 0}
        # What every rows_digest of this run was computed under (set by the pipeline).
        self.digest_context = ""
        self._tag = b',"' + RUN_TAG.encode() + b'":' + json.dumps(run_id).encode() + b"}\n"

    def emit(self, rows: SourceRows, *, journal: bool) -> None:
        if journal:
            rows.materialize()
        segment = rows.segment
        if segment is not None:
            self._spans[rows.manifest["source_key"]] = [
                self._written + at - segment.starts[0] for at in (*segment.starts, segment.end)
            ]
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
            self._writer.write(b"".join(lines))
        if journal:
            self._pending["candidates"].extend(self._tagged(line) for line in lines)
        for name, items in (("rejected", rows.rejected), ("events", rows.events)):
            if not items:
                continue
            starts = self._starts[name]
            data = []
            for row in items:
                line = dumps(row)
                starts.setdefault(row["source_key"], []).append(self._sizes[name])
                self._sizes[name] += len(line)
                data.append(line)
            self._final[name].write(b"".join(data))
            if journal:
                self._pending[name].extend(map(self._tagged, data))
        line = rows.manifest_line if rows.manifest_line is not None else dumps(rows.manifest)
        entry = rows.entry if rows.entry is not None else manifest_entry(rows.manifest)
        self._entries.append((entry, self._sizes["manifest"], len(line)))
        self._sizes["manifest"] += len(line)
        self._final["manifest"].write(line)
        if journal:
            self._pending["manifest"].append(self._tagged(line))

    def _copy(self, segment: Segment) -> None:
        """Queue a byte range of the prior ledger; adjacent ranges are copied as one, handed
        to the writer in pieces of ``COPY_PIECE`` so that it copies while the run goes on."""
        start, end = segment.starts[0], segment.end
        self._written += end - start
        if self._pending_copy is not None and self._pending_copy[0] == segment.fd and self._pending_copy[2] == start:
            self._pending_copy = (segment.fd, self._pending_copy[1], end)
            if end - self._pending_copy[1] >= self.COPY_PIECE:
                self._flush_copy()
            return
        self._flush_copy()
        self._pending_copy = (segment.fd, start, end)

    def _flush_copy(self) -> None:
        """Hand the queued range to the candidates writer."""
        if self._pending_copy is not None:
            self._writer.copy(*self._pending_copy)
            self._pending_copy = None

    @property
    def _writer(self) -> _BackgroundWriter:
        assert self._candidates is not None
        return self._candidates

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
                write_all(fd, b"".join(lines))
                os.fsync(fd)
            finally:
                os.close(fd)
            lines.clear()
            crash_point(f"journal-{name}")
        fsync_dir(self.output_dir)

    def commit(self) -> None:
        written: dict[str, os.stat_result] = {}
        self._flush_copy()
        for name in COMMIT_ORDER:
            if name == "candidates":
                written[name] = self._writer.finish()
                self._writer.close()
                self._candidates = None
            else:
                out = self._final.pop(name)
                out.flush()
                os.fsync(out.fileno())
                written[name] = os.fstat(out.fileno())
                out.close()
            os.chmod(self._temps[name], PRIVATE_FILE_MODE)
            os.replace(self._temps[name], ledger_path(self.output_dir, name))
            crash_point(f"rename-{name}")
        fsync_dir(self.output_dir)
        for name in LEDGERS:  # the manifest part first: the rest is then ignored (see PriorState._load)
            ledger_path(self.output_dir, name, partial=True).unlink(missing_ok=True)
            crash_point(f"unlink-{name}")
        fsync_dir(self.output_dir)
        write_ledger_index(
            self.output_dir,
            {
                "manifest": (written["manifest"], self._entries),
                "candidates": (written["candidates"], (self.digest_context, self._digests, self._spans)),
                "rejected": (written["rejected"], self._starts["rejected"]),
                "events": (written["events"], self._starts["events"]),
            },
        )

    def abort(self) -> None:
        if self._candidates is not None:
            self._candidates.close()
            self._candidates = None
        for out in self._final.values():
            out.close()
        self._final.clear()
        for tmp in self._temps.values():
            tmp.unlink(missing_ok=True)


CRASH_ENV = "KB_TEST_CRASH_AT"


def crash_point(name: str) -> None:
    """``kill -9`` of this process at a named moment when ``$KB_TEST_CRASH_AT`` names
    it (bench/crash_drill.py and the crash tests; unset, it costs a dict lookup).
    Points: ``journal-<ledger>`` after that partial file is appended and fsynced,
    ``rename-<ledger>`` after that final ledger is renamed into place,
    ``unlink-<ledger>`` after that partial file is deleted."""
    if os.environ.get(CRASH_ENV) == name:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


# What the duplicate marking needs of each stored candidate, by the rows_digest of
# its source's lines: a pure cache (same digest, same bytes, same keys), so an
# unchanged rerun need not decode code blocks and error messages again. Any
# damage is a cache miss.
KEY_CACHE_FILE = "dedup-keys.marshal"
_KEY_CACHE_FORMAT = 4


def read_key_cache(output_dir: Path) -> dict[str, bytes]:
    """rows_digest → the marshalled keys of those lines (unmarshalled when used)."""
    cache = read_cache(output_dir / KEY_CACHE_FILE, _KEY_CACHE_FORMAT)
    return cache if isinstance(cache, dict) else {}


def write_key_cache(output_dir: Path, cache: dict[str, bytes]) -> None:
    write_cache(output_dir / KEY_CACHE_FILE, _KEY_CACHE_FORMAT, cache)


# Where every row of the final ledgers lies, so a rerun need not scan or parse
# them: each manifest row's entry (see PriorSource) with its offset and length,
# each source's candidate line starts (and where the last one ends) with the
# rows_digest they were written with, and each source's rejected and event
# rows. A pure cache: each part is valid only for the ledger file it was
# written with (size, mtime, inode); a mismatch, a damaged file or another
# format is a miss, and that ledger is scanned as before.
LEDGER_INDEX_FILE = "ledger-index.marshal"
# The rows' fields are part of the format: a row written with other fields is
# never taken as canonical (see PriorState.restamped_manifest_line).
_LEDGER_INDEX_FORMAT = (4, SCHEMA_KEY)


def checksum(payload: bytes) -> int:
    """Against a damaged cache file, not a forged one (whoever can write it can write the ledgers)."""
    import zlib

    return zlib.crc32(payload)


def read_cache(path: Path, fmt: int | tuple[Any, ...]) -> Any:
    """What :func:`write_cache` stored in ``path`` in format ``fmt``; None when the file is
    absent, damaged or of another format (a cache miss)."""
    try:
        found, stored, payload = marshal.loads(path.read_bytes())
        if found != fmt or stored != checksum(payload):
            return None
        return marshal.loads(payload)
    except (OSError, ValueError, EOFError, TypeError):
        return None


def write_cache(path: Path, fmt: int | tuple[Any, ...], data: Any) -> None:
    """``data`` (marshallable) into ``path`` with its format and checksum; a failure is ignored."""
    payload = marshal.dumps(data)
    try:
        atomic_write_bytes(path, [marshal.dumps((fmt, checksum(payload), payload))], durable=False)
    except OSError:
        pass  # only a cache: the next run does without


class LedgerIndex:
    """The parts of a read :data:`LEDGER_INDEX_FILE`, each handed out only for its own file."""

    def __init__(self, parts: dict[str, Any]) -> None:
        self._parts = parts

    def _part(self, ledger: str, stat: os.stat_result) -> Any:
        part = self._parts.get(ledger)
        if not isinstance(part, tuple) or len(part) != 2 or part[0] != stat_key(stat):
            return None
        return part[1]

    def manifest(self, stat: os.stat_result) -> list[tuple[tuple[Any, ...], int, int]] | None:
        """``(entry, offset, length)`` of every manifest row, in file order."""
        rows = self._part("manifest", stat)
        return rows if isinstance(rows, list) else None

    def candidates(self, stat: os.stat_result) -> tuple[str, dict[str, str], dict[str, list[int]]] | None:
        """(digest context, rows_digest by source, line starts + end by source)."""
        part = self._part("candidates", stat)
        if not (isinstance(part, tuple) and len(part) == 3):
            return None
        context, digests, spans = part
        if not (isinstance(context, str) and isinstance(digests, dict) and isinstance(spans, dict)):
            return None
        return context, digests, spans

    def offsets(self, ledger: str, stat: os.stat_result) -> dict[str, list[int]] | None:
        """Line starts by source of the rejected or events ledger."""
        part = self._part(ledger, stat)
        return part if isinstance(part, dict) else None


def read_ledger_index(output_dir: Path) -> LedgerIndex | None:
    parts = read_cache(output_dir / LEDGER_INDEX_FILE, _LEDGER_INDEX_FORMAT)
    return LedgerIndex(parts) if isinstance(parts, dict) else None


def write_ledger_index(output_dir: Path, parts: dict[str, tuple[os.stat_result, Any]]) -> None:
    """``parts``: per ledger, the stat of the file as written and what to keep of it."""
    data = {name: (stat_key(stat), kept) for name, (stat, kept) in parts.items()}
    write_cache(output_dir / LEDGER_INDEX_FILE, _LEDGER_INDEX_FORMAT, data)


def remove_stale_files(output_dir: Path) -> None:
    """What a killed run leaves that no run reads: its temp files
    (``.<ledger>.jsonl.<pid>.<hex>.tmp``), and journal files without the journal's
    manifest part (see PriorState._load), which a new journal would be appended to."""
    litter = list(output_dir.glob(".*.tmp"))
    if not ledger_path(output_dir, "manifest", partial=True).exists():
        litter += [ledger_path(output_dir, name, partial=True) for name in LEDGERS]
    for path in litter:
        try:
            path.unlink()
        except OSError:
            pass


def write_private_text(path: Path, text: str) -> None:
    ensure_private_dir(path.parent)
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
            ensure_private_dir(output_dir)
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
                raise KbError(
                    f"another `kb ingest --write` is running on this output directory{who}", str(output_dir)
                ) from None
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
