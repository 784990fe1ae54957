"""`kb lint`'s run and its report (text, JSON, GitHub annotations, SARIF), without typer:
`kb lint` and the commit hook both come here (:mod:`kbtools.cli.plain`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kbtools.cli.base import echo, open_kb, resolve_root

if TYPE_CHECKING:
    from kbtools.errors import KbError
    from kbtools.kb.layout import Layout
    from kbtools.lint.engine import LintMode, LintReport
    from kbtools.lint.problem import Problem

FORMATS = ("text", "json", "github", "sarif")


def lint_and_render(
    mode: LintMode, families: tuple[str, ...], output_format: str, root: Path | None, *, fix: bool = False
) -> int:
    """Lint in ``mode`` and print the report; the exit code (the `kb lint` command and the hooks)."""
    from dataclasses import replace

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
        echo(render_error(exc, output_format, root), nl=False)
        return int(exc.code)
    if notice:
        report = replace(report, notices=(notice, *report.notices))
    for notice in report.notices:
        echo(notice, err=True)
    echo(render(report, output_format, families), err=output_format == "text" and not report.ok, nl=False)
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
        echo("kb lint --fix: the index and the log already list every raw source and note", err=True)
        return
    raws = sum(1 for row in plan.rows if row.kind == "raw")
    echo(
        f"kb lint --fix: {written[0]}: added {raws} raw source row(s) and {len(plan.rows) - raws} wiki page row(s); "
        f"{written[1]}: added {plan.log_heading}",
        err=True,
    )


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
