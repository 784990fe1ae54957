"""`kb baseline create|update`: accept the findings a KB already has (`.kb-baseline.json`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kbtools.cli.common import RootOption

SinceOption = Annotated[
    str | None,
    typer.Option(
        "--since", metavar="REV", help="Accept what REV..HEAD shows (default: every file and the whole history)."
    ),
]


def register(app: typer.Typer) -> None:
    baseline = typer.Typer(
        name="baseline",
        short_help="Accept the findings a KB already has (.kb-baseline.json).",
        help="The baseline of accepted findings (by fingerprint, never the secret) that every lint mode and hook "
        "leaves out.",
        no_args_is_help=True,
    )
    app.add_typer(baseline)

    @baseline.command("create", short_help="Write the baseline from the findings the KB has now.")
    def create(since: SinceOption = None, root: RootOption = None) -> int:
        """Lint every file and the whole history (or REV..HEAD) and accept every finding."""
        return _write(since, root, replace=False)

    @baseline.command("update", short_help="Rewrite the baseline: add new findings, drop fixed ones.")
    def update(since: SinceOption = None, root: RootOption = None) -> int:
        """Lint again without the baseline and accept exactly what is found now."""
        return _write(since, root, replace=True)


def _write(since: str | None, root: Path | None, *, replace: bool) -> int:
    from kbtools.cli.common import open_kb
    from kbtools.errors import KbError
    from kbtools.fsio import atomic_write_bytes
    from kbtools.lint.baseline import BASELINE_FILE, baseline_path, fingerprint, read_baseline, render_baseline
    from kbtools.lint.engine import LintMode, run_lint

    _, layout = open_kb(root)
    path = baseline_path(layout.root)
    old = read_baseline(path)
    if old is not None and not replace:
        raise KbError(f"{BASELINE_FILE} exists (`kb baseline update` rewrites it)", str(path))
    mode = LintMode(since=since) if since is not None else LintMode(whole=True)
    report = run_lint(layout, mode, baseline=False)
    atomic_write_bytes(path, [render_baseline(report.problems).encode("utf-8")], mode=0o644)
    found = {fingerprint(p) for p in report.problems}
    before = old.fingerprints if old is not None else frozenset()
    print(
        f"wrote {BASELINE_FILE}: {len(found)} finding(s) accepted "
        f"({len(found - before)} new, {len(before - found)} no longer found)"
    )
    return 0
