"""`kb candidates list` and `show`: select candidates and gather what a reviewer reads."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kbtools.errors import KbError
from kbtools.ingest.candidates import split_messages
from kbtools.ingest.rows import KNOWLEDGE_FIELDS
from kbtools.review.rows import MIN_PREFIX, Row, project_matches

DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# Knowledge fields that describe the candidate's source, not what it found.
_NOT_FINDINGS = frozenset({"topic", "user_goal", "confidence", "source_refs", "existing_kb_status"})
FINDING_FIELDS = tuple(name for name in KNOWLEDGE_FIELDS if name not in _NOT_FINDINGS)


@dataclass(frozen=True)
class CandidateFilter:
    """What `kb candidates list` (and the MCP tool ``list_candidates``) keeps, in ledger
    order; None or empty = no condition."""

    decision: str | None = None
    tool: str | None = None
    project: str | None = None
    since: str | None = None  # YYYY-MM-DD (inclusive), on the turn's created_at
    until: str | None = None  # YYYY-MM-DD (inclusive)
    new: bool = False  # only candidates the last ingest run added
    cluster: str | None = None  # a cluster id or a prefix of one (8+ characters)
    promoted: bool | None = None  # True: only promoted; False: only not yet promoted
    one_per_cluster: bool = False  # only the first candidate of each cluster (before the other conditions)
    limit: int | None = None  # at most this many

    def __post_init__(self) -> None:
        for name in ("since", "until"):
            value = getattr(self, name)
            if value is not None and not DATE.fullmatch(value):
                raise KbError(f"{value!r} is not a date (YYYY-MM-DD)", f"--{name}")
        if self.cluster is not None and len(self.cluster) < MIN_PREFIX:
            raise KbError(f"a cluster id needs at least {MIN_PREFIX} characters", "--cluster")
        if self.limit is not None and self.limit < 1:
            raise KbError(f"a limit must be at least 1, not {self.limit}", "--limit")


@dataclass(frozen=True)
class Listed:
    """One line of `kb candidates list`."""

    candidate_id: str
    created_at: str
    tool: str
    decision: str
    project_key: str
    topic: str
    title: str
    cluster_id: str
    cluster_size: int
    duplicate_of: str
    new: bool
    promoted_as: str  # the raw file (path under the raw root) it was promoted to, "" if none

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def select_candidates(
    rows: Iterable[Row],
    wanted: CandidateFilter,
    *,
    new_ids: frozenset[str] = frozenset(),
    promoted: dict[str, str] | None = None,
) -> list[Listed]:
    """The rows ``wanted`` keeps, in ledger order. ``new_ids``: what the last run added;
    ``promoted``: candidate id → raw file."""
    from kbtools.review.index import candidate_title

    done = promoted or {}
    out: list[Listed] = []
    shown: set[str] = set()
    for row in rows:
        if wanted.one_per_cluster:
            cluster_id = str(row.get("cluster_id") or "") or str(row["candidate_id"])
            if cluster_id in shown:
                continue
            shown.add(cluster_id)
        cid = str(row["candidate_id"])
        day = str(row.get("created_at") or "")[:10]
        if (
            (wanted.decision and row.get("decision") != wanted.decision)
            or (wanted.tool and row.get("tool") != wanted.tool)
            or (wanted.project and not project_matches(row, wanted.project))
            or (wanted.since and day < wanted.since)
            or (wanted.until and day > wanted.until)
            or (wanted.new and cid not in new_ids)
            or (wanted.cluster and not str(row.get("cluster_id") or "").startswith(wanted.cluster.lower()))
            or (wanted.promoted is not None and (cid in done) != wanted.promoted)
        ):
            continue
        out.append(
            Listed(
                candidate_id=cid,
                created_at=str(row.get("created_at") or ""),
                tool=str(row.get("tool") or ""),
                decision=str(row.get("decision") or ""),
                project_key=str(row.get("project_key") or ""),
                topic=str(row.get("topic") or ""),
                title=candidate_title(row),
                cluster_id=str(row.get("cluster_id") or ""),
                cluster_size=int(row.get("cluster_size") or 1),
                duplicate_of=str(row.get("duplicate_of") or ""),
                new=cid in new_ids,
                promoted_as=done.get(cid, ""),
            )
        )
        if wanted.limit is not None and len(out) >= wanted.limit:
            break
    return out


@dataclass(frozen=True)
class Message:
    role: str  # user | assistant ("" for text without a role tag)
    text: str


@dataclass(frozen=True)
class CandidateDetail:
    """Everything `kb candidates show` prints about one candidate."""

    row: Row
    messages: tuple[Message, ...]
    findings: tuple[tuple[str, object], ...]  # the knowledge fields that hold something, in ledger order
    redactions: tuple[str, ...]
    note_matches: tuple[tuple[str, str], ...]  # (slug, the note's path in the KB or "" if none is there now)
    cluster_members: tuple[str, ...]  # the other candidates of its cluster, in ledger order
    promoted_as: str
    duplicate_of: str
    extra: dict[str, object] = field(default_factory=dict)


def candidate_detail(
    row: Row,
    all_rows: Sequence[Row],
    *,
    note_paths: dict[str, str],
    promoted: dict[str, str],
) -> CandidateDetail:
    """``note_paths``: note slug → its path in the KB; ``promoted``: candidate id → raw file."""
    cid = str(row["candidate_id"])
    cluster = str(row.get("cluster_id") or "")
    members = tuple(
        str(r["candidate_id"])
        for r in all_rows
        if cluster and r.get("cluster_id") == cluster and r["candidate_id"] != cid
    )
    findings = tuple(
        (name, row[name]) for name in FINDING_FIELDS if name in row and row[name] not in ("", [], None, {})
    )
    matches = tuple((str(slug), note_paths.get(str(slug), "")) for slug in row.get("note_matches") or ())
    return CandidateDetail(
        row=row,
        messages=tuple(Message(role, text) for role, text in split_messages(str(row.get("text") or ""))),
        findings=findings,
        redactions=tuple(str(r) for r in row.get("redactions") or ()),
        note_matches=matches,
        cluster_members=members,
        promoted_as=promoted.get(cid, ""),
        duplicate_of=str(row.get("duplicate_of") or ""),
    )


def note_paths(note_root: Path, root: Path) -> dict[str, str]:
    """Note slug → its path relative to the KB root (the first locale in path order wins)."""
    from kbtools.kb.tree import scan_layer

    if not note_root.is_dir():
        return {}
    out: dict[str, str] = {}
    for f in scan_layer(note_root).files:
        out.setdefault(f.slug, Path(f.abspath).relative_to(root).as_posix())
    return out
