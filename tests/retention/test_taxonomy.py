from __future__ import annotations

import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbtools.config import RetentionConfig
from kbtools.retention.gate import grade
from kbtools.retention.taxonomy import CLASSES, Identifier, strip_trailing, taxonomy
from tests.testing.secrets import SECRET_FAMILIES, SURROUNDINGS, make_secret, plant

DEFAULT = taxonomy(RetentionConfig().registry_prefixes)

AUDIT_TEXT = (
    "On 2026-07-27 the refresh dropped TRIAL-CLOSE-RUNBOOK.md at sha 5ef5a70; it ran "
    r"C:\ops\deploy\close.ps1 with HINDSIGHT_API_REFLECT_WALL_TIMEOUT, see HQ-123 and 127.0.0.1:18888."
)


def kinds(text: str, extractor=DEFAULT) -> dict[str, str]:
    return {i.key: i.kind for i in extractor.extract(text)}


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.name)
def test_every_class_finds_its_true_samples(cls):
    assert cls.true_samples, f"{cls.name} has no true samples"
    for text, key in cls.true_samples:
        found = {(i.key, i.kind) for i in DEFAULT.scan(text, exclude_secrets=False)}
        assert (key, cls.name) in found, (text, found)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.name)
def test_every_class_ignores_its_false_samples(cls):
    assert cls.false_samples, f"{cls.name} has no false samples"
    for text in cls.false_samples:
        found = [i for i in DEFAULT.scan(text, exclude_secrets=False) if i.kind == cls.name]
        assert not found, (text, found)


def test_taxonomy_covers_the_audit_classes():
    found = kinds(AUDIT_TEXT, taxonomy(("HQ-",)))
    assert found == {
        "2026-07-27": "date",
        "TRIAL-CLOSE-RUNBOOK.md": "file_name",
        "5ef5a70": "hex_id",
        r"C:\ops\deploy\close.ps1": "windows_path",
        "HINDSIGHT_API_REFLECT_WALL_TIMEOUT": "env_var",
        "HQ-123": "registry_id",
        "127.0.0.1:18888": "host_port",
    }


def test_registry_ids_follow_the_configured_prefixes():
    assert "HQ-123" not in kinds("see HQ-123", taxonomy(()))
    assert kinds("see HQ-123", taxonomy(("HQ-",))) == {"HQ-123": "registry_id"}
    assert kinds("see WO-7 and WO 8", taxonomy(("WO",))) == {"WO-7": "registry_id", "WO8": "registry_id"}


@pytest.mark.parametrize("empty", [None, "", "   \n\t", "no identifiers in this plain sentence."])
def test_empty_and_none_are_safe(empty):
    assert DEFAULT.extract(empty) == frozenset()


def test_english_words_of_hex_letters_numbers_and_abbreviations_are_not_identifiers():
    text = (
        "The defaced facade of the last decade was effaced, e.g. by 1234567 people, i.e. most; "
        "a 3.14 ratio, 42 items, 12345678 bytes, section 4.2, at 10:30, cafe and deadbeef."
    )
    assert DEFAULT.extract(text) == frozenset()


def test_hex_ids_and_uuids_compare_case_insensitively_but_keep_their_spelling():
    upper = DEFAULT.extract("commit 5EF5A70 and 550E8400-E29B-41D4-A716-446655440000")
    lower = DEFAULT.extract("commit 5ef5a70 and 550e8400-e29b-41d4-a716-446655440000")
    assert upper == lower
    assert {i.text for i in upper} == {"5EF5A70", "550E8400-E29B-41D4-A716-446655440000"}


def test_a_datetime_yields_its_date():
    assert kinds("at 2026-07-27T10:00:00Z") == {"2026-07-27": "date"}


def test_port_class_needs_a_host_prefix():
    """A port alone is not an identifier; host:port keeps its host."""
    assert kinds("at localhost:6280 now") == {"localhost:6280": "host_port"}
    assert kinds("bare :18888 port") == {}


def test_url_trailing_punctuation_and_unbalanced_brackets_are_stripped():
    found = DEFAULT.extract("See (https://example.com/a/b), and https://example.com/c.")
    assert {i.text for i in found} == {"https://example.com/a/b", "https://example.com/c"}


def test_env_var_references_name_the_variable():
    assert DEFAULT.extract("$CODEX_HOME") == DEFAULT.extract("${CODEX_HOME}") == DEFAULT.extract("CODEX_HOME")


def test_a_sha_inside_a_url_belongs_to_the_url():
    found = DEFAULT.extract("https://github.com/o/r/commit/5ef5a70d")
    assert [i.kind for i in found] == ["url"]


