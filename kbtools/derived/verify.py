"""`kb verify --derived-filter`: no candidate in the ledger is an artifact's text.

Ingest excludes derived records before they become candidates; this check
re-reads the candidate ledger against the current artifacts, so a leak (a
filter that was disabled, a threshold raised, a page recorded after the
ingest, a ledger edited by hand) is found.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from kbtools.derived.filter import DerivedFilter, DerivedMatch
from kbtools.errors import KbError


@dataclass(frozen=True)
class DerivedCandidate:
    candidate_id: str
    match: DerivedMatch


@dataclass(frozen=True)
class VerifyReport:
    ledger: Path
    candidates: int
    derived: tuple[DerivedCandidate, ...]


def verify_candidates(derived_filter: DerivedFilter, ledger: Path) -> VerifyReport:
    """Match every candidate of the candidates ledger ``ledger`` against the artifacts.

    A missing ledger or a line that is not a candidate is an error (exit 2),
    never a pass: a check that cannot read what it checks proves nothing.
    """
    try:
        raw = ledger.read_bytes()
    except FileNotFoundError:
        raise KbError("no candidate ledger (run `kb ingest --write` first)", str(ledger)) from None
    except OSError as exc:
        raise KbError(f"cannot read candidate ledger: {exc.strerror}", str(ledger)) from None
    count = 0
    found: list[DerivedCandidate] = []
    for number, line in enumerate(raw.decode("utf-8", "replace").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{ledger}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise KbError(f"invalid candidate line: {exc.msg}", where) from None
        if (
            not isinstance(row, dict)
            or not isinstance(row.get("text"), str)
            or not isinstance(row.get("candidate_id"), str)
        ):
            raise KbError("invalid candidate line: needs string fields candidate_id and text", where)
        count += 1
        match = derived_filter.match(row["text"])
        if match is not None:
            found.append(DerivedCandidate(row["candidate_id"], match))
    return VerifyReport(ledger, count, tuple(found))
