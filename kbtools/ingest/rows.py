"""The ledger row schema: one frozen type per ledger, and nothing else spells a field list.

- :class:`ManifestRow`  ``manifest.jsonl``, one row per source
- :class:`CandidateRow` ``candidates.jsonl``, redacted turn-sized evidence
- :class:`RejectedRow`  ``rejected.jsonl``, why a source yielded nothing
- :class:`EventRow`     ``events.jsonl``, per-source events (``derived_excluded``)

A row's JSON keys are its fields in declaration order (:data:`FIELDS`).
Reading a line validates it (:func:`decode`: a required field missing, or any
field of the wrong kind, and the line is malformed); writing one encodes it
(:func:`as_json`, :func:`dumps`).

To add a field: declare it in its row type, with a default, where it is to
stand in the line (usually last, before ``run_at``). Its kind is checked on
read from the annotation (``str``, ``int``, ``bool``, ``float``, ``list[...]``,
``dict[...]``, ``... | None``, ``object``); a line written before the field
existed reads with the default. Everything else follows: the ledger index
and the trusted-lines digest are keyed by the field lists, so a rerun after a
schema change re-encodes the rows once instead of copying old bytes.
Beyond kinds, :func:`decode` checks a manifest row's status and count.
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

PARSE_STATUSES: Final = ("processed", "unchanged", "skipped", "failed")
# The journal's tag of the run that wrote a row (never a field of a final ledger).
RUN_TAG: Final = "_run"

# A decoded line: JSON values are whatever the line holds, checked by kind on read.
Row = dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ManifestRow:
    """One source: its identity (hashed), content hash, outcome and counts."""

    LEDGER: ClassVar[str] = "manifest"

    source_key: str
    tool: str
    record_type: str
    project_key: str
    session_hash: str
    created_at: str = ""
    updated_at: str = ""
    format: str
    content_hash: str
    parse_status: str
    redaction_status: str
    candidate_count: int
    article_slugs: list[str] = field(default_factory=list)
    skip_reason: str = ""
    error: str = ""
    truncated: bool = False
    # Texts of this source the control-plane filter kept out: messages when it was
    # read, plus stored candidates dropped by later re-checks.
    internal_filtered: int = 0
    # The source's records as its reader decided them (user_prose, assistant_prose,
    # agent_prompt, injected, tool, reasoning, abandoned, metadata, duplicate,
    # binary_dropped, unknown: see docs/agents.md), counted when it was read;
    # unknown_records repeats the count of record types the reader does not know.
    records: dict[str, int] = field(default_factory=dict)
    unknown_records: int = 0
    # The stat cache: which locator (hashed) the row was read from and the version
    # read (a file's [size, mtime_ns, inode]; a DB session's row versions).
    locator_key: str = ""
    stat_key: list[object] | None = None
    # Digest of the candidate lines the row was written with (see reemit.rows_digest).
    rows_digest: str = ""
    run_at: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CandidateRow:
    """One candidate. The reference's 24 knowledge fields, then metadata. Dropped from the
    reference: ``cluster_id`` and ``cluster_size`` (buckets of 8 by first keyword, not
    clusters). Added: ``turn_index`` and ``chunk_index`` (its place in its source)."""

    LEDGER: ClassVar[str] = "candidates"

    # The knowledge fields (see KNOWLEDGE_FIELDS).
    topic: str = ""
    user_goal: str = ""
    technical_environment: list[str] = field(default_factory=list)
    software_versions: list[str] = field(default_factory=list)
    symptoms: list[str] = field(default_factory=list)
    error_messages: list[str] = field(default_factory=list)
    trigger_conditions: list[str] = field(default_factory=list)
    investigation_steps: list[str] = field(default_factory=list)
    attempted_solutions: list[str] = field(default_factory=list)
    failed_solutions: list[str] = field(default_factory=list)
    root_cause: str = ""
    final_solution: str = ""
    changes: list[str] = field(default_factory=list)
    validation_commands: list[str] = field(default_factory=list)
    validation_results: list[str] = field(default_factory=list)
    applicability: list[str] = field(default_factory=list)
    non_applicability: list[str] = field(default_factory=list)
    risks_side_effects: list[str] = field(default_factory=list)
    rollback: list[str] = field(default_factory=list)
    reusable_lessons: list[str] = field(default_factory=list)
    unresolved_questions: list[str] = field(default_factory=list)
    confidence: float = 0.0
    source_refs: list[str] = field(default_factory=list)
    existing_kb_status: str = ""
    # Metadata.
    candidate_id: str
    source_key: str
    session_key: str = ""
    project_key: str = ""
    tool: str = ""
    record_type: str = ""
    format: str = ""
    text: str
    summary: str = ""
    language: str = ""
    created_at: str = ""
    updated_at: str = ""
    note_matches: list[str] = field(default_factory=list)
    redactions: list[str] = field(default_factory=list)
    conclusion_status: str = ""
    scores: dict[str, object] = field(default_factory=dict)
    decision: str = "jotting"
    topic_keys: list[str] = field(default_factory=list)
    fingerprint: str
    duplicate_of: str = ""
    turn_index: int = 0
    chunk_index: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class RejectedRow:
    """Why a source yielded nothing (or what a later re-check filtered)."""

    LEDGER: ClassVar[str] = "rejected"

    rejection_id: str
    source_key: str
    reason: str
    run_at: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class EventRow:
    """A per-source event: a message the derived filter matched (``derived_excluded``)."""

    LEDGER: ClassVar[str] = "events"

    event_id: str = ""
    event: str
    source_key: str
    tool: str = ""
    record_type: str = ""
    message_index: int = 0
    role: str = ""
    created_at: str = ""
    artifact: dict[str, object] = field(default_factory=dict)
    overlap: float = 0.0
    threshold: float = 0.0
    run_at: str = ""


LedgerRow = ManifestRow | CandidateRow | RejectedRow | EventRow

ROW_TYPES: Final[dict[str, type[LedgerRow]]] = {t.LEDGER: t for t in (ManifestRow, CandidateRow, RejectedRow, EventRow)}
# The ledgers, and the rename order of a final write (the manifest last: it never
# names rows that are not there yet).
LEDGERS: Final = tuple(ROW_TYPES)
COMMIT_ORDER: Final = ("candidates", "rejected", "events", "manifest")


# Each row type's JSON keys, in the order a line has them.
FIELDS: Final[dict[type[LedgerRow], tuple[str, ...]]] = {
    t: tuple(f.name for f in dataclasses.fields(t)) for t in ROW_TYPES.values()
}


# The candidate fields that are the reference's knowledge fields (``topic`` … ``existing_kb_status``).
KNOWLEDGE_FIELDS: Final = FIELDS[CandidateRow][: FIELDS[CandidateRow].index("candidate_id")]
# Every field list, as the caches that depend on the schema key themselves by it.
SCHEMA_KEY: Final = tuple(FIELDS[t] for t in ROW_TYPES.values())


# --------------------------------------------------------------------------- checks


def _kind(hint: object) -> Callable[[object], bool]:
    """A check of a JSON value against one field's annotation."""
    if hint is object or hint is Any:
        return lambda value: True
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        checks = [_kind(arg) for arg in typing.get_args(hint)]
        return lambda value: any(check(value) for check in checks)
    if hint is type(None):
        return lambda value: value is None
    if hint is float:
        return lambda value: isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return lambda value: isinstance(value, int) and not isinstance(value, bool)
    base = typing.get_origin(hint) or hint
    assert isinstance(base, type), hint
    return lambda value: isinstance(value, base)


