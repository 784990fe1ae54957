"""What git says changed, for the history checks (6, 7, 15) and the secret scan (16).

Four modes (SPEC §3, issue 14 item 8):

- work tree vs HEAD (default): one comparison, the work tree being "after";
- ``--staged``: the index vs HEAD (the pre-commit hook);
- ``--since REV``: every commit of ``REV..HEAD``, each against its first parent, so a
  raw edit committed together with a re-blessed manifest line is still caught;
- ``--all-history`` (or ``--since`` the empty tree): every commit reachable from HEAD,
  the root commit against the empty tree.

A range git cannot fully show (a shallow clone cut inside it) is an error, never a
pass. When REV is not an ancestor of HEAD (an orphan branch, a force-push of a
rewritten history), the commits of ``REV..HEAD`` are checked as usual and REV's own
evidence is compared with HEAD's as one more step (:attr:`History.rewrite`): evidence
REV registered that HEAD changed is a finding, and without a common ancestor so is
evidence HEAD dropped.

A repository without a commit compares against the empty tree. Git is asked a
handful of questions in total (status per mode, one ``cat-file --batch`` for the
old and new manifest/log/index texts), never once per file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kbtools.errors import ConfigError
from kbtools.gitio import (
    EMPTY_TREE,
    CommitChange,
    FileStatus,
    GitFailed,
    RepoState,
    commit_changes,
    diff_status,
    git,
    tree_diff,
)
from kbtools.kb.tree import read_regular

ReadBlob = Callable[[str], bytes | None]  # a blob by name (see kbtools.gitio.BlobReader), None when missing

WORK_TREE = None  # a Step's ``new_rev`` for "the files on disk"
INDEX = ""  # a Step's ``new_rev`` for "the index"


@dataclass(frozen=True)
class LintMode:
    """Default: work tree vs HEAD; ``staged``: index vs HEAD; ``since``: every commit of
    REV..HEAD; ``all_history`` (or ``since`` the empty tree's id): every commit of HEAD."""

    staged: bool = False
    since: str | None = None
    all_history: bool = False
    until: str = "HEAD"  # the range's end: a pushed ref at pre-push, else HEAD
    whole: bool = False  # every file's content and every commit of ``until`` (``pre-commit run --all-files``)

    @property
    def whole_history(self) -> bool:
        return self.all_history or self.whole or self.since == EMPTY_TREE

    @property
    def history(self) -> bool:
        """A history mode: commits are checked one by one."""
        return self.since is not None or self.all_history or self.whole

    @property
    def log_range(self) -> str:
        """The ``git log`` range of a history mode."""
        return self.until if self.whole_history else f"{self.since}..{self.until}"


@dataclass(frozen=True)
class Step:
    """One before/after comparison: changed files plus old/new texts of tracked singletons."""

    old_rev: str | None  # None: nothing before (no HEAD, or a root commit)
    new_rev: str | None  # a commit, INDEX, or WORK_TREE
    files: tuple[FileStatus, ...]
    commit: str | None = None  # set in the history modes, to name the commit in messages
    texts: dict[tuple[str, str], bytes | None] = field(default_factory=dict)  # (side, rel) → bytes
    label: str = ""  # names the step in messages when it is not one commit
    partial: bool = False  # judge only what both sides hold (a rewrite with a common ancestor)

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
    rewrite: Step | None = None  # REV vs HEAD when REV is not an ancestor of HEAD


def load_history(
    root: Path, mode: LintMode, state: RepoState, paths: list[str], tracked: list[str], read: ReadBlob
) -> History:
    """Steps of ``mode`` limited to ``paths``; for each step, old/new bytes of every
    ``tracked`` file (manifest, log, index, ``.kb.yaml``) that the step changed, each read
    by ``read`` (a blob by name, None when missing: the lint's one ``git cat-file``).
    """
    try:
        rewrite: Step | None = None
        if mode.history:
            commits, rewrite = _range(root, mode, state, paths)
            steps = [Step(c.parent, c.commit, c.files, commit=c.commit) for c in commits]
        else:
            files = diff_status(root, staged=mode.staged, base=state.head, paths=paths)
            steps = [Step(state.head, INDEX if mode.staged else WORK_TREE, tuple(files))]
        with_texts = _with_texts(root, steps + ([rewrite] if rewrite else []), tracked, read)
        if rewrite is not None:
            return History(tuple(with_texts[:-1]), with_texts[-1])
        return History(tuple(with_texts))
    except GitFailed as exc:
        raise ConfigError(
            f"git failed: {exc.stderr.strip().splitlines()[-1] if exc.stderr.strip() else exc}", str(root)
        ) from None


def _range(root: Path, mode: LintMode, state: RepoState, paths: list[str]) -> tuple[list[CommitChange], Step | None]:
    """The commits of the mode's range, and the rewrite step when REV is not an ancestor of HEAD."""
    flag = "--all-history" if mode.whole_history else "--since"
    shallow = _shallow_commits(root)
    since: str | None = None
    if not mode.whole_history:
        assert mode.since is not None
        since = _resolve(root, mode.since, shallow)
    if state.head is None:
        if mode.whole_history:
            return [], None
        raise ConfigError("no commit yet: HEAD does not exist", flag)
    if shallow:
        listed = git(["rev-list", mode.until if since is None else f"{since}..{mode.until}"], root).split()
        cut = [c for c in listed if c in shallow]
        if cut:
            raise ConfigError(
                f"history is shallow: commit {cut[0][:12]} of the range has no parents in this clone, so git "
                "cannot show what it changed (fetch the whole history: git fetch --unshallow; fetch-depth: 0 in CI)",
                flag,
            )
    commits = commit_changes(root, mode.log_range, paths)
    if since is None:
        return commits, None
    proc = git(["merge-base", since, mode.until], root, check=False).strip()
    if proc == since:
        return commits, None  # REV is an ancestor: its evidence is what the range starts from
    files = tree_diff(root, since, state.head, paths)
    label = f" (history rewritten: {mode.since} is not an ancestor of HEAD)"
    return commits, Step(since, state.head, tuple(files), label=label, partial=bool(proc))


def _shallow_commits(root: Path) -> set[str]:
    """The commits a shallow clone cut off from their parents (empty when not shallow)."""
    out = git(["rev-parse", "--is-shallow-repository", "--path-format=absolute", "--git-path", "shallow"], root)
    answer, _, path = out.partition("\n")
    if answer.strip() != "true":
        return set()
    try:
        return set(read_regular(path.strip()).decode("ascii", "replace").split())
    except OSError:
        return set()


def _resolve(root: Path, since: str, shallow: set[str]) -> str:
    try:
        return git(["rev-parse", "--verify", "-q", f"{since}^{{commit}}"], root).strip()
    except GitFailed:
        if shallow:
            raise ConfigError(
                f"unknown revision '{since}': history is shallow, the revision may lie beyond it "
                "(fetch the whole history: git fetch --unshallow; fetch-depth: 0 in CI)",
                "--since",
            ) from None
        raise ConfigError(f"unknown revision '{since}'", "--since") from None


def _with_texts(root: Path, steps: list[Step], tracked: list[str], read: ReadBlob) -> list[Step]:
    wanted: list[tuple[int, str, str, str | None]] = []  # (step, side, rel, spec or None=disk)
    for i, step in enumerate(steps):
        for rel in tracked:
            status = step.status_of(rel)
            if status is None:
                continue
            if step.old_rev is not None and status.status[0] != "A":
                wanted.append((i, "old", rel, f"{step.old_rev}:./{status.old_path or rel}"))
            if status.status[0] != "D":
                new_spec = None if step.new_rev is WORK_TREE else f"{step.new_rev}:./{rel}"
                wanted.append((i, "new", rel, new_spec))
    blobs = {spec: read(spec) for _, _, _, spec in wanted if spec is not None}
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
