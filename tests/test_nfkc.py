from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from kbtools.nfkc import _COMMON, nfkc


def test_nfkc_of_every_character_of_the_basic_plane_is_unicodedatas() -> None:
    for code in range(0x10000):
        char = chr(code)
        assert nfkc(char) == unicodedata.normalize("NFKC", char), hex(code)
        assert nfkc(f"a{char}：") == unicodedata.normalize("NFKC", f"a{char}："), hex(code)


def test_the_replaced_characters_are_compatibility_characters_of_chinese_prose() -> None:
    for char, normal in _COMMON:
        assert not unicodedata.is_normalized("NFKC", char) and normal == unicodedata.normalize("NFKC", char)
    assert nfkc("修复：数据库连接（生产），为什么？") == "修复:数据库连接(生产),为什么?"


# Characters that compose with what comes before them (combining marks, the kana voicing
# marks, Hangul jamo), next to the replaced ones and to characters NFKC changes otherwise.
_ALPHABET = (
    [c for c, _ in _COMMON]
    + list("aA=<>(:?.…　" + "かカｶﾞﾟ゙゚ᄀ가ᅡᆨＡ＝ﬁ²½㌀é")
    + [
        "\u0301",
        "\u0338",
        "\u0327",
        "\u3099",
        "\u309a",
        "\uff9e",
    ]
)


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet=st.sampled_from(_ALPHABET), max_size=24))
def test_nfkc_of_a_text_is_unicodedatas(text: str) -> None:
    assert nfkc(text) == unicodedata.normalize("NFKC", text)
