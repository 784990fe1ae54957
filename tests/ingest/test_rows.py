"""The ledger row schema (kbtools/ingest/rows.py): field order, validation on read, encoding."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, TypeVar

import pytest

from kbtools.ingest import rows
from kbtools.ingest.rows import CandidateRow, EventRow, ManifestRow, RejectedRow

R = TypeVar("R", ManifestRow, CandidateRow, RejectedRow, EventRow)


def read_row(row_type: type[R], line: bytes | str) -> R | None:
    """One line as a typed row (absent fields take their defaults; extras are dropped), or
    None when it is malformed."""
    obj = rows.decode(line, row_type.LEDGER)
    if obj is None:
        return None
    # Checked by kind when decoded, so each value fits its field.
    values: dict[str, Any] = {name: obj[name] for name in rows.FIELDS[row_type] if name in obj}
    return row_type(**values)


def encode(row: rows.LedgerRow) -> bytes:
    """One ledger line of a typed row, as the writers make it."""
    return rows.dumps(rows.as_json(row))


def manifest(**changes: object) -> ManifestRow:
    base = ManifestRow(
        source_key="k",
        tool="omp",
        record_type="session",
        project_key="p",
        session_hash="s",
        format="jsonl",
        content_hash="c",
        parse_status="processed",
        redaction_status="none:v1",
        candidate_count=1,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_a_line_has_the_declared_fields_in_declaration_order() -> None:
    for row_type in (ManifestRow, CandidateRow, RejectedRow, EventRow):
        assert rows.FIELDS[row_type] == tuple(f.name for f in dataclasses.fields(row_type))
    line = encode(manifest())
    assert tuple(json.loads(line)) == rows.FIELDS[ManifestRow]
    assert rows.KNOWLEDGE_FIELDS[0] == "topic" and rows.KNOWLEDGE_FIELDS[-1] == "existing_kb_status"
    assert len(rows.KNOWLEDGE_FIELDS) == 24  # the reference's knowledge fields


def test_reading_round_trips_and_fills_defaults_of_fields_a_line_lacks() -> None:
    row = manifest(stat_key=[1, 2, 3], article_slugs=["a"])
    assert read_row(ManifestRow, encode(row)) == row
    older = {k: v for k, v in rows.as_json(row).items() if k not in ("locator_key", "stat_key", "rows_digest")}
    read = read_row(ManifestRow, json.dumps(older))
    assert read is not None and read.stat_key is None and read.rows_digest == ""


@pytest.mark.parametrize(
    "change",
    [
        {"candidate_count": -1},
        {"candidate_count": True},
        {"candidate_count": "3"},
        {"parse_status": "done"},
        {"error": None},
        {"truncated": "yes"},
        {"stat_key": "1,2,3"},
        {"article_slugs": "a"},
    ],
)
def test_a_field_of_the_wrong_kind_makes_the_line_malformed(change: dict[str, object]) -> None:
    obj = {**rows.as_json(manifest()), **change}
    assert rows.decode(json.dumps(obj), "manifest") is None


def test_a_missing_required_field_or_not_an_object_is_malformed() -> None:
    obj = rows.as_json(manifest())
    del obj["content_hash"]
    assert rows.decode(json.dumps(obj), "manifest") is None
    assert rows.decode(b"[1, 2]", "manifest") is None
    assert rows.decode(b"{not json", "manifest") is None
    assert rows.decode(b'{"candidate_id":"c","source_key":"k","text":"t"}', "candidates") is None
    assert rows.decode(b'{"candidate_id":"c","source_key":"k","text":"t","fingerprint":"f"}', "candidates")


def test_unknown_keys_are_kept_at_the_end_and_the_run_tag_dropped() -> None:
    obj = {"zz_newer": 1, **rows.as_json(manifest()), rows.RUN_TAG: "r"}
    out = rows.ordered(obj, "manifest")
    assert list(out)[-1] == "zz_newer" and rows.RUN_TAG not in out
    assert rows.decode(json.dumps(obj), "manifest") is not None


def test_lone_surrogates_are_encoded_as_replacement() -> None:
    line = encode(RejectedRow(rejection_id="r", source_key="k", reason="bad \ud800 text"))
    assert json.loads(line)["reason"] == "bad ? text"


def test_the_schema_key_changes_with_any_field_list() -> None:
    """The ledger index and the trusted-lines digest are keyed by it (see rows.SCHEMA_KEY)."""
    assert rows.SCHEMA_KEY == tuple(rows.FIELDS[t] for t in rows.ROW_TYPES.values())
    assert rows.LEDGERS == ("manifest", "candidates", "rejected", "events")
