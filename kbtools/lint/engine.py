"""`kb lint` as a function: Layout + mode + families → LintReport (no printing)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from kbtools.kb.layout import Layout
from kbtools.lint.context import LintContext, build_context
from kbtools.lint.history import LintMode
from kbtools.lint.problem import CHECKS, FAMILIES, Problem, sort_key

__all__ = ["FAMILIES", "LintMode", "LintReport", "changed_lines", "lint_report", "run_lint", "verify_raw"]

ChangedLines = Iterator[tuple[str, list[tuple[int, str]]]]


@dataclass(frozen=True)
class LintReport:
    problems: tuple[Problem, ...]
    raw_count: int
    note_count: int
    notices: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems


def run_lint(
    layout: Layout, mode: LintMode = LintMode(), families: Iterable[str] = FAMILIES, *, baseline: bool = True
) -> LintReport:
    """Run every check of the selected families; problems come back deduplicated and sorted.

    ``baseline``: leave out the findings the KB's baseline accepts (`kb baseline` lints without)."""
    selected = frozenset(families)
    ctx = build_context(layout, mode, selected)
    try:
        problems = _problems(ctx, selected)
    finally:
        ctx.files.close()
    notices: tuple[str, ...] = (ctx.notice,) if ctx.notice else ()
    if baseline:
        from kbtools.lint.baseline import apply_baseline

        problems, accepted = apply_baseline(layout.root, problems)
        notices += (accepted,) if accepted else ()
    return lint_report(problems, len(ctx.raw.files), len(ctx.notes.files), notices)


def _problems(ctx: LintContext, selected: frozenset[str]) -> list[Problem]:
    problems = [p for p in ctx.name_problems if CHECKS[p.check][1] in selected]
    if "raw" in selected:
        from kbtools.lint.raw import check_raw

        problems += check_raw(ctx)
    if "notes" in selected:
        from kbtools.lint.notes import check_notes

        problems += check_notes(ctx)
    if "index-log" in selected:
        from kbtools.lint.index_log import check_index_log

        problems += check_index_log(ctx)
    if "secrets" in selected and ctx.repo.usable:
        problems += _check_secrets(ctx)
    return problems


def verify_raw(layout: Layout) -> LintReport:
    """Checks 1-5 and 8 of `kb lint` (manifest, files, hashes, frontmatter), without git (`kb raw verify`)."""
    from kbtools.lint.raw import check_raw

    ctx = build_context(layout, LintMode(), frozenset())  # no family needing git: no history loaded
    return lint_report(check_raw(ctx), len(ctx.raw.files), 0)


def lint_report(
    problems: Iterable[Problem], raw_count: int, note_count: int, notices: tuple[str, ...] = ()
) -> LintReport:
    """A report of ``problems`` deduplicated and in report order (check number, path, line)."""
    return LintReport(tuple(sorted(set(problems), key=sort_key)), raw_count, note_count, notices)


def _check_secrets(ctx: LintContext) -> list[Problem]:
    """Check 16, delegated to ``kbtools.lint.secrets.secret_problems`` when it is installed."""
    try:
        from kbtools.lint.secrets import secret_problems
    except ImportError:
        return []
    return secret_problems(changed_lines(ctx))


def changed_lines(ctx: LintContext) -> ChangedLines:
    """Added or changed lines of raw and note files in the mode's diff, as
    ``(path relative to the KB root, [(line number, text), …])``, a long file in several
    overlapping pieces (:data:`kbtools.gitio.PIECE_CHARS`), read as git writes them.

    Work tree mode also reads untracked files whole; the history modes list each commit's
    additions separately (a file changed by two commits appears twice).
    """
    from kbtools.gitio import EMPTY_TREE, added_lines, untracked_files

    root = ctx.layout.root
    manifests = {ctx.rel(ctx.layout.raw_manifest), ctx.rel(ctx.layout.artifact_manifest)}
    paths = list(dict.fromkeys([ctx.raw_prefix, ctx.note_prefix]))
    base = ctx.repo.head or EMPTY_TREE
    if ctx.mode.whole:
        yield from every_line(ctx, manifests)
        return
    patched = paths
    if ctx.mode.history:
        args = ["log", "--root", ctx.mode.log_range, "--", *paths]
    else:
        changed = _changed_paths(ctx, manifests)
        if changed is not None:
            patched = [f":(literal){p}" for p in changed]
        args = ["diff", *(["--cached"] if ctx.mode.staged else []), base, "--", *patched]
    if patched:  # none: nothing changed, no patch to ask for (an empty pathspec is the whole repository)
        for _, path, lines in added_lines(root, args):
            if path not in manifests:
                yield path, lines
    if not ctx.mode.history and not ctx.mode.staged:
        for rel in untracked_files(root, paths):
            if rel not in manifests:
                yield from _file_pieces(ctx, rel)


def _changed_paths(ctx: LintContext, manifests: set[str]) -> list[str] | None:
    """The raw and note files the history step changed (both sides of a rename), for the
    patch to name instead of the two folders: git then reads and compares only those, and
    nothing at all when none changed. None (ask for the folders) when there are many."""
    if ctx.history is None:
        return None
    prefixes = (ctx.raw_prefix + "/", ctx.note_prefix + "/")
    changed = [
        p
        for f in ctx.history.steps[0].files
        if f.status[0] != "D"
        for p in (f.old_path, f.path)
        if p is not None and p.startswith(prefixes) and p not in manifests
    ]
    return list(dict.fromkeys(changed)) if len(changed) <= 200 else None


def _file_pieces(ctx: LintContext, rel: str) -> ChangedLines:
    """An untracked file's lines in pieces like :func:`kbtools.gitio.added_lines`'. Only a
    regular file is read: a symlink (or a FIFO behind one) is never followed."""
    from kbtools.gitio import OVERLAP, PIECE_CHARS

    try:
        pieces = ctx.files.chunks(rel)
    except OSError:
        return
    current: list[tuple[int, str]] = []
    fresh = size = 0
    tail = b""
    number = 0
    for piece in pieces:
        *whole, tail = (tail + piece).split(b"\n")
        for raw in whole:
            number += 1
            current.append((number, raw.decode("utf-8", "replace").rstrip("\r")))
            fresh += 1
            size += len(raw)
        if size >= PIECE_CHARS:
            yield rel, current
            current = current[-OVERLAP:]
            fresh, size = 0, sum(len(text) for _, text in current)
    if tail:
        current.append((number + 1, tail.decode("utf-8", "replace")))
        fresh += 1
    if fresh:
        yield rel, current


def every_line(ctx: LintContext, skip: set[str]) -> ChangedLines:
    """Whole mode (``pre-commit run --all-files``): every line of every raw and note file."""
    for layer, prefix in ((ctx.raw, ctx.raw_prefix), (ctx.notes, ctx.note_prefix)):
        for f in layer.files:
            rel = f"{prefix}/{f.rel}"
            if rel not in skip and f.rel not in layer.symlinks:  # a symlink is never followed
                yield from _file_pieces(ctx, rel)
