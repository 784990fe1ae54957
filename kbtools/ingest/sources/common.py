"""What every source module shares: file refs, unavailable stores, the
decisions, the prose budget and safe error strings (the streaming JSONL scan
is :mod:`kbtools.ingest.sources._jsonl`).

Errors built here name counts, line numbers and reasons only — never a byte
of the input — because an error string reaches the ledgers and a session line
may hold identifiers or secrets.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
from collections.abc import Container
from pathlib import Path
from typing import IO, Any, NamedTuple

from kbtools.fsio import stat_key
from kbtools.ingest.hashing import iso_time, sha256_hex
from kbtools.ingest.model import Record, SourceRef, SourceUnit

# Prose retained per source, as a multiple of settings.max_text: more than the
# pipeline can use after filtering, so the cap only bounds memory.
PROSE_CAP_FACTOR = 4

CHANGED_DURING_READ = "source_changed_during_read"
# The skip reason of a session-store entry that is not a regular file (a FIFO,
# a device, a symlink to /dev/zero): never opened for reading, so it cannot hang.
NOT_REGULAR = "not_a_regular_file"
# A record (line, row, item) of a type the reader does not know: counted under
# this decision, never read as prose.
UNKNOWN = "unknown"

# What a reader decides about every record and content part upstream writes
# (docs/agents.md has the table per agent). A unit counts its records per
# decision in ``SourceUnit.decisions``; only the first three become records.
USER = "user_prose"
ASSISTANT = "assistant_prose"
# Text the agent wrote under the user role (a sub-agent's task prompt): kept,
# labelled ``agent``, so no candidate attributes it to the person.
AGENT = "agent_prompt"
INJECTED = "injected"  # system, developer, harness or injected context text
TOOL_IO = "tool"  # a tool call or its output
REASONING = "reasoning"
ABANDONED = "abandoned"  # a turn dropped by a rewind, rollback or branch switch
METADATA = "metadata"  # ids, titles, token counts, snapshots: no text to read
DUPLICATE = "duplicate"  # a copy of a record read elsewhere (UI echoes)
# Inline binary (a base64 screenshot) cut out of a line too long to hold, the
# text around it kept: counted per line.
BINARY = "binary_dropped"
DECISIONS = (USER, ASSISTANT, AGENT, INJECTED, TOOL_IO, REASONING, ABANDONED, METADATA, DUPLICATE, BINARY, UNKNOWN)
# The record role of each kept decision.
ROLE_OF = {USER: "user", ASSISTANT: "assistant", AGENT: "agent"}


class Location(NamedTuple):
    """A place a reader reads, declared by the reader (``READER``) so the
    registry, ``.kb.yaml``, the environment and the CLI all follow from it:
    ``.kb.yaml`` ``ingest.<name>``, flag ``--<name with dashes>``, environment
    variable ``env`` (joined with ``env_subpath``), else ``default``.

    Defaults may start with ``~`` and name ``{xdg_data}``, ``{xdg_config}``,
    ``{xdg_state}`` or ``{kb_parent}`` (the folder holding the knowledge base).
    ``many``: a list of folders (flag and environment ``:``-separated)."""

    name: str
    env: str | None
    default: str | tuple[str, ...]
    help: str
    env_subpath: str = ""
    many: bool = False


class Reader(NamedTuple):
    """What a reader module declares as ``READER``: its tool and its locations.
    A module of this package that has one is a source; nothing else needs
    to name it."""

    tool: str
    locations: tuple[Location, ...] = ()
    record_types: tuple[str, ...] | None = None


def file_ref(tool: str, record_type: str, path: str | Path, *, fmt: str = "jsonl", payload: Any = None) -> SourceRef:
    locator = str(path)
    try:
        key: tuple[Any, ...] | None = stat_key(os.stat(locator))
    except OSError:
        key = None
    return SourceRef(tool, record_type, fmt, locator, key, payload)


# The skip reason of a store that does not exist (an agent the user does not have).
STORE_UNAVAILABLE = "source_store_unavailable"


def unavailable_ref(tool: str, store: Path | str) -> SourceRef:
    """One row for a store that does not exist, instead of a crash."""
    return SourceRef(
        tool=tool,
        record_type="session-store",
        format="unavailable",
        locator=str(store),
        payload=_missing_store(tool),
    )


def _missing_store(tool: str) -> str:
    return f"{tool}_session_store_unavailable"


def error_unit(ref: SourceRef, error: str, *, session_identity: str | None = None) -> SourceUnit:
    """A unit that stands for a source that could not be read at all."""
    locator = ref.locator
    return SourceUnit(
        tool=ref.tool,
        record_type=ref.record_type,
        format=ref.format,
        source_identity=locator,
        session_identity=locator if session_identity is None else session_identity,
        project_identity=str(Path(locator).parent) if locator else "",
        created_at="",
        updated_at="",
        content_hash=sha256_hex(error),
        error=error,
        stat_key=ref.stat_key,
    )


def unavailable_unit(ref: SourceRef) -> SourceUnit:
    """A store that does not exist is ``skipped`` (``source_store_unavailable``):
    a user without Codex has nothing to read there, and nothing failed. A store
    that exists but cannot be read (a corrupt or locked DB, a broken discovery)
    is an error unit, so it counts as ``failed`` and is retried."""
    reason = str(ref.payload or _missing_store(ref.tool))
    unit = error_unit(ref, reason)
    if reason == _missing_store(ref.tool):
        unit.error = ""
        unit.skip_reason = STORE_UNAVAILABLE
    return unit


class Tally:
    """Records counted per decision (see ``DECISIONS``)."""

    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def note(self, decision: str, count: int = 1) -> None:
        self.counts[decision] = self.counts.get(decision, 0) + count

    def moved(self, source: str, target: str, count: int) -> None:
        """``count`` records decided ``source`` turned out to be ``target``
        (kept prose on an abandoned branch)."""
        if count:
            self.note(source, -count)
            self.note(target, count)
            if not self.counts[source]:
                del self.counts[source]


class NotRegularFile(OSError):
    """A path that is not a regular file: not read."""


# Session lines run to kilobytes: with the file system's 4 KB blocks as the buffer, a
# line took several reads and joins (the readers' CPU over a 200 MB prose-heavy
# store: 1.03-1.12 s with 4 KB, 0.94-1.00 s with 256 KB).
READ_BUFFER = 256 * 1024


def open_regular(path: str | os.PathLike[str]) -> IO[bytes]:
    """``path`` opened for reading if it is a regular file (after symlinks).

    Opened non-blocking, so a FIFO cannot block the open, then checked with
    ``fstat``: a FIFO, a device, a socket or a symlink to one raises
    :class:`NotRegularFile` before a byte is read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(errno.EINVAL, NOT_REGULAR)
        return os.fdopen(fd, "rb", buffering=READ_BUFFER)
    except BaseException:
        os.close(fd)
        raise