@pytest.mark.parametrize(
    ("token", "expected"),
    [("x.md.", "x.md"), ("(a)", "(a)"), ("a)", "a"), ("a]]", "a"), ("'a'", "'a'"), ("a'", "a"), ("**a**", "**a")],
)
def test_strip_trailing(token, expected):
    assert strip_trailing(token) == expected


def test_identifier_equality_is_by_key_only():
    assert Identifier("abc1234", "ABC1234", "hex_id") == Identifier("abc1234", "abc1234", "hex_id")
    assert len({Identifier("k", "a", "x"), Identifier("k", "b", "y")}) == 1


@pytest.mark.parametrize("family", sorted(SECRET_FAMILIES))
def test_rotating_or_dropping_a_secret_is_not_identifier_loss(family):
    rng = random.Random(family)
    name = SECRET_FAMILIES[family].name
    for surrounding in SURROUNDINGS:
        secret = make_secret(family, rng)
        old = "Deploy notes of 2026-07-27.\n" + plant(secret, surrounding, name=name)
        rotated = "Deploy notes of 2026-07-27.\n" + plant(make_secret(family, rng), surrounding, name=name)
        dropped = old.replace(secret, "")
        for new in (rotated, dropped):
            verdict = grade(old, new, threshold=1, extractor=DEFAULT)
            assert verdict.lost == () and not verdict.refused, (family, surrounding, verdict.lost)


def test_the_secret_filter_is_what_keeps_a_credential_url_out():
    secret = make_secret("github-classic", random.Random(3))
    text = plant(secret, "git-remote")
    unfiltered = {i.text for i in DEFAULT.scan(text, exclude_secrets=False)}
    assert any(secret in t for t in unfiltered)  # the URL branch alone would protect it
    assert not any(secret in i.text for i in DEFAULT.extract(text))


@pytest.mark.parametrize(
    "adversary",
    [
        "a" * 200_000,
        "a/" * 100_000,
        "a." * 100_000,
        "ab12" * 50_000,
        "a:1" * 60_000,
        "\\\\a" * 60_000,
        "A_" * 100_000,
        "1-" * 100_000,
        "x-1.2." * 40_000,
        "$A/" * 60_000,
    ],
    ids=lambda s: repr(s[:6]),
)
def test_extraction_stays_linear_on_adversarial_input(adversary):
    start = time.perf_counter()
    DEFAULT.scan(adversary, exclude_secrets=False)
    assert time.perf_counter() - start < 2.0


FRAGMENTS = [
    " ",
    "  ",
    "\n",
    "RFC",
    " 9110",
    "PEP",
    "8",
    "(",
    ")",
    ".",
    ",",
    "e.g.",
    "v1.2",
    "2026-07-27",
    "T10:00",
    "5ef5a70",
    "https://",
    "example.com",
    ":8080",
    "/",
    "a",
    "src",
    "note.md",
    "~",
    "$HOME",
    "${X}",
    "%P%",
    "C:",
    "\\",
    "KB_X",
    "_",
    "-",
    "CVE-2024-1",
    "defaced",
    "550e8400-e29b-41d4-a716-446655440000",
    "localhost",
    "@",
    "é",
    "\t",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=40))
def test_the_token_prefilter_finds_exactly_what_a_full_scan_finds(parts):
    text = "".join(parts)
    fast = DEFAULT.scan(text, exclude_secrets=False)
    full = DEFAULT.scan(text, exclude_secrets=False, prefilter=False)
    assert [(i.key, i.kind) for i in fast] == [(i.key, i.kind) for i in full]


def test_secret_overlap_sees_a_long_secret_that_starts_before_a_short_one():
    from kbtools.retention.taxonomy import _overlaps

    spans = ([0, 5, 40], [30, 30, 50])  # starts, largest end so far: (0, 30), (5, 8), (40, 50)
    assert _overlaps(spans, 20, 25)  # inside the first, after the second ended
    assert not _overlaps(spans, 30, 40)
    assert _overlaps(spans, 35, 41)
    assert not _overlaps(([], []), 0, 10)


def test_ignored_frontmatter_keys_only_blank_the_leading_frontmatter():
    extractor = taxonomy((), ("timestamp",))
    page = "---\r\ntitle: v1.2.3\r\ntimestamp: 2026-08-08\r\n---\r\nbody\r\ntimestamp: 2026-05-05\r\n"
    assert {i.text for i in extractor.extract(page)} == {"v1.2.3", "2026-05-05"}
    assert {i.text for i in extractor.extract("intro\n---\ntimestamp: 2026-08-08\n---\n")} == {"2026-08-08"}
    assert {i.text for i in taxonomy().extract(page)} == {"v1.2.3", "2026-08-08", "2026-05-05"}
