"""Exact duplicates across the whole ledger, in ledger order: the first is canonical.

What the marking needs of each candidate (:class:`DedupKey`) is computed where the
candidate is built (a worker process); the key cache keeps it per source
(:class:`StoredKeys`), so an unchanged rerun decodes no candidate text.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

from kbtools.ingest.hashing import normalize_text

_FENCE_BODY = re.compile(r"```[^\n]*\n([\s\S]*?)```")
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
        bodies = _fence_bodies(text) if "```" in text else ()
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
    def of(cls, keys: Sequence[DedupKey]) -> StoredKeys:
        return cls(
            tuple(k.fingerprint for k in keys),
            tuple(k.candidate_id for k in keys),
            tuple(k.marking[0] for k in keys),
            tuple(k.marking[1] for k in keys),
            tuple(b for k in keys for b in k.code_blocks),
            tuple(e for k in keys for e in k.error_logs),
        )

    @property
    def markings(self) -> list[tuple[object, object]]:
        return list(zip(self.decisions, self.duplicates_of))

    def marked(self, markings: Sequence[tuple[object, object]]) -> StoredKeys:
        return self._replace(decisions=tuple(d for d, _ in markings), duplicates_of=tuple(u for _, u in markings))


def marking(duplicate_of: str) -> tuple[str, str]:
    """(decision, duplicate_of) of a candidate whose canonical twin is ``duplicate_of`` ("" if none)."""
    return ("duplicate", duplicate_of) if duplicate_of else ("jotting", "")


class Deduplicator:
    """Exact duplicates across the whole ledger, in ledger order: the first is canonical."""

    def __init__(self) -> None:
        self._canonical: dict[str, str] = {}
        # Normalised texts (>= 40 chars) seen, by digest (see _digests).
        self._code_blocks: set[bytes] = set()
        self._error_logs: set[bytes] = set()
        self.duplicate_code_blocks = self.duplicate_error_logs = 0

    def mark_stored(self, keys: StoredKeys) -> tuple[int, list[str] | None]:
        """Marks a source's keys as the key cache keeps them, in ledger order: (how many
        are duplicates, None when every marking equals the stored one, else each key's
        canonical twin, or "" for a first)."""
        self.duplicate_code_blocks += _repeats(self._code_blocks, keys.code_blocks)
        self.duplicate_error_logs += _repeats(self._error_logs, keys.error_logs)
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


def _fence_bodies(text: str) -> list[str]:
    """``_FENCE_BODY.findall(text)`` with str.find: an opening fence's line ends at the first
    newline after it, its body at the first fence after that (the regex's lazy body
    tries the closing fence at every character). With no newline or no closing fence
    after an opening one, no later one matches either."""
    bodies = []
    pos = text.find("```")
    while pos >= 0:
        newline = text.find("\n", pos + 3)
        if newline < 0:
            break
        close = text.find("```", newline + 1)
        if close < 0:
            break
        bodies.append(text[newline + 1 : close])
        pos = text.find("```", close + 3)
    return bodies


def _digests(texts: Iterable[str]) -> tuple[bytes, ...]:
    """128-bit digests of the normalised texts of 40 characters or more: a run's
    counts need no more, and the texts are not kept."""
    out = []
    for text in texts:
        norm = normalize_text(text)
        if len(norm) >= 40:
            out.append(hashlib.blake2b(norm.encode("utf-8", "replace"), digest_size=16).digest())
    return tuple(out)


def _repeats(seen: set[bytes], digests: tuple[bytes, ...]) -> int:
    """How many of ``digests`` repeat one seen before (all are seen now)."""
    before = len(seen)
    seen.update(digests)
    return len(digests) - (len(seen) - before)
