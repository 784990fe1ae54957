"""The ledger row schema (kbtools/ingest/rows.py): field order, validation on read, encoding."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, TypeVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


def test_a_lone_surrogate_in_a_line_is_read_as_the_writer_writes_it() -> None:
    """A hand-edited line may hold one (JSON allows the escape; json.loads reads bytes with
    "surrogatepass"): decode gives the ``?`` the writer would have written, and leaves a
    surrogate pair's escape (a real character) and every other line as they are."""
    row = json.loads(encode(RejectedRow(rejection_id="r", source_key="k", reason="REASON")))
    escaped = json.dumps(row).replace("REASON", "bad \\ud800 and \\uDFFF")
    assert rows.decode(escaped, "rejected")["reason"] == "bad ? and ?"  # type: ignore[index]
    assert rows.decode(escaped.encode(), "rejected")["reason"] == "bad ? and ?"  # type: ignore[index]
    raw = json.dumps(row, ensure_ascii=False).encode().replace(b"REASON", "bad \ud800".encode("utf-8", "surrogatepass"))
    assert rows.decode(raw, "rejected")["reason"] == "bad ?"  # type: ignore[index]
    pair = json.dumps(row).replace("REASON", "\\ud83d\\ude00 \\\\ud800")  # an emoji; a backslash and "ud800"
    assert rows.decode(pair, "rejected")["reason"] == "\U0001f600 \\ud800"  # type: ignore[index]


def test_the_schema_key_changes_with_any_field_list() -> None:
    """The ledger index and the trusted-lines digest are keyed by it (see rows.SCHEMA_KEY)."""
    assert rows.SCHEMA_KEY == tuple(rows.FIELDS[t] for t in rows.ROW_TYPES.values())
    assert rows.LEDGERS == ("manifest", "candidates", "rejected", "events")


# --------------------------------------------------------------------------- dumps' fast path

# Floats either side of where repr switches to an exponent (below 1e-4, from 1e16), and the
# non-finite ones json writes as NaN/Infinity (msgspec: null).
EDGE_FLOATS = (
    0.0, -0.0, 0.1, 0.3, 1 / 3, 2.5, 100.0, -7.25, 0.0001, 0.00012, 9.999e-05, 1e-05, 1e-07, 5e-324,
    123456789012345.6, 9999999999999998.0, 1e15, 1e16, -1e16, 1.2345678901234568e17, 1e21, 1e22,
    1.7976931348623157e308, float("nan"), float("inf"), float("-inf"),
)  # fmt: skip


def _same(obj: Any) -> None:
    """dumps writes json_dumps' bytes, or raises what it raises."""
    try:
        expected: bytes | type[BaseException] = rows.json_dumps(obj)
    except Exception as exc:
        expected = type(exc)
    if isinstance(expected, bytes):
        assert rows.dumps(obj) == expected, obj
    else:
        with pytest.raises(expected):
            rows.dumps(obj)


@pytest.mark.parametrize("value", EDGE_FLOATS)
def test_dumps_writes_every_float_as_json_does(value: float) -> None:
    _same({"confidence": value, "scores": {"relevance": value}, "nested": [[value], {"x": (value,)}]})


@pytest.mark.parametrize(
    "value",
    [
        "lone \ud800 surrogate",
        "\udfff",
        "".join(map(chr, range(0x80))) + '\x7f\u2028\u2029\ufeff\U0001f600 \\ " /',
        2**63,
        2**64 + 1,
        -(2**63) - 1,
        True,
        None,
        (1, "a"),
        [],
        {},
    ],
)
def test_dumps_writes_strings_and_other_plain_values_as_json_does(value: object) -> None:
    _same({"value": value, "inside": [value], "keyed": {"k": value}})


@pytest.mark.parametrize("value", [b"bytes", {1, 2}, 1.5j, object()])
def test_dumps_raises_as_json_on_what_is_not_json(value: object) -> None:
    _same({"value": value})
    _same({"inside": [value]})


def test_dumps_converts_keys_and_subclasses_as_json_does() -> None:
    import enum

    class Level(enum.IntEnum):
        LOW = 1

    class Text(str):
        pass

    for obj in ({1: "a", 2.5: "b", None: "c", False: "d"}, {"level": Level.LOW}, {"text": Text("t")}):
        _same(obj)


def test_dumps_writes_cycles_and_deep_nesting_as_json_does() -> None:
    cycle: list[object] = []
    cycle.append(cycle)
    _same({"cycle": cycle})
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    _same({"deep": deep})


def test_dumps_writes_real_rows_as_json_does() -> None:
    row = rows.as_json(
        CandidateRow(
            candidate_id="c" * 64,
            source_key="k" * 64,
            text="After upgrading vitest to 2.0.3 — `pnpm test` fails:\n\tReferenceError \ud83d",
            fingerprint="f" * 64,
            symptoms=["a", "b"],
            confidence=0.35,
            scores={"relevance": 0.8, "novelty": 1e-05, "count": 3},
        )
    )
    _same(row)
    _same(rows.as_json(manifest(stat_key=[1, 2, 1.5e16], records={"user_prose": 3})))
    event = rows.as_json(EventRow(event="derived_excluded", source_key="k", overlap=0.875, threshold=1e-4))
    _same(event)


@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=20,
))  # fmt: skip
def test_dumps_writes_any_json_value_as_json_does(value: object) -> None:
    _same({"value": value})
