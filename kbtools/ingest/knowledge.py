"""The reference's knowledge fields of a candidate, read off its text: sentence fields
(symptoms, root cause, ...), environments, versions and validation commands."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from functools import cache
from typing import Any

from kbtools.ingest.control_plane import SEPARATORS, word_list, words_of
from kbtools.ingest.rows import KNOWLEDGE_FIELDS

SNIPPET_CHARS = 500
USER_GOAL_CHARS = 1_200
FIELD_SNIPPETS = 3
ENV_MATCHES = 12

# --------------------------------------------------------------------------- knowledge fields


# Sentence fields, in priority order: a sentence goes to the first field it fits.
# Latin terms match as whole words (case-insensitive); CJK terms and marks anywhere.
_FIELD_TERMS = (
    # …and any word ending in error/exception ("TypeError"): see _SUFFIXES.
    ("error_messages", "traceback, panic, errno, 错误, 异常"),
    (
        "failed_solutions",
        "did not work, doesn't work, didn't work, failed approach, dead end, 无效, 不生效, 死胡同, 否定方案, 失败方案",
    ),
    ("root_cause", "root cause, caused by, because of, 原因, 根因"),
    ("final_solution", "solution, solved, resolved, fix, fixed, fixes, the fix, workaround, 解决, 修复, 最终, 结论"),
    ("rollback", "rollback, roll back, revert, reverted, restore, 回滚, 恢复"),
    ("risks_side_effects", "risk, risks, side effect, side effects, warning, danger, 风险, 副作用, 警告, 危险"),
    ("non_applicability", "does not apply, not applicable, 不适用, 不要用于"),
    ("applicability", "applies, applicable, 适用, 前置条件, 场景"),
    ("validation_results", "passed, passes, verified, validation, tests pass, green, 通过, 验证"),
    (
        "symptoms",
        "symptom, symptoms, failed, failing, fails, slow, timeout, timed out, hangs, crash, crashes, "
        "问题, 现象, 失败, 超时, 缓慢",
    ),
    (
        "investigation_steps",
        "inspect, inspected, check, checked, trace, traced, search, searched, diagnose, diagnosed, bisect, "
        "排查, 检查, 定位, 读取, 搜索, 诊断",
    ),
    ("attempted_solutions", "attempt, attempted, tried, try, trying, 方案, 尝试, 改用"),
    ("changes", "change, changed, patch, patched, edit, edited, 修改, 补丁, 配置变更, 代码变更"),
    ("trigger_conditions", "when, whenever, trigger, triggers, triggered, 条件, 触发"),
    (
        "reusable_lessons",
        "lesson, lessons, principle, generalize, generalise, always, never, 经验, 原则, 方法论, 可推广",
    ),
    ("unresolved_questions", "?, ？, 未解决, 待验证"),
)
SENTENCE_FIELDS = tuple((name, tuple(terms.split(", "))) for name, terms in _FIELD_TERMS)
_USER_ONLY = len(SENTENCE_FIELDS) - 1  # unresolved_questions: from user sentences only


# Python's regex engine runs a case-insensitive alternation of a hundred terms at
# under 1 MB/s. So: every term's occurrences in one Aho-Corasick pass (in C), then
# each checked as its kind needs: a word as a whole word of the message, a phrase
# between word boundaries, a word ending ("TypeError", "NullPointerException") at
# one, a mark (CJK, "?") anywhere.
_WORD, _PHRASE, _SUFFIX, _MARK = range(4)
_SUFFIXES = ("error", "errors", "exception", "exceptions")
_ERROR_FIELD = 0  # error_messages
# Sentence delimiters (none starts like another, none overlaps itself).
_SENTENCE_BREAKS = ("\n", ". ", "! ", "? ", "。", "！", "？")
_ASCII_BREAKS = _SENTENCE_BREAKS[:4]


def _index_terms() -> dict[str, list[tuple[int, int]]]:
    """Term → (kind, field number) of each of its uses."""
    index: dict[str, list[tuple[int, int]]] = {}
    for i, (_, terms) in enumerate(SENTENCE_FIELDS):
        for term in terms:
            kind = (_WORD if term.isalnum() else _PHRASE) if term.isascii() and term[0].isalnum() else _MARK
            index.setdefault(term, []).append((kind, i))
    for suffix in _SUFFIXES:
        index.setdefault(suffix, []).append((_SUFFIX, _ERROR_FIELD))
    return index


_TERMS = _index_terms()
_WORD_SET = frozenset(term for term, uses in _TERMS.items() if any(kind == _WORD for kind, _ in uses))


@cache
def _term_automaton() -> tuple[Any, tuple[str, ...], tuple[list[tuple[int, int]], ...], frozenset[int]]:
    """(automaton, the terms, each one's uses, the numbers of those that may overlap themselves).

    The software names a version starts with (:func:`_versions`) are found in the same
    pass: they follow the terms, numbered from ``len(_TERMS)`` on, and have no uses."""
    import ahocorasick_rs

    names = (*_TERMS, *_VERSION_NAMES)
    # A DFA: twice as fast as the default NFA over prose, and built in a millisecond for these terms.
    automaton = ahocorasick_rs.AhoCorasick(
        list(names), matchkind=ahocorasick_rs.MatchKind.Standard, implementation=ahocorasick_rs.Implementation.DFA
    )
    # A term overlaps an occurrence of itself only if it begins as it ends ("timeout").
    bordered = frozenset(i for i, t in enumerate(names) if any(t[:k] == t[-k:] for k in range(1, len(t))))
    return automaton, names, tuple(_TERMS[name] for name in names[: len(_TERMS)]), bordered


def _term_hits(
    low: str,
    present: AbstractSet[str] | None = None,
    spans: Sequence[tuple[str, int, int]] = (),
    names_at: list[int] | None = None,
) -> list[tuple[int, int]]:
    """``(offset, field number)`` of every field term in a lower-cased message, each
    term's occurrences taken left to right without overlapping one another (as
    str.find finds them); ``present``: the term words among the words of a text
    holding it, if known (a word not in this message then finds nothing). With
    ``spans`` (see :func:`_chunk_sentence_fields`) and no ``present``, ``low`` is a
    rendered chunk and each piece is a message of its own to that test. ``names_at``
    gets the offset of every occurrence of a software name (see :func:`_versions`)."""
    automaton, names, uses, bordered = _term_automaton()
    first_name = len(uses)
    if names_at is None:
        names_at = []
    hits: list[tuple[int, int]] = []
    taken_to: dict[int, int] = {}  # term → the end of its last occurrence taken
    size = len(low)
    starts = [start for _, start, _ in spans]
    in_piece: dict[int, set[str]] = {}  # a piece's number → the term words among its words
    for term, pos, end in automaton.find_matches_as_indexes(low, overlapping=True):
        if term >= first_name:
            names_at.append(pos)
            continue
        if term in bordered:
            if pos < taken_to.get(term, 0):
                continue
            taken_to[term] = end
        for kind, field_no in uses[term]:  # mostly one
            # A word character (alphanumeric or "_") next to it: no word, no phrase, no word ending.
            if kind != _MARK and (
                (end < size and ((c := low[end]).isalnum() or c == "_"))
                or (kind != _SUFFIX and pos and ((c := low[pos - 1]).isalnum() or c == "_"))
            ):
                continue
            if kind == _WORD:
                here = present
                if here is None and _is_token(low, pos, end):
                    pass  # this occurrence is a word of the message itself
                elif here is None and starts:
                    k = max(bisect_right(starts, pos) - 1, 0)
                    here = in_piece.get(k)
                    if here is None:
                        here = in_piece[k] = set(word_list(low[starts[k] : spans[k][2]])) & _WORD_SET
                elif here is None:
                    present = here = set(word_list(low)) & _WORD_SET
                if here is not None and names[term] not in here:
                    continue
            hits.append((pos, field_no))
    hits.sort()
    return hits


def _is_token(low: str, pos: int, end: int) -> bool:
    """Whether ``low[pos:end]`` (word characters) is one of :func:`word_list`'s words of
    ``low``: whitespace, a separator or the text's edge on either side."""
    before = low[pos - 1] if pos else " "
    after = low[end] if end < len(low) else " "
    return (before.isspace() or before in SEPARATORS) and (after.isspace() or after in SEPARATORS)


