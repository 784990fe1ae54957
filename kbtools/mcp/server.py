"""An MCP server (the official `mcp` SDK, stdio transport) over one knowledge base.

An agent that writes the wiki calls these tools instead of reading JSONL:
search (candidates, notes, raw evidence), list and read candidates, read a
note or raw source, lint the KB, check a rewrite of a note with the
identifier-retention gate, promote a candidate. Each tool calls the same
function the CLI does and returns JSON-shaped data; an expected failure
(:class:`KbError`) comes back as a tool error with its one-line message.

The SDK is imported only here, and only by `kb mcp` (an optional extra:
``pip install 'kbtools[mcp]'``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from kbtools import __version__
from kbtools.config import Config
from kbtools.errors import KbError
from kbtools.review.service import Review, detail_dict

INSTRUCTIONS = (
    "Tools over a git-native knowledge base and the candidate ledgers `kb ingest` wrote from past agent "
    "sessions. Search first (search, search_candidates), read what matters (read_candidate, read_note, "
    "read_raw), promote a candidate into the raw layer as evidence (promote), then write or rewrite notes; "
    "check a rewrite with check_retention before saving it, and lint the KB when done."
)

_F = TypeVar("_F", bound=Callable[..., Any])


def _expected(fn: _F) -> _F:
    """A KbError becomes a tool error carrying its one line, never a traceback."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except KbError as exc:
            raise ToolError(str(exc)) from None

    return call  # type: ignore[return-value]


def build_server(config: Config, review: Review) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("kbtools", instructions=INSTRUCTIONS, version=__version__)

    @server.tool()
    @_expected
    def search(query: str, limit: int = 20) -> dict[str, Any]:
        """Full-text search (ranked) over wiki notes, raw evidence and ingest candidates.
        All words must occur; "a phrase" in quotes; word* for a prefix."""
        hits = review.search(query, limit=limit)
        return {"results": [h.__dict__ for h in hits]}

    @server.tool()
    @_expected
    def search_candidates(
        query: str, tool: str | None = None, decision: str | None = None, limit: int = 20
    ) -> dict[str, Any]:
        """Full-text search (ranked) over the candidates of the ingest ledger."""
        hits = review.search_candidates(query, tool=tool, decision=decision, limit=limit)
        return {"results": [h.__dict__ for h in hits]}

    @server.tool()
    @_expected
    def list_candidates(
        decision: str | None = None,
        tool: str | None = None,
        project: str | None = None,
        since: str | None = None,
        until: str | None = None,
        new: bool = False,
        cluster: str | None = None,
        promoted: bool | None = None,
        one_per_cluster: bool = False,
        limit: int = 50,
    ) -> dict[str, Any]:
        """Candidates in ledger order, filtered (dates are YYYY-MM-DD; new = added by the last ingest run;
        one_per_cluster = the first of each near-duplicate cluster only)."""
        from kbtools.review.listing import CandidateFilter

        wanted = CandidateFilter(decision, tool, project, since, until, new, cluster, promoted, one_per_cluster, limit)
        listed = review.list_candidates(wanted)
        return {"count": len(listed), "candidates": [c.as_dict() for c in listed]}

    @server.tool()
    @_expected
    def read_candidate(candidate_id: str) -> dict[str, Any]:
        """One candidate: its messages, knowledge fields, redactions, matching notes and cluster."""
        return detail_dict(review.show_candidate(candidate_id))

    @server.tool()
    @_expected
    def read_note(path: str) -> str:
        """A wiki note's text, by its path under the note root (locale/slug.md) or its slug."""
        return review.read_document("note", path)

    @server.tool()
    @_expected
    def read_raw(path: str) -> str:
        """A raw source's text, by its path under the raw root (locale/slug.md) or its slug."""
        return review.read_document("raw", path)

    @server.tool()
    @_expected
    def lint() -> dict[str, Any]:
        """Every check of `kb lint` over the working tree: ok, and each problem's message and path."""
        from kbtools.lint.engine import run_lint

        report = run_lint(review.layout)
        return {
            "ok": report.ok,
            "problems": [
                {"check": p.check, "message": p.message, "path": p.path, "line": p.line} for p in report.problems
            ],
            "notices": list(report.notices),
        }

    @server.tool()
    @_expected
    def check_retention(note: str, new_text: str) -> dict[str, Any]:
        """Would rewriting the note (path under the note root, or slug) as new_text drop the identifiers
        that anchor it? refused = the retention gate would refuse the rewrite; lost lists them."""
        from kbtools.retention.gate import extractor_for, grade, resolve_threshold

        try:
            old: str | None = review.read_document("note", note)
        except KbError:
            old = None  # a new page: nothing to lose
        limit = resolve_threshold(None, config)
        verdict = grade(old, new_text, threshold=limit.value, extractor=extractor_for(config))
        return {
            "refused": verdict.refused,
            "new_page": verdict.new_page,
            "threshold": verdict.threshold,
            "lost": [i.text for i in verdict.lost],
            "kept": verdict.kept,
            "message": verdict.message(note) or "",
        }

    @server.tool()
    @_expected
    def promote(
        candidate_id: str, slug: str | None = None, locale: str | None = None, index: bool = False
    ) -> dict[str, Any]:
        """Write a candidate into the raw layer as new evidence (frontmatter naming it, manifest line);
        index = also list it in the index and log the ingest. A candidate is promoted once."""
        from kbtools.redact import Redactor

        redactor = Redactor(config.redaction)
        done = review.promote(
            candidate_id, redact=lambda text: redactor.redact(text).text, slug=slug, locale=locale, index=index
        )
        return {
            "candidate_id": done.candidate_id,
            "slug": done.slug,
            "path": review.layout.rel(done.path),
            "sha256": done.sha256,
            "indexed": done.indexed,
        }

    return server


def serve(config: Config, review: Review) -> None:
    """Serve on stdin/stdout until the client closes the connection."""
    import anyio

    anyio.run(build_server(config, review).run_stdio_async)
