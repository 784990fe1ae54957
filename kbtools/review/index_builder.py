"""The search index of a first ``kb ingest --write``, built while the run reads its sources.

On a first run with worker processes (no prior ledgers, ``--jobs`` above 1) the index would
otherwise be built after the ledgers are committed, serially: every candidate normalised,
featured for clustering and given its FTS row (:func:`kbtools.review.index.update_index`).
Here one more process is forked with the workers (the same rules:
:mod:`kbtools.ingest.workers`), and the run hands it each source's candidate lines as it
writes them into the candidate ledger; it writes their rows into a draft beside the ledgers
(:data:`DRAFT_FILE`, :func:`kbtools.review.index.build_draft`) while the workers still read.
Once the ledgers are committed, :func:`kbtools.review.index.adopt_draft` checks that the
ledger on disk holds exactly the lines fed, in order (the whole-ledger path's hashing of
every line), adds what needs the whole ledger (the source rows, the clusters, the meta) and
renames the draft into place as the index.

Whatever goes wrong (the builder dies, the ledger differs, an index appeared meanwhile) the
draft is deleted and the index is built the usual way; the ledgers never wait on it. A
draft left by a killed run is deleted by the next writing run (:func:`remove_draft`); the
stamp is written before the rename (which keeps size, mtime and inode), so a kill at any
moment leaves no index or a trusted one (crash point ``draft-stamped``, between the two:
:func:`kbtools.ingest.ledger.crash_point`).

The run's thread never waits on the builder while the workers need it: the lines go in
writes of :data:`FEED_BATCH` or more, to a pipe made :data:`PIPE_SIZE`, without blocking; what
does not fit waits in the run's memory and goes with the next write, the rest once the run has
emitted everything. (On a 185 MB store the pipe never filled: the builder keeps up.) A
builder so far behind that more than :data:`MAX_BACKLOG` bytes wait is stopped and its draft
deleted: the run's memory stays flat, and the index is built after the run as without one.
"""

from __future__ import annotations

import gc
import os
import signal
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kbtools.review.index import IndexUpdate

DRAFT_FILE = "search-index.draft"
PIPE_SIZE = 1 << 20  # the feed's pipe (Linux F_SETPIPE_SZ; an unprivileged process may ask this much)
FEED_BATCH = 1 << 16  # bytes of lines sent in one write (a source's lines are 17 KB on average)
MAX_BACKLOG = 32 << 20  # bytes of lines waiting for the pipe beyond which the builder is given up
_F_SETPIPE_SZ = 1031


def remove_draft(output_dir: Path) -> None:
    """The draft (and its journal) a killed run left, or this run's once done with."""
    from kbtools.review.index import _remove

    _remove(output_dir / DRAFT_FILE)


class IndexDraft:
    """The index builder of one run, from :meth:`start` to :meth:`discard` (also on leaving
    a ``with`` block): unstarted, it does nothing and adopts nothing."""

    def __init__(self, output_dir: Path) -> None:
        self.output_dir = output_dir
        self.path = output_dir / DRAFT_FILE
        self.run_id = ""
        self._pid = 0
        self._fd = -1  # the feed's write end
        self._backlog: deque[memoryview] = deque()
        self._backlog_size = 0
        self._pending: list[bytes] = []  # lines not in the backlog yet (less than FEED_BATCH)
        self._pending_size = 0

    @property
    def started(self) -> bool:
        return self._pid > 0

    def start(self, run_id: str, inherited: Sequence[int]) -> int:
        """Fork the builder, before any thread starts (see :mod:`kbtools.ingest.workers`);
        it closes ``inherited``. Returns the feed's descriptor, which other children close."""
        from kbtools.ingest.workers import become_worker

        read_end, write_end = os.pipe()
        try:
            import fcntl

            fcntl.fcntl(write_end, _F_SETPIPE_SZ, PIPE_SIZE)
        except (OSError, ImportError):  # not Linux, or over the user's pipe allowance: a smaller pipe
            pass
        parent = os.getpid()
        gc.freeze()  # shared copy-on-write: kept out of the child's collections (as the workers do)
        pid = os.fork()
        if pid == 0:  # the builder: never returns into the caller
            code = 1
            try:
                become_worker(parent, (*inherited, write_end))
                _build(read_end, self.path, run_id)
                code = 0
            finally:
                os._exit(code)
        os.close(read_end)
        os.set_blocking(write_end, False)
        self._pid, self._fd, self.run_id = pid, write_end, run_id
        return write_end

    def feed(self, lines: Sequence[bytes]) -> None:
        """One source's candidate lines, as written into the ledger (in its order)."""
        if self._fd < 0 or not lines:
            return
        self._pending += lines
        self._pending_size += sum(map(len, lines))
        if self._pending_size >= FEED_BATCH:
            self._batch()
            self._flush()
            if self._backlog_size > MAX_BACKLOG:
                self.discard()  # the index is built after the run instead

    def _batch(self) -> None:
        if self._pending:
            self._backlog.append(memoryview(b"".join(self._pending)))
            self._backlog_size += self._pending_size
            self._pending.clear()
            self._pending_size = 0

    def _flush(self) -> None:
        """What the pipe takes now of the backlog."""
        try:
            self._send()
        except BlockingIOError:
            return
        except OSError:  # the builder is gone: it is not fed any more, and will not be adopted
            self._close_feed()

    def end_feed(self) -> None:
        """The rest of the lines sent (waiting for the builder to take them), then the end."""
        if self._fd < 0:
            return
        self._batch()
        try:
            os.set_blocking(self._fd, True)
            self._send()
        except OSError:
            pass
        self._close_feed()

    def _send(self) -> None:
        while self._backlog:
            head = self._backlog[0]
            written = os.write(self._fd, head)
            self._backlog_size -= written
            if written < len(head):
                self._backlog[0] = head[written:]
            else:
                self._backlog.popleft()

    def _close_feed(self) -> None:
        self._pending.clear()
        self._backlog.clear()
        self._backlog_size = 0
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def adopt(self, run_id: str) -> IndexUpdate | None:
        """The search index made of the draft, once the builder is done
        (:func:`kbtools.review.index.adopt_draft`); None if it was not (nothing written
        then): the caller brings the index in step the usual way. The draft is gone after."""
        if not self.started:
            return None
        try:
            self.end_feed()
            from kbtools.ingest.workers import reap

            if reap(self._pid) != 0 or run_id != self.run_id:
                return None
            from kbtools.review.index import adopt_draft

            return adopt_draft(self.output_dir, self.path, run_id)
        finally:
            self._pid = 0
            self.discard()

    def discard(self) -> None:
        """The builder stopped and its draft deleted (a failed or interrupted run)."""
        from kbtools.ingest.workers import reap

        self._close_feed()
        if self._pid:
            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            reap(self._pid)
            self._pid = 0
        if self.run_id:
            remove_draft(self.output_dir)

    def __enter__(self) -> IndexDraft:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.discard()


def _build(feed_fd: int, path: Path, run_id: str) -> None:
    from kbtools.review.index import build_draft

    with os.fdopen(feed_fd, "rb", buffering=PIPE_SIZE) as feed:
        build_draft(path, feed, run_id)
