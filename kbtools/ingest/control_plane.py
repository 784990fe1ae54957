"""The internal control-plane filter: agent-runtime artefacts are never knowledge.

Nested transcripts, thinking markers, tool-call envelopes, IRC/budget notices and
watchdog narration are produced by the agents' own machinery. Learning from them
would feed the wiki its own plumbing, so they are dropped before redaction.

The filter judges **one message at a time**. The reference also ran it over a
whole session rendered as ``[role] text`` lines, where a legitimate message that
quotes a marker (``_thinking:_``) behind the added ``[user]`` tag matched and
dropped the entire session; a message that passes alone therefore never takes
anything else down with it.

Also here: the technical-signal test that decides whether a turn is worth a
candidate. It matches whole words (with common inflections): the reference's
substring test passed "latest" for "test", "capital" for "api", "prefix" for "fix".
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from functools import cache
from typing import Any

# Bump on any change to the rules below: stored candidates checked under another
# version are checked again (see the pipeline's trusted rows).
FILTER_VERSION = "cp1"

# Only the start of a message decides the record-marker rules (a, b): 768
# characters bound the unbounded "Resume prior conversation. … scopes:" gap.
PREFIX_WINDOW = 768

_I = re.IGNORECASE
_ID = r"[A-Za-z0-9_.-]+"
_TAG = r"(?:\[(?:user|assistant)\]\s*)?"
_ANY_TAG = r"\[(?:user|assistant|skill-prompt)\]"
_THINKING = r"_thinking(?::_|_:)"
_MARKERS = (
    r"(?:¶(?:user|think|ai|call):"
    rf"|{_THINKING}"
    r"|Complete (?:the )?assignment(?: below)?,?\s*thoroughly:"
    r"|Archived transcript scopes:"
    r"|\#{1,6}\s+Session update\b"
    r"|\[irc\])"
)

# The rules are pattern text here and compiled on first use (_rules()): about
# 3 ms that a run whose every source is reused never needs.

# (a) and (b): anchored at the start of the whitespace-trimmed prefix.
_PREFIX_RULES = (
    r"\A(?:"
    r"\[skill-prompt\]"
    rf"|{_TAG}(?:\*\*(?:agent|user|assistant)\*\*:\s*)?"
    rf"(?:{_MARKERS}|Resume prior conversation\.[\s\S]*?Archived transcript scopes:)"
    rf"|{_ANY_TAG}[\s\S]{{0,512}}?{_THINKING}"
    r")"
)

# (d1) and (f): at the very start of the untrimmed message.
_START_RULES = (
    rf"{_TAG}(?:call:{_ID}:{_ID}(?:\{{|\Z)"
    r"|Silent\b|Still (?:early )?context gathering|The agent is mid-turn"
    r"|The agent is (?:still )?(?:scoping|reading|reviewing|gathering)"
    r"|Review (?:is )?progressing|Nothing to critique|No action needed"
    r"|Waiting for (?:more|the agent)|I(?:'ll| will) wait)"
)

# (c)-(i) anywhere in the message, each behind the literals it cannot match
# without (lower case, the message preceded by a newline), so a plain message
# costs a few substring tests.
_BODY_RULES: tuple[tuple[tuple[str, ...], str, int], ...] = (
    # (c) progress marker
    (("more steps follow",), r"\[in progress\s*[—-]\s*more steps follow\]", _I),
    # (d) tool envelopes
    (("\n//",), rf"(?:\A|\n)//[^\n]*?(?:\n[ \t]*)?(?:→|->)[ \t]*{_ID}\(", _I),
    (
        ("\n->", "\n→", "]->", "]→", "] ->", "] →"),
        rf"(?:\A|\n){_TAG}(?:→|->)[ \t]*{_ID}\([^\n]{{0,2000}}\)[ \t]*(?:⇒|=>)",
        _I,
    ),
    # (e) runtime envelopes
    (
        ("parent irc message", "current interruptible", "[budget notice]", "[async-result]", "(no response)"),
        r"Parent IRC message|Current interruptible (?:wait|operation)|\[budget notice\]"
        rf"|\[async-result\]|^{_TAG}\(No response\)[ \t]*$",
        _I | re.MULTILINE,
    ),
    # (g) transcript analysis
    (
        ("_thinking",),
        r"transcript(?:'s)?\s+[\"'`]?_thinking[^\s\"'`]*[\"'`]?[\s\S]{0,200}?"
        r"\b(?:real|hidden) (?:reasoning|thinking) block\b",
        _I,
    ),
    # (h) embedded envelope
    (
        ("**agent**", "**user**", "**assistant**"),
        rf"(?:\A|\n)(?:{_ANY_TAG}\s*)?\*\*(?:agent|user|assistant)\*\*:[ \t]*\n?[ \t]*{_MARKERS}",
        _I,
    ),
    # (i) transcript artefacts behind a required role tag
    (
        ("[user]", "[assistant]", "[skill-prompt]"),
        rf"(?:\A|\n){_ANY_TAG}\s+(?://[^\n]*?\b(?:read|write|edit|bash|grep|glob|task|todo|hub)\("
        r"|\{[\s\S]*?\"(?:severity|guidance|rule)\"[\s\S]*?"
        r"(?:_thinking|Archived transcript scopes|Complete assignment))",
        _I,
    ),
)

_Compiled = tuple[re.Pattern[str], re.Pattern[str], tuple[tuple[tuple[str, ...], re.Pattern[str]], ...], Any]


@cache
def _rules() -> _Compiled:
    """(prefix rules, start rules, body rules behind their literals, every literal at once)."""
    import ahocorasick_rs

    body = tuple((keys, re.compile(pattern, flags)) for keys, pattern, flags in _BODY_RULES)
    # Every prefilter literal at once: one Aho-Corasick pass (twice as fast as their alternation in `re`).
    # Asked for the literals found, not their places: a third less time (no character offsets).
    any_key = ahocorasick_rs.AhoCorasick([key for keys, _, _ in _BODY_RULES for key in keys], store_patterns=True)
    return re.compile(_PREFIX_RULES, _I), re.compile(_START_RULES, _I), body, any_key


def is_internal_text(text: str) -> bool:
    """True when one message is agent-runtime plumbing rather than prose."""
    prefix_rules, start_rules, body_rules, any_key = _rules()
    start = len(text) - len(text.lstrip())  # `\s*` (the same whitespace); no copy unless there is some
    if prefix_rules.match(text[start : start + PREFIX_WINDOW]) or start_rules.match(text):
        return True
    low = "\n" + text.lower()
    if not any_key.find_matches_as_strings(low):
        return False
    return any(any(key in low for key in keys) and rule.search(text) for keys, rule in body_rules)


# Whole words with their common inflections, compared as a set: the words of a
# text are split once (punctuation → space) and intersected in C.
SIGNAL_WORDS = frozenset(
    """error errors exception exceptions fail fails failed failing failure failures fix fixes fixed
    fixing debug debugs debugged debugging test tests tested testing build builds building config
    configs configuration configure configures configured api apis database databases sql git docker
    kubernetes linux java typescript javascript python rust astro svelte css theme themes omp opencode
    codex agent agents llm llms""".split()
)
SIGNAL_CJK = tuple("错误 失败 根因 修复 配置 验证 测试 构建 数据库 架构 排查 工具 会话 知识库 前端 后端 设计".split())
# All of them in one pass (the regex engine skips to a term's first character), not one
# scan of the text per term. Matches do not overlap, so a term that can start inside
# another's match (架构建: 架构, then 构建) is looked for on its own when something matched.
_CJK_TERMS = re.compile("|".join(SIGNAL_CJK))
_CJK_OVERLAPPING = tuple(
    dict.fromkeys(
        term
        for term in SIGNAL_CJK
        for other in SIGNAL_CJK
        if other != term and (term in other or any(other.endswith(term[:k]) for k in range(1, len(term))))
    )
)
# ASCII punctuation that separates words (`_` stays: it is part of an identifier).
_SEPARATOR_BYTES = b".,;:!?()[]{}<>\"'`*=/\\|~#@$%^&+-"
# Translated as UTF-8 bytes: str.translate falls back to a per-character dict
# lookup on non-ASCII text (about 30 MB/s here), bytes.translate is a table. No
# UTF-8 multi-byte sequence contains an ASCII byte, so the result is the same.
_BYTE_SEPARATORS = bytes.maketrans(_SEPARATOR_BYTES, b" " * len(_SEPARATOR_BYTES))
SEPARATORS = frozenset(_SEPARATOR_BYTES.decode("ascii"))


def word_list(low: str) -> list[str]:
    """The words of an already lower-cased text, in order (ASCII punctuation splits words)."""
    if low.isascii():
        return low.encode("ascii").translate(_BYTE_SEPARATORS).decode("ascii").split()
    raw = low.encode("utf-8", "surrogatepass").translate(_BYTE_SEPARATORS)
    return raw.decode("utf-8", "surrogatepass").split()


def words_of(text: str) -> set[str]:
    """The distinct lower-case words of a text (ASCII punctuation splits words)."""
    return set(word_list(text.lower()))


def technical_signals(text: str, words: AbstractSet[str] | None = None) -> set[str]:
    """The distinct technical terms a text uses, as whole words (lower case)."""
    found = set((words if words is not None else words_of(text)) & SIGNAL_WORDS)  # a few words
    if not text.isascii() and (terms := _CJK_TERMS.findall(text)):
        found.update(terms)
        found.update(term for term in _CJK_OVERLAPPING if term not in found and term in text)
    return found
