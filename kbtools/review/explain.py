"""`kb ingest --explain KEY`: which local file or row a ledger's source key stands for, and
why it failed. The ledgers hold only hashes (a path is private); the answer is found by
discovering the sources again and hashing each locator as ingest did, and it is printed to
the terminal only, never written anywhere."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kbtools.errors import KbError
from kbtools.ingest.ledger import iter_ledger, ledger_path
from kbtools.ingest.model import SourceRef
from kbtools.review.rows import MIN_PREFIX, Row


@dataclass(frozen=True)
class Explanation:
    row: Row  # the source's manifest row
    locator: str | None  # the file (or file#row, URL) it was read from; None if not found now
    via_candidate: str = ""  # the candidate id the key named, if it was one


def manifest_row(output_dir: Path, key: str) -> tuple[Row, str]:
    """The manifest row of a source key (or of the source of a candidate id), by a prefix of 8+."""
    wanted = key.strip().lower()
    if len(wanted) < MIN_PREFIX:
        raise KbError(f"a source key needs at least {MIN_PREFIX} characters", key)
    path = ledger_path(output_dir, "manifest")
    if not path.is_file():
        raise KbError("no ledger; run `kb ingest --write` first", str(path))
    rows = [r for r in iter_ledger(path, "manifest") if r is not None]
    found = [r for r in rows if str(r["source_key"]).startswith(wanted)]
    via = ""
    if not found:
        from kbtools.review.rows import find_candidate

        try:
            candidate = find_candidate(output_dir, wanted)
        except KbError:
            raise KbError(f"no source or candidate {key} in the ledgers", str(output_dir)) from None
        via = str(candidate["candidate_id"])
        found = [r for r in rows if r["source_key"] == candidate["source_key"]]
        if not found:
            raise KbError(f"candidate {key} names a source the manifest does not have", str(path))
    if len(found) > 1:
        raise KbError(f"source key prefix {key} is ambiguous ({len(found)} sources)", str(path))
    return found[0], via


def explain(output_dir: Path, key: str, refs: Iterable[SourceRef]) -> Explanation:
    from kbtools.ingest.reuse import locator_key_of

    row, via = manifest_row(output_dir, key)
    wanted = str(row.get("locator_key") or "")
    locator = next((ref.locator for ref in refs if wanted and locator_key_of(ref) == wanted), None)
    return Explanation(row, locator, via)
