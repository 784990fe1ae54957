"""`kb ingest`: agent session transcripts → redacted candidate ledgers (dry run by default)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from kbtools.cli.common import LedgerDirOption, RootOption


def register(app: typer.Typer) -> None:
    @app.command("ingest", short_help="Agent sessions into redacted candidate ledgers.")
    def ingest(
        write: Annotated[
            bool, typer.Option("--write", help="Write the ledgers (default: dry run, nothing written).")
        ] = False,
        output_dir: LedgerDirOption = None,
        omp_sessions: Annotated[
            Path | None, typer.Option("--omp-sessions", help="OMP sessions folder (default: ~/.omp/agent/sessions).")
        ] = None,
        opencode_db: Annotated[
            Path | None,
            typer.Option(
                "--opencode-db", help="OpenCode SQLite database (default: $XDG_DATA_HOME/opencode/opencode*.db)."
            ),
        ] = None,
        codex_dir: Annotated[
            Path | None, typer.Option("--codex-dir", help="Codex home (default: $CODEX_HOME or ~/.codex).")
        ] = None,
        prompt_history: Annotated[
            Path | None,
            typer.Option(
                "--prompt-history",
                help="OpenCode prompt history (default: $XDG_STATE_HOME/opencode/prompt-history.jsonl).",
            ),
        ] = None,
        claude_dir: Annotated[
            Path | None, typer.Option("--claude-dir", help="Claude Code root (default: ~/.claude).")
        ] = None,
        hindsight_url: Annotated[
            str | None,
            typer.Option("--hindsight-url", help="Hindsight API base URL (default: $HINDSIGHT_API_URL; off if unset)."),
        ] = None,
        skip_hindsight: Annotated[
            bool, typer.Option("--skip-hindsight", help="Do not read Hindsight even if configured.")
        ] = False,
        no_derived_filter: Annotated[
            bool,
            typer.Option(
                "--no-derived-filter", help="Do not exclude records that quote the wiki's own pages (not recommended)."
            ),
        ] = False,
        jobs: Annotated[
            int | None, typer.Option("--jobs", min=1, help="Worker processes (default: the number of cores).")
        ] = None,
        prune: Annotated[bool, typer.Option("--prune", help="Drop ledger rows of sources not seen this run.")] = False,
        root: RootOption = None,
    ) -> None:
        """Turn agent session transcripts into redacted candidate ledgers.

        Prints one JSON summary line on stdout. Without --write nothing is
        created or written.
        """
        from kbtools.cli.common import ledger_dir, open_kb
        from kbtools.ingest import sources
        from kbtools.ingest.pipeline import IngestRequest, run_ingest

        config, layout = open_kb(root)
        flags = {
            "omp_sessions": omp_sessions,
            "opencode_db": opencode_db,
            "codex_dir": codex_dir,
            "prompt_history": prompt_history,
            "claude_dir": claude_dir,
            "hindsight_url": hindsight_url,
            "skip_hindsight": skip_hindsight or None,
        }
        settings = sources.resolve_settings(config, flags)._replace(
            hindsight_timeout=config.ingest.hindsight_timeout,
            hindsight_retries=config.ingest.hindsight_retries,
        )
        request = IngestRequest(
            config=config,
            layout=layout,
            settings=settings,
            output_dir=ledger_dir(layout, output_dir),
            write=write,
            prune=prune,
            derived_filter=not no_derived_filter,
            jobs=jobs or config.ingest.jobs or os.cpu_count() or 1,
        )
        progress = _ProgressLine() if sys.stderr.isatty() else None
        try:
            summary = run_ingest(request, progress=progress)
        finally:
            if progress is not None:
                progress.close()
        for warning in summary.warnings:
            print(f"kb: WARNING: {warning}", file=sys.stderr)
        print(json.dumps(summary.as_dict(), ensure_ascii=False, separators=(",", ":")))


class _ProgressLine:
    """A one-line counter on a terminal's stderr (the total is unknown while discovering)."""

    def __init__(self) -> None:
        self.shown = False

    def __call__(self, done: int) -> None:
        if done % 10 == 0 or done < 10:
            sys.stderr.write(f"\rkb ingest: {done} source(s)")
            sys.stderr.flush()
            self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
