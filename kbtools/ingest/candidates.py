"""Kept, redacted records of one source → turn-sized evidence candidates.

A candidate is one **turn**: a user prompt with the replies that follow it
(assistant records before the first prompt form a turn of their own). The
reference compacted a whole session into one ~8 KB candidate (head, middle and
tail), so a long session lost most of its content; here every turn that carries
a technical signal becomes one or more candidates of at most ``max_candidate``
characters each, until the source's ``max_text`` budget is spent. What the
budget cuts off is recorded (``truncated`` on the manifest row), never silent.

Knowledge fields keep the reference's names. They are filled from sentences,
not whole messages, and a sentence lands in one field only, so a single message
no longer fills six fields at once; ``confidence`` and ``scores`` follow from
what the turn actually contains instead of being constants.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple, Protocol

from kbtools.ingest.control_plane import is_internal_text, technical_signals, word_list, words_of
from kbtools.ingest.hashing import fingerprint, normalize_text, sha256_hex
from kbtools.ingest.rows import ordered

MIN_TURN_CHARS = 120
SNIPPET_CHARS = 500
USER_GOAL_CHARS = 1_200
SUMMARY_CHARS = 300
FIELD_SNIPPETS = 3
ENV_MATCHES = 12
KEYWORDS = 12
NOTE_MATCHES = 3
# A note matches when it shares at least this many of the turn's keywords.
NOTE_MIN_OVERLAP = 2
NOTE_KEYWORDS = 40

ROLES = ("user", "assistant")


class KeptRecord(NamedTuple):
    """A record that passed the role gate, the control-plane and derived filters and redaction."""

    role: str
    text: str  # redacted
    created_at: str
    index: int  # type: ignore[assignment]  # the record's (not tuple.index)
    labels: tuple[str, ...] = ()
    key: bytes = b""  # its raw message's digest, when extracted with a memo (see memo.SourceMemo.message_key)


class SourceMeta(NamedTuple):
    """What a candidate row needs to know about its source (all hashed or public)."""

    source_key: str
    session_key: str
    project_key: str
    tool: str
    record_type: str
    format: str
    created_at: str
    updated_at: str


class CandidateBatch(NamedTuple):
    candidates: tuple[dict[str, object], ...]
    truncated: bool  # the budget cut off kept text


# --------------------------------------------------------------------------- turns


def split_turns(records: Sequence[KeptRecord]) -> list[list[KeptRecord]]:
    """A user record opens a turn; everything up to the next user record belongs to it."""
    turns: list[list[KeptRecord]] = []
    for record in records:
        if record.role == "user" or not turns:
            turns.append([record])
        else:
            turns[-1].append(record)
    return turns


def render(role: str, text: str) -> str:
    return f"[{role}] {text}"


def split_messages(text: str) -> list[tuple[str, str]]:
    """Undo :func:`render` over a candidate's text: ``[(role, message), …]``.

    Used to re-check stored candidates one message at a time, so a quoted marker
    behind the rendered tag cannot drop a candidate the per-message filter kept.
    """
    starts: list[tuple[int, str, int]] = []  # (tag start, role, message start)
    pos = 0
    while pos >= 0:
        for role in ROLES:
            tag = f"[{role}] "
            if text.startswith(tag, pos):
                starts.append((pos, role, pos + len(tag)))
                break
        found = text.find("\n[", pos)
        pos = found + 1 if found >= 0 else -1
    if not starts or starts[0][0] != 0:
        return [("", text)] if text else []
    ends = [start - 1 for start, _, _ in starts[1:]] + [len(text)]
    return [(role, text[begin:end]) for (_, role, begin), end in zip(starts, ends)]


def is_internal_candidate(text: str) -> bool:
    """True when any message of a stored candidate is control-plane text."""
    return any(is_internal_text(message) for _, message in split_messages(text))


def _pieces(record: KeptRecord, limit: int) -> Iterator[str]:
    """The record's text cut at whitespace into pieces that fit ``limit`` once rendered."""
    room = max(limit - len(f"[{record.role}] "), 1)
    text = record.text
    while text:
        if len(text) <= room:
            yield text
            return
        cut = max(text.rfind(" ", room // 2, room + 1), text.rfind("\n", room // 2, room + 1))
        if cut <= 0:
            cut = room
        yield text[:cut].rstrip()
        text = text[cut:].lstrip()


class _Chunk:
    """One candidate's share of a turn: its rendered text, records and (role, text) pieces."""

    __slots__ = ("lines", "members", "pieces", "size")

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.members: list[KeptRecord] = []
        self.pieces: list[tuple[str, str]] = []
        self.size = 0

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def _chunks(turn: Sequence[KeptRecord], limit: int) -> list[_Chunk]:
    """Pack the turn's rendered records into texts of at most ``limit`` characters."""
    chunks = [_Chunk()]
    for record in turn:
        for piece in _pieces(record, limit):
            line = render(record.role, piece)
            chunk = chunks[-1]
            if chunk.lines and chunk.size + 1 + len(line) > limit:
                chunk = _Chunk()
                chunks.append(chunk)
            chunk.size += len(line) + (1 if chunk.lines else 0)
            chunk.lines.append(line)
            chunk.pieces.append((record.role, piece))
            if not chunk.members or chunk.members[-1] is not record:
                chunk.members.append(record)
    return [c for c in chunks if c.lines]


# --------------------------------------------------------------------------- keywords and notes

STOPWORDS = frozenset(
    """the and for with that this from have will are was were into about than when where what which
    your you our not can use using user assistant system true false there then they them these those
    would could should been being does did done just also some like only more most very here each
    other such over after before while because how why who its it's his her their has had but all
    any may might must shall let get got make made one two out off now yet too via per see need
    want wants please thanks thank okay yes""".split()
)


def keyword_tokens(text: str) -> list[str]:
    return word_list(unicodedata.normalize("NFKC", text).lower())


def keywords(text: str, limit: int = KEYWORDS) -> list[str]:
    """The most frequent content words (ties: first seen), at most ``limit``."""
    return top_words(keyword_tokens(text), limit)


def top_words(tokens: list[str], limit: int = KEYWORDS) -> list[str]:
    """:func:`keywords` of already split tokens."""
    # Counted distinct first (in C), then filtered: a Counter keeps first-seen
    # order, so ties still go to the word seen first.
    counts: Counter[str] = Counter()
    for token, n in Counter(tokens).items():
        if len(token) > 2 and token not in STOPWORDS:
            counts[token.strip("_")] += n
    return [w for w, _ in counts.most_common(limit + 8) if len(w) > 2 and not w.isdigit()][:limit]


_FRONTMATTER = re.compile(r"\A---\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_TITLE = re.compile(r"^(?:title|tags|description):[ \t]*(.*)$", re.MULTILINE)


class NoteIndex(NamedTuple):
    """Keyword → note slugs, from the notes' titles and bodies (never their frontmatter keys).

    The reference took the first 12 tokens of each file, frontmatter included,
    so every note "matched" on `title`, `kind`, `concept`….
    """

    by_keyword: Mapping[str, tuple[str, ...]] = {}  # never changed: a Mapping, shared by default

    @classmethod
    def load(cls, note_root: Path) -> NoteIndex:
        index: dict[str, set[str]] = {}
        try:
            paths = sorted(note_root.rglob("*.md"))
        except OSError:
            paths = []
        for path in paths:
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            body, head = text, ""
            match = _FRONTMATTER.match(text)
            if match:
                head = " ".join(m.group(1) for m in _TITLE.finditer(match.group(1)))
                body = text[match.end() :]
            for word in keywords(f"{head} {head} {body}", NOTE_KEYWORDS):
                index.setdefault(word, set()).add(path.stem)
        return cls({word: tuple(sorted(slugs)) for word, slugs in index.items()})

    def key(self) -> str:
        """What the index holds, as a digest (part of an extraction memo's context)."""
        return sha256_hex(repr(sorted(self.by_keyword.items())))

    def match(self, words: Iterable[str]) -> list[str]:
        scores: Counter[str] = Counter()
        for word in words:
            for slug in self.by_keyword.get(word, ()):
                scores[slug] += 1
        ranked = sorted((-score, slug) for slug, score in scores.items() if score >= NOTE_MIN_OVERLAP)
        return [slug for _, slug in ranked[:NOTE_MATCHES]]


# --------------------------------------------------------------------------- knowledge fields


# Sentence fields, in priority order: a sentence goes to the first field it fits.
# Latin terms match as whole words (case-insensitive); CJK terms and marks anywhere.
SENTENCE_FIELDS: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    # …and any word ending in error/exception ("TypeError"): see _SUFFIXES.
    ("error_messages", ("traceback", "panic", "errno", "错误", "异常"), False),
    (
        "failed_solutions",
        (
            "did not work",
            "doesn't work",
            "didn't work",
            "failed approach",
            "dead end",
            "无效",
            "不生效",
            "死胡同",
            "否定方案",
            "失败方案",
        ),
        False,
    ),
    ("root_cause", ("root cause", "caused by", "because of", "原因", "根因"), False),
    (
        "final_solution",
        (
            "solution",
            "solved",
            "resolved",
            "fix",
            "fixed",
            "fixes",
            "the fix",
            "workaround",
            "解决",
            "修复",
            "最终",
            "结论",
        ),
        False,
    ),
    ("rollback", ("rollback", "roll back", "revert", "reverted", "restore", "回滚", "恢复"), False),
    (
        "risks_side_effects",
        ("risk", "risks", "side effect", "side effects", "warning", "danger", "风险", "副作用", "警告", "危险"),
        False,
    ),
    ("non_applicability", ("does not apply", "not applicable", "不适用", "不要用于"), False),
    ("applicability", ("applies", "applicable", "适用", "前置条件", "场景"), False),
    (
        "validation_results",
        ("passed", "passes", "verified", "validation", "tests pass", "green", "通过", "验证"),
        False,
    ),
    (
        "symptoms",
        (
            "symptom",
            "symptoms",
            "failed",
            "failing",
            "fails",
            "slow",
            "timeout",
            "timed out",
            "hangs",
            "crash",
            "crashes",
            "问题",
            "现象",
            "失败",
            "超时",
            "缓慢",
        ),
        False,
    ),
    (
        "investigation_steps",
        (
            "inspect",
            "inspected",
            "check",
            "checked",
            "trace",
            "traced",
            "search",
            "searched",
            "diagnose",
            "diagnosed",
            "bisect",
            "排查",
            "检查",
            "定位",
            "读取",
            "搜索",
            "诊断",
        ),
        False,
    ),
    ("attempted_solutions", ("attempt", "attempted", "tried", "try", "trying", "方案", "尝试", "改用"), False),
    (
        "changes",
        ("change", "changed", "patch", "patched", "edit", "edited", "修改", "补丁", "配置变更", "代码变更"),
        False,
    ),
    ("trigger_conditions", ("when", "whenever", "trigger", "triggers", "triggered", "条件", "触发"), False),
    (
        "reusable_lessons",
        (
            "lesson",
            "lessons",
            "principle",
            "generalize",
            "generalise",
            "always",
            "never",
            "经验",
            "原则",
            "方法论",
            "可推广",
        ),
        False,
    ),
    ("unresolved_questions", ("?", "？", "未解决", "待验证"), True),  # user sentences only
)


# Python's regex engine runs a case-insensitive alternation of a hundred terms at
# under 1 MB/s; set intersection and str.find run in C. So: the message's words
# as a set, intersected with the terms; then each hit's occurrences by find.
# Word endings that count on their own ("TypeError", "NullPointerException").
_SUFFIXES = ("error", "errors", "exception", "exceptions")
# Sentence delimiters: "\n", ". ", "! ", "? ", "。", "！", "？".
_SENTENCE_BREAK = re.compile(r"\n|[.!?] |[。！？]")


def _index_terms() -> tuple[dict[str, tuple[int, ...]], tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]]:
    words: dict[str, list[int]] = {}
    phrases: list[tuple[str, int]] = []
    marks: list[tuple[str, int]] = []
    for i, (_, terms, _) in enumerate(SENTENCE_FIELDS):
        for term in terms:
            if term.isascii() and term[0].isalnum():
                if term.isalnum():
                    words.setdefault(term, []).append(i)
                else:
                    phrases.append((term, i))
            else:
                marks.append((term, i))
    return {w: tuple(f) for w, f in words.items()}, tuple(phrases), tuple(marks)


_WORD_FIELDS, _PHRASES, _MARKS = _index_terms()
_WORD_SET = frozenset(_WORD_FIELDS)
_ASCII_MARKS = tuple((mark, f) for mark, f in _MARKS if mark.isascii())
_ERROR_FIELD = 0  # error_messages


def _is_word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def _occurrences(low: str, term: str, *, whole: bool) -> Iterator[int]:
    """Start offsets of ``term`` in ``low``; ``whole``: as a word (else only its end must be one)."""
    size = len(low)
    pos = low.find(term)
    while pos >= 0:
        end = pos + len(term)
        if (not whole or pos == 0 or not _is_word_char(low[pos - 1])) and (end == size or not _is_word_char(low[end])):
            yield pos
        pos = low.find(term, end)


def _term_hits(low: str) -> list[tuple[int, int]]:
    """``(offset, field number)`` of every field term in a lower-cased message."""
    hits: list[tuple[int, int]] = []
    for word in set(word_list(low)) & _WORD_SET:
        for pos in _occurrences(low, word, whole=True):
            hits.extend((pos, f) for f in _WORD_FIELDS[word])
    for phrase, field_no in _PHRASES:
        if phrase in low:
            hits.extend((pos, field_no) for pos in _occurrences(low, phrase, whole=True))
    if "error" in low or "exception" in low:
        for suffix in _SUFFIXES:
            hits.extend((pos, _ERROR_FIELD) for pos in _occurrences(low, suffix, whole=False))
    for mark, field_no in _ASCII_MARKS if low.isascii() else _MARKS:
        if mark in low:
            start = low.find(mark)
            while start >= 0:
                hits.append((start, field_no))
                start = low.find(mark, start + len(mark))
    hits.sort()
    return hits


class _Sentences:
    """Where the sentences of one text start and end: its delimiters found once,
    then each lookup is a bisection (not seven scans per term hit)."""

    def __init__(self, text: str) -> None:
        self.size = len(text)
        self.at: list[int] = []  # delimiter offsets, ascending
        self.after: list[int] = []  # where the next sentence starts
        self.ends: list[int] = []  # where the sentence before it ends (a newline is not in it)
        for match in _SENTENCE_BREAK.finditer(text):
            i = match.start()
            self.at.append(i)
            self.after.append(match.end())
            self.ends.append(i if text[i] == "\n" else i + 1)

    def around(self, pos: int) -> tuple[int, int]:
        """(start, end) of the sentence holding ``pos``: after the last delimiter that
        ends at or before it, up to the first delimiter at or after it."""
        k = bisect_right(self.at, pos - 1)
        start = 0
        # A delimiter starting just before pos may end after it (". " at pos - 1);
        # the one before it ends in time, and no earlier one ends later.
        for j in (k - 1, k - 2):
            if j >= 0 and self.after[j] <= pos:
                start = self.after[j]
                break
        k = bisect_left(self.at, pos)
        return start, self.ends[k] if k < len(self.at) else self.size


SINGLE_FIELDS = ("root_cause", "final_solution")

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
_VERSIONS = re.compile(
    r"(?<![A-Za-z0-9_])(?:OMP|OpenCode|Codex|Astro|Node(?:\.js)?|pnpm|Java|Spring|Docker|MySQL|TypeScript"
    r"|Svelte|Python)\s*(?:v|version)?\s*\d+(?:\.\d+){0,3}(?![A-Za-z0-9_])",
    re.IGNORECASE,
)
# The same over lower-cased text: three times faster than IGNORECASE in `re`.
_VERSIONS_LOW = re.compile(
    r"(?<![a-z0-9_])(?:omp|opencode|codex|astro|node(?:\.js)?|pnpm|java|spring|docker|mysql|typescript"
    r"|svelte|python)\s*(?:v|version)?\s*\d+(?:\.\d+){0,3}(?![a-z0-9_])"
)
# A command at the start of a line (MULTILINE `^` fails fast off a line start).
_COMMANDS = re.compile(
    r"^[ \t]*(?:\$ )?(?:pnpm|npm|npx|node|bun|cargo|mvn|gradle|pytest|vitest|git|make|uv|pip|python3?"
    r"|go|docker|kubectl|kb)[ \t]+[^\n]{1,180}",
    re.MULTILINE,
)


@functools.cache
def _cjk() -> re.Pattern[str]:
    """Compiled on first use (the regex compiler expands the range one code point at a
    time: 1.4 ms, which a rerun's own process never needs)."""
    return re.compile(r"[\u4e00-\u9fff]")


def _has_cjk(text: str) -> bool:
    return not text.isascii() and _cjk().search(text) is not None


_FENCE_BODY = re.compile(r"```[^\n]*\n([\s\S]*?)```")


def _sentence_fields(pieces: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """Each sentence that uses a field's terms goes to the first such field with room."""
    fields: dict[str, list[str]] = {name: [] for name, _, _ in SENTENCE_FIELDS}
    for role, text in pieces:
        low = text.lower()
        if len(low) != len(text):  # a few characters lower-case to two: offsets must agree
            text = low
        sentences: dict[int, tuple[int, set[int]]] = {}
        end = -1
        start = 0
        bounds: _Sentences | None = None
        for pos, field_no in _term_hits(low):
            if SENTENCE_FIELDS[field_no][2] and role != "user":
                continue
            if pos >= end:
                bounds = bounds or _Sentences(text)
                start, end = bounds.around(pos)
                end = max(end, pos + 1)
            sentences.setdefault(start, (end, set()))[1].add(field_no)
        for start, (end, found) in sorted(sentences.items()):
            sentence = text[start:end].strip()[:SNIPPET_CHARS]
            if not sentence:
                continue
            for field_no in sorted(found):
                bucket = fields[SENTENCE_FIELDS[field_no][0]]
                if len(bucket) < FIELD_SNIPPETS:
                    bucket.append(sentence)
                    break
    return fields


def _unique(matches: Iterable[str], limit: int) -> list[str]:
    seen: dict[str, None] = {}
    for match in matches:
        text = match.strip()
        if text and text not in seen:
            seen[text] = None
            if len(seen) == limit:
                break
    return list(seen)


def _environments(text: str, words: set[str]) -> list[str]:
    """Named platforms and tools, canonically spelt, in order of first mention."""
    low = text.lower()
    found: dict[str, int] = {}
    for word in words & ENVIRONMENTS.keys():
        # Two words name Node.js: the earlier mention counts (not the one a set yields last).
        name, pos = ENVIRONMENTS[word], low.find(word)
        found[name] = min(pos, found.get(name, pos))
    if "arch linux" in low:
        found["Arch Linux"] = low.find("arch linux")
    return sorted(found, key=lambda name: (found[name], name))[:ENV_MATCHES]


def _versions(text: str) -> Iterator[str]:
    low = text.lower()
    if len(low) != len(text):  # a few characters lower-case to two: offsets must agree
        yield from (m.group(0) for m in _VERSIONS.finditer(text))
        return
    yield from (text[m.start() : m.end()] for m in _VERSIONS_LOW.finditer(low))


def knowledge_fields(
    turn: Sequence[KeptRecord], pieces: Sequence[tuple[str, str]], text: str, words: set[str] | None = None
) -> dict[str, object]:
    """The reference's knowledge fields for one candidate: ``pieces`` are the
    (role, text) messages of its chunk, ``text`` the rendered chunk (``words``
    its :func:`words_of`, if known); the goal is the turn's prompt."""
    fields = _sentence_fields(pieces)
    if words is None:
        words = words_of(text)
    user = next((r.text for r in turn if r.role == "user"), "")
    last_assistant = next((t for role, t in reversed(pieces) if role == "assistant"), "")
    root_cause = fields["root_cause"][-1] if fields["root_cause"] else ""
    final_solution = fields["final_solution"][-1] if fields["final_solution"] else last_assistant[:2_000]
    return {
        "user_goal": user[:USER_GOAL_CHARS],
        "technical_environment": _environments(text, words),
        "software_versions": (
            _unique(_versions(text), ENV_MATCHES) if words & _VERSIONED and any(d in text for d in "0123456789") else []
        ),
        **{name: fields[name] for name in fields if name not in SINGLE_FIELDS},
        "root_cause": root_cause,
        "final_solution": final_solution,
        "validation_commands": _unique((m.group(0) for m in _COMMANDS.finditer(text)), ENV_MATCHES),
    }


# --------------------------------------------------------------------------- candidates


def candidate_id(source_key: str, fp: str, turn_index: int, chunk_index: int) -> str:
    """Unique and stable: the reference's sha256(source_key \\0 fingerprint) collided for
    two turns with equal text, so the turn and chunk position are part of the id."""
    return sha256_hex(f"{source_key}\0{fp}\0{turn_index}\0{chunk_index}")


def source_fields(meta: SourceMeta, fp: str, turn_index: int, chunk_index: int) -> dict[str, object]:
    """The fields of a candidate that come from its source and place, not from its text
    (and its duplicate marking, as built: none yet); a recalled candidate gets them anew."""
    decision, duplicate_of = marking("")
    return {
        "source_refs": [meta.source_key],
        "candidate_id": candidate_id(meta.source_key, fp, turn_index, chunk_index),
        "source_key": meta.source_key,
        "session_key": meta.session_key,
        "project_key": meta.project_key,
        "decision": decision,
        "duplicate_of": duplicate_of,
        "turn_index": turn_index,
        "chunk_index": chunk_index,
    }


class TurnMemo(Protocol):
    """What a turn's candidates were last time (see :mod:`kbtools.ingest.memo`)."""

    def turn_key(self, turn: Sequence[KeptRecord]) -> bytes: ...

    def recall(self, key: bytes, turn_index: int, budget: int) -> list[dict[str, object]] | None:
        """The candidates of the turn ``key`` as a fresh build would make them, or None."""

    def note(self, key: bytes, turn_index: int, candidates: Sequence[dict[str, object]]) -> None: ...


def build_candidates(
    meta: SourceMeta,
    records: Sequence[KeptRecord],
    notes: NoteIndex,
    *,
    max_candidate: int,
    max_text: int,
    base_confidence: float = 0.3,
    require_signal: bool = True,
    memo: TurnMemo | None = None,
) -> CandidateBatch:
    """Turn-sized candidates (dicts in ledger field order, not yet deduplicated).

    A turn the ``memo`` knows (same kept messages as last time) is recalled, not built."""
    out: list[dict[str, object]] = []
    budget = max_text
    for turn_index, turn in enumerate(split_turns(records)):
        key = memo.turn_key(turn) if memo is not None else b""
        made = memo.recall(key, turn_index, budget) if memo is not None else None
        if made is None:
            made, truncated = _turn_candidates(
                meta, turn, turn_index, notes, budget, max_candidate, base_confidence, require_signal
            )
            if truncated:
                out.extend(made)
                return CandidateBatch(tuple(out), True)
        out.extend(made)
        budget -= sum(len(str(c["text"])) for c in made)
        if memo is not None:
            memo.note(key, turn_index, made)
    return CandidateBatch(tuple(out), False)


def _turn_candidates(
    meta: SourceMeta,
    turn: Sequence[KeptRecord],
    turn_index: int,
    notes: NoteIndex,
    budget: int,
    max_candidate: int,
    base_confidence: float,
    require_signal: bool,
) -> tuple[list[dict[str, object]], bool]:
    """The candidates of one turn, and whether ``budget`` (characters) cut them off."""
    out: list[dict[str, object]] = []
    whole = "\n".join(render(r.role, r.text) for r in turn)
    whole_words = words_of(whole)
    signals = technical_signals(whole, whole_words)
    if require_signal and (len(whole) < MIN_TURN_CHARS or not signals):
        return out, False
    for chunk_index, chunk in enumerate(_chunks(turn, max_candidate)):
        text, members = chunk.text, chunk.members
        if len(text) > budget:
            return out, True
        budget -= len(text)
        fp = fingerprint(text)
        tokens = keyword_tokens(text)
        words = top_words(tokens)
        matches = notes.match(words)
        # The chunk's word set: the turn's when it is the whole turn; for ASCII
        # text (NFKC changes nothing) the keyword tokens are the same words.
        text_words = whole_words if text == whole else set(tokens) if text.isascii() else None
        fields = knowledge_fields(turn, chunk.pieces, text, text_words)
        evidence = sum(bool(fields[k]) for k in ("root_cause", "validation_results", "validation_commands"))
        confidence = round(min(base_confidence + 0.1 * evidence, 0.9), 2)
        labels = _unique((label for r in members for label in r.labels), 64)
        out.append(
            ordered(
                {
                    **fields,
                    "topic": " / ".join(words[:3]) or "uncategorized",
                    "confidence": confidence,
                    "existing_kb_status": f"matched:{','.join(matches)}" if matches else "not_matched",
                    "tool": meta.tool,
                    "record_type": meta.record_type,
                    "format": meta.format,
                    "text": text,
                    "summary": " ".join(text.split())[:SUMMARY_CHARS],
                    "language": "zh" if _has_cjk(text) else "und",
                    "created_at": members[0].created_at or meta.created_at,
                    "updated_at": members[-1].created_at or meta.updated_at,
                    "note_matches": matches,
                    "redactions": labels,
                    "conclusion_status": "unverified_inference",
                    "scores": {
                        "relevance": round(min(0.2 + 0.1 * len(signals), 1.0), 2),
                        "confidence": confidence,
                        "novelty": 0.3 if matches else 0.7,
                    },
                    "topic_keys": words[:5],
                    "fingerprint": fp,
                    **source_fields(meta, fp, turn_index, chunk_index),
                },
                "candidates",
            )
        )
    return out, False


_DECODER = json.JSONDecoder()


class DedupKey(NamedTuple):
    """What the ledger-wide duplicate marking needs of one candidate, computed where
    the candidate is built (a worker process), so the ledger writer gets no text."""

    fingerprint: str
    candidate_id: str
    marking: tuple[object, object]  # (decision, duplicate_of) as the candidate's line has them
    code_blocks: tuple[bytes, ...]  # digests of its fenced code bodies (see _digests)
    error_logs: tuple[bytes, ...]  # digests of its error messages

    @classmethod
    def of(cls, candidate: Mapping[str, object]) -> DedupKey:
        return cls._read(candidate.get)

    @classmethod
    def of_line(cls, line: bytes) -> DedupKey:
        """The key of a stored candidate line, decoding only the fields it needs
        (a top-level key is the only place ``"name":`` appears unescaped)."""
        row = line.decode("utf-8")

        def value(name: str, default: object = None) -> object:
            if name == "text" and "```" not in row:
                return ""  # only its fenced code blocks are needed
            at = row.find(f'"{name}":')
            return default if at < 0 else _DECODER.raw_decode(row, at + len(name) + 3)[0]

        return cls._read(value)

    @classmethod
    def _read(cls, value: Callable[..., object]) -> DedupKey:
        text = str(value("text", ""))
        bodies = _FENCE_BODY.findall(text) if "```" in text else ()
        errors = value("error_messages")
        return cls(
            str(value("fingerprint", "")),
            str(value("candidate_id", "")),
            (value("decision"), value("duplicate_of")),
            _digests(bodies),
            _digests(str(e) for e in errors) if isinstance(errors, list) else (),
        )


class StoredKeys(NamedTuple):
    """The dedup keys of one source's candidate lines, as the key cache keeps them
    (plain tuples: one per field, the digests of all candidates in one run)."""

    fingerprints: tuple[str, ...]
    candidate_ids: tuple[str, ...]
    decisions: tuple[object, ...]  # the markings of the lines as written
    duplicates_of: tuple[object, ...]
    code_blocks: tuple[bytes, ...]
    error_logs: tuple[bytes, ...]

    @classmethod
    def of(cls, keys: Sequence[DedupKey], markings: Sequence[tuple[object, object]]) -> StoredKeys:
        return cls(
            tuple(k.fingerprint for k in keys),
            tuple(k.candidate_id for k in keys),
            tuple(d for d, _ in markings),
            tuple(u for _, u in markings),
            tuple(b for k in keys for b in k.code_blocks),
            tuple(e for k in keys for e in k.error_logs),
        )

    @property
    def markings(self) -> list[tuple[object, object]]:
        return list(zip(self.decisions, self.duplicates_of))

    def plain(self) -> tuple[tuple[object, ...], ...]:
        """As a plain tuple (marshal takes no tuple subclass)."""
        return tuple(self)

    def marked(self, markings: Sequence[tuple[object, object]]) -> StoredKeys:
        return self._replace(decisions=tuple(d for d, _ in markings), duplicates_of=tuple(u for _, u in markings))


def marking(duplicate_of: str) -> tuple[str, str]:
    """(decision, duplicate_of) of a candidate whose canonical twin is ``duplicate_of`` ("" if none)."""
    return ("duplicate", duplicate_of) if duplicate_of else ("jotting", "")


class Deduplicator:
    """Exact duplicates across the whole ledger, in ledger order: the first is canonical."""

    def __init__(self) -> None:
        self._canonical: dict[str, str] = {}
        self._code_blocks = _RepeatCounter()
        self._error_logs = _RepeatCounter()

    def mark(self, key: DedupKey) -> str:
        """The canonical candidate id this one duplicates, or "" when it is the first."""
        first = self._canonical.setdefault(key.fingerprint, key.candidate_id)
        self._code_blocks.add_all(key.code_blocks)
        self._error_logs.add_all(key.error_logs)
        return first if first != key.candidate_id else ""

    def mark_stored(self, keys: StoredKeys) -> tuple[int, list[str] | None]:
        """:meth:`mark` for a source's keys as the key cache keeps them: (how many are
        duplicates, None when every marking equals the stored one, else each key's
        canonical twin or "")."""
        self._code_blocks.add_all(keys.code_blocks)
        self._error_logs.add_all(keys.error_logs)
        canonical = self._canonical
        fingerprints, count = keys.fingerprints, len(keys.fingerprints)
        if (
            keys.decisions.count("jotting") == count
            and keys.duplicates_of.count("") == count
            and canonical.keys().isdisjoint(fingerprints)
            and len(set(fingerprints)) == count
        ):
            # The usual case, in C: new fingerprints, each once, all stored as firsts.
            canonical.update(zip(fingerprints, keys.candidate_ids))
            return 0, None
        setdefault = canonical.setdefault
        duplicates = 0
        changed = False
        twins: list[str] = []
        for fp, cid, decision, duplicate_of in zip(
            keys.fingerprints, keys.candidate_ids, keys.decisions, keys.duplicates_of
        ):
            first = setdefault(fp, cid)
            if first != cid:
                duplicates += 1
                changed = changed or decision != "duplicate" or duplicate_of != first
                twins.append(first)
            else:
                changed = changed or decision != "jotting" or duplicate_of != ""
                twins.append("")
        return duplicates, twins if changed else None

    def apply(self, candidate: dict[str, object]) -> dict[str, object]:
        candidate["decision"], candidate["duplicate_of"] = marking(self.mark(DedupKey.of(candidate)))
        return candidate

    @property
    def duplicate_code_blocks(self) -> int:
        return self._code_blocks.repeats

    @property
    def duplicate_error_logs(self) -> int:
        return self._error_logs.repeats


def _digests(texts: Iterable[str]) -> tuple[bytes, ...]:
    """128-bit digests of the normalised texts of 40 characters or more: a run's
    counts need no more, and the texts are not kept."""
    out = []
    for text in texts:
        # normalize_text, without NFKC for ASCII text (the same result).
        norm = " ".join(text.lower().split()) if text.isascii() else normalize_text(text)
        if len(norm) >= 40:
            out.append(hashlib.blake2b(norm.encode("utf-8", "replace"), digest_size=16).digest())
    return tuple(out)


class _RepeatCounter:
    """How many normalised texts (≥ 40 chars) repeat one seen before."""

    def __init__(self) -> None:
        self._seen: set[bytes] = set()
        self.repeats = 0

    def add_all(self, digests: Collection[bytes]) -> None:
        before = len(self._seen)
        self._seen.update(digests)
        self.repeats += len(digests) - (len(self._seen) - before)
