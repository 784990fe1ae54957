"""The git side of the gate: staged note rewrites against HEAD, and the probe over history.

Both read ``--raw`` diffs, which name the old and new blob of every change, and
fetch blob contents through one ``git cat-file --batch`` process, so a probe
over thousands of rewrites costs one git process, not thousands.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kbtools.errors import KbError
from kbtools.gitio import BlobReader, GitFailed, git, repo_state
from kbtools.kb.layout import Layout
from kbtools.kb.tree import layer_entry
from kbtools.retention.gate import Verdict, compare, grade, with_moves
from kbtools.retention.taxonomy import Identifier, Taxonomy

PROBE_THRESHOLDS = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class NoteChange:
    """One changed note, as `git diff --raw` reports it."""

    status: str  # M, R, D, A, T (first letter of git's status)
    old_path: str | None
    new_path: str | None
    old_blob: str | None
    new_blob: str | None
    commit: str | None = None

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def label(self) -> str:
        if self.status == "R" and self.old_path != self.new_path:
            return f"{self.old_path} -> {self.new_path}"
        return self.path


@dataclass(frozen=True)
class PageCheck:
    change: NoteChange
    verdict: Verdict


@dataclass(frozen=True)
class DeletedNote:
    path: str
    identifiers: int  # how many identifiers went with it (not found in another changed note)
    moved_to: tuple[str, ...] = ()  # changed notes of the same change set that took some of them


@dataclass(frozen=True)
class StagedReport:
    threshold: int
    pages: tuple[PageCheck, ...] = ()
    deleted: tuple[DeletedNote, ...] = ()
    new_pages: tuple[str, ...] = ()

    @property
    def refused(self) -> bool:
        return any(p.verdict.refused for p in self.pages)


@dataclass(frozen=True)
class Rewrite:
    commit: str
    path: str
    old_path: str
    lost: tuple[Identifier, ...]
    moved: int = 0  # identifiers that went to other notes of the same commit
    moved_to: tuple[str, ...] = ()  # those notes: the notes that took part in a restructuring


@dataclass(frozen=True)
class ProbeReport:
    rev_range: str
    rewrites: int
    histogram: dict[int, int] = field(default_factory=dict)  # |lost| -> number of rewrites
    lossy: tuple[Rewrite, ...] = ()  # rewrites that lost something, worst first
    # The same histogram if identifiers moved to another note of the commit counted as lost
    # (the gate before it followed moves across notes): what following them changes.
    histogram_ignoring_moves: dict[int, int] = field(default_factory=dict)
    restructured: tuple[Rewrite, ...] = ()  # rewrites whose identifiers moved to other notes, most first

    def refusals(self, threshold: int) -> int:
        return sum(n for lost, n in self.histogram.items() if lost >= threshold)

    def refusal_rate(self, threshold: int) -> float:
        return self.refusals(threshold) / self.rewrites if self.rewrites else 0.0


# ---------------------------------------------------------------------------
# Diffs


def parse_raw_diff(output: str) -> Iterator[NoteChange]:
    """Parse `--raw -z` output; in `git log` output a commit starts with \\x01<sha>."""
    tokens = output.split("\0")
    commit: str | None = None
    i = 0
    while i < len(tokens):
        token = tokens[i].lstrip("\n")
        i += 1
        if token.startswith("\x01"):
            commit = token[1:].strip()
        elif token.startswith(":"):
            fields = token[1:].split()
            if len(fields) < 5:
                continue
            old_blob, new_blob, status = fields[2], fields[3], fields[4][0]
            if status in "RC":
                old_path, new_path = tokens[i], tokens[i + 1]
                i += 2
            else:
                old_path = new_path = tokens[i]
                i += 1
            yield NoteChange(
                status=status,
                old_path=None if status == "A" else old_path,
                new_path=None if status == "D" else new_path,
                old_blob=None if status == "A" else old_blob,
                new_blob=None if status == "D" else new_blob,
                commit=commit,
            )


def _is_note(change: NoteChange, prefix: str) -> bool:
    """A note as lint sees them (kbtools.kb.tree): not a draft, not hidden, not the artifact manifest."""
    return change.path.startswith(prefix) and layer_entry(change.path[len(prefix) :]) is not None


def _note_pathspec(layout: Layout) -> str:
    return layout.rel(layout.note_root)


def _head(root: Path) -> str | None:
    """HEAD's commit (None when unborn), in one git call; not a work tree is an error."""
    state = repo_state(root)
    if not state.usable:
        raise KbError("not a git repository", str(root))
    return state.head


def staged_changes(layout: Layout) -> list[NoteChange]:
    """Every staged change to a note against HEAD (an unborn HEAD: every note is new)."""
    pathspec = _note_pathspec(layout)
    if _head(layout.root) is None:
        names = git(["ls-files", "-z", "--", pathspec], layout.root)
        added = (NoteChange("A", None, p, None, None) for p in names.split("\0") if p)
        return [c for c in added if _is_note(c, pathspec + "/")]
    out = git(
        ["diff", "--cached", "--raw", "-z", "--no-abbrev", "-M", "--no-ext-diff", "--relative", "HEAD", "--", pathspec],
        layout.root,
    )
    return [c for c in parse_raw_diff(out) if _is_note(c, pathspec + "/")]