# The fields a line of each ledger must have (the rest have defaults).
REQUIRED: Final = {
    name: tuple(
        f.name
        for f in dataclasses.fields(t)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    )
    for name, t in ROW_TYPES.items()
}
_CHECKS: Final = {
    name: tuple((key, _kind(hint)) for key, hint in typing.get_type_hints(t).items() if key in FIELDS[t])
    for name, t in ROW_TYPES.items()
}


def decode(line: bytes | str, ledger: str) -> Row | None:
    """A line of ``ledger`` as a JSON object, validated (unknown extra keys are allowed);
    None when it is malformed.

    A lone surrogate (a ``\\ud800`` escape written into a ledger by hand, which JSON allows
    and UTF-8 cannot hold) comes back as :func:`json_dumps` would have written it, a ``?``:
    every place a row goes (a terminal, SQLite, a ledger line) takes UTF-8 only."""
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    if not isinstance(obj, dict) or not all(name in obj for name in REQUIRED[ledger]):
        return None
    if not all(check(obj[name]) for name, check in _CHECKS[ledger] if name in obj):
        return None
    if ledger == "manifest" and (obj["parse_status"] not in PARSE_STATUSES or obj["candidate_count"] < 0):
        return None
    if _may_hold_surrogate(line):
        obj = dict(json.loads(json_dumps(obj)))  # (a surrogate pair's escape too: it comes back the same)
    return obj


