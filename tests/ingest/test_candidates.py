from __future__ import annotations

import re
import sys
import unicodedata
from collections import Counter
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from kbtools.ingest.candidates import (
    STOPWORDS,
    KeptRecord,
    NoteIndex,
    SourceMeta,
    build_candidates,
    is_internal_candidate,
    render,
    split_messages,
    split_turns,
    top_words,
    within_budget,
)
from kbtools.ingest.dedup import DedupKey, Deduplicator, StoredKeys, marking
from kbtools.ingest.hashing import fingerprint
from kbtools.ingest.rows import FIELDS, CandidateRow
from tests.testing.sessions import log_paste

META = SourceMeta("k" * 64, "s" * 64, "p" * 64, "omp", "session", "jsonl", "", "")
PROMPT = "Why does the TypeScript build fail with error TS2307? Please find the root cause and a fix."
ANSWER = "The root cause is a missing alias. The fix is to add it; pnpm build then passes. Verified."


def rec(role: str, text: str, index: int = 0) -> KeptRecord:
    return KeptRecord(role, text, "", index)


def build(records: list[KeptRecord], **kw: object) -> tuple[list[dict[str, object]], bool]:
    kw = {"max_candidate": 8_000, "max_text": 120_000, **kw}
    return build_candidates(META, records, NoteIndex(), **kw)  # type: ignore[arg-type]


def test_a_turn_is_a_prompt_with_the_replies_that_follow() -> None:
    records = [
        rec("assistant", "preamble"),
        rec("user", "q1"),
        rec("assistant", "a1"),
        rec("assistant", "a2"),
        rec("user", "q2"),
    ]
    assert [[r.text for r in t] for t in split_turns(records)] == [["preamble"], ["q1", "a1", "a2"], ["q2"]]


def test_candidates_have_the_ledger_fields_in_order() -> None:
    (candidate,), _ = build([rec("user", PROMPT), rec("assistant", ANSWER)])
    assert tuple(candidate) == FIELDS[CandidateRow]
    assert None not in candidate.values()  # every knowledge field filled (knowledge.FILLED)
    assert candidate["text"] == f"[user] {PROMPT}\n[assistant] {ANSWER}"
    assert candidate["fingerprint"] == fingerprint(str(candidate["text"]))
    assert candidate["user_goal"] == PROMPT
    assert "root cause" in str(candidate["root_cause"]).lower()


def test_turn_without_technical_signal_or_too_short_is_no_candidate() -> None:
    assert (
        build(
            [
                rec("user", "What a lovely day it is today, shall we go for a walk along the river later on?"),
                rec("assistant", "Yes, a walk along the river sounds like a wonderful idea for this afternoon."),
            ]
        )[0]
        == []
    )
    assert build([rec("user", "fix the build")])[0] == []


def test_long_turn_is_split_at_whitespace_within_the_limit_and_nothing_is_lost() -> None:
    words = [f"word{i}" for i in range(3000)]
    answer = "The build error is fixed. " + " ".join(words)
    candidates, truncated = build([rec("user", PROMPT), rec("assistant", answer)], max_candidate=2_000)
    assert not truncated and len(candidates) > 5
    assert all(len(str(c["text"])) <= 2_000 for c in candidates)
    joined = " ".join(str(c["text"]) for c in candidates)
    assert all(w in joined for w in words)
    assert [c["chunk_index"] for c in candidates] == list(range(len(candidates)))


def test_budget_stops_at_max_text_and_says_so() -> None:
    records = [r for i in range(10) for r in (rec("user", f"{PROMPT} ({i})"), rec("assistant", ANSWER))]
    candidates, truncated = build(records, max_text=600)
    assert truncated
    assert sum(len(str(c["text"])) for c in candidates) <= 600 and candidates


