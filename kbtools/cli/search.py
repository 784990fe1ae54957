"""`kb search`: full-text search over candidates, wiki notes and raw evidence."""

from __future__ import annotations

from typing import Annotated

import typer

from kbtools.cli.common import FormatOption, LedgerDirOption, RootOption, check_format


def register(app: typer.Typer) -> None:
    @app.command("search", short_help="Search candidates, wiki notes and raw evidence.")
    def search(
        query: Annotated[str, typer.Argument(help='Words (all must occur); "a phrase"; word* for a prefix.')],
        limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many results.")] = 20,
        output_format: FormatOption = "text",
        output_dir: LedgerDirOption = None,
        root: RootOption = None,
    ) -> None:
        """Notes, raw sources and candidates ranked by relevance for QUERY (SQLite FTS5 beside the ledgers)."""
        from kbtools.cli.candidates import print_hits, review_of

        check_format(output_format, ("text", "json"))
        print_hits(review_of(root, output_dir).search(query, limit=limit), output_format)
