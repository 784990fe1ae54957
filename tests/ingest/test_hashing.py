from __future__ import annotations

import hashlib
import unicodedata
from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kbtools.ingest.hashing import (
    fingerprint,
    hash_identifier,
    hashed_identity_key,
    iso_time,
    normalize_text,
    source_key_of,
)


def test_hash_identifier_is_sha256_of_nfkc() -> None:
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    assert hash_identifier(decomposed) == hash_identifier(composed)
    assert hash_identifier("\uff21") == hashlib.sha256(b"A").hexdigest()  # full-width A
    assert hash_identifier(composed) == hashlib.sha256(unicodedata.normalize("NFKC", composed).encode()).hexdigest()


def test_normalize_text_folds_case_width_and_whitespace() -> None:
    assert normalize_text("  Hello\u3000\tWORLD \n\n ｆｏｏ ") == "hello world foo"
    assert fingerprint("Hello   world") == fingerprint("hello world")
    assert fingerprint(" Ｈello\u3000WORLD ") == hashlib.sha256(b"hello world").hexdigest()
    assert fingerprint("hello world") != fingerprint("hello  worlds")


def identity_key(tool: str, project_identity: str, session_identity: str) -> str:
    return hashed_identity_key(tool, hash_identifier(project_identity), hash_identifier(session_identity))


def source_key(tool: str, project_identity: str, session_identity: str, content_hash: str) -> str:
    return source_key_of(identity_key(tool, project_identity, session_identity), content_hash)


def test_source_key_formula_and_sensitivity() -> None:
    base = source_key("omp", "/p", "s", "c" * 64)
    expected = hashlib.sha256(
        "\0".join(("omp", hash_identifier("/p"), hash_identifier("s"), "c" * 64)).encode()
    ).hexdigest()
    assert base == expected
    assert source_key("omp", "/p", "s", "c" * 64) == base
    assert source_key("codex", "/p", "s", "c" * 64) != base
    assert source_key("omp", "/p", "s", "d" * 64) != base
    assert identity_key("omp", "/p", "s") == identity_key("omp", "/p", "s")
    assert identity_key("omp", "/p", "s") != identity_key("omp", "/q", "s")
    assert "/p" not in identity_key("omp", "/p", "s")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1_700_000_000, "2023-11-14T22:13:20.000Z"),  # seconds
        (1_700_000_000_123, "2023-11-14T22:13:20.123Z"),  # milliseconds
        ("1700000000", "2023-11-14T22:13:20.000Z"),
        ("2026-01-02T03:04:05", "2026-01-02T03:04:05.000Z"),  # naive is UTC, not local time
        ("2026-01-02T03:04:05+09:00", "2026-01-01T18:04:05.000Z"),
        ("2026-01-02T03:04:05.5Z", "2026-01-02T03:04:05.500Z"),
        ("Thu, 01 Jan 2026 10:00:00 GMT", "2026-01-01T10:00:00.000Z"),
        (1e30, ""),  # out of range: "" instead of a crash
        (-1e20, ""),
        (float("nan"), ""),
        ("not a date", ""),
        (None, ""),
        (True, ""),
        ({"t": 1}, ""),
    ],
)
def test_iso_time(value: object, expected: str) -> None:
    assert iso_time(value) == expected


def test_iso_time_ignores_the_local_time_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        assert iso_time("2026-01-02T03:04:05") == "2026-01-02T03:04:05.000Z"
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


@given(st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z", fullmatch=True))
def test_iso_time_of_its_own_form_is_the_general_parse(text: str) -> None:
    """The canonical form is only validated, not rebuilt; a space in front takes the general path."""
    assert iso_time(text) == iso_time(f" {text}")


@given(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)))
def test_iso_time_keeps_a_valid_canonical_time(moment: datetime) -> None:
    text = moment.isoformat(timespec="milliseconds") + "Z"  # the year is padded to four digits
    assert iso_time(text) == text == iso_time(f" {text}")


INT_EDGES = (0, 1, 999, 10**10 - 1, 10**10, 10**10 + 1, 1_777_599_666_123, 253_402_300_799_999, 253_402_300_800_000)


@pytest.mark.parametrize("number", [*INT_EDGES, *(-n for n in INT_EDGES)])
def test_iso_time_of_an_int_is_that_of_the_same_float(number: int) -> None:
    """Ints in range take gmtime/strftime, floats datetime: the same text."""
    assert iso_time(number) == iso_time(float(number))


@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_iso_time_of_any_int_is_that_of_the_same_float(number: int) -> None:
    assert iso_time(number) == iso_time(float(number))