def test_a_long_paste_loses_its_tail_not_the_turns_after_it() -> None:
    paste = log_paste(3_000)  # about three times the budget
    assert len(paste) > 3 * 60_000
    later = [(f"Next error in the build ({i}): {PROMPT}", f"{ANSWER} ({i})") for i in range(6)]
    records = [rec("user", f"The deploy fails with this error log:\n{paste}"), rec("assistant", ANSWER)]
    records += [rec(role, text) for turn in later for role, text in zip(("user", "assistant"), turn)]
    candidates, truncated = build(records, max_text=60_000)
    assert truncated
    assert sum(len(str(c["text"])) for c in candidates) <= 60_000
    assert sorted({c["turn_index"] for c in candidates}) == list(range(7))  # every turn kept
    later_texts = [str(c["text"]) for c in candidates if c["turn_index"] != 0]
    assert later_texts == [f"[user] {q}\n[assistant] {a}" for q, a in later]
    pasted = [c for c in candidates if c["turn_index"] == 0]
    assert [c["chunk_index"] for c in pasted] == list(range(len(pasted))) and len(pasted) > 3
    kept = [word for c in pasted for word in str(c["text"]).split() if word != "[user]"]
    assert kept == str(records[0].text).split()[: len(kept)]  # the paste's head, in order, whole
    assert len(kept) > 2_000


def test_with_room_for_everything_the_budget_keeps_everything() -> None:
    records = [rec("user", f"The deploy fails with this error log:\n{log_paste(1_000)}"), rec("assistant", ANSWER)]
    records += [rec("user", PROMPT), rec("assistant", ANSWER)]
    candidates, truncated = build(records)
    assert not truncated
    assert "\n".join(str(c["text"]) for c in candidates).count("api.request") == 1_000


@given(st.lists(st.lists(st.integers(1, 50), max_size=6), max_size=6), st.integers(0, 400))
def test_the_budget_is_spent_round_by_round(lengths: list[list[int]], budget: int) -> None:
    kept, truncated = within_budget(lengths, budget)
    assert all(0 <= k <= len(sizes) for k, sizes in zip(kept, lengths, strict=True))
    assert sum(sum(sizes[:k]) for k, sizes in zip(kept, lengths)) <= budget
    assert truncated == (kept != [len(sizes) for sizes in lengths])
    # No turn is two chunks ahead of a turn that still has chunks left ...
    for k in kept:
        assert all(k <= other + 1 for other, more in zip(kept, lengths) if other < len(more))
    # ... and what was cut did not fit: the next chunk in line is larger than what is left.
    if truncated:
        depth = min(k for k, sizes in zip(kept, lengths) if k < len(sizes))
        at = next(i for i, (k, sizes) in enumerate(zip(kept, lengths)) if k == depth < len(sizes))
        spent = sum(sum(sizes[:k]) for k, sizes in zip(kept, lengths))
        assert lengths[at][depth] > budget - spent


def test_equal_turns_get_distinct_stable_ids() -> None:
    records = [rec("user", PROMPT), rec("assistant", ANSWER)] * 2
    first, _ = build(records)
    again, _ = build(records)
    assert first[0]["candidate_id"] != first[1]["candidate_id"]
    assert [c["candidate_id"] for c in first] == [c["candidate_id"] for c in again]


def mark(dedup: Deduplicator, candidate: dict[str, object]) -> tuple[object, object]:
    """The marking ``dedup`` gives one candidate, as a source of its own."""
    key = DedupKey.of({"decision": "jotting", "duplicate_of": "", **candidate})
    _, twins = dedup.mark_stored(StoredKeys.of([key]))
    return key.marking if twins is None else marking(twins[0])


class OneByOne:
    """The reference marking, one candidate at a time in ledger order: the first of a
    fingerprint is canonical; a code block or error log seen before is a repeat."""

    def __init__(self) -> None:
        self.canonical: dict[str, str] = {}
        self.code_blocks: set[bytes] = set()
        self.error_logs: set[bytes] = set()
        self.duplicate_code_blocks = self.duplicate_error_logs = 0

    def mark(self, key: DedupKey) -> str:
        first = self.canonical.setdefault(key.fingerprint, key.candidate_id)
        self.duplicate_code_blocks += self.repeats(self.code_blocks, key.code_blocks)
        self.duplicate_error_logs += self.repeats(self.error_logs, key.error_logs)
        return first if first != key.candidate_id else ""

    @staticmethod
    def repeats(seen: set[bytes], digests: tuple[bytes, ...]) -> int:
        count = 0
        for digest in digests:
            count += digest in seen
            seen.add(digest)
        return count


