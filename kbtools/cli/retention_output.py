"""`kb retention`'s output, and `kb retention check --staged` (the commit hook's step), without
typer (see :mod:`kbtools.cli.base`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbtools.cli.base import open_kb
from kbtools.errors import ExitCode

if TYPE_CHECKING:
    from kbtools.retention.gate import Threshold, Verdict
    from kbtools.retention.history import ProbeReport, Rewrite, StagedReport
    from kbtools.retention.taxonomy import Identifier

REFUSAL_HINT = (
    "identifier-retention: put the identifiers back (moving them is fine), or commit with a higher "
    "--threshold / KB_IDENTIFIER_LOSS_REFUSE if dropping them is intended"
)


def check_staged(threshold: int | None, fmt: str, root: Path | None) -> int:
    """`kb retention check --staged`: every staged modified or renamed note against HEAD."""
    from kbtools.retention.gate import extractor_for, resolve_threshold
    from kbtools.retention.history import check_staged as staged_report

    config, layout = open_kb(root)
    limit = resolve_threshold(threshold, config)
    warn_threshold(limit)
    report = staged_report(layout, threshold=limit.value, extractor=extractor_for(config))
    render_staged(report, limit, fmt)
    return int(ExitCode.FINDINGS if report.refused else ExitCode.OK)


def warn_threshold(limit: Threshold) -> None:
    if limit.warning:
        print(f"kb: warning: {limit.warning}", file=sys.stderr)


def _detail(lost: tuple[Identifier, ...]) -> list[dict[str, str]]:
    return [{"text": i.text, "kind": i.kind, "key": i.key} for i in lost]


def _verdict_json(verdict: Verdict) -> dict[str, Any]:
    return {
        "lost": [i.text for i in verdict.lost],
        "lost_detail": _detail(verdict.lost),
        "kept": verdict.kept,
        "moved": verdict.moved,
        "moved_to": list(verdict.moved_to),
        "new_page": verdict.new_page,
        "refused": verdict.refused,
    }


def render_pair(verdict: Verdict, limit: Threshold, old: str, new: str, fmt: str) -> None:
    if fmt == "json":
        doc = {
            "old": old,
            "new": new,
            **_verdict_json(verdict),
            "threshold": limit.value,
            "threshold_source": limit.source,
        }
        print(json.dumps(doc, ensure_ascii=False))
        return
    message = verdict.message(new)
    if message:
        print(message, file=sys.stderr)
    if verdict.refused:
        print(REFUSAL_HINT, file=sys.stderr)


def render_staged(report: StagedReport, limit: Threshold, fmt: str) -> None:
    if fmt == "json":
        doc = {
            "lost": sorted({i.text for p in report.pages for i in p.verdict.lost}),
            "refused": report.refused,
            "threshold": limit.value,
            "threshold_source": limit.source,
            "pages": [
                {"path": p.change.path, "old_path": p.change.old_path, **_verdict_json(p.verdict)} for p in report.pages
            ],
            "deleted": [
                {"path": d.path, "identifiers": d.identifiers, "moved_to": list(d.moved_to)} for d in report.deleted
            ],
            "new_pages": list(report.new_pages),
        }
        print(json.dumps(doc, ensure_ascii=False))
        return
    for page in report.pages:
        message = page.verdict.message(page.change.label)
        if message:
            print(message, file=sys.stderr)
    for gone in report.deleted:
        if gone.identifiers:
            moved = f"; others moved to {', '.join(gone.moved_to)}" if gone.moved_to else ""
            print(
                f"identifier-retention: {gone.path} is deleted with {gone.identifiers} identifier(s) "
                f"(warning: a deletion is not graded{moved})",
                file=sys.stderr,
            )
    if report.refused:
        print(REFUSAL_HINT, file=sys.stderr)


def _rewrite_json(rewrite: Rewrite) -> dict[str, Any]:
    return {
        "commit": rewrite.commit,
        "path": rewrite.path,
        "old_path": rewrite.old_path,
        "lost": [i.text for i in rewrite.lost],
        "moved": rewrite.moved,
        "moved_to": list(rewrite.moved_to),
    }


def render_probe(report: ProbeReport, current: int, fmt: str) -> None:
    from kbtools.retention.history import PROBE_THRESHOLDS

    if fmt == "json":
        doc = {
            "rev_range": report.rev_range,
            "rewrites": report.rewrites,
            "histogram": {str(k): v for k, v in report.histogram.items()},
            "refusals": {str(t): report.refusals(t) for t in PROBE_THRESHOLDS},
            "refusal_rate": {str(t): round(report.refusal_rate(t), 4) for t in PROBE_THRESHOLDS},
            "threshold": current,
            "lossy": [_rewrite_json(r) for r in report.lossy],
            "histogram_ignoring_moves": {str(k): v for k, v in report.histogram_ignoring_moves.items()},
            "restructured": [_rewrite_json(r) for r in report.restructured],
        }
        print(json.dumps(doc, ensure_ascii=False))
        return
    total = report.rewrites
    print(f"identifier-retention probe over {report.rev_range}: {total} note rewrite(s)")
    if not total:
        return
    print("|lost|  rewrites   share")
    for lost, n in report.histogram.items():
        print(f"{lost:>6}  {n:>8}  {n / total:>6.1%}")
    print("threshold  refuses    rate")
    for t in PROBE_THRESHOLDS:
        mark = "  (current)" if t == current else ""
        print(f"{t:>9}  {report.refusals(t):>7}  {report.refusal_rate(t):>6.1%}{mark}")
    if report.restructured:
        before = sum(n for lost, n in report.histogram_ignoring_moves.items() if lost >= current) if current else 0
        print(
            f"restructurings: {len(report.restructured)} rewrite(s) moved identifiers to another note of the same "
            f"commit (kept; had they counted as lost, {before} rewrite(s) would be refused at {current})"
        )
        for rewrite in report.restructured[:10]:
            print(f"  {rewrite.moved:>3}  {rewrite.commit[:10]}  {rewrite.path} -> {', '.join(rewrite.moved_to)}")
    if report.lossy:
        print("largest losses:")
        for rewrite in report.lossy[:10]:
            names = ", ".join(i.text for i in rewrite.lost[:5])
            more = f", +{len(rewrite.lost) - 5} more" if len(rewrite.lost) > 5 else ""
            print(f"  {len(rewrite.lost):>3}  {rewrite.commit[:10]}  {rewrite.path}: {names}{more}")
