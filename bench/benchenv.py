"""What the benchmarks run `kb` with, and how they time it.

An installed kb has its bytecode cached; a shell that sets PYTHONDONTWRITEBYTECODE
(this machine does) would make every run recompile the package from source
(about 50 ms), which no user pays. :func:`compile_package` writes the bytecode
of kbtools once, as `pip install` does for an installed package.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TypeVar

RUN_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

T = TypeVar("T")


def compile_package() -> None:
    import kbtools

    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(Path(kbtools.__file__).parent)],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def kb_command() -> list[str]:
    """The venv's `kb` script next to this interpreter, else `python -m kbtools`."""
    venv_kb = Path(sys.executable).with_name("kb")
    return [str(venv_kb)] if venv_kb.exists() else [sys.executable, "-m", "kbtools"]


def bench_git(cwd: Path, *args: str) -> None:
    """git with a bench identity, so commits work on a machine without one configured."""
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", *args],
        cwd=cwd,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def best_time(fn: Callable[[], T], repeat: int) -> tuple[float, T]:
    """Least wall seconds of ``repeat`` calls (the least disturbed by other load), and the last result."""
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def timed_run(
    argv: list[str], cwd: Path, env: Mapping[str, str] | None = RUN_ENV
) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    """Wall seconds of one child, interpreter start included, and its captured output."""
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, env=env)
    return time.perf_counter() - started, proc


@dataclass(frozen=True)
class ChildRun:
    exit: int
    seconds: float  # wall
    usage: resource.struct_rusage  # the child's own, from wait4 (RUSAGE_CHILDREN would mix runs)
    stdout: bytes  # empty unless stdout was a pipe

    @property
    def cpu_seconds(self) -> float:
        return self.usage.ru_utime + self.usage.ru_stime


def run_child(
    cmd: list[str],
    cwd: Path,
    *,
    stdout: int | IO[bytes] = subprocess.PIPE,
    stderr: int | IO[bytes] = subprocess.DEVNULL,
    env: Mapping[str, str] | None = None,
) -> ChildRun:
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=stdout, stderr=stderr, env=env)
    out = proc.stdout.read() if proc.stdout else b""
    _pid, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    return ChildRun(proc.returncode, seconds, usage, out)
