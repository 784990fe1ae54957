"""The git queries the tool needs, in one place.

Plain ``git`` subprocesses: a hook pays for every import, and GitPython costs
about 60 ms to import against a few ms per git call. Git's own stderr never
reaches the user; a failure is returned, not printed.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any, NamedTuple


class GitFailed(Exception):
    def __init__(self, args: list[str], returncode: int, stderr: str) -> None:
        super().__init__(f"git {' '.join(args)}: exit {returncode}: {stderr.strip()[:200]}")
        self.returncode = returncode
        self.stderr = stderr


def git_env() -> dict[str, str]:
    """The environment git runs in here: C messages, no optional locks for read-only queries."""
    env = dict(os.environ)
    env.setdefault("GIT_OPTIONAL_LOCKS", "0")  # read-only queries must not take index.lock
    env["LC_ALL"] = "C"
    return env


def _run(args: list[str], cwd: Path, data: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """git ``args`` with ``data`` (or nothing) on stdin; OSError when git cannot be started."""
    feed: dict[str, Any] = {"stdin": subprocess.DEVNULL} if data is None else {"input": data}
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, env=git_env(), **feed)


def git_bytes(args: list[str], cwd: Path, *, check: bool = True, data: bytes | None = None) -> bytes:
    """Run git and return stdout bytes; raise GitFailed on error when check."""
    try:
        proc = _run(args, cwd, data)
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


# -- queries for `kb lint` ------------------------------------------------------------
# Every query runs with cwd = the KB root and `--relative`, so paths come back relative
# to the KB root even when the KB lives in a sub-folder of the repository.

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # what a repository without HEAD compares against

_DIFF_FLAGS = ["--no-color", "--no-ext-diff", "--no-textconv", "--relative", "--src-prefix=a/", "--dst-prefix=b/"]


class FileStatus(NamedTuple):
    """One line of ``--name-status``: ``status`` as git prints it (``M``, ``D``, ``R100``…)."""

    status: str
    path: str  # the new path for renames and copies
    old_path: str | None = None

    def describe(self) -> str:
        """``<status>\\t<path>`` (``<status>\\t<old>\\t<new>`` for renames), like git prints it."""
        return "\t".join(p for p in (self.status, self.old_path, self.path) if p is not None)


class CommitChange(NamedTuple):
    commit: str
    parent: str | None  # first parent; None for a root commit
    files: tuple[FileStatus, ...]


class RepoState(NamedTuple):
    """Whether git can be asked about ``root`` and what HEAD is."""

    usable: bool
    head: str | None = None  # None: no commit yet
    reason: str = ""  # why git checks are skipped when not usable


def repo_state(root: Path) -> RepoState:
    """One git call: is ``root`` in a work tree, and which commit is HEAD?"""
    try:
        proc = _run(["rev-parse", "--is-inside-work-tree", "--verify", "-q", "HEAD"], root)
    except OSError:
        return RepoState(False, reason="git is not installed")
    lines = proc.stdout.decode("utf-8", "replace").split()
    if not lines or lines[0] != "true":
        return RepoState(False, reason="not a git work tree")
    return RepoState(True, head=lines[1] if proc.returncode == 0 and len(lines) > 1 else None)


# Paths printed as they are (not C-quoted), renames detected whatever the user's config says.
_QUIET_PATHS = ["-c", "core.quotepath=off", "-c", "diff.renames=true"]


def _parse_name_status(tokens: list[str]) -> list[FileStatus]:
    result: list[FileStatus] = []
    i = 0
    while i < len(tokens):
        status = tokens[i]
        if not status:
            i += 1
            continue
        if status[0] in "RC":
            result.append(FileStatus(status, tokens[i + 2], tokens[i + 1]))
            i += 3
        else:
            result.append(FileStatus(status, tokens[i + 1]))
            i += 2
    return result


def diff_status(root: Path, *, staged: bool, base: str | None, paths: list[str]) -> list[FileStatus]:
    """Changed files under ``paths``: the index (``staged``) or the work tree vs ``base``.

    ``base`` None means "no commit yet": everything present counts as added.
    """
    args = ["diff", "--name-status", "-z", "-M", *_DIFF_FLAGS]
    if staged:
        args.append("--cached")
    args += [base or EMPTY_TREE, "--", *paths]
    out = git(_QUIET_PATHS + args, root)
    return _parse_name_status(out.split("\0"))


def commit_changes(root: Path, rev_range: str, paths: list[str]) -> list[CommitChange]:
    """Every commit of ``rev_range`` (oldest first) touching ``paths``, with its changes.

    Merges are compared with their first parent; ``--full-history`` keeps commits that a
    later commit undid, so an edit cannot hide behind its own revert.
    """
    out = git(
        _QUIET_PATHS
        + [
            "log",
            "-z",
            "--reverse",
            "--full-history",
            "--format=%x01%H %P",
            "--name-status",
            "-M",
            "--diff-merges=first-parent",
            *_DIFF_FLAGS,
            rev_range,
            "--",
            *paths,
        ],
        root,
    )
    result: list[CommitChange] = []
    for chunk in out.split("\x01")[1:]:
        header, _, rest = chunk.partition("\0")
        ids = header.split()
        tokens = rest.lstrip("\n").split("\0")
        result.append(CommitChange(ids[0], ids[1] if len(ids) > 1 else None, tuple(_parse_name_status(tokens))))
    return result


def read_blobs(root: Path, specs: list[str]) -> dict[str, bytes | None]:
    """``git cat-file --batch`` for ``<rev>:./<path>`` / ``:./<path>`` specs; None when missing."""
    if not specs:
        return {}
    out = git_bytes(["cat-file", "--batch"], root, data="".join(s + "\n" for s in specs).encode("utf-8"))
    pos = 0
    result: dict[str, bytes | None] = {}
    for spec in specs:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        pos = end + 1
        if len(header) == 3 and header[1] == b"blob":
            size = int(header[2])
            result[spec] = out[pos : pos + size]
            pos += size + 1
        else:
            result[spec] = None
            if len(header) == 3:  # a tree or commit: skip its body
                pos += int(header[2]) + 1
    return result


def indexed_files(root: Path, paths: list[str]) -> set[str]:
    """Which of ``paths`` (relative to ``root``) are in the index."""
    if not paths:
        return set()
    out = git(_QUIET_PATHS + ["ls-files", "-z", "--cached", "--", *(f":(literal){p}" for p in paths)], root)
    return {p for p in out.split("\0") if p}


def untracked_files(root: Path, paths: list[str]) -> list[str]:
    """Files under ``paths`` that git does not track and does not ignore."""
    out = git(_QUIET_PATHS + ["ls-files", "-z", "--others", "--exclude-standard", "--", *paths], root)
    return [p for p in out.split("\0") if p]


def added_lines(root: Path, args: list[str]) -> list[tuple[str | None, str, list[tuple[int, str]]]]:
    """Added lines of a ``-U0`` patch: ``(commit or None, path, [(line_no, text), …])`` per file.

    ``args`` is the diff or log command without its patch flags, e.g. ``["diff", "--cached"]``
    plus a ``--`` pathspec; for ``log``, each commit is named.
    """
    is_log = args[0] == "log"
    extra = ["-p", "-U0", *_DIFF_FLAGS] + (["--format=%x01%H", "--diff-merges=first-parent"] if is_log else [])
    out = git(_QUIET_PATHS + [args[0], *extra, *args[1:]], root)
    result: list[tuple[str | None, str, list[tuple[int, str]]]] = []
    commit: str | None = None
    current: list[tuple[int, str]] | None = None
    line_no = 0
    for line in out.split("\n"):
        if line.startswith("\x01"):
            commit, current = line[1:].strip(), None
        elif line.startswith("+++ "):
            target = _unquote_path(line[4:])
            if target is None:
                current = None
            else:
                current = []
                result.append((commit, target, current))
        elif line.startswith("@@ "):
            plus = line.split(" ")[2]  # "+c,d"
            line_no = int(plus[1:].split(",")[0])
        elif line.startswith("diff --git "):
            current = None
        elif current is not None and line.startswith("+"):
            current.append((line_no, line[1:]))
            line_no += 1
    return [r for r in result if r[2]]


def _unquote_path(text: str) -> str | None:
    """``b/path`` or ``"b/pa\\th"`` (C-quoted) → ``path``; ``/dev/null`` → None."""
    text = text.rstrip("\t")
    if text == "/dev/null":
        return None
    if text.startswith('"') and text.endswith('"'):
        raw = text[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        text = raw.encode("latin-1", "replace").decode("utf-8", "replace")
    return text[2:] if text.startswith("b/") else text
