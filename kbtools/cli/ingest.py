"""`kb ingest`: agent session transcripts → redacted candidate ledgers (dry run by default)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kbtools.cli.common import LedgerDirOption, RootOption

if TYPE_CHECKING:
    from kbtools.review.run_report import RunReview


def _with_location_flags(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` with a ``--<name>`` option for each location a reader
    declares (``kbtools.ingest.sources.LOCATIONS``): a new reader needs no edit here."""
    import inspect

    from kbtools.ingest.sources import LOCATIONS

    signature = inspect.signature(command, eval_str=True)
    params = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    for location in LOCATIONS:
        option = typer.Option("--" + location.name.replace("_", "-"), help=location.help)
        params.append(
            inspect.Parameter(
                location.name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[str | None, option]
            )
        )
    command.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    return command


def register(app: typer.Typer) -> None:
    @app.command("ingest", short_help="Agent sessions into redacted candidate ledgers.")
    @_with_location_flags
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
        explain: Annotated[
            str | None,
            typer.Option(
                "--explain",
                metavar="SOURCE_KEY",
                help="Print which local file or row a source key (or candidate id) came from and why it failed; "
                "to a terminal only, nothing is ingested or written.",
            ),
        ] = None,
        root: RootOption = None,
        **locations: str | None,
    ) -> None:
        """Turn agent session transcripts into redacted candidate ledgers.

        Prints one JSON summary line on stdout. Without --write nothing is
        created or written.
        """
        from kbtools.cli.common import ledger_dir, open_kb
        from kbtools.ingest import sources
        from kbtools.ingest.pipeline import IngestRequest, run_ingest
        from kbtools.review.index_builder import IndexDraft

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
        flags.update(locations)
        settings = sources.resolve_settings(config, flags)
        if explain is not None:
            _explain(ledger_dir(layout, output_dir), explain, settings, layout.rel)
            return
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
        terminal = sys.stderr.isatty()
        progress = _ProgressBar() if terminal else None
        with IndexDraft(request.output_dir) as draft:
            try:
                summary = run_ingest(
                    request,
                    progress=progress,
                    on_discovered=progress.start if progress is not None else None,
                    index_draft=draft,
                )
            finally:
                if progress is not None:
                    progress.close()
            for warning in summary.warnings:
                print(f"kb: WARNING: {warning}", file=sys.stderr)
            from kbtools.review.run_report import cluster_settings, note_clusters_in_summary, review_run

            payload = summary.as_dict()
            review = None
            if write:
                review = review_run(request.output_dir, str(payload["run_id"]), draft)
                note_clusters_in_summary(request.output_dir, review)
                payload["clusters"] = review.cluster_summary()
            else:
                payload["clusters"] = cluster_settings()
        print(json.dumps(payload, ensure_ascii=False, separators=(",", ":")))
        if terminal:
            print(_text_summary(payload, review, layout.rel(request.output_dir)), file=sys.stderr, end="")


def _text_summary(payload: dict[str, Any], review: RunReview | None, where: str) -> str:
    """A few lines for a person: per agent what was read, new candidates, clusters, failures."""
    seconds = _seconds(str(payload.get("started_at", "")), str(payload.get("finished_at", "")))
    head = (
        f"kb ingest: {payload.get('discovered', 0)} source(s) in {seconds:.1f} s; "
        f"{payload.get('candidates', 0)} candidate(s)"
    )
    if review is None:
        return f"{head} (dry run: nothing written; add --write to write the ledgers in {where})\n"
    lines = [f"{head}; ledgers in {where}"]
    for agent in review.agents:
        lines.append(
            f"  {agent.tool:<15} {agent.read:>5} read  {agent.unchanged:>5} unchanged  "
            f"{agent.new_candidates:>5} new candidate(s)  {agent.clustered:>5} in clusters  {agent.failed:>3} failed"
        )
    update = review.update
    lines.append(
        f"  near-duplicate clusters: {update.clusters} ({update.clustered} candidates, threshold "
        f"{payload['clusters']['threshold']}); `kb candidates list --new` lists what this run added"
    )
    if review.failed_keys:
        keys = ", ".join(key[:12] for key in review.failed_keys[:3])
        more = f" (+{len(review.failed_keys) - 3} more)" if len(review.failed_keys) > 3 else ""
        lines.append(f"  failed: {keys}{more}; see `kb ingest --explain <key>`")
    return "\n".join(lines) + "\n"


def _seconds(started: str, finished: str) -> float:
    from datetime import datetime

    try:
        return (datetime.fromisoformat(finished) - datetime.fromisoformat(started)).total_seconds()
    except ValueError:
        return 0.0


def _explain(output_dir: Path, key: str, settings: Any, rel: Callable[[Path], str]) -> None:
    """Where a source came from, to the terminal only (a path is private: never to a file or pipe)."""
    from kbtools.errors import KbError
    from kbtools.ingest.sources import discover_all
    from kbtools.review.explain import explain

    if not sys.stdout.isatty():
        raise KbError("--explain prints private paths to a terminal only; stdout is not a terminal", "--explain")
    found = explain(output_dir, key, discover_all(settings))
    row = found.row
    lines = [f"source {row['source_key']}"]
    if found.via_candidate:
        lines.append(f"  (the source of candidate {found.via_candidate[:12]})")
    lines.append(f"  {row['tool']} {row['record_type']} ({row['format']}): {row['parse_status']}")
    lines.append(f"  from: {found.locator or 'not among the sources found now (moved, deleted or another --*-dir?)'}")
    if row.get("error"):
        lines.append(f"  error: {row['error']}")
    if row.get("skip_reason"):
        lines.append(f"  skip reason: {row['skip_reason']}")
    lines.append(f"  candidates: {row.get('candidate_count', 0)}; ledgers in {rel(output_dir)}")
    print("\n".join(lines))


class _ProgressBar:
    """A progress bar on a terminal's stderr (rich, imported only when one is drawn):
    sources done of the total discovered, rate and time left."""

    def __init__(self) -> None:
        self._bar: Any = None
        self._task: Any = None

    def start(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeRemainingColumn,
        )

        self._bar = Progress(
            TextColumn("kb ingest"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
            console=Console(file=sys.stderr),
            transient=True,
        )
        self._task = self._bar.add_task("sources", total=total, rate="")
        self._bar.start()

    def __call__(self, done: int) -> None:
        if self._bar is None:
            return
        task = self._bar.tasks[0]
        rate = f"{task.speed:,.0f} sources/s" if task.speed else ""
        self._bar.update(self._task, completed=done, rate=rate)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
