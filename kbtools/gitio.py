"""The git queries the tool needs, in one place.

Plain ``git`` subprocesses: a hook pays for every import, and GitPython costs
about 60 ms to import against a few ms per git call. Git's own stderr never
reaches the user; a failure is returned, not printed.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, NamedTuple


class GitFailed(Exception):
    def __init__(self, args: list[str], returncode: int, stderr: str) -> None:
        super().__init__(f"git {' '.join(args)}: exit {returncode}: {stderr.strip()[:200]}")
        self.returncode = returncode
        self.stderr = stderr


def git_env() -> dict[str, str]:
    """The environment git runs in here: C messages, no optional locks for read-only queries,
    and no replace refs: ``git replace`` could otherwise show the checks an object other
    than the one a commit names (and a fresh clone reads)."""
    env = dict(os.environ)
    env.setdefault("GIT_OPTIONAL_LOCKS", "0")  # read-only queries must not take index.lock
    env["GIT_NO_REPLACE_OBJECTS"] = "1"
    env["LC_ALL"] = "C"
    return env


def _run(
    args: list[str], cwd: Path, data: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """git ``args`` with ``data`` (or nothing) on stdin; OSError when git cannot be started."""
    feed: dict[str, Any] = {"stdin": subprocess.DEVNULL} if data is None else {"input": data}
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, env={**git_env(), **(env or {})}, **feed)


def git_bytes(
    args: list[str], cwd: Path, *, check: bool = True, data: bytes | None = None, env: dict[str, str] | None = None
) -> bytes:
    """Run git (``env``: extra variables) and return stdout bytes; raise GitFailed on error when check."""
    try:
        proc = _run(args, cwd, data, env)
    except OSError as exc:  # git not installed
        raise GitFailed(args, 127, str(exc)) from None
    if check and proc.returncode != 0:
        raise GitFailed(args, proc.returncode, proc.stderr.decode("utf-8", "replace"))
    return proc.stdout


def git(
    args: list[str], cwd: Path, *, check: bool = True, env: dict[str, str] | None = None, data: bytes | None = None
) -> str:
    return git_bytes(args, cwd, check=check, env=env, data=data).decode("utf-8", "surrogateescape")


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

    ``base`` None means "no commit yet": everything present counts as added. For the
    work tree, files marked ``--assume-unchanged`` or ``--skip-worktree`` (which
    ``git diff`` takes on trust) are compared too, by content.
    """
    args = ["diff", "--name-status", "-z", "-M", *_DIFF_FLAGS]
    if staged:
        args.append("--cached")
    args += [base or EMPTY_TREE, "--", *paths]
    files = _parse_name_status(git(_QUIET_PATHS + args, root).split("\0"))
    if staged:
        return files
    hidden = _trusted_paths(root, paths)
    if hidden:
        files += _hidden_changes(root, base, hidden, {p for f in files for p in (f.path, f.old_path) if p})
    return files


def _hidden_changes(root: Path, base: str | None, hidden: list[str], listed: set[str]) -> list[FileStatus]:
    """Changes to files git does not look at: their work-tree blob id (``git hash-object``,
    which applies the clean filter, as ``git add`` would) against ``base``'s."""
    hidden = [p for p in hidden if p not in listed]
    before: dict[str, str] = {}
    if base is not None and hidden:
        out = git(_QUIET_PATHS + ["ls-tree", "-r", "-z", base, "--", *hidden], root)  # paths relative to root
        for record in out.split("\0"):
            info, _, path = record.partition("\t")
            if info:
                before[path] = info.split()[2]
    present = [p for p in hidden if os.path.isfile(os.path.join(root, p)) and not os.path.islink(os.path.join(root, p))]
    after: dict[str, str] = {}
    if present:
        out = git(["hash-object", "--stdin-paths"], root, data="".join(p + "\n" for p in present).encode())
        after = dict(zip(present, out.split()))
    result = []
    for path in hidden:
        old, new = before.get(path), after.get(path)
        if old != new:
            result.append(FileStatus("D" if new is None else "A" if old is None else "M", path))
    return result