def test_duplicates_point_at_the_first_candidate_with_the_same_text() -> None:
    dedup = Deduplicator()
    a = mark(dedup, {"candidate_id": "a", "fingerprint": fingerprint("Hello  WORLD"), "text": ""})
    b = mark(dedup, {"candidate_id": "b", "fingerprint": fingerprint(" hello world "), "text": ""})
    assert a == ("jotting", "")
    assert b == ("duplicate", "a")


def test_repeated_code_blocks_are_counted() -> None:
    dedup = Deduplicator()
    block = "```sh\n" + "pnpm install --frozen-lockfile && pnpm build\n" + "```"
    for i in range(3):
        mark(dedup, {"candidate_id": str(i), "fingerprint": str(i), "text": f"run {i}\n{block}"})
    assert dedup.duplicate_code_blocks == 2


def test_marking_stored_keys_equals_marking_each_candidate() -> None:
    """The key cache's path (one record per source) marks and counts as the reference, one candidate at a time."""
    import random

    rng = random.Random(7)
    block = "```\n" + "npm ERR! code ERESOLVE unable to resolve the dependency tree of {}\n" + "```"
    sources = []
    for s in range(30):
        keys = []
        for c in range(rng.randint(0, 6)):
            text = f"step {c}\n" + block.format(rng.randint(0, 5)) if rng.random() < 0.4 else "prose"
            keys.append(
                DedupKey.of(
                    {
                        "candidate_id": f"s{s}c{c}",
                        "fingerprint": f"f{rng.randint(0, 40)}",
                        "text": text,
                        "error_messages": [f"error {rng.randint(0, 4)} in the build of the payment service"],
                        "decision": "jotting",
                        "duplicate_of": "",
                    }
                )
            )
        sources.append(keys)
    one, stored = OneByOne(), Deduplicator()
    for keys in sources:
        expected = [marking(one.mark(key)) for key in keys]
        duplicates, twins = stored.mark_stored(StoredKeys.of(keys))
        assert duplicates == sum(decision == "duplicate" for decision, _ in expected)
        # None: every stored marking ("jotting") still holds.
        assert (twins is None) == all(mark == ("jotting", "") for mark in expected)
        if twins is not None:
            assert [marking(twin) for twin in twins] == expected
        assert StoredKeys.of(keys).markings == [key.marking for key in keys]
        again = StoredKeys.of(keys).marked(expected)
        assert again.markings == expected and again.marked(expected) == again
    assert (stored.duplicate_code_blocks, stored.duplicate_error_logs) == (
        one.duplicate_code_blocks,
        one.duplicate_error_logs,
    )
    assert one.duplicate_code_blocks > 0 and one.duplicate_error_logs > 0


def test_stored_text_is_rechecked_one_message_at_a_time() -> None:
    text = "\n".join(
        [
            render("user", "A legitimate article may quote the _thinking:_ marker"),
            render("assistant", "Keep this answer"),
        ]
    )
    assert [role for role, _ in split_messages(text)] == ["user", "assistant"]
    assert not is_internal_candidate(text)
    assert is_internal_candidate("[user] _thinking_: stale internal transcript")


def test_notes_match_on_their_words_not_their_frontmatter_keys(tmp_path: Path) -> None:
    notes = tmp_path / "note" / "en"
    notes.mkdir(parents=True)
    (notes / "typescript-path-alias.md").write_text(
        "---\ntitle: TypeScript path alias\nkind: concept\nstatus: active\nsources: [x]\n---\n"
        "A TypeScript path alias in tsconfig maps imports; a missing alias breaks the build.\n"
    )
    (notes / "gardening.md").write_text(
        "---\ntitle: Gardening\nkind: concept\nstatus: active\nsources: [y]\n---\nTomatoes need sun.\n"
    )
    index = NoteIndex.load(tmp_path / "note")
    (candidate,), _ = build_candidates(
        META,
        [rec("user", PROMPT), rec("assistant", ANSWER + " Add the path alias to tsconfig.")],
        index,
        max_candidate=8_000,
        max_text=120_000,
    )
    assert candidate["note_matches"] == ["typescript-path-alias"]
    assert candidate["existing_kb_status"] == "matched:typescript-path-alias"
    assert index.match(["kind", "concept", "status", "title"]) == []