def _sentence(text: str, pos: int, lo: int, hi: int, marks: Sequence[tuple[str, int]]) -> tuple[int, int]:
    """(start, end) of the sentence of ``text[lo:hi]`` holding ``pos``: after the last
    delimiter that ends at or before it, up to the first delimiter at or after it (its
    first character in the sentence unless a newline). Each delimiter (``marks``: each
    with its length less one) is looked for once each way by str.find, only as far as
    the nearest one found so far."""
    start = lo
    for mark, extra in marks:
        at = text.rfind(mark, start - extra if start - extra > lo else lo, pos)  # not max(): a call
        if at >= 0:
            start = at + extra + 1
    end = hi
    for mark, extra in marks:
        at = text.find(mark, pos, end + extra if end + extra < hi else hi)
        if at >= 0:
            end = at
    return start, (end + (text[end] != "\n") if end < hi else hi)


ENVIRONMENTS = {
    "linux": "Linux",
    "fedora": "Fedora",
    "macos": "macOS",
    "windows": "Windows",
    "jvm": "JVM",
    "java": "Java",
    "spring": "Spring",
    "node": "Node.js",
    "nodejs": "Node.js",
    "astro": "Astro",
    "svelte": "Svelte",
    "typescript": "TypeScript",
    "docker": "Docker",
    "kubernetes": "Kubernetes",
    "mysql": "MySQL",
    "postgresql": "PostgreSQL",
    "omp": "OMP",
    "opencode": "OpenCode",
    "codex": "Codex",
    "python": "Python",
}
_VERSIONED = frozenset(ENVIRONMENTS) | {"pnpm", "js"}
# Software versions, matched over lower-cased text (three times faster than
# IGNORECASE in `re`) and tried only where one of the names occurs.
_VERSION_NAMES = "omp opencode codex astro node pnpm java spring docker mysql typescript svelte python".split()
_VERSIONS_LOW = re.compile(
    r"(?<![a-z0-9_])(?:" + "|".join(_VERSION_NAMES).replace("node", r"node(?:\.js)?") + ")"
    r"\s*(?:v|version)?\s*\d+(?:\.\d+){0,3}(?![a-z0-9_])"
)
_VERSIONS = re.compile(_VERSIONS_LOW.pattern, re.IGNORECASE)  # for text whose lower case is longer
# A command at the start of a line.
_COMMAND_NAMES = "pnpm|npm|npx|node|bun|cargo|mvn|gradle|pytest|vitest|git|make|uv|pip|python3?|go|docker|kubectl|kb"
_COMMANDS = re.compile(rf"^[ \t]*(?:\$ )?(?:{_COMMAND_NAMES})[ \t]+[^\n]{{1,180}}", re.MULTILINE)
# The same behind the newline that starts its line (search it in "\n" + text): the engine
# then looks for the literal newline in C instead of trying `^` at every character, twice
# as fast. No match holds a newline, so the two find the same, one after the other. The
# indent is taken whole (no name starts with a blank, so giving some back never helps)
# and a line whose next character starts no command is left at once, not tried name by
# name: 2.7 times as fast again over prose, where most lines start with neither.
_COMMAND_STARTS = "".join(sorted({"$", *(name[0] for name in _COMMAND_NAMES.split("|"))}))
_COMMAND_LINES = re.compile(
    rf"\n[ \t]*+(?=[{re.escape(_COMMAND_STARTS)}])(?:\$ )?(?:{_COMMAND_NAMES})[ \t]+[^\n]{{1,180}}"
)


