"""What extracting a changed source again can take from its previous version.

An agent's session grows by appended turns, and a grown session is read whole
again. Parsing it is cheap; what each message then costs (the control-plane
and derived filters, redaction) and what each turn costs (knowledge fields,
keywords, note matches) is not. A memo records, for one extracted source:

- each message's outcome, by a digest of its role and raw text: kept as it
  was, kept redacted (the redacted text and labels), dropped by the
  control-plane filter, or dropped as empty;
- each turn's candidates, by a digest of the turn's kept messages: the turn
  number and the fingerprints they were written with.

The next version of the same source (same identity) looks both up and works
only on what is new. A turn's candidates are taken back from the prior
candidates ledger, and only when every one of them is there as recorded (turn,
chunk and fingerprint); the fields a fresh build sets from the source (its key,
the candidate id, the turn number) and the duplicate marking are set again.
Anything else is built again. A message the derived filter drops is never
recorded: its event is made anew each time.

A pure cache, valid under one context (:func:`memo_context`): the control-plane
filter, the redaction rules and settings and the local account, the derived
filter, the note index and the candidate size. The memos of the sources the
ledgers hold are kept next to them (:class:`MemoStore`): one file of memos,
appended to, and an index by source_key, so a rerun loads only the index and a
worker reads only the memos it uses. A damaged or missing file or entry, or a
memo of another context, is a miss.
"""

from __future__ import annotations

import functools
import hashlib
import json
import marshal
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kbtools.fsio import open_private, pwrite_all
from kbtools.ingest import caches
from kbtools.ingest.caches import checksum, read_cache, write_cache
from kbtools.ingest.candidates import KeptRecord, SourceMeta, source_fields
from kbtools.ingest.rows import ordered

MEMO_FORMAT = 3
MEMO_FILE = "extraction-memo.bin"
MEMO_INDEX = "extraction-memo.index"
# The memo file is written anew, with only the memos in use, once they are less than this share of it.
_LIVE_SHARE = 0.5
# New memos are appended once this many bytes of them are waiting (memory stays flat).
_FLUSH_BYTES = 1 << 20
# A message's outcome; a message kept redacted has (redacted text, labels) instead.
KEPT = 0  # kept as it was
EMPTY = 1  # nothing left once redacted
INTERNAL = 2  # dropped by the control-plane filter
Outcome = int | tuple[str, tuple[str, ...]]
# Fingerprint characters recorded per candidate (enough to tell a line apart, not to rebuild it).
_FP_CHARS = 16


# The modules whose code decides a message's outcome and a turn's candidates.
_EXTRACTION_CODE = ("candidates.py", "knowledge.py", "control_plane.py", "extract.py", "dedup.py", "rows.py", "memo.py")


