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

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from operator import itemgetter
from pathlib import Path
from typing import NamedTuple

from kbtools.ingest.control_plane import SEPARATORS, is_internal_text, technical_signals, word_list
from kbtools.ingest.dedup import marking
from kbtools.ingest.hashing import fingerprint, sha256_hex
from kbtools.ingest.knowledge import has_cjk, knowledge_fields, render, unique
from kbtools.ingest.rows import Row
from kbtools.nfkc import nfkc

MIN_TURN_CHARS = 120
SUMMARY_CHARS = 300
KEYWORDS = 12
NOTE_MATCHES = 3
# A note matches when it shares at least this many of the turn's keywords.
NOTE_MIN_OVERLAP = 2
NOTE_KEYWORDS = 40

# "agent": text an agent wrote under the user role (a sub-agent's task prompt),
# kept under its own label so no candidate attributes it to the person.
ROLES = ("user", "assistant", "agent")


class KeptRecord(NamedTuple):
    """A record that passed the role gate, the control-plane and derived filters and redaction."""

    role: str
    text: str  # redacted
    created_at: str
    index: int  # type: ignore[assignment]  # the record's (not tuple.index)
    labels: tuple[str, ...] = ()


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


# --------------------------------------------------------------------------- turns


def split_turns(records: Sequence[KeptRecord]) -> list[list[KeptRecord]]:
    """A user (or agent-prompt) record opens a turn; everything up to the next one belongs to it."""
    turns: list[list[KeptRecord]] = []
    for record in records:
        if record.role != "assistant" or not turns:
            turns.append([record])
        else:
            turns[-1].append(record)
    return turns


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


def _chunks(turn: Sequence[KeptRecord], limit: int) -> list[list[tuple[KeptRecord, str]]]:
    """The turn's records, cut into pieces, packed into chunks of at most ``limit`` rendered characters."""
    chunks: list[list[tuple[KeptRecord, str]]] = [[]]
    size = 0
    for record in turn:
        for piece in _pieces(record, limit):
            length = len(render(record.role, piece))
            if chunks[-1] and size + 1 + length > limit:
                chunks.append([])
                size = 0
            size += length + (1 if chunks[-1] else 0)
            chunks[-1].append((record, piece))
    return [c for c in chunks if c]


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
    return word_list(nfkc(text).lower())


# An underscore that starts or ends one of control_plane.word_list's words of a text: a
# blank, an ASCII separator or the text's edge on one side (re's \s is str.split's
# whitespace). The engine looks for the underscore in C and tries the rest only there.
_BOUNDARY = r"\s" + re.escape("".join(sorted(SEPARATORS)))
_EDGE_UNDERSCORE = re.compile(rf"_(?:(?=[{_BOUNDARY}])|\Z|(?<![^{_BOUNDARY}]_))")


def top_words(distinct: Mapping[str, int], limit: int = KEYWORDS, *, edges: bool | None = None) -> list[str]:
    """The most frequent content words among the :func:`keyword_tokens` ``distinct`` counts
    (ties: first seen; a Counter keeps first-seen order), at most ``limit`` (``edges``:
    whether a token starts or ends with ``"_"``, if known)."""
    if edges is None:
        joined = " ".join(distinct)  # one search in C
        edges = "_" in joined and (joined[0] == "_" or joined[-1] == "_" or " _" in joined or "_ " in joined)
    if edges:
        counts: dict[str, int] = {}  # a plain dict: Counter's += calls __missing__ per new word
        for token, n in distinct.items():
            if len(token) > 2 and token not in STOPWORDS:
                word = token.strip("_")
                counts[word] = counts.get(word, 0) + n
        # Counter.most_common: a stable sort, ties in first-seen order.
        top = [w for w, _ in sorted(counts.items(), key=itemgetter(1), reverse=True)[: limit + 8]]
    else:
        # No token changes when stripped: the counts are the distinct ones, and
        # filtering commutes with the stable sort, so the sort runs in C over all
        # of them and Python looks only at the top until limit + 8 words pass.
        top = []
        for token in sorted(distinct, key=distinct.__getitem__, reverse=True):  # keys: no pair made per token
            if len(token) > 2 and token not in STOPWORDS:
                top.append(token)
                if len(top) == limit + 8:
                    break
    return [w for w in top if len(w) > 2 and not w.isdigit()][:limit]


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
        from kbtools.kb.tree import scan_layer

        # The notes and slugs lint knows (kbtools.kb.tree): drafts and hidden files are not notes.
        for note in scan_layer(note_root).files:
            try:
                text = note.path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            body, head = text, ""
            match = _FRONTMATTER.match(text)
            if match:
                head = " ".join(m.group(1) for m in _TITLE.finditer(match.group(1)))
                body = text[match.end() :]
            for word in top_words(Counter(keyword_tokens(f"{head} {head} {body}")), NOTE_KEYWORDS):
                index.setdefault(word, set()).add(note.slug)
        return cls({word: tuple(sorted(slugs)) for word, slugs in index.items()})

    def match(self, words: Iterable[str]) -> list[str]:
        if not self.by_keyword:
            return []
        scores: dict[str, int] = {}
        for word in words:
            for slug in self.by_keyword.get(word, ()):
                scores[slug] = scores.get(slug, 0) + 1
        ranked = sorted((-score, slug) for slug, score in scores.items() if score >= NOTE_MIN_OVERLAP)
        return [slug for _, slug in ranked[:NOTE_MATCHES]]


