"""What `kb ingest` tells a person after a run, and the review's part of it: the search
index brought up to date with the ledgers just written, and the near-duplicate clusters."""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from kbtools.fsio import atomic_write_text
from kbtools.ingest.ledger import SUMMARY_FILE, iter_ledger, ledger_path
from kbtools.review import clusters
from kbtools.review.index import IndexUpdate, index_path, update_index

if TYPE_CHECKING:
    from kbtools.review.index_builder import IndexDraft

MAX_FAILURES_NAMED = 3


@dataclass(frozen=True)
class AgentRun:
    """One agent's part of a run."""

    tool: str
    read: int  # sources read this run (processed or failed)
    unchanged: int
    skipped: int
    failed: int
    new_candidates: int
    clustered: int  # its candidates that are in a near-duplicate cluster


@dataclass(frozen=True)
class RunReview:
    """The index update after a run, and the run per agent (read only when asked for: the
    summary a person reads on a terminal; a script reads the JSON line)."""

    update: IndexUpdate
    output_dir: Path
    run_id: str

    def cluster_summary(self) -> dict[str, object]:
        """The clusters as the JSON summary line reports them (with their threshold)."""
        return {
            **clusters.PARAMS,
            "clusters": self.update.clusters,
            "clustered_candidates": self.update.clustered,
        }

    @cached_property
    def _per_agent(self) -> tuple[tuple[AgentRun, ...], tuple[str, ...]]:
        status: dict[str, Counter[str]] = {}
        failed: list[str] = []
        for row in iter_ledger(ledger_path(self.output_dir, "manifest"), "manifest"):
            if row is None:
                continue
            counts = status.setdefault(str(row["tool"]), Counter())
            counts[str(row["parse_status"])] += 1
            if row["parse_status"] == "failed":
                failed.append(str(row["source_key"]))
        new_by_tool: Counter[str] = Counter()
        clustered_by_tool: Counter[str] = Counter()
        with sqlite3.connect(f"file:{index_path(self.output_dir)}?mode=ro", uri=True) as con:
            for tool, new, clustered in con.execute(
                "SELECT tool, SUM(first_seen = ?), SUM(cluster_id != '') FROM candidate GROUP BY tool", (self.run_id,)
            ):
                new_by_tool[tool], clustered_by_tool[tool] = int(new or 0), int(clustered or 0)
        con.close()
        agents = tuple(
            AgentRun(
                tool,
                read=c["processed"] + c["failed"],
                unchanged=c["unchanged"],
                skipped=c["skipped"],
                failed=c["failed"],
                new_candidates=new_by_tool[tool],
                clustered=clustered_by_tool[tool],
            )
            for tool, c in sorted(status.items())
        )
        return agents, tuple(failed)

    @property
    def agents(self) -> tuple[AgentRun, ...]:
        return self._per_agent[0]

    @property
    def failed_keys(self) -> tuple[str, ...]:
        """Source keys of failed sources, for `kb ingest --explain`."""
        return self._per_agent[1]


def cluster_settings() -> dict[str, object]:
    """The clustering settings as a dry run reports them (nothing is clustered)."""
    return {**clusters.PARAMS, "clusters": None, "clustered_candidates": None}


def review_run(output_dir: Path, run_id: str, draft: IndexDraft | None = None) -> RunReview:
    """After ``--write``: the index in step with the ledgers (the run per agent read when asked
    for); made of ``draft`` if the run built one and it holds the ledger's candidates."""
    update = draft.adopt(run_id) if draft is not None else None
    return RunReview(update or update_index(output_dir, run_id=run_id), output_dir, run_id)


def note_clusters_in_summary(output_dir: Path, review: RunReview) -> None:
    """Add the clusters and their threshold to ``run-summary.md``, as the derived filter's are."""
    path = output_dir / SUMMARY_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return
    line = (
        f"- Near-duplicate clusters: {review.update.clusters} ({review.update.clustered} candidates; "
        f"threshold {clusters.THRESHOLD}, {clusters.PARAMS['measure']} of {clusters.PARAMS['shingles']} shingles)\n"
    )
    text = re.sub(r"^- Near-duplicate clusters: .*\n", "", text, flags=re.M)
    atomic_write_text(path, text + ("" if text.endswith("\n") else "\n") + line)
