"""Worker processes for ``kb ingest --jobs N``: forked, fed through pipes, no helper threads.

``concurrent.futures.ProcessPoolExecutor`` feeds its workers from two helper
threads (a manager and a queue feeder); on a rerun that reads a few dozen
sources between thousands of unchanged ones, their hand-offs of the GIL cost
the run's thread 3–7 ms per task, more than the work sent away. Here the run's
own thread writes each task to a worker's pipe and reads the results back:

- the workers are forked when the pool is made, before the run starts any
  thread (a fork copies only the forking thread, and locks held by others
  would stay locked in the child);
- a task goes to the first idle worker; the rest wait in the run until a
  worker reports back (:meth:`WorkerPool.result` waits, :meth:`WorkerPool.pump`
  looks without blocking), so a slow source holds up no task but its own;
- while the run's own thread has work (reused sources to write), one core is
  left to it: only ``jobs - 1`` workers are kept busy; all ``jobs`` once it
  waits for a result;
- :meth:`WorkerPool.result` returns results in any order asked, reading
  whichever worker is ready meanwhile;
- a worker prepares (``init``) when its first task arrives, not when forked: a
  rerun with nothing to read leaves both cores to the run's own thread;
- a worker ignores SIGINT (the run decides what Ctrl-C means), dies with the
  run (Linux ``PR_SET_PDEATHSIG``), and closes descriptors it must not hold
  (the run's lock, the other workers' pipes).
"""

from __future__ import annotations

import gc
import os
import pickle
import select
import signal
import struct
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from kbtools.fsio import write_all

# How often (seconds) :meth:`WorkerPool.pump` may look for results.
PUMP_EVERY = 0.001
_HEADER = struct.Struct("<Q")


class WorkerDied(RuntimeError):
    """A worker exited or was killed while it owed results."""


class _Worker:
    __slots__ = ("pid", "task_fd", "result_fd", "owed")

    def __init__(self, pid: int, task_fd: int, result_fd: int) -> None:
        self.pid = pid
        self.task_fd = task_fd  # the run writes tasks here
        self.result_fd = result_fd  # and reads results here
        self.owed: int | None = None  # the ticket of the task it holds (one at a time)