def memo_context(*parts: object) -> str:
    """The context a memo is valid under: everything, besides a message or a turn
    itself, that its outcome depends on (see the module's documentation), and the
    code that makes them (:func:`code_fingerprint`)."""
    return hashlib.sha256("\0".join(map(str, (MEMO_FORMAT, code_fingerprint(), *parts))).encode()).hexdigest()


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A digest of the modules that decide a message's outcome and a turn's candidates:
    after an upgrade that changes them, no row is recalled from what older code built."""
    from kbtools import __version__

    digest = hashlib.sha256(__version__.encode())
    here = Path(__file__).parent  # read, not imported: extraction imports this module
    for name in _EXTRACTION_CODE:
        source = here / name
        try:
            digest.update(source.read_bytes())
        except (OSError, TypeError):  # no source file (a frozen build): the version alone
            pass
    return digest.hexdigest()


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=12).digest()


class SourceMemo:
    """The memo of one source being extracted: what its previous version recorded
    (``prior``, a :meth:`blob`; ``prior_lines``: that version's candidate lines) and
    what this version records, to be stored with its rows."""

    def __init__(
        self, context: str, meta: SourceMeta, prior: bytes = b"", prior_lines: Callable[[], list[bytes]] | None = None
    ) -> None:
        self.context = context
        self.meta = meta
        self.messages: dict[bytes, Outcome] = {}
        self.turns: dict[bytes, tuple[int, tuple[str, ...]]] = {}
        self.recalled_messages = 0
        self.recalled_turns = 0
        self._old_messages, self._old_turns = _read(prior, context)
        self._prior_lines = prior_lines if self._old_turns else None
        self._candidates: dict[tuple[int, int], dict[str, Any]] | None = None

    def blob(self) -> bytes:
        return marshal.dumps((self.context, self.messages, self.turns))

    # -- messages -------------------------------------------------------------

    @staticmethod
    def message_key(role: str, text: str) -> bytes:
        """``text``: valid UTF-8 (see pipeline._utf8)."""
        return hashlib.blake2b(text.encode(), digest_size=12, salt=role.encode()).digest()

    def recall_message(self, key: bytes) -> Outcome | None:
        outcome = self._old_messages.get(key)
        if not _is_outcome(outcome):
            return None
        self.recalled_messages += 1
        return outcome

    def note_message(self, key: bytes, outcome: Outcome) -> None:
        self.messages[key] = outcome

    # -- turns (kbtools.ingest.candidates.TurnMemo) ----------------------------

    def turn_key(self, turn: Sequence[KeptRecord]) -> bytes:
        """The turn's kept messages, each by its :meth:`message_key` (the raw text decides
        the kept one under the context) and time; the source's times if a message has none."""
        meta = self.meta
        head = f"{meta.tool}\0{meta.record_type}\0{meta.format}\0"
        if not all(r.created_at for r in turn):
            head += f"{meta.created_at}\0{meta.updated_at}\0"  # what a candidate's times fall back to
        parts = [head.encode()]
        for r in turn:
            parts.append(r.key or self.message_key(r.role, r.text))  # 12 bytes each
            parts.append(f"{r.created_at}\0".encode())
        return _digest(b"".join(parts))

    def recall(self, key: bytes, turn_index: int, budget: int) -> list[dict[str, object]] | None:
        found = self._old_turns.get(key)
        if found is None:
            return None
        prior_turn, fingerprints = found
        out: list[dict[str, object]] = []
        for chunk_index, fp in enumerate(fingerprints):
            row = self._prior_candidates().get((prior_turn, chunk_index))
            if row is None or not str(row.get("fingerprint")).startswith(fp):
                return None  # not in the prior ledger as recorded: built again
            text = row.get("text")
            if not isinstance(text, str) or len(text) > budget:
                return None  # the budget cuts it off now: built again, to be cut the same way
            budget -= len(text)
            out.append(self._as_built(row, turn_index, chunk_index))
        self.recalled_turns += 1
        return out

    def note(self, key: bytes, turn_index: int, candidates: Sequence[dict[str, object]]) -> None:
        self.turns[key] = (turn_index, tuple(str(c["fingerprint"])[:_FP_CHARS] for c in candidates))

    def _as_built(self, row: dict[str, Any], turn_index: int, chunk_index: int) -> dict[str, object]:
        """A prior candidate as :func:`~kbtools.ingest.candidates.build_candidates` makes it for this source."""
        fields = source_fields(self.meta, str(row["fingerprint"]), turn_index, chunk_index)
        return ordered({**row, **fields}, "candidates")

    def _prior_candidates(self) -> dict[tuple[int, int], dict[str, Any]]:
        """The previous version's candidates by (turn, chunk), parsed once."""
        if self._candidates is None:
            self._candidates = {}
            for line in self._prior_lines() if self._prior_lines is not None else ():
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict):
                    turn, chunk = row.get("turn_index"), row.get("chunk_index")
                    if isinstance(turn, int) and isinstance(chunk, int):
                        self._candidates[(turn, chunk)] = row
        return self._candidates


