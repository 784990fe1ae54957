"""`kb raw add` and `kb raw verify`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from kbtools.cli.common import FormatOption, RootOption, check_format, open_kb


def register(app: typer.Typer) -> None:
    raw = typer.Typer(name="raw", help="Add raw evidence; verify the raw manifest.", no_args_is_help=True)
    app.add_typer(raw)

    @raw.command("add", short_help="Copy evidence into the raw layer; append its manifest line.")
    def add(
        files: Annotated[
            list[Path],
            typer.Argument(
                help="Evidence files: Markdown, or UTF-8 text (wrapped in a fenced block). Binary files are refused."
            ),
        ],
        locale: Annotated[
            str | None, typer.Option("--locale", help="Locale folder (default: the canonical locale).")
        ] = None,
        slug: Annotated[
            str | None,
            typer.Option("--slug", help="Slug of the raw file (one FILE only; default: the file name in kebab-case)."),
        ] = None,
        source_type: Annotated[
            str | None, typer.Option("--source-type", help="sourceType when the file has none (default: file).")
        ] = None,
        source_url: Annotated[
            str | None, typer.Option("--source-url", help="sourceUrl when the file has none (default: file:<name>).")
        ] = None,
        root: RootOption = None,
    ) -> None:
        """Copy evidence into the raw layer and append its manifest line (never rewrites a line)."""
        from kbtools.errors import require_utf8_name
        from kbtools.kb.raw_add import add_raw

        for name in files:
            require_utf8_name(name)
        _, layout = open_kb(root)
        for added in add_raw(layout, files, locale=locale, slug=slug, source_type=source_type, source_url=source_url):
            extra = f"; added {', '.join(added.fields_added)}" if added.fields_added else ""
            wrapped = "; text wrapped in a fenced block" if added.wrapped else ""
            print(
                f"{'registered' if added.in_place else 'added'} {layout.rel(added.path)} (sha256 {added.sha256}{extra}{wrapped})"
            )
            print(f"  manifest: appended '{added.sha256[:12]}… {added.rel}' to {layout.rel(layout.raw_manifest)}")
        print(f"next: list each new slug in {layout.rel(layout.index)} and log the ingest in {layout.rel(layout.log)}")

    @raw.command("verify", short_help="Check the raw manifest only.")
    def verify(root: RootOption = None, output_format: FormatOption = "text") -> None:
        """Manifest checks only: manifest present and well-formed, every raw file registered, hashes match,
        every entry exists, raw frontmatter complete. No git: works on an export or tarball too (`kb lint` adds
        the history checks)."""
        from kbtools.cli.lint_output import failure_text, render
        from kbtools.lint.engine import verify_raw

        check_format(output_format, ("text", "json"))
        _, layout = open_kb(root)
        report = verify_raw(layout)
        if output_format == "json":
            print(render(report, "json"), end="")
        elif report.ok:
            print(f"KB raw verify passed: {report.raw_count} raw source(s) match {layout.rel(layout.raw_manifest)}.")
        else:
            print(failure_text("KB raw verify", report.problems), end="", file=sys.stderr)
        raise typer.Exit(0 if report.ok else 1)
