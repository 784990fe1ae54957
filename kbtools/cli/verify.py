"""`kb verify --derived-filter [--output-dir DIR]`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from kbtools.cli.common import FormatOption, RootOption, check_format, open_kb


def register(app: typer.Typer) -> None:
    @app.command("verify", short_help="Fail if an evidence candidate quotes an emitted artifact.")
    def verify(
        derived_filter: Annotated[
            bool,
            typer.Option(
                "--derived-filter", help="No ledger candidate matches an emitted artifact (the default check)."
            ),
        ] = False,
        output_dir: Annotated[
            Path | None,
            typer.Option(
                "--output-dir", help="Ingest output folder holding candidates.jsonl (default: paths.ingest_output)."
            ),
        ] = None,
        threshold: Annotated[
            float | None,
            typer.Option("--threshold", help="Overlap threshold (default: derived.threshold, 0.8)."),
        ] = None,
        root: RootOption = None,
        fmt: FormatOption = "text",
    ) -> int:
        """Exit 1 naming every candidate that matches an artifact above the threshold; 0 if none.

        Without a check flag every check runs (today: --derived-filter).
        """
        from kbtools.config import bound_problem
        from kbtools.derived.filter import DerivedFilter
        from kbtools.derived.verify import verify_candidates
        from kbtools.ingest.ledger import ledger_path

        check_format(fmt, ("text", "json"))
        config, layout = open_kb(root)
        problem = None if threshold is None else bound_problem("derived.threshold", threshold)
        if problem is not None:
            raise typer.BadParameter(problem, param_hint="--threshold")
        limit = threshold if threshold is not None else config.derived.threshold
        derived = DerivedFilter.load(layout, threshold=limit)
        for warning in derived.warnings:
            print(f"kb: warning: {warning}", file=sys.stderr)
        report = verify_candidates(derived, ledger_path((output_dir or layout.ingest_output).resolve(), "candidates"))
        if fmt == "json":
            print(
                json.dumps(
                    {
                        "check": "derived-filter",
                        "ledger": layout.rel(report.ledger),
                        "candidates": report.candidates,
                        "artifacts": derived.artifact_count,
                        "threshold": limit,
                        "derived": [
                            {
                                "candidate_id": d.candidate_id,
                                "artifact": d.match.name,
                                "path": d.match.path,
                                "sha256": d.match.sha256,
                                "overlap": d.match.overlap,
                            }
                            for d in report.derived
                        ],
                    }
                )
            )
        elif report.derived:
            print(
                f"derived filter failed: {len(report.derived)} of {report.candidates} candidate(s) match an artifact "
                f"(threshold {limit})",
                file=sys.stderr,
            )
            for d in report.derived:
                print(
                    f"- {d.candidate_id} matches {d.match.name} ({d.match.path}, overlap {d.match.overlap:.2f})",
                    file=sys.stderr,
                )
        else:
            print(
                f"derived filter passed: {report.candidates} candidate(s), {derived.artifact_count} artifact(s), "
                f"threshold {limit}"
            )
        return 1 if report.derived else 0
