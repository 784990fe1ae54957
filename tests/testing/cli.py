"""Run `kb` in-process (fast) or as a subprocess (real interpreter start, real exit code)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


class _Terminal(io.TextIOWrapper):
    """Captured output encoded as a terminal's is (UTF-8, strict): text that a real stdout
    refuses (a lone surrogate) fails here too, where a StringIO would take it."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8", errors="strict", newline="", write_through=True)

    def getvalue(self) -> str:
        self.flush()
        buffer = self.buffer
        assert isinstance(buffer, io.BytesIO)
        return buffer.getvalue().decode("utf-8")


def run_kb(*args: str, cwd: Path | None = None, stdin: str | None = None) -> Result:
    """In-process: `kbtools.cli.main(args)` with captured stdout/stderr."""
    from kbtools.cli import main

    out, err = _Terminal(), _Terminal()
    old_cwd = Path.cwd()
    old_stdin = sys.stdin
    try:
        if cwd is not None:
            os.chdir(cwd)
        if stdin is not None:
            sys.stdin = io.StringIO(stdin)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        os.chdir(old_cwd)
        sys.stdin = old_stdin
    return Result(code, out.getvalue(), err.getvalue())


def kb_command(*args: str) -> list[str]:
    """The command line of `kb` as a child process: this interpreter's `python -m kbtools`."""
    return [sys.executable, "-m", "kbtools", *args]


def run_kb_process(
    *args: str, cwd: Path, stdin: str | bytes | None = None, env: dict[str, str] | None = None, timeout: float = 120
) -> Result:
    """Subprocess: `python -m kbtools ...`."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    proc = subprocess.run(
        kb_command(*args),
        cwd=cwd,
        input=data,
        capture_output=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )
    return Result(proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"))


def run_on_terminal(
    command: list[str], cwd: Path, *, stdout_too: bool = False, timeout: float = 120
) -> tuple[int, bytes, bytes]:
    """Run ``command`` with stderr (and, with ``stdout_too``, stdout) on a pseudo-terminal:
    ``(exit code, piped stdout, what the terminal received)``. The terminal is read while the
    command runs: a full pty buffer would block it."""
    import pty
    import threading

    master, slave = pty.openpty()
    received: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child side is closed and drained
                return
            if not chunk:
                return
            received.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        proc = subprocess.run(
            command,
            cwd=cwd,
            stdout=slave if stdout_too else subprocess.PIPE,
            stderr=slave,
            timeout=timeout,
            env={**os.environ, "COLUMNS": "120"},
        )
    finally:
        os.close(slave)
        reader.join(timeout=10)
        os.close(master)
    return proc.returncode, proc.stdout or b"", b"".join(received)
