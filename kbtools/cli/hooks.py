"""`kb hooks`: plain git hooks for repositories without the pre-commit framework."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kbtools.cli.common import RootOption
from kbtools.cli.plain import run_pre_commit, run_steps

__all__ = ["register", "run_pre_commit", "run_steps"]

if TYPE_CHECKING:
    from kbtools.lint.history import LintMode


def register(app: typer.Typer) -> None:
    hooks = typer.Typer(
        name="hooks",
        help="Plain git hooks for repositories that don't use the pre-commit framework, and the entries "
        "of the framework's hooks (.pre-commit-hooks.yaml).",
        short_help="Plain git hooks, and the framework hooks' entries.",
        no_args_is_help=True,
    )
    app.add_typer(hooks)
    register_framework_entries(hooks)

    @hooks.command("install", short_help="Install the kb pre-commit hook (core.hooksPath).")
    def install(
        root: RootOption = None,
        path: Annotated[
            str | None,
            typer.Option(
                "--path",
                help="Hooks folder inside the repository (default: hooks/ if it holds the kb hook, else .kb/hooks/).",
            ),
        ] = None,
        force: Annotated[
            bool, typer.Option("--force", help="Replace another core.hooksPath, hook script or .git/hooks hooks.")
        ] = False,
    ) -> None:
        """Write the kb pre-commit hook into the repository and point core.hooksPath at it."""
        from kbtools.kb import githooks

        result = githooks.install(root or Path.cwd(), path=path, force=force)
        script = f"{result.hooks_dir}/{githooks.HOOK_NAME}"
        print(f"{'wrote' if result.script_written else 'kept '} {script}")
        if result.previous_hooks_path and result.previous_hooks_path != result.hooks_dir:
            print(f"replaced core.hooksPath '{result.previous_hooks_path}'")
        print(f"core.hooksPath = {result.hooks_dir}: commits now run `kb hooks run pre-commit`")

    @hooks.command("uninstall", short_help="Unset core.hooksPath if it points at kb's hooks.")
    def uninstall(root: RootOption = None) -> None:
        """Unset core.hooksPath if it points at a kb hooks folder (the folder is kept)."""
        from kbtools.kb import githooks

        previous = githooks.uninstall(root or Path.cwd())
        print(f"unset core.hooksPath (was {previous})" if previous else "core.hooksPath was not set")

    @hooks.command("run", short_help="Run a plain git hook's steps (called by the hook script).")
    def run(
        hook: Annotated[str, typer.Argument(help="Hook to run: pre-commit.")],
    ) -> None:
        """Run what a plain git hook runs (called by the installed hook script)."""
        from kbtools.errors import KbError
        from kbtools.kb.githooks import HOOK_NAME

        if hook != HOOK_NAME:
            raise KbError(f"unknown hook '{hook}' (known: {HOOK_NAME})", "kb hooks run")
        raise typer.Exit(run_pre_commit())


def register_framework_entries(hooks: typer.Typer) -> None:
    """The entries of `.pre-commit-hooks.yaml`: they read pre-commit's files and environment."""

    @hooks.command("lint", short_help="What the framework's kb-lint hooks run.")
    def lint(
        files: Annotated[list[str] | None, typer.Argument(help="Files pre-commit passes.", show_default=False)] = None,
        only: Annotated[
            str | None, typer.Option("--only", metavar="FAMILY[,FAMILY]", help="Only these families.")
        ] = None,
        root: RootOption = None,
    ) -> int:
        """Lint what pre-commit is checking: the staged changes at commit time, the whole KB and its
        history under `pre-commit run --all-files`, every pushed commit at pre-push."""
        from kbtools.cli.lint import parse_families
        from kbtools.cli.lint_output import lint_and_render

        mode = _framework_mode(files or [])
        return lint_and_render(mode, parse_families(only), "text", root)

    @hooks.command("retention", short_help="What the framework's retention hook runs.")
    def retention(
        files: Annotated[list[str] | None, typer.Argument(help="Files pre-commit passes.", show_default=False)] = None,
        root: RootOption = None,
    ) -> int:
        """The identifier-retention gate on what pre-commit is checking: the staged rewrites at commit
        time, every rewrite of the pushed commits at pre-push; nothing under --all-files (no rewrite)."""
        mode = _framework_mode(files or [])
        if mode.staged:
            from kbtools.cli import main

            return main(["retention", "check", "--staged", *(["--root", str(root)] if root else [])])
        if mode.since is None:
            return 0  # the whole KB, no old version to compare: rewrites are judged when made
        return _retention_range(f"{mode.since}..{mode.until}", root)


def _framework_mode(files: Sequence[str]) -> LintMode:
    import os

    from kbtools.gitio import git
    from kbtools.lint.hookmode import framework_mode

    # pre-commit runs hooks from the repository's top, and passes paths relative to it.
    listing = git(["diff", "--cached", "--name-only", "-z"], Path.cwd(), check=False)
    return framework_mode(os.environ, files, [p for p in listing.split("\0") if p])


def _retention_range(rev_range: str, root: Path | None) -> int:
    """Every note rewrite of ``rev_range`` through the gate: refused at the threshold, warned below it."""
    from kbtools.cli.common import open_kb
    from kbtools.retention.gate import extractor_for, resolve_threshold
    from kbtools.retention.history import probe

    config, layout = open_kb(root)
    limit = resolve_threshold(None, config).value
    report = probe(layout, rev_range, extractor=extractor_for(config))
    refused = False
    for rewrite in report.lossy:
        n = len(rewrite.lost)
        too_many = limit > 0 and n >= limit
        refused |= too_many
        outcome = f"refused: {n} >= threshold {limit}" if too_many else "warning"
        names = ", ".join(i.text for i in rewrite.lost[:10]) + (f", +{n - 10} more" if n > 10 else "")
        print(
            f"identifier-retention: {rewrite.path} (commit {rewrite.commit[:12]}) dropped {n} identifier(s): "
            f"{names} ({outcome})",
            file=sys.stderr,
        )
    return 1 if refused else 0
