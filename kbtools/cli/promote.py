"""`kb promote`: write a ledger candidate into the raw layer as new evidence."""

from __future__ import annotations

from typing import Annotated

import typer

from kbtools.cli.common import LedgerDirOption, RootOption


def register(app: typer.Typer) -> None:
    @app.command("promote", short_help="Write a ledger candidate into the raw layer as evidence.")
    def promote(
        candidate_id: Annotated[
            str, typer.Argument(help="Candidate id from candidates.jsonl (a unique prefix of 8+ characters is enough).")
        ],
        slug: Annotated[
            str | None, typer.Option("--slug", help="Raw slug (default: from the candidate's prompt and id).")
        ] = None,
        locale: Annotated[
            str | None, typer.Option("--locale", help="Raw locale folder (default: the canonical locale).")
        ] = None,
        index: Annotated[
            bool, typer.Option("--index", help="Also list the new raw source in the index and log the ingest.")
        ] = False,
        output_dir: LedgerDirOption = None,
        root: RootOption = None,
    ) -> None:
        """Write a candidate into the raw layer the way `kb raw add` does (frontmatter naming the
        candidate + manifest line); never overwrites, and never promotes a candidate twice."""
        from kbtools.cli.common import ledger_dir, open_kb
        from kbtools.redact import Redactor
        from kbtools.review.promote import promote as run_promote

        config, layout = open_kb(root)
        redactor = Redactor(config.redaction)
        done = run_promote(
            layout,
            ledger_dir(layout, output_dir),
            candidate_id,
            redact=lambda text: redactor.redact(text).text,
            slug=slug,
            locale=locale,
            index=index,
        )
        print(f"promoted {done.candidate_id[:12]} → {layout.rel(done.path)} (sha256 {done.sha256[:12]})")
        print(f"  manifest: appended '{done.sha256[:12]}… {done.rel}' to {layout.rel(layout.raw_manifest)}")
        if done.indexed:
            print(
                f"  index: listed `{done.slug}` in {layout.rel(layout.index)}; log: entry added to {layout.rel(layout.log)}"
            )
        else:
            print(f"next: list `{done.slug}` in {layout.rel(layout.index)} and log it (or promote with --index)")