def _commands(text: str) -> Iterator[str]:
    """``m.group(0) for m in _COMMANDS.finditer(text)``."""
    return (m.group(0)[1:] for m in _COMMAND_LINES.finditer(f"\n{text}"))


@cache
def _cjk() -> re.Pattern[str]:
    """Compiled on first use (the regex compiler expands the range one code point at a
    time: 1.4 ms, which a rerun's own process never needs)."""
    return re.compile(r"[\u4e00-\u9fff]")


def has_cjk(text: str) -> bool:
    return not text.isascii() and _cjk().search(text) is not None


def _sentence_fields(
    pieces: Iterable[tuple[str, str]], present: AbstractSet[str] | None = None
) -> dict[str, list[str]]:
    """Each sentence that uses a field's terms goes to the first field with room, one
    message at a time (``present``: as for :func:`_term_hits`, over all the pieces)."""
    fields: dict[str, list[str]] = {name: [] for name, _ in SENTENCE_FIELDS}
    for role, text in pieces:
        low = text.lower()
        if len(low) != len(text):  # a few characters lower-case to two: offsets must agree
            text = low
        _fill(fields, text, _sentences_of(text, low, _term_hits(low, present), ((role, 0, len(text)),)))
    return fields


def _chunk_sentence_fields(
    text: str,
    low: str,
    spans: Sequence[tuple[str, int, int]],
    present: AbstractSet[str] | None = None,
    names_at: list[int] | None = None,
) -> dict[str, list[str]]:
    """:func:`_sentence_fields` of the pieces of a rendered chunk, in one pass over the chunk:
    its terms found once, its sentence breaks once (``spans``: each piece's role, start and
    end in ``text``; ``low`` its lower case, of the same length). The same as piece by piece:
    a piece is set off by ``"\n[role] "``, which no term and no sentence crosses, and whose
    characters are no word characters next to a piece's first or last one (``names_at``:
    as for :func:`_term_hits`)."""
    fields: dict[str, list[str]] = {name: [] for name, _ in SENTENCE_FIELDS}
    _fill(fields, text, _sentences_of(text, low, _term_hits(low, present, spans, names_at), spans))
    return fields


