"""Normalise text for the derived filter: the words a reader sees, nothing else.

A model that quotes a wiki page or a skill re-indents it, re-fences its code,
re-wraps its lines, drops or changes emphasis, renumbers a list. None of that
may change what the filter compares, so the normal form is the sequence of
words only: NFKC, lower case, then every run of letters and digits is a token
and everything else (Markdown punctuation, indentation, line breaks, `_`) is a
separator. What that leaves to strip explicitly:

- fence lines (```` ```python ````, ``~~~``): the info string is a word the
  quote may not repeat, so the whole fence line goes;
- ordered-list numbers (``1.``, ``2)``): renumbering is reformatting;
- YAML frontmatter of an artifact file: metadata, not the emitted text.

Link URLs stay as text (``[docs](https://x.example/a)`` → ``docs https x
example a``): a quote that keeps the link keeps those words too.

Scripts written without spaces (Han, kana, Hangul) have no words to split on,
so each of their characters is a token; the n-gram shingles then work on
characters there.

Any change to these rules changes :data:`NORMALISER_HASH` (it hashes the rules
themselves), so a manifest shingled under other rules is detected, never
silently compared.
"""

from __future__ import annotations

import re
from functools import cache

from blake3 import blake3

from kbtools.nfkc import nfkc

NORMALISER_VERSION = "kb-words-1"

# A fence line (with its info string) or an ordered-list marker, at a line start.
# Anchored on a newline, not `^` with MULTILINE: a literal prefix lets the
# regex engine skip ahead instead of trying every position (several times faster).
_LINE_LAYOUT = re.compile(r"\n[ \t>]*(?:(?:`{3,}|~{3,})[^\n]*|\d{1,9}[.)](?=[ \t]))")
_FRONTMATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n.*?^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.MULTILINE | re.DOTALL)

_SPACELESS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
# The definition: a token is a run of letters/digits outside the spaceless
# scripts, or one character of them. tokens() computes the same thing faster
# (a regex scan per word costs 3x more than translate + split; ingest
# normalises every kept record); the tests hold the two equal. Kept as the
# pattern text: only the tests apply it, and compiling it costs 3-4 ms
# (the regex compiler expands the spaceless ranges one code point at a time).
TOKEN_PATTERN = rf"[^\W_{_SPACELESS}]+|[{_SPACELESS}]"
_NON_ASCII_SEPARATORS = re.compile(r"[^\w\x00-\x7f]+")
# ASCII punctuation, `_` and whitespace → space; UTF-8 bytes of other characters kept.
_BYTE_SEPARATORS = bytes.maketrans(
    bytes(range(256)), bytes(c if c >= 128 or chr(c).isalnum() else 32 for c in range(256))
)

NORMALISER_HASH = blake3(
    "\0".join((NORMALISER_VERSION, _LINE_LAYOUT.pattern, _FRONTMATTER.pattern, TOKEN_PATTERN, "NFKC", "lower")).encode(
        "utf-8"
    )
).hexdigest()[:16]


def strip_frontmatter(text: str) -> str:
    """The body of an artifact file: everything after a leading YAML frontmatter block."""
    if not text.startswith(("---", "\ufeff---")):
        return text
    found = _FRONTMATTER.match(text)
    return text[found.end() :] if found else text


def tokens(text: str) -> list[bytes]:
    """The normalised words of ``text`` (Markdown layout stripped), each UTF-8 encoded.

    Bytes, not str: the shingle hash reads bytes, and the ASCII path (most
    session prose) never builds a str per word.
    """
    if "\n" in text or text[:1] in "`~0123456789 \t>":
        text = _LINE_LAYOUT.sub("\n", "\n" + text)
    if text.isascii():
        return text.encode("ascii").lower().translate(_BYTE_SEPARATORS).split()
    marks, other = _marks()
    if other.search(text) is None:  # ASCII but for typography (— → ’ ✓): the ASCII path
        return marks.sub(" ", text).encode("ascii").lower().translate(_BYTE_SEPARATORS).split()
    text = _NON_ASCII_SEPARATORS.sub(" ", nfkc(text).lower())
    spaceless = _spaceless_char()
    if spaceless.search(text):
        # Each such character a word of its own: split around it and joined with spaces
        # (a substitution with a template calls back into Python for every character).
        text = " ".join(spaceless.split(text))
    return text.encode("utf-8", "surrogatepass").translate(_BYTE_SEPARATORS).split()


# Typographic characters of prose (dashes, quotes, arrows, bullets, box drawing, symbols)
# that NFKC and lower case leave as they are, or turn into ASCII punctuation, and that are
# not word characters: each only separates words, so a text that is ASCII but for them has
# the tokens of the ASCII text with a space for each (tests/derived hold the class to this
# definition, character by character, on the running Python's Unicode tables). All in the
# Basic Multilingual Plane, so the regex compiler makes them one table lookup per character
# (a range beyond it makes a list of ranges, tried one by one): a text with an emoji takes
# the general path.
TYPOGRAPHY = (
    "\u00a1-\u00a7\u00a9\u00ab-\u00ae\u00b0-\u00b1\u00b6-\u00b7\u00bb\u00bf\u00d7\u00f7\u200d"
    "\u2010-\u2016\u2018-\u2027\u2030-\u203d\u203f-\u205e\u2190-\u2426\u2440-\u244a"
    "\u2500-\u2775\u2794-\u2adb\u2add-\u2b73\u2b76-\u2b95\u2b97-\u2bff"
    "\u3000-\u3004\u3008-\u3020\u3030\u3036-\u3037\u303d-\u303f\ufe0f"
)


@cache
def _spaceless_char() -> re.Pattern[str]:
    # Compiled on first non-ASCII text, not at import: 3-4 ms that a run
    # without such text (and every command that only imports this) never needs.
    return re.compile(f"([{_SPACELESS}])")


@cache
def _marks() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A :data:`TYPOGRAPHY` character; a character neither ASCII nor one of them."""
    return re.compile(f"[{TYPOGRAPHY}]"), re.compile(f"[^\\x00-\\x7f{TYPOGRAPHY}]")
