"""The streaming JSONL scan every line-based reader uses: lines out, with the content
hash and the "changed during read" check in the same pass; a long line judged by its
head before it is held; inline binary squeezed out; unreadable lines counted.

Errors built here name counts, line numbers and reasons only, never a byte of the input.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from kbtools.fsio import stat_key
from kbtools.ingest.hashing import sha256_hex
from kbtools.ingest.model import Record, SourceRef, SourceUnit
from kbtools.ingest.sources.common import (
    BINARY,
    CHANGED_DURING_READ,
    NotRegularFile,
    Tally,
    mtime_iso,
    not_regular_unit,
    open_regular,
    read_error,
)

# A JSONL line longer than this is discarded as malformed without being held
# in memory (a 100 MB single line must not cost 100 MB). Real session lines
# this long are tool output, which is never kept anyway.
MAX_LINE_BYTES = 8 * 1024 * 1024
# Lines are read in pieces of this size, so a long line is judged by its head
# before any more of it is held.
_PIECE = 1 << 20
# What is kept of an over-long line: enough to classify it by its head.
LINE_HEAD_BYTES = 4096
# A run of base64 characters this long inside a JSON line is inline binary
# (an image), not prose.
_BINARY_RUN = 4096
_BASE64_RUN = re.compile(rb"[A-Za-z0-9+/=]{%d,}" % _BINARY_RUN)
_BASE64_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="


class _Squeezer:
    """Cuts long base64 runs out of a stream of pieces; a run may span pieces
    and is never held whole (only its last ``_BINARY_RUN`` bytes at most)."""

    __slots__ = ("carry", "in_run", "kept", "cut")

    def __init__(self) -> None:
        self.carry = b""
        self.in_run = False
        self.kept = 0
        self.cut = 0

    def feed(self, piece: bytes) -> bytes:
        if self.in_run:
            rest = piece.lstrip(_BASE64_CHARS)
            if not rest:
                return b""
            piece, self.in_run = rest, False
        data = self.carry + piece
        split = len(data.rstrip(_BASE64_CHARS))  # a run that may go on in the next piece
        tail = data[split:]
        out = self._squeeze(data[:split])
        if len(tail) >= _BINARY_RUN:
            self.cut += 1
            self.in_run, self.carry = True, b""
        else:
            self.carry = tail
        return out

    def flush(self) -> bytes:
        data, self.carry, self.in_run = self.carry, b"", False
        return self._squeeze(data)

    def _squeeze(self, data: bytes) -> bytes:
        out, cut = _BASE64_RUN.subn(b"", data)
        self.cut += cut
        self.kept += len(out)
        return out


class LineIssues:
    """Counts of unreadable lines, with the first line number of each kind."""

    __slots__ = ("counts", "first_line")

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.first_line: dict[str, int] = {}

    def note(self, kind: str, line_no: int) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        self.first_line.setdefault(kind, line_no)

    def summary(self) -> str:
        parts = []
        for kind, count in self.counts.items():
            noun = "line" if count == 1 else "lines"
            parts.append(f"{kind}: {count} {noun} (first at line {self.first_line[kind]})")
        return "; ".join(parts)


class JsonlScan:
    """One streaming pass over a JSONL file: lines out, content hash and
    "changed during read" check in the same pass (the reference read every
    file twice, once to hash and once to parse).

    ``lines(wanted)`` yields ``(line_no, data, whole)`` for non-blank lines.
    A line longer than one read piece is first judged by its head: if
    ``wanted(head)`` is false (tool output, most of the bytes) the rest is
    hashed and dropped without being held. ``whole`` is False when only the
    head is yielded — a line not wanted, or over ``max_line`` (counted as
    ``overlong``) — so a caller may read ids from it but must not parse it.
    A file that cannot be read ends the lines and becomes the scan's error.
    """

    def __init__(self, path: Path, *, max_line: int = MAX_LINE_BYTES) -> None:
        self.path = path
        self.max_line = max_line
        self.issues = LineIssues()
        self.hasher = hashlib.sha256()
        self.stat_before: os.stat_result | None = None
        self.stat_after: os.stat_result | None = None
        self.bytes_read = 0
        self.last_line_unterminated = False
        self.last_line_no = 0
        self.read_failure = ""
        self.not_regular = False
        self.binary_lines = 0

    @property
    def content_hash(self) -> str:
        return self.hasher.hexdigest()

    @property
    def failed(self) -> bool:
        """The bytes read do not stand for the file: the read broke off or
        raced a writer, so no record of it may be kept."""
        return bool(self.read_failure) or self.changed

    @property
    def changed(self) -> bool:
        before, after = self.stat_before, self.stat_after
        if before is None:
            return False
        if after is None:  # removed or replaced while being read
            return True
        return (
            self.bytes_read != before.st_size
            or after.st_size != before.st_size
            or after.st_mtime_ns != before.st_mtime_ns
            or after.st_ino != before.st_ino
        )

    def read_stat_key(self) -> tuple[int, int, int] | None:
        """The version of the bytes actually read (None if they moved under
        the read): what a stat cache should remember for this unit, rather
        than the stat seen at discovery."""
        if self.stat_before is None or self.failed:
            return None
        return stat_key(self.stat_before)

    def lines(self, wanted: Callable[[bytes], bool] | None = None) -> Iterator[tuple[int, bytes, bool]]:
        update = self.hasher.update
        line_no = 0
        try:
            with open_regular(self.path) as raw:
                self.stat_before = os.fstat(raw.fileno())
                fh = decompressed(raw) if self.path.name.endswith(ZSTD_SUFFIX) else raw
                readline = fh.readline
                while piece := readline(_PIECE):
                    update(piece)
                    line_no += 1
                    if piece.endswith(b"\n") or len(piece) < _PIECE:
                        self.last_line_unterminated = not piece.endswith(b"\n")
                        # Not stripped (a copy of every line): JSON ignores the
                        # surrounding whitespace, and heads are matched loosely.
                        if not piece.isspace():
                            self.last_line_no = line_no
                            yield line_no, piece, True
                        continue
                    self.last_line_no = line_no
                    yield line_no, *self._rest_of_long_line(readline, piece, line_no, wanted)
                self.bytes_read = raw.tell()
        except NotRegularFile:
            self.not_regular = True
            return
        except OSError as exc:
            self.read_failure = read_error(exc)
            return
        except Exception as exc:  # a corrupt compressed stream (zstandard.ZstdError)
            if type(exc).__module__.split(".")[0] != "zstandard":
                raise
            self.read_failure = "read_error: corrupt zstd stream"
            return
        try:
            self.stat_after = os.stat(self.path)
        except OSError:
            self.stat_after = None

    def _rest_of_long_line(
        self, readline: Callable[[int], bytes], piece: bytes, line_no: int, wanted: Callable[[bytes], bool] | None
    ) -> tuple[bytes, bool]:
        """Read on to the end of a line longer than one piece, deciding from its
        head before holding any more of it: ``(line, True)``, or ``(head, False)``
        for a line not wanted or over ``max_line``.

        A wanted line that grows past ``max_line`` is squeezed rather than
        dropped: runs of base64 characters longer than ``_BINARY_RUN`` (inline
        images) are cut out of it as it streams, so its text parts survive;
        ``binary_lines`` counts such lines. Only a line still too long after
        that is dropped (``overlong``)."""
        head = piece[:LINE_HEAD_BYTES].lstrip()
        pieces: list[bytes] | None = [piece] if wanted is None or wanted(head) else None
        size = len(piece)
        squeezer: _Squeezer | None = None
        ended = False
        while not ended and (piece := readline(_PIECE)):
            self.hasher.update(piece)
            size += len(piece)
            ended = piece.endswith(b"\n")
            if pieces is None:
                continue
            if squeezer is None and size > self.max_line:
                squeezer = _Squeezer()
                pieces = [squeezer.feed(b"".join(pieces))]
            if squeezer is not None:
                pieces.append(squeezer.feed(piece))
                if squeezer.kept > self.max_line:
                    pieces = None
                    self.issues.note("overlong", line_no)
            else:
                pieces.append(piece)
        self.last_line_unterminated = not ended
        if pieces is not None and squeezer is not None:
            pieces.append(squeezer.flush())
            self.binary_lines += squeezer.cut > 0
        if pieces is not None:
            return b"".join(pieces), True
        return head, False

    def _decisions(self, tally: Tally | None) -> dict[str, int]:
        if self.failed:
            return {}
        counts = dict(tally.counts) if tally is not None else {}
        if self.binary_lines:
            counts[BINARY] = counts.get(BINARY, 0) + self.binary_lines
        return counts

    def parse(self, line_no: int, line: bytes, shape: Callable[[bytes], Any] | None = None) -> Any:
        """Decode one line as UTF-8 JSON; note why not and return None on failure.

        ``shape`` (see :mod:`kbtools.ingest.sources._shapes`) decodes only the fields a
        reader uses, as plain dicts and lists; a line it does not fit is decoded whole.
        A failure on the last, unterminated line is a live writer's half-written
        line (``truncated_last_line``), not a malformed file.
        """
        try:
            text = line.decode("utf-8")  # first: a shape skips the fields it drops unchecked
        except UnicodeDecodeError:
            self.issues.note("binary_content" if b"\x00" in line else "invalid_utf8", line_no)
            return None
        if shape is not None:
            try:
                return shape(line)
            except (ValueError, RecursionError):  # not of the shape, or not JSON: decoded whole below
                pass
        try:
            return json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
            self.issues.note("binary_content" if "\x00" in text else "malformed_json", line_no)
            return None

    def error(self) -> str:
        """The unit's error: a failed read wins over a change during the read,
        which wins over line problems."""
        if self.read_failure:
            return self.read_failure
        if self.changed:
            return CHANGED_DURING_READ
        counts = self.issues.counts
        if (
            self.last_line_unterminated
            and counts.get("malformed_json") == 1
            and self.issues.first_line["malformed_json"] == self.last_line_no
        ):
            del counts["malformed_json"]
            self.issues.note("truncated_last_line", self.last_line_no)
        return self.issues.summary()

    def unit(
        self,
        ref: SourceRef,
        *,
        session_identity: str,
        project_identity: str,
        created_at: str,
        records: list[Record],
        truncated: bool,
        tally: Tally | None = None,
    ) -> SourceUnit:
        """The unit of this pass: version, content hash and error come from the
        read, and a failed read keeps none of the records."""
        if self.not_regular:
            return not_regular_unit(ref)
        error = self.error()
        read = self.stat_before
        return SourceUnit(
            tool=ref.tool,
            record_type=ref.record_type,
            format=ref.format,
            source_identity=str(self.path),
            session_identity=session_identity,
            project_identity=project_identity,
            created_at=created_at,
            updated_at=mtime_iso(read) if read is not None else "",
            content_hash=self.content_hash if read is not None else sha256_hex(error),
            records=[] if self.failed else records,
            error=error,
            truncated=truncated,
            stat_key=self.read_stat_key(),
            decisions=self._decisions(tally),
        )


ZSTD_SUFFIX = ".zst"


def decompressed(raw: IO[bytes]) -> IO[bytes]:
    """A buffered reader of the zstd stream in ``raw`` (all frames), streamed:
    ``zstandard`` is imported only when a compressed file is met."""
    import zstandard

    reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True, closefd=False)
    return io.BufferedReader(reader, buffer_size=_PIECE)
