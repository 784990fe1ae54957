"""`kb retention check OLD NEW` · `kb retention check --staged` · `kb retention probe [REV_RANGE]`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from kbtools.cli.common import FormatOption, RootOption, check_format, open_kb
from kbtools.cli.retention_output import check_staged, render_pair, render_probe, warn_threshold
from kbtools.errors import ExitCode, KbError

ThresholdOption = Annotated[
    int | None,
    typer.Option(
        "--threshold",
        help="Refuse at this many lost identifiers; 0 warns only "
        "(default: KB_IDENTIFIER_LOSS_REFUSE, then .kb.yaml retention.refuse, then 3).",
    ),
]


def register(app: typer.Typer) -> None:
    retention = typer.Typer(
        short_help="Identifier-retention gate for rewritten notes.",
        help="Identifier-retention gate: a rewrite of a note may not silently drop the identifiers "
        "(paths, shas, dates, versions, URLs, ...) that anchor it.",
        no_args_is_help=True,
    )

    @retention.command("check", short_help="Warn or refuse when a rewrite drops identifiers.")
    def check(
        old: Annotated[
            str | None,
            typer.Argument(
                help="The previous version (a file; '-' for a new page, never refused).", show_default=False
            ),
        ] = None,
        new: Annotated[
            str | None,
            typer.Argument(help="The rewritten version (a file; '-' reads standard input).", show_default=False),
        ] = None,
        staged: Annotated[
            bool, typer.Option("--staged", help="Check every staged modified or renamed note against HEAD (the hook).")
        ] = False,
        threshold: ThresholdOption = None,
        fmt: FormatOption = "text",
        root: RootOption = None,
    ) -> int:
        """Warn when a rewrite drops identifiers; refuse (exit 1) at the threshold."""
        check_format(fmt, ("text", "json"))
        if staged and (old is not None or new is not None):
            raise typer.BadParameter("give either OLD NEW or --staged, not both", param_hint="--staged")
        if not staged and (old is None or new is None):
            raise typer.BadParameter("give OLD and NEW, or --staged", param_hint="OLD NEW")
        if staged:
            return check_staged(threshold, fmt, root)
        from kbtools.retention.gate import extractor_for, grade, resolve_threshold

        config, layout = open_kb(root)
        limit = resolve_threshold(threshold, config)
        warn_threshold(limit)

        assert old is not None and new is not None
        old_text = _read_old(old)
        new_text = _read_new(new)
        verdict = grade(old_text, new_text, threshold=limit.value, extractor=extractor_for(config))
        render_pair(verdict, limit, old, new, fmt)
        return int(ExitCode.FINDINGS if verdict.refused else ExitCode.OK)

    @retention.command("probe", short_help="Replay the gate over the history of the notes.")
    def probe(
        rev_range: Annotated[
            str, typer.Argument(help="Commits to replay, as git log takes them (default: all of HEAD).")
        ] = "HEAD",
        threshold: ThresholdOption = None,
        fmt: FormatOption = "text",
        root: RootOption = None,
    ) -> int:
        """Replay the gate over the history of the notes: |lost| per rewrite, refusal rate at 1-5."""
        check_format(fmt, ("text", "json"))
        from kbtools.retention.gate import extractor_for, resolve_threshold
        from kbtools.retention.history import probe as run_probe

        config, layout = open_kb(root)
        limit = resolve_threshold(threshold, config)
        warn_threshold(limit)
        report = run_probe(layout, rev_range, extractor=extractor_for(config))
        render_probe(report, limit.value, fmt)
        return int(ExitCode.OK)

    app.add_typer(retention, name="retention")


# ---------------------------------------------------------------------------
# Input


def _read_old(name: str) -> str | None:
    if name == "-":
        return None
    path = Path(name)
    if not path.exists():
        # A typo in OLD must not pass the gate as a "new page": say '-' for that.
        raise KbError("previous version not found (use '-' for a new page)", name)
    return _read(path)


def _read_new(name: str) -> str:
    if name == "-":
        return sys.stdin.read()
    return _read(Path(name))


def _read(path: Path) -> str:
    """A page's text; only a regular file is read (a FIFO or a device would hang or feed it forever)."""
    from kbtools.kb.tree import read_regular

    if path.is_dir():
        raise KbError("is a folder, not a page", str(path))
    try:
        return read_regular(path).decode("utf-8", "replace")
    except IsADirectoryError:
        raise KbError("is a folder, not a page", str(path)) from None
    except OSError as exc:
        raise KbError(f"cannot read page: {exc.strerror or exc}", str(path)) from None
