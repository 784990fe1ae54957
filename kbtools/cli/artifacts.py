"""`kb artifacts record PATH…` · `kb artifacts record --staged` (the kb-record-artifacts hook)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from kbtools.cli.artifacts_output import record_staged, summary
from kbtools.cli.common import FormatOption, RootOption, check_format, open_kb


def register(app: typer.Typer) -> None:
    artifacts = typer.Typer(
        name="artifacts",
        help="The emitted-artifact manifest the derived filter reads.",
        no_args_is_help=True,
    )
    app.add_typer(artifacts)

    @artifacts.command("record", short_help="Record emitted artifacts in the artifact manifest.")
    def record(
        paths: Annotated[
            list[Path] | None,
            typer.Argument(help="Artifact files (or folders of .md files) inside the KB.", show_default=False),
        ] = None,
        staged: Annotated[
            bool,
            typer.Option("--staged", help="Record the staged notes and skills (the pre-commit hook)."),
        ] = False,
        root: RootOption = None,
        fmt: FormatOption = "text",
    ) -> int:
        """Append each artifact version not yet in the manifest; versions already present are skipped.

        With --staged (the kb-record-artifacts hook) the manifest is made to hold exactly
        what the commit holds: a row for each staged version not yet recorded, and no row
        appended since HEAD for a version the commit does not hold (a refused attempt's
        page). If that changes the manifest, the command says so and exits 1, the pre-commit
        convention for a hook that modifies a file; stage the manifest and commit again.
        """
        from kbtools.derived import manifest as am
        from kbtools.errors import KbError

        check_format(fmt, ("text", "json"))
        if staged and paths:
            raise KbError("give PATH… or --staged, not both", "kb artifacts record")
        if not staged and not paths:
            raise KbError("nothing to record: give PATH… or --staged", "kb artifacts record")
        if staged:
            return record_staged(fmt, root)
        _, layout = open_kb(root)
        files = am.files_at(layout, paths or [])
        result = am.record_artifacts(layout, files)
        manifest = layout.rel(layout.artifact_manifest)
        if fmt == "json":
            print(json.dumps({**summary(manifest, result.recorded, result.already), "restage": False}))
            return 0
        for row in result.recorded:
            print(f"recorded {row.path} ({row.name}, {row.sha256[:12]}) in {manifest}")
        for rel in result.already:
            print(f"already recorded {rel}")
        return 0
