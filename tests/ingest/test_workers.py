"""The ingest worker pool: forked processes fed through pipes, results in the order asked."""

from __future__ import annotations

import gc
import os
import signal
import time
from pathlib import Path

import pytest

from kbtools.ingest.workers import WorkerDied, WorkerPool


def _square_with_pid(n: int) -> tuple[int, int]:
    return n * n, os.getpid()


def _wait_for(path: Path, seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists():
            return True
        time.sleep(0.01)
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_results_come_back_for_every_ticket_in_any_order_asked() -> None:
    pool = WorkerPool(2, _square_with_pid)
    try:
        tickets = {n: pool.submit(n) for n in range(40)}
        asked = list(reversed(range(40)))
        values = {n: pool.result(tickets[n]) for n in asked}
    finally:
        pool.close()
    assert {n: v for n, (v, _) in values.items()} == {n: n * n for n in range(40)}
    assert len({pid for _, pid in values.values()} - {os.getpid()}) == 2  # both workers took tasks


def test_an_exception_in_a_task_is_raised_by_result_and_the_pool_goes_on() -> None:
    def task(n: int) -> int:
        if n == 3:
            raise ValueError(f"bad input {n}")
        return n

    pool = WorkerPool(2, task)
    try:
        tickets = [pool.submit(n) for n in range(6)]
        with pytest.raises(ValueError, match="bad input 3"):
            pool.result(tickets[3])
        assert [pool.result(t) for i, t in enumerate(tickets) if i != 3] == [0, 1, 2, 4, 5]
    finally:
        pool.close()


def test_a_slow_task_holds_up_only_its_own_worker(tmp_path: Path) -> None:
    release = tmp_path / "release"

    def task(n: int) -> str:
        if n == 0:
            return "released" if _wait_for(release) else "timed out"
        return f"fast {n}"

    pool = WorkerPool(2, task)
    try:
        slow = pool.submit(0)
        fast = [pool.submit(n) for n in range(1, 8)]
        # The other worker takes every fast task (tasks wait in the run, not behind the slow one).
        assert [pool.result(t) for t in fast] == [f"fast {n}" for n in range(1, 8)]
        release.touch()
        assert pool.result(slow) == "released"
    finally:
        pool.close()


def test_a_killed_worker_is_a_clear_error_not_a_hang() -> None:
    def task(n: int) -> int:
        if n == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return n

    pool = WorkerPool(1, task)
    try:
        first, second = pool.submit(0), pool.submit(1)
        assert pool.result(first) == 0
        with pytest.raises(WorkerDied, match="signal 9"):
            pool.result(second)
    finally:
        pool.kill()


def test_close_reaps_every_worker_and_kill_stops_busy_ones(tmp_path: Path) -> None:
    pool = WorkerPool(2, _square_with_pid)
    assert gc.get_freeze_count() > 0  # shared with the workers, out of the collector's sight
    pids = {pool.result(pool.submit(n))[1] for n in range(8)}
    pool.close()
    assert pids and not any(_alive(pid) for pid in pids)
    assert gc.get_freeze_count() == 0  # the process runs on: its objects are collectable again

    never = tmp_path / "never"
    busy = WorkerPool(2, lambda n: (_wait_for(never, 60), os.getpid()))
    for n in range(2):
        busy.submit(n)
    started = time.monotonic()
    busy.kill()
    assert time.monotonic() - started < 30  # did not wait for the tasks


def test_workers_ignore_sigint_and_close_the_descriptors_they_must_not_hold() -> None:
    held_r, held_w = os.pipe()

    def task(n: int) -> tuple[bool, bool]:
        os.kill(os.getpid(), signal.SIGINT)  # as Ctrl-C to the process group would
        try:
            os.fstat(held_w)
            held = True
        except OSError:
            held = False
        return True, held

    pool = WorkerPool(1, task, inherited=(held_w,))
    try:
        assert pool.result(pool.submit(0)) == (True, False)
    finally:
        pool.close()
        os.close(held_r)
        os.close(held_w)