def tree_diff(root: Path, old: str, new: str, paths: list[str]) -> list[FileStatus]:
    """Files under ``paths`` that differ between commits ``old`` and ``new``."""
    args = ["diff", "--name-status", "-z", "-M", *_DIFF_FLAGS, old, new, "--", *paths]
    return _parse_name_status(git(_QUIET_PATHS + args, root).split("\0"))


def _trusted_paths(root: Path, paths: list[str]) -> list[str]:
    """Index entries under ``paths`` whose work-tree file git does not look at
    (``git ls-files -v``: a lower-case tag is assume-unchanged, ``S`` skip-worktree)."""
    out = git(_QUIET_PATHS + ["ls-files", "-v", "-z", "--", *paths], root)
    return [rec[2:] for rec in out.split("\0") if len(rec) > 2 and (rec[0].islower() or rec[0] == "S")]


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


class BlobReader:
    """Objects by name through one ``git cat-file --batch`` process: the one git blob
    reader of the tool. A name is an object id, ``<rev>:./<path>`` or ``:./<path>`` (the
    index). Bytes are what git stores: no clean/smudge filter or textconv applies.

    One request at a time (write a name, read its answer), so neither pipe can fill up;
    :meth:`chunks` hands a large blob on in pieces and never holds it whole.
    """

    CHUNK = 1 << 20

    def __init__(self, cwd: Path) -> None:
        try:
            self._proc = subprocess.Popen(
                ["git", "cat-file", "--batch"],
                cwd=cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=git_env(),
            )
        except OSError as exc:  # git not installed
            raise GitFailed(["cat-file", "--batch"], 127, str(exc)) from None
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._in, self._out = self._proc.stdin, self._proc.stdout

    def chunks(self, name: str) -> Iterator[bytes] | None:
        """The blob ``name`` in pieces of at most :attr:`CHUNK` bytes, or None when it is
        missing or not a blob. Consume the iterator before asking for the next object."""
        if not name or "\n" in name or name == NULL_OID:
            return None
        try:
            self._in.write(name.encode("utf-8", "surrogateescape") + b"\n")
            self._in.flush()
        except BrokenPipeError:
            raise GitFailed(["cat-file", "--batch"], self._proc.poll() or 1, "git cat-file ended") from None
        header = self._out.readline().split()
        if not header:
            raise GitFailed(["cat-file", "--batch"], self._proc.poll() or 1, "git cat-file ended")
        if len(header) != 3:
            return None  # "<name> missing" or "ambiguous"
        size = int(header[2])
        if header[1] != b"blob":
            self._skip(size)
            return None
        return self._body(size)

    def _body(self, size: int) -> Iterator[bytes]:
        left = size
        while left > 0:
            piece = self._out.read(min(left, self.CHUNK))
            if not piece:
                raise GitFailed(["cat-file", "--batch"], self._proc.poll() or 1, "git cat-file ended early")
            left -= len(piece)
            yield piece
        self._out.read(1)  # the newline after every object

    def _skip(self, size: int) -> None:
        for _ in self._body(size):
            pass

    def read(self, name: str) -> bytes | None:
        """The whole blob ``name``, or None when it is missing or not a blob."""
        pieces = self.chunks(name)
        return None if pieces is None else b"".join(pieces)

    def text(self, name: str) -> str | None:
        """:meth:`read`, decoded as UTF-8 (invalid bytes replaced)."""
        data = self.read(name)
        return None if data is None else data.decode("utf-8", "replace")

    def close(self) -> None:
        self._in.close()
        self._proc.wait()
        self._out.close()

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


NULL_OID = "0" * 40  # the id git prints for the absent side of a change


def read_blobs(root: Path, specs: list[str]) -> dict[str, bytes | None]:
    """The blobs named by ``specs`` (see :class:`BlobReader`), None when missing."""
    if not specs:
        return {}
    with BlobReader(root) as reader:
        return {spec: reader.read(spec) for spec in specs}


class IndexEntry(NamedTuple):
    """One stage-0 entry of the index (``git ls-files -s``)."""

    mode: str  # "100644", "100755", "120000" (symlink), "160000" (gitlink: a submodule)
    oid: str
    path: str  # relative to the query's cwd (the KB root)

    @property
    def kind(self) -> str:
        """``file``, ``symlink``, ``submodule`` or ``other``."""
        return _INDEX_KINDS.get(self.mode, "other")