# --------------------------------------------------------------------------- candidates


def _summary_and_fingerprint(text: str, normal: bool) -> tuple[str, str]:
    """``" ".join(text.split())[:SUMMARY_CHARS]`` and ``fingerprint(text)`` (``normal``:
    whether NFKC leaves ``text`` as it is)."""
    if not normal:
        return _summary(text), fingerprint(text)
    # Lower case keeps a blank a blank and adds none (so for every code point: see the
    # tests), and no case mapping looks at a blank but to see that it is one: the text's
    # words joined, lower-cased, are its lower case's words joined. One split for both.
    joined = " ".join(text.split())
    return joined[:SUMMARY_CHARS], sha256_hex(joined.lower())


def _summary(text: str) -> str:
    """``" ".join(text.split())[:SUMMARY_CHARS]`` from as short a prefix as gives it: the
    prefix's words joined are a prefix of all the words joined (its last word may be cut)."""
    size = 2 * SUMMARY_CHARS
    while True:
        head = " ".join(text[:size].split())
        if len(head) >= SUMMARY_CHARS or size >= len(text):
            return head[:SUMMARY_CHARS]
        size *= 4


def candidate_id(source_key: str, fp: str, turn_index: int, chunk_index: int) -> str:
    """Unique and stable: the reference's sha256(source_key \\0 fingerprint) collided for
    two turns with equal text, so the turn and chunk position are part of the id."""
    return sha256_hex(f"{source_key}\0{fp}\0{turn_index}\0{chunk_index}")


class _Turn(NamedTuple):
    """A kept turn, split into the chunks it becomes (``texts``: each chunk rendered)."""

    number: int  # its turn_index
    records: list[KeptRecord]
    whole: str
    whole_low: str
    whole_counts: Counter[str]
    signals: set[str]
    chunks: list[list[tuple[KeptRecord, str]]]
    texts: list[str]


def within_budget(lengths: Sequence[Sequence[int]], budget: int) -> tuple[list[int], bool]:
    """How many chunks of each turn the ``budget`` keeps (``lengths``: each turn's chunk
    sizes), and whether it cut any off. The budget is spent round by round: every turn's
    first chunk, in turn order, then every second chunk, and so on, until a chunk does not
    fit. A long paste in one turn then loses its tail, not the turns after it."""
    kept = [0] * len(lengths)
    for depth in range(max(map(len, lengths), default=0)):
        for at, sizes in enumerate(lengths):
            if depth < len(sizes):
                if sizes[depth] > budget:
                    return kept, True
                budget -= sizes[depth]
                kept[at] += 1
    return kept, False


