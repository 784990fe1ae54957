"""What every command starts from, without typer: the KB root, its Config and Layout, and
plain output. The commands a commit hook runs (:mod:`kbtools.cli.plain`) import only this,
so the hook does not pay typer's import (about a tenth of its 300 ms budget)."""

from __future__ import annotations

import sys
from pathlib import Path

from kbtools.config import CONFIG_FILE, Config, PathsConfig, load_config
from kbtools.errors import KbError
from kbtools.kb.layout import Layout


def resolve_root(root: Path | None) -> Path:
    """``--root``, else the nearest folder from here up to the top of the git repository that is
    a knowledge base (:func:`is_kb_root`), else that top, else the current folder."""
    if root is not None:
        if not root.is_dir():
            raise KbError("root is not a folder", str(root))
        return root.resolve()
    from kbtools.gitio import repo_root

    cwd = Path.cwd()
    top = repo_root(cwd)
    for folder in (cwd, *cwd.parents):
        if is_kb_root(folder):
            return folder
        if top is not None and folder == top:
            break
    return top or cwd


def is_kb_root(folder: Path) -> bool:
    """A folder holding `.kb.yaml`, or `KB.md` beside the default raw manifest (what `kb init` makes)."""
    return (folder / CONFIG_FILE).is_file() or (
        (folder / "KB.md").is_file() and (folder / PathsConfig().raw_manifest).is_file()
    )


def open_kb(root: Path | None) -> tuple[Config, Layout]:
    """Root → Config (`.kb.yaml`) → Layout; every command starts here."""
    config = load_config(resolve_root(root))
    return config, Layout(config)


def ledger_dir(layout: Layout, output_dir: Path | None) -> Path:
    """The ``--output-dir`` given (resolved), else the configured ingest output folder."""
    return output_dir.resolve() if output_dir is not None else layout.ingest_output


def echo(text: str, *, err: bool = False, nl: bool = True) -> None:
    """``text`` on stdout (``err``: stderr), flushed, like ``typer.echo``."""
    stream = sys.stderr if err else sys.stdout
    stream.write(text + "\n" if nl else text)
    stream.flush()