def read_regular_bytes(path: str | os.PathLike[str]) -> bytes:
    with open_regular(path) as fh:
        return fh.read()


def os_error_reason(exc: OSError) -> str:
    """The reason of an OSError without the file name it carries."""
    return exc.strerror or type(exc).__name__


def read_error(exc: OSError) -> str:
    """The error of a source whose bytes could not be read."""
    return f"read_error: {os_error_reason(exc)}"


def walk_files(root: Path, suffix: str | tuple[str, ...], *, skip_dirs: frozenset[str] = frozenset()) -> list[str]:
    """Paths of the files under ``root`` ending in ``suffix``, sorted as strings.

    What ``os.walk(root)`` lists, by its rules: a symlink to a directory is not
    followed (nor listed), any other entry that is not a directory counts as a
    file (a symlink to a file, a dangling one), a directory that cannot be
    listed — or fails part-way — contributes nothing, and ``skip_dirs`` names
    are pruned at every depth. Strings, not ``Path`` objects: discovery lists
    thousands of files on every run, and the locator is a string anyway.
    """
    top = os.fspath(root)
    found: list[str] = []
    _scan(top, suffix, skip_dirs, found)
    if top == ".":  # the one root whose joined paths are not already normal ("./a" is Path("a"))
        found = [path[2:] for path in found]
    found.sort()
    return found


