"""The git queries the tool needs, in one place.

Plain ``git`` subprocesses: a hook pays for every import, and GitPython costs
about 60 ms to import against a few ms per git call. Git's own stderr never
reaches the user; a failure is returned, not printed.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


class GitFailed(Exception):
    def __init__(self, args: list[str], returncode: int, stderr: str) -> None:
        super().__init__(f"git {' '.join(args)}: exit {returncode}: {stderr.strip()[:200]}")
        self.returncode = returncode
        self.stderr = stderr


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("GIT_OPTIONAL_LOCKS", "0")  # read-only queries must not take index.lock
    env["LC_ALL"] = "C"
    return env


def git_bytes(args: list[str], cwd: Path, *, check: bool = True) -> bytes:
    """Run git and return stdout bytes; raise GitFailed on error when check."""
    try:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL, env=_env(),
        )
    except OSError as exc:  # git not installed
        raise GitFailed(args, 127, str(exc)) from None
    if check and proc.returncode != 0:
        raise GitFailed(args, proc.returncode, proc.stderr.decode("utf-8", "replace"))
    return proc.stdout


def git(args: list[str], cwd: Path, *, check: bool = True) -> str:
    return git_bytes(args, cwd, check=check).decode("utf-8", "surrogateescape")


def repo_root(start: Path) -> Path | None:
    """The top level of the work tree containing ``start``, or None."""
    try:
        out = git(["rev-parse", "--show-toplevel"], start)
    except GitFailed:
        return None
    return Path(out.strip()) if out.strip() else None