_INDEX_KINDS = {"100644": "file", "100755": "file", "120000": "symlink", "160000": "submodule"}


def index_entries(root: Path, paths: list[str]) -> list[IndexEntry]:
    """Every index entry under ``paths`` (relative to ``root``): what a commit would hold.

    Conflicted paths (stages 1-3) are left out; git refuses to commit them anyway.
    """
    out = git(_QUIET_PATHS + ["ls-files", "-s", "-z", "--", *(f":(literal){p}" for p in paths)], root)
    result: list[IndexEntry] = []
    for record in out.split("\0"):
        if not record:
            continue
        info, _, path = record.partition("\t")
        mode, oid, stage = info.split(" ")
        if stage == "0":
            result.append(IndexEntry(mode, oid, path))
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


# Added lines come in pieces of about this much text, the last OVERLAP lines of a piece
# repeated at the start of the next, so a scan of each piece finds what spans two (a PEM
# block): a 200 MB file added is read with flat memory.
PIECE_CHARS = 1 << 20
OVERLAP = 64

AddedLines = tuple[str | None, str, list[tuple[int, str]]]


def added_lines(root: Path, args: list[str]) -> Iterator[AddedLines]:
    """Added lines of a ``-U0`` patch: ``(commit or None, path, [(line_no, text), …])``,
    several per file when it is long (see :data:`PIECE_CHARS`), read as git writes them.

    ``args`` is the diff or log command without its patch flags, e.g. ``["diff", "--cached"]``
    plus a ``--`` pathspec; for ``log``, each commit is named.
    """
    import tempfile

    is_log = args[0] == "log"
    extra = ["-p", "-U0", *_DIFF_FLAGS] + (["--format=%x01%H", "--diff-merges=first-parent"] if is_log else [])
    command = ["git", *_QUIET_PATHS, args[0], *extra, *args[1:]]
    with tempfile.TemporaryFile() as errors:
        try:
            proc = subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, stderr=errors, env=git_env())
        except OSError as exc:
            raise GitFailed(args, 127, str(exc)) from None
        assert proc.stdout is not None
        try:
            yield from _patch_pieces(proc.stdout)
        finally:
            proc.stdout.close()
            code = proc.wait()
        if code != 0:
            errors.seek(0)
            raise GitFailed(args, code, errors.read().decode("utf-8", "replace"))


def _patch_pieces(stream: IO[bytes]) -> Iterator[AddedLines]:
    commit: str | None = None
    target: str | None = None
    current: list[tuple[int, str]] = []
    fresh = size = 0  # lines of ``current`` not yet handed on, and its text size
    line_no = 0
    for raw in stream:
        line = raw.decode("utf-8", "surrogateescape").rstrip("\n")
        if line.startswith("\x01") or line.startswith("diff --git ") or line.startswith("+++ "):
            if fresh and target is not None:
                yield (commit, target, current)
            current, fresh, size = [], 0, 0
            if line.startswith("\x01"):
                commit, target = line[1:].strip(), None
            elif line.startswith("+++ "):
                target = _unquote_path(line[4:])
            else:
                target = None
        elif line.startswith("@@ "):
            plus = line.split(" ")[2]  # "+c,d"
            line_no = int(plus[1:].split(",")[0])
        elif target is not None and line.startswith("+"):
            current.append((line_no, line[1:]))
            line_no += 1
            fresh += 1
            size += len(line)
            if size >= PIECE_CHARS:
                yield (commit, target, current)
                current = current[-OVERLAP:]
                fresh, size = 0, sum(len(text) for _, text in current)
    if fresh and target is not None:
        yield (commit, target, current)


def _unquote_path(text: str) -> str | None:
    """``b/path`` or ``"b/pa\\th"`` (C-quoted) → ``path``; ``/dev/null`` → None."""
    text = text.rstrip("\t")
    if text == "/dev/null":
        return None
    if text.startswith('"') and text.endswith('"'):
        raw = text[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        text = raw.encode("latin-1", "replace").decode("utf-8", "replace")
    return text[2:] if text.startswith("b/") else text
