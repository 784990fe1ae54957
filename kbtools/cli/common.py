"""Options and helpers shared by every command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kbtools.cli.base import ledger_dir, open_kb, resolve_root

__all__ = ["FormatOption", "LedgerDirOption", "RootOption", "check_format", "ledger_dir", "open_kb", "resolve_root"]

RootOption = Annotated[
    Path | None,
    typer.Option(
        "--root",
        help="Knowledge-base root (default: the git top level of the current folder, else the folder).",
        file_okay=False,
    ),
]

LedgerDirOption = Annotated[
    Path | None,
    typer.Option("--output-dir", help="Ledger folder (default: .agent/kb-ingest)."),
]

FormatOption = Annotated[
    str,
    typer.Option("--format", help="Output format: text or json."),
]


def check_format(value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise typer.BadParameter(f"'{value}' is not one of {', '.join(allowed)}", param_hint="--format")
    return value