def check_staged(layout: Layout, *, threshold: int, extractor: Taxonomy) -> StagedReport:
    """Grade every staged modified or renamed note against its HEAD version; identifiers
    that arrive in another staged note moved, they are not lost."""
    pages: list[PageCheck] = []
    deleted: list[DeletedNote] = []
    new_pages: list[str] = []
    changes = staged_changes(layout)
    if not changes:
        return StagedReport(threshold)
    with BlobReader(layout.root) as blobs:
        texts = {c.path: blobs.text(c.new_blob or "") for c in changes if c.status != "D"}
        olds = {c.path: blobs.text(c.old_blob or "") for c in changes if c.status not in "AD"}
        arrivals = {
            path: extractor.extract(text, exclude_secrets=False)
            - extractor.extract(olds.get(path), exclude_secrets=False)
            for path, text in texts.items()
        }
        for change in changes:
            if change.status == "A":
                new_pages.append(change.path)
            elif change.status == "D":
                gone = extractor.extract(blobs.text(change.old_blob or ""))
                homes = sorted(p for p, held in arrivals.items() if gone & held)
                kept = set().union(*(arrivals[p] for p in homes)) if homes else set()
                deleted.append(DeletedNote(change.path, len(gone - kept), tuple(homes)))
            else:
                old = olds.get(change.path)
                verdict = grade(old, texts.get(change.path) or "", threshold=threshold, extractor=extractor)
                pages.append(PageCheck(change, with_moves(verdict, change.path, arrivals)))
    return StagedReport(threshold, tuple(pages), tuple(deleted), tuple(new_pages))


# ---------------------------------------------------------------------------
# The probe


def history_changes(layout: Layout, rev_range: str) -> Iterator[NoteChange]:
    """Every addition, modification or rename of a note in the commits of ``rev_range``."""
    if _head(layout.root) is None and rev_range == "HEAD":
        return
    try:
        out = git(
            [
                "log",
                "--raw",
                "-z",
                "--no-abbrev",
                "-M",
                "--no-ext-diff",
                "--relative",
                "--diff-filter=AMRT",
                "--format=%x01%H",
                rev_range,
                "--",
                _note_pathspec(layout),
            ],
            layout.root,
        )
    except GitFailed as exc:
        raise KbError(
            f"cannot read history: {exc.stderr.strip().splitlines()[0] if exc.stderr.strip() else exc}", rev_range
        ) from None
    for change in parse_raw_diff(out):
        if _is_note(change, _note_pathspec(layout) + "/"):
            yield change


def _by_commit(changes: Iterator[NoteChange]) -> Iterator[list[NoteChange]]:
    """Consecutive changes of one commit, together (git log lists a commit's files in a run)."""
    group: list[NoteChange] = []
    for change in changes:
        if group and change.commit != group[0].commit:
            yield group
            group = []
        group.append(change)
    if group:
        yield group


def probe(layout: Layout, rev_range: str, *, extractor: Taxonomy) -> ProbeReport:
    """Replay the gate over every note rewrite in ``rev_range``: the |lost| histogram, with
    identifiers that moved to another note of the same commit kept, as the gate keeps them."""
    histogram: Counter[int] = Counter()
    ignoring_moves: Counter[int] = Counter()
    lossy: list[Rewrite] = []
    restructured: list[Rewrite] = []
    # A blob is the new side of one rewrite and the old side of the next: extract each once.
    found: dict[tuple[str, bool], frozenset[Identifier]] = {}

    with BlobReader(layout.root) as blobs:

        def identifiers(blob: str | None, exclude_secrets: bool) -> frozenset[Identifier]:
            if not blob:
                return frozenset()
            if (blob, exclude_secrets) not in found:
                found[blob, exclude_secrets] = extractor.extract(blobs.text(blob), exclude_secrets=exclude_secrets)
            return found[blob, exclude_secrets]

        for commit in _by_commit(history_changes(layout, rev_range)):
            arrivals = {c.path: identifiers(c.new_blob, False) - identifiers(c.old_blob, False) for c in commit}
            for change in commit:
                if change.status == "A":
                    continue
                lost, kept = compare(
                    identifiers(change.old_blob, False),
                    identifiers(change.new_blob, False),
                    lambda: identifiers(change.old_blob, True),  # noqa: B023 - called before the loop moves on
                )
                ignoring_moves[len(lost)] += 1
                verdict = with_moves(Verdict(lost, threshold=0, kept=kept), change.path, arrivals)
                histogram[len(verdict.lost)] += 1
                rewrite = Rewrite(
                    commit=change.commit or "",
                    path=change.path,
                    old_path=change.old_path or change.path,
                    lost=verdict.lost,
                    moved=verdict.moved,
                    moved_to=verdict.moved_to,
                )
                if rewrite.lost:
                    lossy.append(rewrite)
                if rewrite.moved:
                    restructured.append(rewrite)
    lossy.sort(key=lambda r: -len(r.lost))
    restructured.sort(key=lambda r: -r.moved)
    return ProbeReport(
        rev_range,
        sum(histogram.values()),
        dict(sorted(histogram.items())),
        tuple(lossy),
        dict(sorted(ignoring_moves.items())),
        tuple(restructured),
    )
