"""`kb candidates list|show|search`: review the candidate ledger."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kbtools.cli.common import FormatOption, LedgerDirOption, RootOption, check_format

if TYPE_CHECKING:
    from kbtools.review.index import Hit
    from kbtools.review.listing import CandidateDetail
    from kbtools.review.service import Review

ID_CHARS = 12
TITLE_CHARS = 72  # of a candidate's prompt, in a list line


def register(app: typer.Typer) -> None:
    group = typer.Typer(name="candidates", help="List, read and search ingest candidates.", no_args_is_help=True)
    app.add_typer(group)

    @group.command("list", short_help="List candidates, filtered.")
    def list_(
        decision: Annotated[
            str | None, typer.Option("--decision", help="Only this decision (jotting, duplicate).")
        ] = None,
        tool: Annotated[str | None, typer.Option("--tool", help="Only this agent (omp, codex, claude, ...).")] = None,
        project: Annotated[
            str | None,
            typer.Option("--project", help="Only this project: the folder the session ran in, or its key's prefix."),
        ] = None,
        since: Annotated[str | None, typer.Option("--since", help="Turns on or after this day (YYYY-MM-DD).")] = None,
        until: Annotated[str | None, typer.Option("--until", help="Turns on or before this day (YYYY-MM-DD).")] = None,
        new: Annotated[bool, typer.Option("--new", help="Only what the last ingest run added.")] = False,
        cluster: Annotated[
            str | None, typer.Option("--cluster", help="Only this near-duplicate cluster (id or 8+ char prefix).")
        ] = None,
        promoted: Annotated[
            bool | None,
            typer.Option("--promoted/--not-promoted", help="Only candidates already (or not yet) promoted."),
        ] = None,
        one_per_cluster: Annotated[
            bool, typer.Option("--one-per-cluster", help="Show the first candidate of each cluster only.")
        ] = False,
        limit: Annotated[int | None, typer.Option("--limit", min=1, help="At most this many.")] = None,
        output_format: FormatOption = "text",
        output_dir: LedgerDirOption = None,
        root: RootOption = None,
    ) -> None:
        """List the candidates of the ledger in ledger order, one line each."""
        from kbtools.review.listing import CandidateFilter

        check_format(output_format, ("text", "json"))
        wanted = CandidateFilter(decision, tool, project, since, until, new, cluster, promoted, one_per_cluster, limit)
        listed = review_of(root, output_dir).list_candidates(wanted)
        if output_format == "json":
            print(json.dumps({"count": len(listed), "candidates": [c.as_dict() for c in listed]}, ensure_ascii=False))
            return
        for c in listed:
            marks = [c.decision, *(["new"] if c.new else [])]
            if c.cluster_size > 1:
                marks.append(f"cluster {c.cluster_id[:8]}×{c.cluster_size}")
            if c.promoted_as:
                marks.append(f"promoted {c.promoted_as}")
            title = c.title if len(c.title) <= TITLE_CHARS else c.title[: TITLE_CHARS - 1] + "…"
            print(f"{c.candidate_id[:ID_CHARS]}  {c.created_at[:10] or '----------'}  {c.tool:<8} {title}")
            print(f"{'':{ID_CHARS}}  {', '.join(marks)}")
        print(f"{len(listed)} candidate(s)", file=sys.stderr)

    @group.command("show", short_help="Read one candidate.")
    def show(
        candidate_id: Annotated[str, typer.Argument(help="Candidate id (a unique prefix of 8+ characters).")],
        output_format: FormatOption = "text",
        output_dir: LedgerDirOption = None,
        root: RootOption = None,
    ) -> None:
        """The turn as a person reads it, its knowledge fields, redactions, matching notes and cluster."""
        from kbtools.review.service import detail_dict

        check_format(output_format, ("text", "json"))
        detail = review_of(root, output_dir).show_candidate(candidate_id)
        if output_format == "json":
            print(json.dumps(detail_dict(detail), ensure_ascii=False))
            return
        print(render_detail(detail), end="")

    @group.command("search", short_help="Full-text search over candidates.")
    def search(
        query: Annotated[str, typer.Argument(help='Words (all must occur); "a phrase"; word* for a prefix.')],
        tool: Annotated[str | None, typer.Option("--tool", help="Only this agent.")] = None,
        decision: Annotated[str | None, typer.Option("--decision", help="Only this decision.")] = None,
        limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many results.")] = 20,
        output_format: FormatOption = "text",
        output_dir: LedgerDirOption = None,
        root: RootOption = None,
    ) -> None:
        """Candidates ranked by relevance (SQLite FTS5, bm25) for QUERY."""
        check_format(output_format, ("text", "json"))
        hits = review_of(root, output_dir).search_candidates(query, tool=tool, decision=decision, limit=limit)
        print_hits(hits, output_format)


def print_hits(found: list[Hit], output_format: str) -> None:
    if output_format == "json":
        print(json.dumps({"count": len(found), "results": [h.__dict__ for h in found]}, ensure_ascii=False))
        return
    for h in found:
        ref = h.ref[:ID_CHARS] if h.kind == "candidate" else h.ref
        extra = f"  {h.tool} {h.decision}" if h.kind == "candidate" else ""
        title = h.title if len(h.title) <= TITLE_CHARS else h.title[: TITLE_CHARS - 1] + "…"
        print(f"{h.kind:<9} {ref}{extra}  {title}")
        print(f"          {h.snippet}")
    print(f"{len(found)} result(s)", file=sys.stderr)


def render_detail(detail: CandidateDetail) -> str:
    row = detail.row
    lines = [
        f"candidate {row['candidate_id']}",
        f"  {row.get('tool', '')} {row.get('record_type', '')} · {row.get('created_at') or 'no time'} · "
        f"decision {row.get('decision', '')} · language {row.get('language', '')}",
        f"  project {str(row.get('project_key', ''))[:ID_CHARS]} · session {str(row.get('session_key', ''))[:ID_CHARS]}"
        f" · turn {row.get('turn_index', '?')}, part {row.get('chunk_index', '?')}",
    ]
    if detail.duplicate_of:
        lines.append(f"  exact duplicate of {detail.duplicate_of[:ID_CHARS]}")
    cluster = str(row.get("cluster_id") or "")
    if cluster:
        others = ", ".join(m[:ID_CHARS] for m in detail.cluster_members) or "no other"
        lines.append(f"  cluster {cluster[:ID_CHARS]} ({int(row.get('cluster_size') or 1)} candidates): {others}")
    if detail.promoted_as:
        lines.append(f"  promoted as raw evidence: {detail.promoted_as}")
    lines.append(f"  redactions: {', '.join(detail.redactions) or 'none'}")
    matches = [f"{slug} ({path})" if path else f"{slug} (no such note now)" for slug, path in detail.note_matches]
    lines.append(f"  notes it matches: {', '.join(matches) or 'none'}")
    lines.append("")
    for message in detail.messages:
        lines.append(f"── {message.role or 'text'} " + "─" * max(0, 60 - len(message.role or "text")))
        lines.append(message.text.rstrip())
        lines.append("")
    if detail.findings:
        lines.append("── knowledge fields " + "─" * 46)
        for name, value in detail.findings:
            if isinstance(value, list):
                lines.append(f"{name}:")
                lines.extend(f"  - {' '.join(str(v).split())}" for v in value)
            elif isinstance(value, dict):
                lines.append(f"{name}: " + ", ".join(f"{k} {v}" for k, v in value.items()))
            else:
                lines.append(f"{name}: {' '.join(str(value).split())}")
    return "\n".join(lines) + "\n"


def review_of(root: Path | None, output_dir: Path | None) -> Review:
    """The review functions over the KB at ``root`` and its ledgers."""
    from kbtools.cli.common import ledger_dir, open_kb
    from kbtools.review.service import Review

    _, layout = open_kb(root)
    return Review(layout, ledger_dir(layout, output_dir))