class WorkerPool:
    """``jobs`` forked processes that run ``func(task)`` and send back its value."""

    def __init__(
        self,
        jobs: int,
        func: Callable[[Any], Any],
        *,
        inherited: Sequence[int] = (),
        init: Callable[[], None] | None = None,
    ) -> None:
        self._func = func
        self.jobs = jobs
        self._inherited = tuple(inherited)
        self._init = init
        self._workers: list[_Worker] = []
        self._waiting: deque[tuple[int, bytes]] = deque()  # (ticket, pickled task) not sent yet
        self._done: dict[int, tuple[bool, Any]] = {}
        self._next = 0
        self._pumped = 0.0
        # Workers kept busy while the run's own thread works (between two waits in
        # result): one core is left to it.
        self._while_busy = max(1, jobs - 1)
        # What exists now is shared with the workers copy-on-write: kept out of the
        # collector's sight, a worker's collections do not touch (and so copy) it.
        gc.freeze()
        try:
            for _ in range(jobs):
                self._workers.append(self._fork())
        except BaseException:
            self.kill()
            raise

    def _fork(self) -> _Worker:
        inherited, init = self._inherited, self._init
        task_r, task_w = os.pipe()
        result_r, result_w = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the worker: never returns into the caller
            code = 1
            try:
                theirs = [fd for w in self._workers for fd in (w.task_fd, w.result_fd)]
                become_worker(parent, (*inherited, *theirs, task_w, result_r))
                _serve(task_r, result_w, self._func, init)
                code = 0
            finally:
                os._exit(code)
        os.close(task_r)
        os.close(result_w)
        return _Worker(pid, task_w, result_r)

    def submit(self, task: Any) -> int:
        """Queue ``task``; the ticket to ask :meth:`result` for its value."""
        ticket = self._next
        self._next += 1
        self._waiting.append((ticket, pickle.dumps(task, pickle.HIGHEST_PROTOCOL)))
        self._dispatch(self._while_busy)
        return ticket

    def result(self, ticket: int) -> Any:
        """The value of ``ticket``'s task (its exception re-raised here)."""
        while ticket not in self._done:
            self._dispatch(self.jobs)  # the run waits: every worker may work
            if not self._collect(None):
                raise KeyError(f"no task {ticket}")
        ok, value = self._done.pop(ticket)
        if not ok:
            raise value
        return value

    def pump(self) -> None:
        """Take the results that are ready and hand out waiting tasks, without blocking
        (at most every ``PUMP_EVERY`` seconds: the caller may ask thousands of times)."""
        if self._waiting:
            now = time.monotonic()
            if now - self._pumped >= PUMP_EVERY:
                self._pumped = now
                self._collect(0)
                self._dispatch(self._while_busy)

    def _collect(self, timeout: float | None) -> bool:
        """Read the results ready within ``timeout`` (None: wait for one); False if none is owed."""
        busy = [w for w in self._workers if w.owed is not None]
        if not busy:
            return False
        ready, _, _ = select.select([w.result_fd for w in busy], [], [], timeout)
        for worker in busy:
            if worker.result_fd in ready and worker.owed is not None:
                size = _HEADER.unpack(_read_exact(worker, _HEADER.size))[0]
                self._done[worker.owed] = pickle.loads(_read_exact(worker, size))
                worker.owed = None
        return True

    def _dispatch(self, limit: int) -> None:
        """Hand waiting tasks to idle workers while fewer than ``limit`` are busy."""
        while self._waiting:
            worker = next((w for w in self._workers if w.owed is None), None)
            if worker is None or sum(1 for w in self._workers if w.owed is not None) >= limit:
                return  # the task waits for a worker to report back
            ticket, payload = self._waiting.popleft()
            write_all(worker.task_fd, _HEADER.pack(len(payload)) + payload)
            worker.owed = ticket

    def close(self) -> None:
        """Let the workers finish what they hold and exit (their task pipes close), then reap them."""
        for worker in self._workers:
            _close(worker.task_fd)
        for worker in self._workers:
            _close(worker.result_fd)
            reap(worker.pid)
        if self._workers:
            gc.unfreeze()  # what __init__ froze is the collector's again (a process may run on)
        self._workers.clear()

    def kill(self) -> None:
        """Stop every worker now (a failed or interrupted run)."""
        for worker in self._workers:
            try:
                os.kill(worker.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.close()


def become_worker(parent: int, foreign: Sequence[int]) -> None:
    """What a process forked by the run does first (a worker, or the search index's builder:
    :mod:`kbtools.review.index_builder`)."""
    # Ctrl-C in a terminal reaches the whole process group: the run decides what an
    # interrupt means, and a worker interrupted mid-frame would leave it waiting.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for fd in foreign:
        _close(fd)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: its task pipe's EOF ends it later
        pass
    if os.getppid() != parent:  # the run died before the line above
        os._exit(1)


def _serve(task_fd: int, result_fd: int, func: Callable[[Any], Any], init: Callable[[], None] | None) -> None:
    """Run tasks until the run closes the pipe; ``init`` first, once the first task is
    there (a rerun with nothing to read never pays for it, nor takes a core from the run)."""
    with os.fdopen(task_fd, "rb") as tasks:
        while True:
            header = tasks.read(_HEADER.size)
            if len(header) < _HEADER.size:
                return  # the run closed the pipe: done
            if init is not None:
                init()
                init = None
            task = pickle.loads(tasks.read(_HEADER.unpack(header)[0]))
            try:
                reply = pickle.dumps((True, func(task)), pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # sent back, raised in the run
                try:
                    reply = pickle.dumps((False, exc), pickle.HIGHEST_PROTOCOL)
                except Exception:
                    reply = pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")))
            write_all(result_fd, _HEADER.pack(len(reply)) + reply)


def _read_exact(worker: _Worker, size: int) -> bytes:
    chunks = []
    while size:
        chunk = os.read(worker.result_fd, min(size, 1 << 20))
        if not chunk:
            status = reap(worker.pid)
            how = f"signal {-status}" if status < 0 else f"exit {status}"
            raise WorkerDied(
                f"an ingest worker process ended ({how}) with {int(worker.owed is not None)} task(s) unfinished"
            )
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def reap(pid: int) -> int:
    """A child's exit code (negative: the signal that ended it); 0 if already reaped."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return 0
    return os.waitstatus_to_exitcode(status)
