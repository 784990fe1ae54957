"""The candidate ledger as the review commands read it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kbtools.errors import KbError
from kbtools.ingest.hashing import hash_identifier
from kbtools.ingest.ledger import iter_ledger, ledger_path

Row = dict[str, Any]
MIN_PREFIX = 8  # characters of a candidate id a person may type instead of all 64


def candidates_path(output_dir: Path) -> Path:
    path = ledger_path(output_dir, "candidates")
    if not path.is_file():
        raise KbError("no candidate ledger; run `kb ingest --write` first", str(path))
    return path


def iter_candidates(output_dir: Path) -> Iterator[Row]:
    """Every well-formed candidate row, in ledger order (a malformed line is skipped)."""
    for row in iter_ledger(candidates_path(output_dir), "candidates"):
        if row is not None:
            yield row


def find_candidate(output_dir: Path, candidate_id: str) -> Row:
    """The row whose id is ``candidate_id``, or the one row it is a prefix of (≥ 8 characters)."""
    wanted = candidate_id.strip().lower()
    path = candidates_path(output_dir)
    if len(wanted) < MIN_PREFIX:
        raise KbError(f"candidate id must have at least {MIN_PREFIX} characters", candidate_id)
    found: list[Row] = []
    for row in iter_candidates(output_dir):
        cid = str(row["candidate_id"])
        if cid == wanted:
            return row
        if cid.startswith(wanted):
            found.append(row)
    if not found:
        raise KbError(f"no candidate {candidate_id} in the ledger", str(path))
    if len(found) > 1:
        raise KbError(f"candidate id prefix {candidate_id} is ambiguous ({len(found)} candidates)", str(path))
    return found[0]


def project_matches(row: Row, project: str) -> bool:
    """``project`` is the folder a session ran in (hashed like the ledger) or a prefix of its key."""
    key = str(row.get("project_key", ""))
    wanted = project.strip()
    return key == hash_identifier(wanted) or (len(wanted) >= MIN_PREFIX and key.startswith(wanted.lower()))
