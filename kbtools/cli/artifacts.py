"""`kb artifacts record PATH…` · `kb artifacts record --staged` (the kb-record-artifacts hook)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

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

        With --staged (the kb-record-artifacts hook) the staged content is recorded. If that
        adds a row, the manifest changed after staging: the command says so and exits 1, the
        pre-commit convention for a hook that modifies a file; stage the manifest and commit
        again (the second run finds every version present and passes).
        """
        from kbtools.derived import manifest as am
        from kbtools.errors import KbError

        check_format(fmt, ("text", "json"))
        if staged and paths:
            raise KbError("give PATH… or --staged, not both", "kb artifacts record")
        if not staged and not paths:
            raise KbError("nothing to record: give PATH… or --staged", "kb artifacts record")
        _, layout = open_kb(root)
        files = am.staged_files(layout) if staged else am.files_at(layout, paths or [])
        result = am.record_artifacts(layout, files)
        manifest = layout.rel(layout.artifact_manifest)
        restage = staged and bool(result.recorded)
        if fmt == "json":
            print(
                json.dumps(
                    {
                        "manifest": manifest,
                        "recorded": [{"name": r.name, "path": r.path, "sha256": r.sha256} for r in result.recorded],
                        "already": list(result.already),
                        "restage": restage,
                    }
                )
            )
            return 1 if restage else 0
        for row in result.recorded:
            print(f"recorded {row.path} ({row.name}, {row.sha256[:12]}) in {manifest}")
        if not staged:
            for rel in result.already:
                print(f"already recorded {rel}")
        if restage:
            print(f"{manifest} changed: stage it (git add {manifest}) and commit again", file=sys.stderr)
            return 1
        return 0