def _scan(directory: str, suffix: str | tuple[str, ...], skip_dirs: frozenset[str], found: list[str]) -> None:
    files: list[str] = []
    subdirs: list[str] = []
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                if not is_dir:
                    if entry.name.endswith(suffix):
                        files.append(entry.path)
                elif entry.name not in skip_dirs and not _is_symlink(entry):
                    subdirs.append(entry.path)
    except OSError:
        return
    found.extend(files)
    for subdir in subdirs:
        _scan(subdir, suffix, skip_dirs, found)


def _is_symlink(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:  # as os.path.islink: a link that cannot be examined is not one
        return False


_BLANK_LINE = re.compile(rb"(?<=\n)\n")


class FileHash(NamedTuple):
    """A file hashed in one streamed pass: sha256 of the bytes, the stat at
    open, the error (if any) and how many non-empty lines it holds."""

    content_hash: str
    stat: os.stat_result | None
    error: str
    lines: int = 0


def hash_file(path: Path) -> FileHash:
    """The file's :class:`FileHash`, for files that are recorded but never mined."""
    digest = hashlib.sha256()
    lines = 0
    try:
        with open_regular(path) as fh:
            st = os.fstat(fh.fileno())
            size, last = 0, b"\n"
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
                size += len(chunk)
                # A line ends at a newline; a blank one (a newline after a newline) is no record.
                lines += chunk.count(b"\n") - len(_BLANK_LINE.findall(chunk)) - (chunk[:1] == b"\n" == last)
                last = chunk[-1:]
            lines += last != b"\n"
        after = os.stat(path)
    except NotRegularFile:
        return FileHash(sha256_hex(NOT_REGULAR), None, NOT_REGULAR)
    except OSError as exc:
        return FileHash(sha256_hex(os_error_reason(exc)), None, read_error(exc))
    changed = size != st.st_size or after.st_size != st.st_size or after.st_mtime_ns != st.st_mtime_ns
    return FileHash(digest.hexdigest(), st, CHANGED_DURING_READ if changed else "", lines)


def unmined_unit(
    ref: SourceRef, *, session_identity: str, project_identity: str, skip_reason: str, decision: str
) -> SourceUnit:
    """A file recorded in the ledgers (hash, stat) but deliberately not parsed:
    each of its lines is counted under ``decision``, the one that holds for the
    whole file."""
    content_hash, st, error, lines = hash_file(Path(ref.locator))
    if error == NOT_REGULAR:
        skip_reason, error = NOT_REGULAR, ""
    return SourceUnit(
        tool=ref.tool,
        record_type=ref.record_type,
        format=ref.format,
        source_identity=ref.locator,
        session_identity=session_identity,
        project_identity=project_identity,
        created_at="",
        updated_at=mtime_iso(st) if st is not None else "",
        content_hash=content_hash,
        skip_reason=skip_reason,
        error=error,
        stat_key=stat_key(st) if st is not None and not error else None,
        decisions={decision: lines} if lines and not error else {},
    )


def mtime_iso(st: os.stat_result) -> str:
    return iso_time(st.st_mtime_ns / 1_000_000)


def not_regular_unit(ref: SourceRef) -> SourceUnit:
    """A session-store entry that is not a regular file: skipped, never read."""
    unit = error_unit(ref, NOT_REGULAR)
    unit.error = ""
    unit.skip_reason = NOT_REGULAR
    unit.stat_key = None
    return unit


class ProseBudget:
    """Caps the prose a unit retains (first fit, like the pipeline's budget).

    A turn starts at every prompt, so a prompt that does not fit leaves a stand-in: without
    it the replies after it would join the turn before and answer the wrong question. A stand-in
    says how long the message was and holds nothing of it (no cut text for redaction to miss).
    Stand-ins of one role and length are one object, so a store of a million refused messages
    costs a pointer each; :func:`answered` drops those that no reply follows."""

    __slots__ = ("cap", "used", "truncated", "_stand_ins")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.used = 0
        self.truncated = False
        self._stand_ins: dict[tuple[str, int], Record] = {}

    @classmethod
    def for_max_text(cls, max_text: int) -> ProseBudget:
        return cls(cap=max(1, max_text) * PROSE_CAP_FACTOR)

    def admit(self, text: str) -> bool:
        if self.used + len(text) > self.cap:
            self.truncated = True
            return False
        self.used += len(text)
        return True

    def record(self, role: str, text: str, created: Any, index: int) -> Record | None:
        """The message as a record if it fits; else a prompt's stand-in, and None for a reply."""
        if self.admit(text):
            return make_record(role, text, created, index)
        return None if role == "assistant" else self.stand_in(role, len(text))

    def keep(self, record: Record) -> Record | None:
        """:meth:`record` for a record already made (a stand-in stays as it is)."""
        if is_stand_in(record) or self.admit(record.text):
            return record
        return None if record.role == "assistant" else self.stand_in(record.role, len(record.text))

    def stand_in(self, role: str, length: int) -> Record:
        """The stand-in of a prompt of ``length`` characters."""
        key = (role, length)
        found = self._stand_ins.get(key)
        if found is None:
            found = self._stand_ins[key] = Record(role, f"[a message of {length:,}{_STAND_IN_END}", "", _STAND_IN)
        return found


_STAND_IN = -1  # a stand-in's index: it has no position of its own
_STAND_IN_END = " characters not kept: over the source's prose budget]"


def is_stand_in(record: Record) -> bool:
    return record.index == _STAND_IN and record.text.endswith(_STAND_IN_END)


def answered(records: list[Record]) -> list[Record]:
    """``records`` without the stand-ins that no reply follows (a turn of a stand-in alone says
    nothing); a stand-in that stays is dated as its reply."""
    out: list[Record] = []
    last = len(records) - 1
    for at, record in enumerate(records):
        if is_stand_in(record):
            reply = records[at + 1] if at < last else None
            if reply is None or reply.role != "assistant":
                continue
            record = record._replace(created_at=reply.created_at)
        out.append(record)
    return out


def remove_tagged_blocks(text: str, tag: str) -> str:
    """``text`` without its closed ``<tag …>…</tag>`` blocks, in one forward
    scan (a regex with a lazy body would rescan the rest of the text from
    every unclosed opening)."""
    opening, closing = f"<{tag}", f"</{tag}>"
    kept: list[str] = []
    pos = 0
    while (start := text.find(opening, pos)) >= 0:
        after = start + len(opening)
        if after < len(text) and not (text[after] == ">" or text[after].isspace()):
            kept.append(text[pos:after])  # a longer tag name that merely starts the same
            pos = after
            continue
        end = text.find(closing, after)
        if end < 0:
            break
        kept.append(text[pos:start])
        pos = end + len(closing)
    kept.append(text[pos:])
    return "".join(kept)


def compact_json(value: Any) -> str:
    """``value`` as JSON without spaces or escapes: the form a content hash is taken of."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def make_record(role: str, text: str, created: Any, index: int) -> Record:
    return Record(role=role, text=text, created_at=iso_time(created), index=index)


def content_texts(content: Any, part_types: Container[str] = ("text",)) -> list[str]:
    """The strings of a message's ``content``: the content itself if a string,
    else the ``text`` of each part whose ``type`` is in ``part_types``."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        part["text"]
        for part in content
        if isinstance(part, dict) and part.get("type") in part_types and isinstance(part.get("text"), str)
    ]


def text_of(value: Any) -> str:
    """A string, or the ``text`` of an object, else ""."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        inner = value.get("text")
        if isinstance(inner, str):
            return inner
    return ""


class JsonFile(NamedTuple):
    """A session stored as one JSON object (older Codex, Gemini and Copilot
    releases), read whole: the object, the hash of its bytes, and its stat key
    (None when the file changed size while read)."""

    obj: dict[str, Any]
    content_hash: str
    stat_key: tuple[int, int, int] | None
    mtime: str


def read_json_file(ref: SourceRef) -> JsonFile | SourceUnit:
    """``ref``'s file as a :class:`JsonFile`, or the unit that says why it cannot be."""
    path = Path(ref.locator)
    try:
        data = read_regular_bytes(path)
        st = os.stat(path)
    except NotRegularFile:
        return not_regular_unit(ref)
    except OSError as exc:
        return error_unit(ref, read_error(exc))
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError):
        obj = None
    if not isinstance(obj, dict):
        return error_unit(ref, "malformed_json: session file")
    key = stat_key(st) if st.st_size == len(data) else None
    return JsonFile(obj, hashlib.sha256(data).hexdigest(), key, mtime_iso(st))
