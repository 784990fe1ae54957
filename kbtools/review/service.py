"""The review functions over one KB and its ledgers, as the CLI and the MCP server call them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbtools.errors import KbError
from kbtools.kb.layout import Layout
from kbtools.review.index import Hit, candidate_state, search_candidates, search_everything
from kbtools.review.listing import (
    CandidateDetail,
    CandidateFilter,
    Listed,
    candidate_detail,
    note_paths,
    select_candidates,
)
from kbtools.review.promote import Promotion, promote, promoted_candidates
from kbtools.review.rows import find_candidate, iter_candidates


@dataclass(frozen=True)
class Review:
    layout: Layout
    output_dir: Path

    def doc_roots(self) -> tuple[tuple[str, Path], ...]:
        return (("note", self.layout.note_root), ("raw", self.layout.raw_root))

    def list_candidates(self, wanted: CandidateFilter) -> list[Listed]:
        state = candidate_state(self.output_dir)
        rows = (state.annotated(row) for row in iter_candidates(self.output_dir))
        return select_candidates(rows, wanted, new_ids=state.new_ids, promoted=promoted_candidates(self.layout))

    def show_candidate(self, candidate_id: str) -> CandidateDetail:
        state = candidate_state(self.output_dir)
        row = state.annotated(find_candidate(self.output_dir, candidate_id))
        rows = [state.annotated(r) for r in iter_candidates(self.output_dir)] if row["cluster_id"] else [row]
        return candidate_detail(
            row,
            rows,
            note_paths=note_paths(self.layout.note_root, self.layout.root),
            promoted=promoted_candidates(self.layout),
        )

    def search_candidates(
        self, query: str, *, tool: str | None = None, decision: str | None = None, limit: int = 20
    ) -> list[Hit]:
        from kbtools.review.rows import candidates_path

        candidates_path(self.output_dir)  # a clear error when there is no ledger yet
        return search_candidates(self.output_dir, query, tool=tool, decision=decision, limit=limit)

    def search(self, query: str, *, limit: int = 20) -> list[Hit]:
        return search_everything(self.output_dir, query, doc_roots=self.doc_roots(), limit=limit)

    def read_document(self, layer: str, rel: str) -> str:
        """A note's or raw source's text, by its path under the layer root (never outside it)."""
        base = {"note": self.layout.note_root, "raw": self.layout.raw_root}.get(layer)
        if base is None:
            raise KbError(f"unknown layer '{layer}' (note or raw)", rel)
        from kbtools.kb.tree import scan_layer

        files = {f.rel: f for f in scan_layer(base).files} if base.is_dir() else {}
        found = files.get(rel) or next((f for f in files.values() if f.slug == rel.removesuffix(".md")), None)
        if found is None:
            raise KbError(f"no {layer} file {rel}", self.layout.rel(base))
        from kbtools.kb.tree import read_regular

        try:
            return read_regular(found.abspath).decode("utf-8", "replace")
        except OSError as exc:
            raise KbError(f"cannot read: {exc.strerror}", self.layout.rel(found.path)) from None

    def promote(
        self,
        candidate_id: str,
        *,
        redact: Callable[[str], str],
        slug: str | None = None,
        locale: str | None = None,
        index: bool = False,
    ) -> Promotion:
        return promote(self.layout, self.output_dir, candidate_id, redact=redact, slug=slug, locale=locale, index=index)


def detail_dict(detail: CandidateDetail) -> dict[str, Any]:
    return {
        "candidate": detail.row,
        "messages": [{"role": m.role, "text": m.text} for m in detail.messages],
        "redactions": list(detail.redactions),
        "note_matches": [{"slug": slug, "path": path} for slug, path in detail.note_matches],
        "cluster_members": list(detail.cluster_members),
        "promoted_as": detail.promoted_as,
        "duplicate_of": detail.duplicate_of,
    }
