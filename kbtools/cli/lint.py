"""`kb lint`: every check of SPEC §3; text, JSON or GitHub annotations."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kbtools.cli.common import RootOption

if TYPE_CHECKING:
    from kbtools.errors import KbError
    from kbtools.kb.layout import Layout
    from kbtools.lint.engine import LintMode, LintReport
    from kbtools.lint.problem import Problem

FORMATS = ("text", "json", "github", "sarif")


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


def lint_and_render(
    mode: LintMode, families: tuple[str, ...], output_format: str, root: Path | None, *, fix: bool = False
) -> int:
    """Lint in ``mode`` and print the report; the exit code (the `kb lint` command and the hooks)."""
    from dataclasses import replace

    from kbtools.cli.common import open_kb
    from kbtools.errors import KbError
    from kbtools.lint.engine import run_lint

    try:
        _, layout = open_kb(root)
        if fix:
            _fix(layout, output_format)
        report = run_lint(layout, mode, families)
        notice = layout.locale_notice
    except KbError as exc:
        if output_format in ("text", "sarif"):  # SARIF carries findings; an error is the one-line message
            raise
        typer.echo(render_error(exc, output_format, root), nl=False)
        return int(exc.code)
    if notice:
        report = replace(report, notices=(notice, *report.notices))
    for notice in report.notices:
        typer.echo(notice, err=True)
    typer.echo(render(report, output_format, families), err=output_format == "text" and not report.ok, nl=False)
    return 0 if report.ok else 1


def _fix(layout: Layout, output_format: str) -> None:
    """Append the missing index rows and one log entry; say what was written (stderr)."""
    import datetime as dt

    from kbtools.lint.context import build_context
    from kbtools.lint.engine import LintMode
    from kbtools.lint.fix import apply_fix, plan_fix

    ctx = build_context(layout, LintMode(), frozenset({"index-log"}))
    plan = plan_fix(ctx, dt.date.today())
    written = apply_fix(ctx, plan)
    if not written:
        typer.echo("kb lint --fix: the index and the log already list every raw source and note", err=True)
        return
    raws = sum(1 for row in plan.rows if row.kind == "raw")
    typer.echo(
        f"kb lint --fix: {written[0]}: added {raws} raw source row(s) and {len(plan.rows) - raws} wiki page row(s); "
        f"{written[1]}: added {plan.log_heading}",
        err=True,
    )


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


def render(report: LintReport, output_format: str, families: Sequence[str] | None = None) -> str:
    """The report as text (reference wording), JSON, or GitHub annotations.

    ``families``: the families that ran (default: all). A passing run of only some says
    which, and claims nothing about the families it did not run."""
    if output_format == "sarif":
        from kbtools import __version__
        from kbtools.lint.sarif import render_sarif

        return render_sarif(report.problems, version=__version__, fallback_uri="KB.md")
    if output_format == "json":
        import json

        payload = {
            "ok": report.ok,
            "problems": [
                {"check": p.check, "message": p.message, "path": p.path, "line": p.line} for p in report.problems
            ],
            "counts": {"problems": len(report.problems), "raw": report.raw_count, "notes": report.note_count},
            "notices": list(report.notices),
        }
        return json.dumps(payload, ensure_ascii=False, indent=2) + "\n"
    if output_format == "github":
        return "".join(_annotation(p.path, p.line, p.message) for p in report.problems)
    if report.ok:
        return success_text(report, families)
    return failure_text("KB lint", report.problems)


def success_text(report: LintReport, families: Sequence[str] | None = None) -> str:
    from kbtools.lint.engine import FAMILIES

    ran = tuple(families) if families is not None else FAMILIES
    if set(ran) >= set(FAMILIES):
        return (
            f"KB lint passed: {report.raw_count} raw source(s), {report.note_count} wiki page(s), "
            "canonical index/log present.\n"
        )
    parts = []
    if "raw" in ran:
        parts.append(f"{report.raw_count} raw source(s)")
    if "notes" in ran:
        parts.append(f"{report.note_count} wiki page(s)")
    if "index-log" in ran:
        parts.append("canonical index/log present")
    if "secrets" in ran:
        parts.append("no secret in the changes")
    return f"KB lint passed (only {', '.join(ran)}): {', '.join(parts)}.\n"


def render_error(exc: KbError, output_format: str, root: Path | None) -> str:
    """An error that stopped the lint (a bad `.kb.yaml`, an ambiguous layout) in the
    machine format asked for, so a CI step reading JSON or annotations sees it."""
    from kbtools.errors import ConfigError

    path = line = column = None
    if isinstance(exc, ConfigError):
        path, line, column = exc.path, exc.line, exc.column
    if path is not None:
        path = _relative(path, root)
    if output_format == "json":
        import json

        kind = "config" if isinstance(exc, ConfigError) else "usage"
        error: dict[str, object] = {"kind": kind, "message": str(exc), "what": exc.what}
        error |= {"path": path, "line": line, "column": column}
        payload = {"ok": False, "error": error, "problems": [], "notices": []}
        return json.dumps(payload, ensure_ascii=False, indent=2) + "\n"
    return _annotation(path, line, f"kb: error: {exc}", column=column)


def _relative(path: str, root: Path | None) -> str:
    """A file path relative to the repository (what annotations need), when it is inside."""
    from kbtools.cli.common import resolve_root
    from kbtools.errors import KbError

    try:
        return Path(path).resolve().relative_to(resolve_root(root)).as_posix()
    except (ValueError, OSError, KbError):
        return path


def failure_text(command: str, problems: Sequence[Problem]) -> str:
    """``<command> failed (N issues)`` and one ``- <message>`` line per problem."""
    count = len(problems)
    lines = [f"{command} failed ({count} issue{'' if count == 1 else 's'})"]
    lines += [f"- {p.message}" for p in problems]
    return "\n".join(lines) + "\n"


def _annotation(path: str | None, line: int | None, message: str, *, column: int | None = None) -> str:
    # GitHub workflow commands: % \r \n in data, and also : , in properties, are escaped.
    def prop(value: str) -> str:
        return (
            value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A").replace(":", "%3A").replace(",", "%2C")
        )

    data = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    props = []
    if path:
        props.append(f"file={prop(path)}")
    if line:
        props.append(f"line={line}")
    if line and column:
        props.append(f"col={column}")
    return f"::error {','.join(props)}::{data}\n" if props else f"::error::{data}\n"
