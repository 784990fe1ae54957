"""Options and helpers shared by every command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kbtools.config import Config, load_config
from kbtools.errors import KbError
from kbtools.kb.layout import Layout

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


def resolve_root(root: Path | None) -> Path:
    if root is not None:
        if not root.is_dir():
            raise KbError("root is not a folder", str(root))
        return root.resolve()
    from kbtools.gitio import repo_root

    cwd = Path.cwd()
    return repo_root(cwd) or cwd


def open_kb(root: Path | None) -> tuple[Config, Layout]:
    """Root → Config (`.kb.yaml`) → Layout; every command starts here."""
    config = load_config(resolve_root(root))
    return config, Layout(config)


def ledger_dir(layout: Layout, output_dir: Path | None) -> Path:
    """The ``--output-dir`` given (resolved), else the configured ingest output folder."""
    return output_dir.resolve() if output_dir is not None else layout.ingest_output


def check_format(value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise typer.BadParameter(f"'{value}' is not one of {', '.join(allowed)}", param_hint="--format")
    return value
