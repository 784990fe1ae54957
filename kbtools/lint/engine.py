"""`kb lint` as a function: Layout + mode + families → LintReport (no printing)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kbtools.kb.layout import Layout
from kbtools.lint.context import LintContext, build_context
from kbtools.lint.history import LintMode
from kbtools.lint.problem import FAMILIES, Problem, sort_key

__all__ = ["FAMILIES", "LintMode", "LintReport", "changed_lines", "lint_report", "run_lint"]

ChangedLines = list[tuple[str, list[tuple[int, str]]]]


@dataclass(frozen=True)
class LintReport:
    problems: tuple[Problem, ...]
    raw_count: int
    note_count: int
    notices: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems


def run_lint(layout: Layout, mode: LintMode = LintMode(), families: Iterable[str] = FAMILIES) -> LintReport:
    """Run every check of the selected families; problems come back deduplicated and sorted."""
    selected = frozenset(families)
    ctx = build_context(layout, mode, selected)
    try:
        problems = _problems(ctx, selected)
    finally:
        ctx.files.close()
    notices = (ctx.notice,) if ctx.notice else ()
    return lint_report(problems, len(ctx.raw.files), len(ctx.notes.files), notices)


def _problems(ctx: LintContext, selected: frozenset[str]) -> list[Problem]:
    problems: list[Problem] = []
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
    return list(secret_problems(changed_lines(ctx)))


def changed_lines(ctx: LintContext) -> ChangedLines:
    """Added or changed lines of raw and note files in the mode's diff, as
    ``(path relative to the KB root, [(line number, text), …])``.

    Work tree mode also reads untracked files whole; ``--since`` lists each commit's
    additions separately (a file changed by two commits appears twice).
    """
    from kbtools.gitio import EMPTY_TREE, added_lines, untracked_files
    from kbtools.kb.tree import read_regular

    root = ctx.layout.root
    manifests = {ctx.rel(ctx.layout.raw_manifest), ctx.rel(ctx.layout.artifact_manifest)}
    paths = list(dict.fromkeys([ctx.raw_prefix, ctx.note_prefix]))
    base = ctx.repo.head or EMPTY_TREE
    if ctx.mode.history:
        args = ["log", "--root", ctx.mode.log_range, "--", *paths]
    elif ctx.mode.staged:
        args = ["diff", "--cached", base, "--", *paths]
    else:
        args = ["diff", base, "--", *paths]
    result: ChangedLines = [(path, lines) for _, path, lines in added_lines(root, args) if path not in manifests]
    if not ctx.mode.history and not ctx.mode.staged:
        for rel in untracked_files(root, paths):
            path = root / rel
            # Only regular files: a symlink (or a FIFO behind one) is never followed.
            if rel in manifests or path.is_symlink() or not path.is_file():
                continue
            try:
                text = read_regular(path).decode("utf-8", "replace")
            except OSError:
                continue
            result.append((rel, list(enumerate(text.splitlines(), start=1))))
    return result