def _sentences_of(
    text: str, low: str, hits: list[tuple[int, int]], spans: Sequence[tuple[str, int, int]]
) -> list[tuple[int, int, set[int]]]:
    """(start, end, field numbers) of each sentence holding term ``hits``, in text order,
    within the pieces ``spans`` (a sentence does not reach past its piece)."""
    sentences: list[tuple[int, int, set[int]]] = []
    found: set[int] = set()
    end = -1
    start = -1
    # The delimiters the text may hold: a character is looked for fastest, and each
    # search for a delimiter stops at the nearest one found so far.
    marks = [
        (mark, len(mark) - 1) for mark in (_ASCII_BREAKS if text.isascii() else _SENTENCE_BREAKS) if mark[0] in text
    ]
    spans_left = iter(spans)
    role, first, last = next(spans_left)
    lo = first  # where the sentence of the next hit starts at the earliest
    for pos, field_no in hits:
        while pos >= last:
            role, first, last = next(spans_left)
            lo = first
        if pos < first or (field_no == _USER_ONLY and role != "user"):
            continue
        if pos >= end:
            at, end = _sentence(text, pos, lo, last, marks)
            end = max(end, pos + 1)
            # A later hit's sentence starts here or after: the delimiter ending here
            # ends before that hit too, and no other starts before it ends (none overlap).
            # So sentences come in text order, and one starting where the last did is it.
            lo = at
            if at != start:
                start, found = at, set()
                sentences.append((start, end, found))
        found.add(field_no)
    return sentences


def _fill(fields: dict[str, list[str]], text: str, sentences: list[tuple[int, int, set[int]]]) -> None:
    for start, end, found in sentences:
        sentence = text[start:end].strip()[:SNIPPET_CHARS]
        if not sentence:
            continue
        for field_no in sorted(found):
            bucket = fields[SENTENCE_FIELDS[field_no][0]]
            if len(bucket) < FIELD_SNIPPETS:
                bucket.append(sentence)
                break


def unique(matches: Iterable[str], limit: int) -> list[str]:
    seen: dict[str, None] = {}
    for match in matches:
        text = match.strip()
        if text and text not in seen:
            seen[text] = None
            if len(seen) == limit:
                break
    return list(seen)


def _environments(low: str, words: AbstractSet[str]) -> list[str]:
    """Named platforms and tools, canonically spelt, in order of first mention (``low``: a lower-cased text)."""
    found: dict[str, int] = {}
    for word in words & ENVIRONMENTS.keys():
        # Two words name Node.js: the earlier mention counts (not the one a set yields last).
        name, pos = ENVIRONMENTS[word], low.find(word)
        found[name] = min(pos, found.get(name, pos))
    if "arch linux" in low:
        found["Arch Linux"] = low.find("arch linux")
    return sorted(found, key=lambda name: (found[name], name))[:ENV_MATCHES]


