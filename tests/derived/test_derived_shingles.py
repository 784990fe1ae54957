"""Normaliser and shingle hash: what reformatting must not change, and values stable across processes."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from kbtools.derived.normalise import strip_frontmatter, tokens
from kbtools.derived.shingles import (
    BUILTIN_HASH,
    pack,
    reference_shingle_hash,
    shingle_hashes,
    unpack,
    word_ids,
)

IDS = st.integers(min_value=0, max_value=(1 << 61) - 2)


@settings(max_examples=300, deadline=None)
@given(st.lists(IDS, min_size=5, max_size=5))
def test_derived_filter_shingle_hash_equals_written_out_reference(ids: list[int]) -> None:
    assert BUILTIN_HASH
    assert hash(tuple(ids)) == reference_shingle_hash(ids)


@given(st.sets(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)))
def test_derived_filter_manifest_shingle_encoding_round_trips(values: set[int]) -> None:
    packed = pack(values)
    assert unpack(packed) == sorted(values) and packed.isascii()


def test_derived_filter_shingle_hashes_stable_across_processes() -> None:
    """Persisted in the manifest, so no per-process salt may leak in (str hashes are salted)."""
    words = tokens("The writer does not block readers, and readers do not block the writer.")
    here = shingle_hashes(words)
    code = (
        "from kbtools.derived.normalise import tokens; from kbtools.derived.shingles import shingle_hashes;"
        "print(shingle_hashes(tokens('The writer does not block readers, and readers do not block the writer.')))"
    )
    for seed in ("1", "12345"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
        ).stdout
        assert out.strip() == str(here)


def test_derived_filter_word_ids_below_the_hash_modulus() -> None:
    ids = word_ids([b"alpha", b"beta", "日".encode(), "über".encode()] * 3)
    assert all(0 <= i < (1 << 61) - 1 for i in ids)
    assert ids[:4] == ids[4:8]


def test_derived_filter_normaliser_strips_layout_not_words() -> None:
    markdown = (
        "## Steps\n\n1. **Freeze** the _state_\n2) then read [the docs](https://docs.example/wal_mode)\n"
        "```python\nprint('x')\n```\n    indented   line\n> quoted\n| a | b |\n"
    )
    assert [w.decode() for w in tokens(markdown)] == [
        "steps",
        "freeze",
        "the",
        "state",
        "then",
        "read",
        "the",
        "docs",
        "https",
        "docs",
        "example",
        "wal",
        "mode",
        "print",
        "x",
        "indented",
        "line",
        "quoted",
        "a",
        "b",
    ]
    assert tokens("ＷＡＬ Mode ﬁle") == [b"wal", b"mode", b"file"]  # NFKC, then lower case
    assert tokens("日本語") == [w.encode() for w in "日本語"]  # no spaces to split on: one token per character
    assert tokens("version 2.1 of it") == [b"version", b"2", b"1", b"of", b"it"]  # only a line-start number is a marker
    assert tokens("1. first\n 2) second") == [b"first", b"second"]


def test_derived_filter_frontmatter_stripped_only_at_the_top() -> None:
    assert strip_frontmatter("---\nkind: concept\nsources: [a]\n---\n# Body\n") == "# Body\n"
    assert strip_frontmatter("# Body\n---\nnot: frontmatter\n---\n") == "# Body\n---\nnot: frontmatter\n---\n"
    assert strip_frontmatter("---\nunterminated\n") == "---\nunterminated\n"


def _reference_tokens(text: str) -> list[bytes]:
    """The token definition, applied directly (tokens() gets there faster)."""
    import re
    import unicodedata

    from kbtools.derived.normalise import TOKEN_PATTERN

    words = re.findall(TOKEN_PATTERN, unicodedata.normalize("NFKC", text).lower())
    return [w.encode("utf-8", "surrogatepass") for w in words]


@settings(max_examples=400, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(
            list("abcXYZ019 _-.,;:!?()[]*#`'\"\t\n/")
            + list("éÜßø—’“”→×½²ﬁＡ　\u00a0日本語のテキストカ한국어")
            + list("–…•✅❌✓⚠·«»§©±÷‐‑′″※、。「」〈〉║╔→⇒∑∞≠≤⌘⏎␣①™\u200d\ufe0f")
            + ["\u0301", "😀"]
        ),
        max_size=60,
    )
)
def test_derived_filter_fast_tokens_equal_the_definition(text: str) -> None:
    flat = "x " + text.replace("\n", " ")  # no line start: neither list-marker nor fence stripping applies
    assert tokens(flat) == _reference_tokens(flat)


def test_derived_filter_typography_is_only_separators_in_the_normal_form() -> None:
    # What lets tokens() take the ASCII path for a text that is ASCII but for these characters:
    # each one is assigned, left as it is by NFKC and lower case (or made ASCII punctuation),
    # not a word character and not combining, so in any text it only separates words.
    import re
    import unicodedata

    from kbtools.derived.normalise import TYPOGRAPHY

    members = [c for c in map(chr, range(0x80, 0x10000)) if re.fullmatch(f"[{TYPOGRAPHY}]", c)]
    assert {"—", "–", "’", "“", "→", "•", "✅", "×", "…", "\u3000", "。"} <= set(members)
    for char in members:
        normal = unicodedata.normalize("NFKC", char)
        assert unicodedata.category(char) != "Cn" and normal.lower() == normal, hex(ord(char))
        for part in normal:
            assert not re.match(r"\w", part) and not unicodedata.combining(part), hex(ord(char))
            assert not part.isascii() or not part.isalnum(), hex(ord(char))
        assert tokens(f"a{char}b c{char}") == [b"a", b"b", b"c"], hex(ord(char))
        assert tokens(f"x{char}é{char}\u0301") == _reference_tokens(f"x{char}é{char}\u0301"), hex(ord(char))