class MemoStore:
    """The memos of the sources in the ledgers of ``directory``: :data:`MEMO_FILE`, memos
    one after another, appended to by each run, and :data:`MEMO_INDEX`, where each one is
    (offset, length, checksum) by source_key; a memo whose bytes do not match is a miss
    (so a copied folder keeps its memos, and a replaced file loses them).

    Opened before the workers fork: a worker reads the memos it needs by ``pread``. The
    run's own process keeps the memo of each source it writes (:meth:`keep`: the new one,
    appended as the run goes, or the source's old one) and on :meth:`commit` writes the
    index of the kept ones; the file is written anew once most of it is memos no source
    uses. A pure cache: a crash at any point leaves at worst memos that are a miss.
    """

    def __init__(self, directory: Path, rules: str = "") -> None:
        self.directory = directory
        self.rules = rules
        self.index: dict[str, tuple[int, int, int]] = {}  # as found
        self.kept: dict[str, tuple[int, int, int]] = {}  # as the next run will find it
        self._read_fd = -1
        self._write_fd = -1
        self._size = 0  # where the next memo goes
        self._pending: list[bytes] = []
        self._pending_size = 0
        self._broken = False

    @classmethod
    def open(cls, directory: Path, rules: str, *, purge: bool = False) -> MemoStore:
        """The store of ``directory`` for memos made under the redaction ``rules`` (a
        digest). Memos made under other rules hold text those rules redacted, perhaps
        less than the current ones would: they are never used, and with ``purge`` (a
        ``--write`` run, holding the lock) both files are removed at once."""
        store = cls(directory, rules)
        found = read_cache(directory / MEMO_INDEX, MEMO_FORMAT)
        current = isinstance(found, tuple) and len(found) == 2 and found[0] == rules and isinstance(found[1], dict)
        if not current and purge:
            for name in (MEMO_INDEX, MEMO_FILE):
                try:
                    os.unlink(directory / name)
                except OSError:
                    pass
        if not caches.enabled():
            store._broken = True  # no memo is read or kept
            return store
        try:
            store._read_fd = os.open(directory / MEMO_FILE, os.O_RDONLY)
        except OSError:
            return store
        store._size = os.fstat(store._read_fd).st_size
        if current:
            store.index = found[1]
        return store

    def get(self, source_key: str) -> bytes:
        """The stored memo of ``source_key`` (empty if none, or damaged)."""
        entry = self.index.get(source_key)
        if entry is None:
            return b""
        try:
            offset, length, crc = entry
            blob = os.pread(self._read_fd, length, offset)
        except (OSError, TypeError, ValueError, OverflowError):  # a damaged entry is a miss
            return b""
        return blob if len(blob) == length and checksum(blob) == crc else b""

    def keep(self, source_key: str, blob: bytes) -> None:
        """``source_key`` stays in the ledgers with this new memo (or, if empty, its old one)."""
        if blob and not self._broken:
            self.kept[source_key] = (self._size + self._pending_size, len(blob), checksum(blob))
            self._pending.append(blob)
            self._pending_size += len(blob)
            if self._pending_size >= _FLUSH_BYTES:
                self._flush()
        elif source_key in self.index:
            self.kept[source_key] = self.index[source_key]

    def commit(self, *, compact: bool = False) -> None:
        """The index of the kept memos written, once they are all in the file (a failure
        loses only the cache). ``compact``: the file is written anew with the kept memos
        only, whatever its size (sources were pruned: their text leaves the disk too)."""
        try:
            self._flush()
            if self._broken or (self.kept == self.index and self._write_fd < 0 and not compact):
                return
            live = sum(length for _, length, _ in self.kept.values())
            if compact or (self._size > _FLUSH_BYTES and live < _LIVE_SHARE * self._size):
                self._rewrite()
            write_cache(self.directory / MEMO_INDEX, MEMO_FORMAT, (self.rules, self.kept))
        except OSError:
            pass

    def close(self) -> None:
        for fd in (self._read_fd, self._write_fd):
            if fd >= 0:
                os.close(fd)
        self._read_fd = self._write_fd = -1

    def _flush(self) -> None:
        data = b"".join(self._pending)
        self._pending, self._pending_size = [], 0
        if not data or self._broken:
            return
        try:
            if self._write_fd < 0:
                self._write_fd = open_private(self.directory / MEMO_FILE, os.O_RDWR | os.O_CREAT)
                if os.fstat(self._write_fd).st_size != self._size:
                    raise OSError("the memo file changed since it was opened")  # offsets would not hold
            pwrite_all(self._write_fd, data, self._size)
            self._size += len(data)
        except OSError:
            self._broken = True  # nothing more is written; the old index stays as it was

    def _rewrite(self) -> None:
        """Only the kept memos, into a new file (one memo in memory at a time)."""
        kept: dict[str, tuple[int, int, int]] = {}
        offset = 0
        source = self._write_fd if self._write_fd >= 0 else self._read_fd
        tmp = self.directory / f".{MEMO_FILE}.tmp"
        tmp.unlink(missing_ok=True)  # a killed run's, or a planted symlink: never written through
        fd = open_private(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL)
        try:
            for key, (at, length, crc) in self.kept.items():
                blob = os.pread(source, length, at) if source >= 0 else b""
                if len(blob) == length:
                    pwrite_all(fd, blob, offset)
                    kept[key] = (offset, length, crc)
                    offset += length
            os.replace(tmp, self.directory / MEMO_FILE)
        except BaseException:
            os.close(fd)
            raise
        if self._write_fd >= 0:
            os.close(self._write_fd)
        self._write_fd, self._size, self.kept = fd, offset, kept


def _is_outcome(value: object) -> bool:
    if isinstance(value, int):
        return value in (KEPT, EMPTY, INTERNAL) and not isinstance(value, bool)
    return isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], tuple)


def _read(blob: bytes, context: str) -> tuple[dict[bytes, Outcome], dict[bytes, tuple[int, tuple[str, ...]]]]:
    """The messages and turns of a stored memo, when it is one of ``context`` (else none)."""
    if not blob:
        return {}, {}
    try:
        found = marshal.loads(blob)
    except (ValueError, EOFError, TypeError):
        return {}, {}
    if (
        isinstance(found, tuple)
        and len(found) == 3
        and found[0] == context
        and isinstance(found[1], dict)
        and isinstance(found[2], dict)
    ):
        return found[1], found[2]
    return {}, {}