def build_candidates(
    meta: SourceMeta,
    records: Sequence[KeptRecord],
    notes: NoteIndex,
    *,
    max_candidate: int,
    max_text: int,
    base_confidence: float = 0.3,
    require_signal: bool = True,
) -> tuple[list[Row], bool]:
    """Turn-sized candidates (dicts in ledger field order, not yet deduplicated), and whether
    the ``max_text`` budget cut off kept text (:func:`within_budget` says what it keeps)."""
    turns: list[_Turn] = []
    for turn_index, turn in enumerate(split_turns(records)):
        whole = "\n".join([render(r.role, r.text) for r in turn])  # (a list: join makes one of any other)
        whole_low = whole.lower()
        whole_counts = Counter(word_list(whole_low))
        signals = technical_signals(whole, whole_counts.keys())  # (control_plane.words_of(whole), as a set)
        if require_signal and (len(whole) < MIN_TURN_CHARS or not signals):
            continue
        # A turn that fits is one chunk of its records as they are (what _chunks makes of it).
        if len(whole) <= max_candidate and all(r.text for r in turn):
            chunks, texts = [[(r, r.text) for r in turn]], [whole]
        else:
            chunks = _chunks(turn, max_candidate)
            texts = ["\n".join(render(r.role, piece) for r, piece in chunk) for chunk in chunks]
        turns.append(_Turn(turn_index, turn, whole, whole_low, whole_counts, signals, chunks, texts))
    kept, truncated = within_budget([[len(text) for text in t.texts] for t in turns], max_text)
    out: list[Row] = []
    decision, duplicate_of = marking("")  # as built: no duplicate marking yet
    for t, count in zip(turns, kept):
        whole, whole_low, whole_counts = t.whole, t.whole_low, t.whole_counts
        whole_words = whole_counts.keys()
        goal = next((r.text for r in t.records if r.role == "user"), "")  # the turn's prompt
        labelled = any(r.labels for r in t.records)  # (most turns have no redaction)
        for chunk_index in range(count):
            chunk, text = t.chunks[chunk_index], t.texts[chunk_index]
            low = whole_low if text == whole else text.lower()
            normal = text.isascii() or unicodedata.is_normalized("NFKC", text)
            summary, fp = _summary_and_fingerprint(text, normal)
            # The chunk's word set: the turn's when it is the whole turn. Where NFKC changes
            # nothing the keyword tokens are the same words, and for ASCII text every
            # word of its pieces (lower-casing is per character).
            if text == whole and normal:
                words = top_words(whole_counts, edges=_EDGE_UNDERSCORE.search(whole_low) is not None)
                counts = whole_counts
            else:
                counts = Counter(keyword_tokens(text))
                words = top_words(counts)
            text_words = whole_words if text == whole else counts.keys() if text.isascii() else None
            piece_words = text_words if text.isascii() else None
            matches = notes.match(words)
            fields = knowledge_fields(
                goal, [(r.role, piece) for r, piece in chunk], text, text_words, piece_words, low, rendered=True
            )
            evidence = (
                bool(fields["root_cause"]) + bool(fields["validation_results"]) + bool(fields["validation_commands"])
            )
            confidence = round(min(base_confidence + 0.1 * evidence, 0.9), 2)
            labels = unique((label for r, _ in chunk for label in r.labels), 64) if labelled else []
            # In ledger field order (rows.FIELDS, which the tests hold it to): no reordering.
            out.append(
                {
                    "topic": " / ".join(words[:3]) or "uncategorized",
                    **fields,  # user_goal … unresolved_questions (knowledge.FILLED)
                    "confidence": confidence,
                    "source_refs": [meta.source_key],
                    "existing_kb_status": f"matched:{','.join(matches)}" if matches else "not_matched",
                    "candidate_id": candidate_id(meta.source_key, fp, t.number, chunk_index),
                    "source_key": meta.source_key,
                    "session_key": meta.session_key,
                    "project_key": meta.project_key,
                    "tool": meta.tool,
                    "record_type": meta.record_type,
                    "format": meta.format,
                    "text": text,
                    "summary": summary,
                    "language": "zh" if has_cjk(text) else "und",
                    "created_at": chunk[0][0].created_at or meta.created_at,
                    "updated_at": chunk[-1][0].created_at or meta.updated_at,
                    "note_matches": matches,
                    "redactions": labels,
                    "conclusion_status": "unverified_inference",
                    "scores": {
                        "relevance": round(min(0.2 + 0.1 * len(t.signals), 1.0), 2),
                        "confidence": confidence,
                        "novelty": 0.3 if matches else 0.7,
                    },
                    "decision": decision,
                    "topic_keys": words[:5],
                    "fingerprint": fp,
                    "duplicate_of": duplicate_of,
                    "turn_index": t.number,
                    "chunk_index": chunk_index,
                }
            )
    return out, truncated