def test_each_sentence_fills_one_knowledge_field() -> None:
    from kbtools.ingest.knowledge import knowledge_fields

    answer = (
        "The TypeError was caused by a missing alias. It did not work with a relative import! "
        "We tried a workaround first. Verified: the tests pass now."
    )
    pieces = [("user", "Why does the build fail? 原因是什么？"), ("assistant", answer)]
    fields = knowledge_fields(pieces[0][1], pieces, "")
    assert fields["error_messages"] == ["The TypeError was caused by a missing alias."]
    assert fields["failed_solutions"] == ["It did not work with a relative import!"]
    assert fields["final_solution"] == "We tried a workaround first."
    assert fields["validation_results"] == ["Verified: the tests pass now."]
    assert fields["root_cause"] == "原因是什么？"
    assert fields["unresolved_questions"] == ["Why does the build fail?"]  # a user's open question
    sentences = [s for name, v in fields.items() if isinstance(v, list) and name != "technical_environment" for s in v]
    assert len(sentences) == len(set(sentences))


def test_a_candidate_with_chinese_text_is_marked_zh_and_others_und() -> None:
    languages = []
    for extra in ("", " Le café ferme à midi ; voilà.", " 构建失败的根因是缺少路径别名。"):
        (candidate,), _ = build([rec("user", PROMPT + extra), rec("assistant", ANSWER)])
        languages.append(candidate["language"])
    assert languages == ["und", "und", "zh"]


def _top_words_by_definition(tokens: list[str], limit: int = 12) -> list[str]:
    """Count each content word (longer than two, not a stop word, edge underscores
    stripped), rank by count (ties: first seen), drop numbers, keep ``limit``."""
    counts: Counter[str] = Counter()
    for token in tokens:
        if len(token) > 2 and token not in STOPWORDS:
            counts[token.strip("_")] += 1
    return [w for w, _ in counts.most_common(limit + 8) if len(w) > 2 and not w.isdigit()][:limit]


_TOKEN = st.sampled_from(["the", "cache", "_cache", "cache_", "__init__", "init", "a_b", "___", "ab_", "1234", "_12_"])


@given(st.lists(st.one_of(_TOKEN, st.from_regex(r"[a-z0-9_]{1,6}", fullmatch=True)), max_size=200))
def test_top_words_ranks_as_defined(tokens: list[str]) -> None:
    assert top_words(Counter(tokens)) == _top_words_by_definition(tokens)
    assert top_words(Counter(tokens), 3) == _top_words_by_definition(tokens, 3)


_PROSE = st.lists(
    st.sampled_from(
        ["fix", "the", "Python 3.11", "node.js 20", "pythonpython3", "root cause", "TypeError", "_fix", "xroot cause"]
    )
    | st.sampled_from(
        [" ", "  ", "\n", "\t\t", " " * 700, ". ", "? ", "-", "错误", "问题？", "“", "\x1b", "\u3000", "x"]
    ),
    max_size=60,
).map("".join)


@given(_PROSE)
def test_knowledge_terms_and_versions_are_found_as_defined(text: str) -> None:
    """Each term's occurrences left to right, none overlapping the one before (as
    str.find finds them), kept when its kind's boundaries hold; versions as the regex finds them."""
    from kbtools.ingest import knowledge

    low = text.lower()
    words = set(low.translate(str.maketrans(dict.fromkeys(".,;:!?()[]{}<>\"'`*=/\\|~#@$%^&+-", " "))).split())
    expected = []
    for term, uses in knowledge._TERMS.items():
        pos = low.find(term)
        while pos >= 0:
            end = pos + len(term)
            for kind, field_no in uses:
                before = pos > 0 and (low[pos - 1].isalnum() or low[pos - 1] == "_")
                after = end < len(low) and (low[end].isalnum() or low[end] == "_")
                if kind == knowledge._MARK or not (after or (before and kind != knowledge._SUFFIX)):
                    if kind != knowledge._WORD or term in words:
                        expected.append((pos, field_no))
            pos = low.find(term, end)
    assert knowledge._term_hits(low) == sorted(expected)
    versions = [m.group(0) for m in knowledge._VERSIONS.finditer(text)]
    assert list(knowledge._versions(text)) == versions
    names_at: list[int] = []
    assert knowledge._term_hits(low, names_at=names_at) == sorted(expected)
    if len(low) == len(text):
        assert list(knowledge._versions(text, low, names_at)) == versions
    # The software names are patterns of their own in the terms' automaton.
    assert not knowledge._TERMS.keys() & set(knowledge._VERSION_NAMES)