def _versions(text: str, low: str | None = None, names_at: Iterable[int] | None = None) -> Iterator[str]:
    """``_VERSIONS.finditer(text)``'s matches (``low``: ``text.lower()``, if known; ``names_at``:
    where in ``low`` the software names occur, if known: see :func:`_term_hits`)."""
    if low is None:
        low = text.lower()
    if len(low) != len(text):  # a few characters lower-case to two: offsets must agree
        yield from (m.group(0) for m in _VERSIONS.finditer(text))
        return
    # ``_VERSIONS_LOW.finditer(low)``, tried only where one of its names occurs (one
    # Aho-Corasick pass; `re` tries the alternation at every character).
    if names_at is None:
        names_at = [start for _, start, _ in _version_names().find_matches_as_indexes(low, overlapping=True)]
    done = -1
    for start in sorted(set(names_at)):
        if start >= done and (m := _VERSIONS_LOW.match(low, start)) is not None:
            done = m.end()
            yield text[start:done]


@cache
def _version_names() -> Any:
    """An automaton of the names a ``_VERSIONS_LOW`` match starts with."""
    import ahocorasick_rs

    return ahocorasick_rs.AhoCorasick(
        _VERSION_NAMES, matchkind=ahocorasick_rs.MatchKind.Standard, implementation=ahocorasick_rs.Implementation.DFA
    )


def render(role: str, text: str) -> str:
    """One message of a candidate's text; the text is its messages rendered, one per line."""
    return f"[{role}] {text}"


def _spans(pieces: Sequence[tuple[str, str]]) -> list[tuple[str, int, int]]:
    """Each piece's (role, start, end) in the rendered chunk (``"\n".join(render(role, piece))``)."""
    spans = []
    at = 0
    for role, piece in pieces:
        at += len(render(role, ""))
        spans.append((role, at, at + len(piece)))
        at += len(piece) + 1
    return spans


# The fields :func:`knowledge_fields` fills, in ledger order (``topic`` and the rest are the candidate's).
FILLED = KNOWLEDGE_FIELDS[KNOWLEDGE_FIELDS.index("user_goal") : KNOWLEDGE_FIELDS.index("unresolved_questions") + 1]


def knowledge_fields(
    user: str,
    pieces: Sequence[tuple[str, str]],
    text: str,
    words: AbstractSet[str] | None = None,
    piece_words: AbstractSet[str] | None = None,
    low: str | None = None,
    *,
    rendered: bool = False,
) -> dict[str, object]:
    """The reference's knowledge fields for one candidate, in ledger order (:data:`FILLED`):
    ``user`` is the turn's prompt, ``pieces`` the (role, text) messages of its chunk,
    ``text`` the rendered chunk (``words`` its :func:`words_of`, if known; ``piece_words``
    a set holding every lower-case word of every piece, if known; ``low``: ``text.lower()``,
    if known; ``rendered``: ``text`` is known to be the pieces rendered, one per line)."""
    if low is None:
        low = text.lower()
    present = piece_words & _WORD_SET if piece_words is not None else None
    if (
        pieces
        and len(low) == len(text)
        and (rendered or text == "\n".join(render(role, piece) for role, piece in pieces))
    ):
        # ``text`` is the rendered pieces: one pass over it (see _chunk_sentence_fields),
        # which finds the software names for the versions too.
        names_at: list[int] | None = []
        sentences = _chunk_sentence_fields(text, low, _spans(pieces), present, names_at)
    else:
        names_at = None
        sentences = _sentence_fields(pieces, present)
    if words is None:
        words = words_of(text)
    fields: dict[str, object] = dict.fromkeys(FILLED)  # the order; then each one's value
    fields.update(sentences)
    fields["user_goal"] = user[:USER_GOAL_CHARS]
    fields["technical_environment"] = _environments(low, words)
    fields["software_versions"] = (
        unique(_versions(text, low, names_at), ENV_MATCHES)
        if words & _VERSIONED and any(d in text for d in "0123456789")
        else []
    )
    root_cause = sentences["root_cause"]
    fields["root_cause"] = root_cause[-1] if root_cause else ""
    final_solution = sentences["final_solution"]
    if final_solution:
        fields["final_solution"] = final_solution[-1]
    else:
        fields["final_solution"] = next((t for role, t in reversed(pieces) if role == "assistant"), "")[:2_000]
    fields["validation_commands"] = unique(_commands(text), ENV_MATCHES)
    return fields