# A surrogate's escape (`\\ud800`-`\\udfff`), and its UTF-8 bytes (json.loads reads bytes
# with "surrogatepass"). Two searches, each with its literal first: one alternation of
# both would cost a fifth of decode (JSON lines are full of backslashes).
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_ESCAPED_SURROGATE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE_BYTES = re.compile(rb"\xed[\xa0-\xbf]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _may_hold_surrogate(line: bytes | str) -> bool:
    if isinstance(line, bytes):
        return bool(_ESCAPED_SURROGATE_BYTES.search(line) or (b"\xed" in line and _SURROGATE_BYTES.search(line)))
    return bool(_ESCAPED_SURROGATE.search(line) or (not line.isascii() and _SURROGATE.search(line)))


# --------------------------------------------------------------------------- encoding


def as_json(row: LedgerRow) -> Row:
    """A row as a JSON object, its fields in declaration order."""
    return {name: getattr(row, name) for name in FIELDS[type(row)]}


def ordered(obj: Mapping[str, object], ledger: str) -> Row:
    """A JSON object of ``ledger`` in field order; unknown extra keys of an older or newer
    ledger are kept at the end (the journal's run tag is dropped)."""
    out: Row = {name: obj[name] for name in FIELDS[ROW_TYPES[ledger]] if name in obj}
    out.update((k, v) for k, v in obj.items() if k not in out and k != RUN_TAG)
    return out


def dumps(obj: Mapping[str, object]) -> bytes:
    """One ledger line of a JSON object whose keys are already in order.

    The bytes are :func:`json_dumps`'s; ``msgspec`` writes them when it writes the same
    (6,576 candidate rows of a 185 MB store: 0.18 s of CPU with ``json`` -> 0.09 s, the
    check included): every value is plain JSON (str, int, bool, None, list, tuple, a dict
    of str keys) and every float one that ``repr`` writes without an exponent (``msgspec``
    writes ``1e16`` and ``0.00001`` where ``repr`` writes ``1e+16`` and ``1e-05``, and
    ``null`` for NaN). A lone surrogate, which ``msgspec`` refuses, and anything else go
    to ``json``, as before.
    """
    try:
        plain = _plain(obj)
    except RecursionError:  # absurdly deep, or a cycle: json says which
        plain = False
    if plain:
        try:
            return _msgspec_encoder()(obj) + b"\n"
        except (UnicodeEncodeError, OverflowError, TypeError, ValueError):
            pass
    return json_dumps(obj)


def json_dumps(obj: Mapping[str, object]) -> bytes:
    """:func:`dumps` by the standard library: the reference its fast path is checked against."""
    # Lone surrogates (from a `\ud800` escape in a source) cannot be UTF-8: replace them.
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8", "replace")


_ATOMS: Final = frozenset({str, int, bool, type(None)})
_STR_KEYS: Final = frozenset({str})


def _plain(value: Any) -> bool:
    """Whether ``msgspec`` encodes ``value`` as ``json`` does (checks by exact type: a
    subclass, a set, bytes or a date go to ``json``, which raises or converts as it did)."""
    kind = type(value)
    if kind in _ATOMS:
        return True
    if kind is float:
        # repr switches to an exponent below 1e-4 and from 1e16; NaN and infinities fail both.
        return bool(value == 0.0 or 1e-4 <= abs(value) < 1e16)
    if kind is list or kind is tuple:
        return set(map(type, value)) <= _ATOMS or all(map(_plain, value))
    if kind is dict:
        values = value.values()
        return set(map(type, value)) <= _STR_KEYS and (set(map(type, values)) <= _ATOMS or all(map(_plain, values)))
    return False


_encode: Callable[[object], bytes] | None = None


def _msgspec_encoder() -> Callable[[object], bytes]:
    """``msgspec``'s JSON encoder, imported on first use (20 ms: not for a command that writes no row)."""
    global _encode
    if _encode is None:
        import msgspec

        _encode = msgspec.json.Encoder().encode
    return _encode