# Pieces of prose for the fast paths: term words behind non-word characters ("“try”",
# "try\x1b": no token of their own), sentence breaks at piece edges, characters whose
# lower case is longer ("İ") or depends on its neighbours ("Σ"), fences and commands.
_PIECE = st.lists(
    st.sampled_from(["try", "fix", "the fix", "root cause", "TypeError", "when", "did not work", "Python 3.11"])
    | st.sampled_from(["“try”", "try\x1b", "ΣΑΣ", "İ", "é", "e\u0301", "ﬁx", "原因", "问题？", "?", "x"])
    | st.sampled_from([" ", "\n", ". ", "! ", "? ", "。", "\t", "  ", "```py\n", "```", "$ pnpm test", "\n  git log"]),
    max_size=40,
).map("".join)
_PIECES = st.lists(st.tuples(st.sampled_from(["user", "assistant", "agent"]), _PIECE), min_size=1, max_size=4)


@given(_PIECES)
def test_knowledge_fields_of_a_chunk_in_one_pass_are_those_piece_by_piece(pieces: list[tuple[str, str]]) -> None:
    from kbtools.ingest import knowledge

    text = "\n".join(render(role, piece) for role, piece in pieces)
    words = set(knowledge.word_list(text.lower()))
    low = text.lower()
    for present in (None, words & knowledge._WORD_SET):
        by_piece = knowledge._sentence_fields(pieces, present)
        if len(low) == len(text):
            assert knowledge._chunk_sentence_fields(text, low, knowledge._spans(pieces), present) == by_piece
    fields = knowledge.knowledge_fields("goal", pieces, text, words, words if text.isascii() else None)
    assert fields == knowledge.knowledge_fields("goal", pieces, text, words, words if text.isascii() else None, low)
    rendered = knowledge.knowledge_fields("goal", pieces, text, words, None, low, rendered=True)
    assert list(rendered.items()) == list(fields.items())
    assert tuple(fields) == knowledge.FILLED
    # The straightforward way: message by message, the words of each its own (non-ASCII).
    by_piece = knowledge._sentence_fields(pieces, words & knowledge._WORD_SET if text.isascii() else None)
    for name, sentences in by_piece.items():
        if name == "root_cause":
            assert fields[name] == (sentences[-1] if sentences else "")
        elif name == "final_solution":
            last = next((t for role, t in reversed(pieces) if role == "assistant"), "")
            assert fields[name] == (sentences[-1] if sentences else last[:2_000])
        else:
            assert fields[name] == sentences
    assert list(knowledge._commands(text)) == [m.group(0) for m in knowledge._COMMANDS.finditer(text)]


@given(_PIECE)
def test_summary_fingerprint_and_fence_bodies_are_as_defined(text: str) -> None:
    from kbtools.ingest import candidates, dedup

    for sample in (text, text * 40, text.encode("ascii", "ignore").decode() * 40):
        expected = (" ".join(sample.split())[: candidates.SUMMARY_CHARS], fingerprint(sample))
        nfkc = unicodedata.is_normalized("NFKC", sample)
        assert candidates._summary_and_fingerprint(sample, nfkc) == expected
        assert candidates._summary_and_fingerprint(sample, False) == expected
        assert candidates._summary(sample) == " ".join(sample.split())[: candidates.SUMMARY_CHARS]
        assert dedup._fence_bodies(sample) == dedup._FENCE_BODY.findall(sample)


def test_lower_case_keeps_blanks_blanks_and_makes_none() -> None:
    """What the summary and the fingerprint's one split of the text rests on, for every code point."""
    for point in range(sys.maxunicode + 1):
        char = chr(point)
        assert (char.lower() == char) if char.isspace() else not any(c.isspace() for c in char.lower()), hex(point)


