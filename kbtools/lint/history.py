"""What git says changed, for the history checks (6, 7, 15) and the secret scan (16).

Three modes (SPEC §3):

- work tree vs HEAD (default): one comparison, the work tree being "after";
- ``--staged``: the index vs HEAD (the pre-commit hook);
- ``--since REV``: every commit of ``REV..HEAD``, each against its first parent, so a
  raw edit committed together with a re-blessed manifest line is still caught.

A repository without a commit compares against the empty tree. Git is asked a
handful of questions in total (status per mode, one ``cat-file --batch`` for the
old and new manifest/log/index texts), never once per file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kbtools.errors import ConfigError
from kbtools.gitio import CommitChange, FileStatus, GitFailed, RepoState, commit_changes, diff_status, git, read_blobs
from kbtools.kb.tree import read_regular

WORK_TREE = None  # a Step's ``new_rev`` for "the files on disk"
INDEX = ""  # a Step's ``new_rev`` for "the index"


@dataclass(frozen=True)
class LintMode:
    """Default: work tree vs HEAD; ``staged``: index vs HEAD; ``since``: every commit of REV..HEAD."""

    staged: bool = False
    since: str | None = None


@dataclass(frozen=True)
class Step:
    """One before/after comparison: changed files plus old/new texts of tracked singletons."""

    old_rev: str | None  # None: nothing before (no HEAD, or a root commit)
    new_rev: str | None  # a commit, INDEX, or WORK_TREE
    files: tuple[FileStatus, ...]
    commit: str | None = None  # set in --since mode, to name the commit in messages
    texts: dict[tuple[str, str], bytes | None] = field(default_factory=dict)  # (side, rel) → bytes

    def status_of(self, rel: str) -> FileStatus | None:
        for f in self.files:
            if f.path == rel or f.old_path == rel:
                return f
        return None

    def text(self, side: str, rel: str) -> str | None:
        data = self.texts.get((side, rel))
        return None if data is None else data.decode("utf-8", "replace")


@dataclass(frozen=True)
class History:
    steps: tuple[Step, ...]


def load_history(root: Path, mode: LintMode, state: RepoState, paths: list[str], tracked: list[str]) -> History:
    """Steps of ``mode`` limited to ``paths``; for each step, old/new bytes of every
    ``tracked`` file (manifest, log, index) that the step modified.
    """
    try:
        if mode.since is not None:
            steps = [Step(c.parent, c.commit, c.files, commit=c.commit) for c in _commits(root, mode.since, paths)]
        else:
            files = diff_status(root, staged=mode.staged, base=state.head, paths=paths)
            steps = [Step(state.head, INDEX if mode.staged else WORK_TREE, tuple(files))]
        return History(tuple(_with_texts(root, steps, tracked)))
    except GitFailed as exc:
        raise ConfigError(
            f"git failed: {exc.stderr.strip().splitlines()[-1] if exc.stderr.strip() else exc}", str(root)
        ) from None


def _commits(root: Path, since: str, paths: list[str]) -> list[CommitChange]:
    try:
        git(["rev-parse", "--verify", "-q", f"{since}^{{commit}}"], root)
    except GitFailed:
        raise ConfigError(f"unknown revision '{since}'", "--since") from None
    return commit_changes(root, f"{since}..HEAD", paths)


def _with_texts(root: Path, steps: list[Step], tracked: list[str]) -> list[Step]:
    wanted: list[tuple[int, str, str, str | None]] = []  # (step, side, rel, spec or None=disk)
    for i, step in enumerate(steps):
        for rel in tracked:
            status = step.status_of(rel)
            if status is None or status.status[0] in "AD":
                continue
            if step.old_rev is not None:
                wanted.append((i, "old", rel, f"{step.old_rev}:./{rel}"))
            new_spec = None if step.new_rev is WORK_TREE else f"{step.new_rev}:./{rel}"
            wanted.append((i, "new", rel, new_spec))
    blobs = read_blobs(root, [spec for _, _, _, spec in wanted if spec is not None])
    for i, side, rel, spec in wanted:
        if spec is None:
            try:
                data: bytes | None = read_regular(root / rel)
            except OSError:
                data = None
        else:
            data = blobs.get(spec)
        steps[i].texts[(side, rel)] = data
    return steps
