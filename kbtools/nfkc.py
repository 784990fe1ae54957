"""Unicode NFKC, faster for prose that is in normal form but for full-width punctuation.

Chinese and Japanese prose is in NFKC but for its full-width punctuation (，：（）？). A
text with one such character fails NFKC's quick check, and ``unicodedata.normalize`` then
decomposes and recomposes every character of it: about 18 ns a character, where replacing
the few full-width characters (a C scan each) and checking again costs a fifth of it. The
result is the same: NFKC decomposes every character fully before it composes, and a
character's NFKC form decomposes to what the character does, so putting it in place of the
character leaves the NFKC of the whole text as it was (tests/test_nfkc.py).
"""

from __future__ import annotations

import unicodedata

_is_normalized = unicodedata.is_normalized
_normalize = unicodedata.normalize
# The compatibility characters of such prose, most frequent first, with their NFKC forms.
_COMMON = tuple((char, _normalize("NFKC", char)) for char in "：，？…（）；！\u3000．")


def nfkc(text: str) -> str:
    """``unicodedata.normalize("NFKC", text)``."""
    if _is_normalized("NFKC", text):
        return text
    for char, normal in _COMMON:
        if char in text:
            text = text.replace(char, normal)
    return text if _is_normalized("NFKC", text) else _normalize("NFKC", text)