def test_re_blanks_are_str_split_blanks() -> None:
    """What the search for a word's edge underscore rests on, for every code point."""
    blank = re.compile(r"\s")
    for point in range(sys.maxunicode + 1):
        char = chr(point)
        assert (blank.match(char) is not None) == char.isspace(), hex(point)


_WORDY = st.lists(
    st.sampled_from(["_", "__init__", "a_b", "x", "é", "_é", "1_", "ΣΑΣ"])
    | st.sampled_from([" ", "\n", "\t", "\u3000", "\x1c", ".", "-", "(", "`", "$", "\\", "]", "^", "\x85"]),
    max_size=30,
).map("".join)


@given(_WORDY)
def test_an_edge_underscore_is_found_as_defined(text: str) -> None:
    from kbtools.ingest import candidates

    low = text.lower()
    words = candidates.word_list(low)
    expected = any(w.startswith("_") or w.endswith("_") for w in words)
    assert (candidates._EDGE_UNDERSCORE.search(low) is not None) == expected
    counts = Counter(words)
    assert top_words(counts, edges=expected) == top_words(counts) == _top_words_by_definition(words)


_COMMAND_NAMES = (
    "pnpm npm npx node bun cargo mvn gradle pytest vitest git make uv pip python python3 go docker kubectl kb"
)
_COMMAND_LINE = st.tuples(
    st.sampled_from(["", " ", "\t ", "\u3000", "x"]),
    st.sampled_from(["", "$ ", "$", "$  "]),
    st.sampled_from([*_COMMAND_NAMES.split(), "Git", "pythonx", "gox", ""]),
    st.sampled_from(["", " ", "\t", " \t"]),
    st.sampled_from(["", "x", "test -v", " "]),
).map("".join)
_COMMAND_TEXT = st.lists(_COMMAND_LINE, max_size=8).map("\n".join)


@given(_COMMAND_TEXT)
def test_commands_are_found_as_defined(text: str) -> None:
    from kbtools.ingest import knowledge

    assert list(knowledge._commands(text)) == [m.group(0) for m in knowledge._COMMANDS.finditer(text)]


def _sentence_fields_by_definition(pieces: list[tuple[str, str]], present: set[str] | None) -> dict[str, list[str]]:
    """Message by message: a term hit's sentence runs from the end of the last delimiter
    ending at or before it to the first delimiter at or after it (a hit inside the
    sentence before keeps that one); the first field with room takes it."""
    from kbtools.ingest import knowledge

    fields: dict[str, list[str]] = {name: [] for name, _ in knowledge.SENTENCE_FIELDS}
    for role, text in pieces:
        low = text.lower()
        if len(low) != len(text):
            text = low
        breaks = [(at, len(m)) for m in knowledge._SENTENCE_BREAKS for at in range(len(text)) if text.startswith(m, at)]
        sentences: dict[int, tuple[int, set[int]]] = {}
        start, end = 0, -1
        for pos, field_no in knowledge._term_hits(low, present):
            if field_no == knowledge._USER_ONLY and role != "user":
                continue
            if pos >= end:
                start = max([at + n for at, n in breaks if at + n <= pos], default=0)
                end = min([at + (text[at] != "\n") for at, _ in breaks if at >= pos], default=len(text))
                end = max(end, pos + 1)
            sentences.setdefault(start, (end, set()))[1].add(field_no)
        for start, (end, found) in sorted(sentences.items()):
            sentence = text[start:end].strip()[: knowledge.SNIPPET_CHARS]
            for f in sorted(found):
                bucket = fields[knowledge.SENTENCE_FIELDS[f][0]]
                if sentence and len(bucket) < knowledge.FIELD_SNIPPETS:
                    bucket.append(sentence)
                    break
    return fields


@given(_PIECES)
def test_sentence_fields_are_found_as_defined(pieces: list[tuple[str, str]]) -> None:
    from kbtools.ingest import knowledge

    words = set(knowledge.word_list("\n".join(piece for _, piece in pieces).lower()))
    for present in (None, words & knowledge._WORD_SET):
        assert knowledge._sentence_fields(pieces, present) == _sentence_fields_by_definition(pieces, present)
