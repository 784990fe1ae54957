"""`kb lint`: every check of SPEC §3; text, JSON or GitHub annotations."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kbtools.cli.common import RootOption
from kbtools.cli.lint_output import FORMATS, lint_and_render


def register(app: typer.Typer) -> None:
    @app.command("lint", short_help="Check raw evidence, notes, index, log and secrets.")
    def lint(
        staged: Annotated[
            bool, typer.Option("--staged", help="Compare the index with HEAD (the pre-commit hook).")
        ] = False,
        since: Annotated[
            str | None, typer.Option("--since", metavar="REV", help="Check every commit of REV..HEAD (for CI).")
        ] = None,
        all_history: Annotated[
            bool,
            typer.Option(
                "--all-history",
                help="Check every commit of HEAD, the root commit included (adopting kbtools on an old KB).",
            ),
        ] = False,
        only: Annotated[
            str | None,
            typer.Option(
                "--only", metavar="FAMILY[,FAMILY]", help="Only these families: raw, notes, index-log, secrets."
            ),
        ] = None,
        whole: Annotated[
            bool,
            typer.Option(
                "--all",
                help="Every file's content (secrets included) and every commit of the history "
                "(what `pre-commit run --all-files` checks).",
            ),
        ] = False,
        output_format: Annotated[
            str, typer.Option("--format", help="text, json, github (annotations) or sarif (code scanning).")
        ] = "text",
        fix: Annotated[
            bool,
            typer.Option(
                "--fix", help="Add missing index rows and a dated log entry for new raw sources and notes, then lint."
            ),
        ] = False,
        root: RootOption = None,
    ) -> int:
        """Check the raw manifest, note metadata and links, the index and the log, and secrets."""
        if all_history:
            from kbtools.gitio import EMPTY_TREE

            if since is not None:
                raise typer.BadParameter("--all-history and --since cannot be combined", param_hint="--all-history")
            since = EMPTY_TREE  # the empty tree: from before the root commit
        return _run(staged=staged, since=since, only=only, output_format=output_format, root=root, fix=fix, whole=whole)


def _check_args(
    *, staged: bool, since: str | None, only: str | None, output_format: str, fix: bool = False, whole: bool = False
) -> tuple[str, ...]:
    """The chosen families; a bad combination or value is a usage error."""
    from kbtools.cli.common import check_format
    from kbtools.lint.engine import FAMILIES

    check_format(output_format, FORMATS)
    if staged and since is not None:
        raise typer.BadParameter("--staged and --since cannot be combined", param_hint="--since")
    if whole and (staged or since is not None):
        raise typer.BadParameter("--all cannot be combined with --staged or --since", param_hint="--all")
    if fix and (staged or since is not None):
        raise typer.BadParameter("--fix edits the work tree; it cannot be combined with --staged or --since")
    families = _families(only, FAMILIES)
    if fix and "index-log" not in families:
        raise typer.BadParameter("--fix repairs the index and the log: include index-log", param_hint="--only")
    return families


def _run(
    *,
    staged: bool,
    since: str | None,
    only: str | None,
    output_format: str,
    root: Path | None,
    fix: bool = False,
    whole: bool = False,
) -> int:
    from kbtools.lint.engine import LintMode

    families = _check_args(staged=staged, since=since, only=only, output_format=output_format, fix=fix, whole=whole)
    return lint_and_render(LintMode(staged=staged, since=since, whole=whole), families, output_format, root, fix=fix)


def parse_families(only: str | None) -> tuple[str, ...]:
    """``--only``'s families (all when None); an unknown one is a usage error."""
    from kbtools.lint.engine import FAMILIES

    return _families(only, FAMILIES)


def _families(only: str | None, known: tuple[str, ...]) -> tuple[str, ...]:
    if only is None:
        return known
    chosen = tuple(dict.fromkeys(f.strip() for f in only.split(",") if f.strip()))
    unknown = [f for f in chosen if f not in known]
    if unknown or not chosen:
        raise typer.BadParameter(
            f"unknown family '{unknown[0] if unknown else only}' (known: {', '.join(known)})", param_hint="--only"
        )
    return chosen
