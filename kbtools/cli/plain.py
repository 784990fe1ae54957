"""The commands a commit hook runs, without typer: ``kb lint``, ``kb lint --staged`` and
``kb hooks run pre-commit`` with its steps. Typer's import and the building of its command
tree cost the hook about 40 ms of its 300 ms budget, and these command lines have nothing
to parse; :func:`plain_command` recognises them exactly (any other word, option or
``--help`` goes to the typer app) and :func:`kbtools.cli.main` runs them with the same
error handling."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def _lint(staged: bool, root: Path | None) -> int:
    from kbtools.cli.lint_output import lint_and_render
    from kbtools.lint.engine import FAMILIES, LintMode

    return lint_and_render(LintMode(staged=staged), FAMILIES, "text", root)


def _retention_staged(root: Path | None) -> int:
    from kbtools.cli.retention_output import check_staged

    return check_staged(None, "text", root)


def _artifacts_staged(root: Path | None) -> int:
    from kbtools.cli.artifacts_output import record_staged

    return record_staged("text", root)


def run_pre_commit() -> int:
    """What the plain pre-commit hook runs: every step of ``PRE_COMMIT_STEPS``, in this process
    (one interpreter start for the whole hook)."""
    from kbtools.kb.githooks import PRE_COMMIT_STEPS

    return run_steps(PRE_COMMIT_STEPS)


_COMMANDS: dict[tuple[str, ...], Callable[[Path | None], int]] = {
    ("lint",): lambda root: _lint(False, root),
    ("lint", "--staged"): lambda root: _lint(True, root),
    ("retention", "check", "--staged"): _retention_staged,
    ("artifacts", "record", "--staged"): _artifacts_staged,
    ("hooks", "run", "pre-commit"): lambda root: run_pre_commit(),
}


def plain_command(args: Sequence[str]) -> Callable[[], int] | None:
    """The function that runs the command line ``args``, when it is one of these exactly."""
    command = _COMMANDS.get(tuple(args))
    return None if command is None else lambda: command(None)


def run_steps(steps: Sequence[tuple[str, ...]]) -> int:
    """Run each step in this process; the last one only if all before it passed.

    A step whose command (or its last option) this `kb` does not have is
    skipped with a notice, so the hook works while a command is not built yet.
    """
    from kbtools.cli import guarded, main
    from kbtools.cli.base import resolve_root

    tree: Any = None
    root: Path | None = None  # found once for the steps run here (each would ask git again)
    worst = 0
    for i, argv in enumerate(steps):
        if i == len(steps) - 1 and worst:
            break
        plain = _COMMANDS.get(tuple(argv))
        if plain is None:  # only then is the typer app built, to look the step up
            if tree is None:
                tree = _click_tree(steps)
            if not _has_command(tree, argv):
                print(f"kb hooks: skipped `kb {' '.join(argv)}` (not available in this kb)", file=sys.stderr)
                continue
        try:
            if plain is None:
                code = main(list(argv))
            else:
                root = root or resolve_root(None)
                code = guarded(functools.partial(plain, root), debug=False)
        except SystemExit as exc:  # a command that exits directly
            code = exc.code if isinstance(exc.code, int) else 1
        worst = max(worst, code)
    return worst


def _click_tree(steps: Sequence[tuple[str, ...]]) -> Any:
    from typer.main import get_command

    from kbtools.cli import COMMAND_MODULES, build_app

    return get_command(build_app([m for m in dict.fromkeys(step[0] for step in steps) if m in COMMAND_MODULES]))


def _has_command(tree: Any, argv: Sequence[str]) -> bool:
    *names, option = argv
    command = tree
    for name in names:
        command = getattr(command, "commands", {}).get(name)  # a click group's subcommands
        if command is None:
            return False
    return any(option in param.opts for param in command.params)
