"""OpenCode sessions: the SQLite store (v1.2+) and the legacy JSON tree.

SQLite (``$XDG_DATA_HOME/opencode/opencode*.db``): opened read-only
(``file:…?mode=ro``), never written. Discovery lists the sessions with a
cheap version — ``(time_updated, message count, part count)`` — so a stat
cache can skip an unchanged session without hashing it; ``load`` reads one
session's messages and parts in one read transaction, iterating cursors (the
reference materialised every row of the DB at once). Only ``text`` parts of
user/assistant messages are prose; ``synthetic`` parts (file contents the
harness inlines for an @mention) and ``ignored`` parts are not the user's
words, and compaction-summary messages are skipped. A tool part is skipped by
a look at the head of its JSON, before parsing.

Content hash (an equivalent of anchor §2.3, streamed instead of built from a
list): sha256 over the session row as compact JSON, then every message row
``(id, time_created, data)`` in ``(time_created, id)`` order, then every part
row ``(id, message_id, data)`` in message order and part id — each field
NUL-separated. Any change to a row of the session changes it; nothing
outside the session does.

A DB that cannot be read (not a database, corrupt, locked by a writer)
becomes one ``session-store`` unit with the SQLite reason, not a crash.

Legacy tree (``storage/`` beside the DB, frozen since the migration): a
session there is read only when no DB holds the same session id, so a
migrated session is never counted twice. If a DB could not be read, the
tree is not read either (coverage is unknown). Content hash: sha256 over the
session file's bytes and every message and part file (name and bytes).

Identity: session = the session id; project = ``directory`` (the cwd), else
the project id.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from kbtools.ingest.hashing import iso_time
from kbtools.ingest.model import Record, SourceRef, SourceSettings, SourceUnit
from kbtools.ingest.sources.common import (
    ASSISTANT,
    INJECTED,
    METADATA,
    REASONING,
    TOOL_IO,
    UNKNOWN,
    USER,
    ProseBudget,
    Tally,
    compact_json,
    error_unit,
    read_error,
    read_regular_bytes,
    unavailable_ref,
    unavailable_unit,
)

TOOL = "opencode"
# How long a read waits for a writer's lock before the DB counts as locked.
BUSY_TIMEOUT_S = 2.0
_GLOB_CHARS = frozenset("*?[")
_PROSE_ROLES = frozenset({"user", "assistant"})
_HEAD = 80


def connect_readonly(db: Path) -> sqlite3.Connection:
    """A connection that cannot write: SQLite refuses any write on it."""
    uri = "file:" + _uri_path(db) + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA query_only = ON")
    return conn


def _uri_path(path: Path) -> str:
    from urllib.parse import quote

    return quote(str(path.absolute()), safe="/")


def database_files(pattern: Path | None) -> list[Path]:
    if pattern is None:
        return []
    if _GLOB_CHARS & set(pattern.name):
        return sorted(p for p in pattern.parent.glob(pattern.name) if p.is_file())
    return [pattern] if pattern.is_file() else []


class _DbSession(NamedTuple):
    db: str
    session_id: str
    project: str


def discover(settings: SourceSettings) -> Iterator[SourceRef]:
    databases = database_files(settings.opencode_db)
    storage = settings.opencode_storage
    storage_dir = storage if storage is not None and (storage / "session").is_dir() else None
    if not databases and storage_dir is None:
        yield unavailable_ref(TOOL, settings.opencode_db or "opencode-db")
        return
    covered: set[str] = set()
    all_readable = True
    for db in databases:
        try:
            listing = _list_sessions(db)
        except sqlite3.Error as exc:
            all_readable = False
            yield SourceRef(TOOL, "session-store", "sqlite", str(db), payload=_db_error(exc))
            continue
        for (session_id, project), version in listing:
            covered.add(session_id)
            yield SourceRef(
                TOOL,
                "session",
                "sqlite",
                f"{db}\0{session_id}",
                stat_key=version,
                payload=_DbSession(str(db), session_id, project),
            )
    if storage_dir is not None and all_readable:
        yield from _discover_storage(storage_dir, covered)


def _db_error(exc: sqlite3.Error) -> str:
    # SQLite's messages name the condition ("database is locked", "file is
    # not a database"), never row content.
    return f"opencode_db_unreadable: {exc}"


def _list_sessions(db: Path) -> list[tuple[tuple[str, str], tuple[Any, ...]]]:
    """Per session: (id, project) and its version, in one read transaction.

    Materialised (one small tuple per session) so no transaction stays open
    while the pipeline works.
    """
    conn = connect_readonly(db)
    try:
        conn.execute("BEGIN")
        columns = {row[1] for row in conn.execute("PRAGMA table_info(session)")}
        if not columns:
            raise sqlite3.DatabaseError("no session table")
        directory = "directory" if "directory" in columns else "''"
        message_updated = _newest(conn, "message")
        part_updated = _newest(conn, "part")
        messages = {
            sid: (count, newest)
            for sid, count, newest in conn.execute(
                f"SELECT session_id, count(*), {message_updated} FROM message GROUP BY session_id"
            )
        }
        if "session_id" in {row[1] for row in conn.execute("PRAGMA table_info(part)")}:
            # Its own index (part_session_idx): four times faster than through message.
            query = f"SELECT session_id, count(*), {part_updated} FROM part GROUP BY session_id"
        else:  # a schema whose part table lacks session_id
            query = (
                f"SELECT m.session_id, count(*), {part_updated.replace('time_updated', 'p.time_updated')}"
                " FROM part p JOIN message m ON m.id = p.message_id GROUP BY m.session_id"
            )
        parts = {sid: (count, newest) for sid, count, newest in conn.execute(query)}
        listing = []
        for session_id, project_id, cwd, updated in conn.execute(
            f"SELECT id, project_id, {directory}, time_updated FROM session ORDER BY id"
        ):
            project = cwd or project_id or ""
            version = _version(updated, messages.get(session_id, (0, None)), parts.get(session_id, (0, None)))
            listing.append(((str(session_id), str(project)), version))
        conn.execute("COMMIT")
        return listing
    finally:
        conn.close()


def _newest(conn: sqlite3.Connection, table: str) -> str:
    """The SQL of a group's newest ``time_updated``: an OpenCode part edited in
    place (a tool part's state, a text part rewritten) bumps its row's
    ``time_updated`` and nothing else, so the version must see it."""
    columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    return "max(time_updated)" if "time_updated" in columns else "NULL"


def _version(updated: Any, messages: tuple[int, Any], parts: tuple[int, Any]) -> tuple[Any, ...]:
    """A session's version: its ``time_updated``, then per table the row count
    and the newest row's ``time_updated`` — every row that feeds the session."""
    return (updated, messages[0], parts[0], messages[1], parts[1])


def load(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    if ref.format == "unavailable" or ref.record_type == "session-store":
        return unavailable_unit(ref)
    if ref.format == "json":
        return _load_storage(ref, settings)
    session: _DbSession = ref.payload
    try:
        return _load_db_session(ref, session, settings)
    except sqlite3.Error as exc:
        return _failed(ref, session.session_id, session.project, _db_error(exc))


def _failed(ref: SourceRef, session_id: str, project: str, error: str) -> SourceUnit:
    unit = error_unit(ref, error, session_identity=session_id)
    unit.project_identity = project
    return unit


class _Collector:
    """Builds one record per message from its text parts, in order."""

    __slots__ = ("budget", "records", "malformed", "_texts", "_current", "tally")

    def __init__(self, budget: ProseBudget) -> None:
        self.budget = budget
        self.records: list[Record] = []
        self.malformed = 0
        self.tally = Tally()
        self._texts: list[str] = []
        self._current: tuple[str, Any, int] | None = None

    def start(self, role: str, created: Any, index: int) -> None:
        self.flush()
        self._current = (role, created, index)

    def text(self, text: str) -> None:
        if text.strip():
            self._texts.append(text)
            role = self._current[0] if self._current is not None else ""
            self.tally.note(USER if role == "user" else ASSISTANT)
        else:
            self.tally.note(METADATA)

    def flush(self) -> None:
        if self._current is not None and self._texts:
            role, created, index = self._current
            text = "\n\n".join(self._texts)
            if (record := self.budget.record(role, text, created, index)) is not None:
                self.records.append(record)
        self._texts = []
        self._current = None

    def unit(
        self, ref: SourceRef, session_id: str, project: str, content_hash: str, created: Any, updated: Any
    ) -> SourceUnit:
        return SourceUnit(
            tool=TOOL,
            record_type="session",
            format=ref.format,
            source_identity=ref.locator,
            session_identity=session_id,
            project_identity=project,
            created_at=iso_time(created),
            updated_at=iso_time(updated),
            content_hash=content_hash,
            records=self.records,
            error=f"malformed_records: {self.malformed}" if self.malformed else "",
            truncated=self.budget.truncated,
            stat_key=ref.stat_key,
            decisions=dict(self.tally.counts),
        )


# MessageV2 part types (session/message-v2.ts) other than text, by decision.
_PART_TYPES = {
    "reasoning": REASONING,
    "tool": TOOL_IO,
    "patch": TOOL_IO,
    "subtask": TOOL_IO,
    "file": METADATA,
    "agent": METADATA,
    "step-start": METADATA,
    "step-finish": METADATA,
    "snapshot": METADATA,
    "retry": METADATA,
    "compaction": INJECTED,
}
_PART_TYPE = re.compile(rb'"type"\s*:\s*"([a-z-]+)"')


def _message_info(data: Any, fallback_time: Any) -> tuple[str, Any] | None:
    """(role, created) of a prose message, or None for other messages."""
    if not isinstance(data, dict) or data.get("role") not in _PROSE_ROLES:
        return None
    if data.get("summary") is True:  # a compaction summary, written by the harness
        return None
    created = data.get("time", {}).get("created") if isinstance(data.get("time"), dict) else None
    return data["role"], created if created is not None else fallback_time


def _part_text(raw: bytes | None, collector: _Collector) -> None:
    """Feed a part's prose to the collector; skip tool and other parts unparsed."""
    head = raw[:_HEAD] if raw is not None else b""
    if b'"type":"text"' not in head and b'"type":"' in head:
        found = _PART_TYPE.search(head)
        collector.tally.note(_PART_TYPES.get(found.group(1).decode(), UNKNOWN) if found else UNKNOWN)
        return
    if raw is None:  # NULL
        collector.malformed += 1
        return
    try:
        part = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON or not UTF-8
        collector.malformed += 1
        return
    if not isinstance(part, dict) or part.get("type") != "text":
        kind = part.get("type") if isinstance(part, dict) else None
        collector.tally.note(_PART_TYPES.get(kind, UNKNOWN) if isinstance(kind, str) else UNKNOWN)
        return
    if part.get("synthetic") is True or part.get("ignored") is True:
        collector.tally.note(INJECTED)
        return
    text = part.get("text")
    if isinstance(text, str):
        collector.text(text)


def _load_db_session(ref: SourceRef, session: _DbSession, settings: SourceSettings) -> SourceUnit:
    conn = connect_readonly(Path(session.db))
    digest = hashlib.sha256()
    collector = _Collector(ProseBudget.for_max_text(settings.max_text))
    try:
        conn.execute("BEGIN")  # one snapshot for the session, its messages and parts
        cursor = conn.execute("SELECT * FROM session WHERE id = ?", (session.session_id,))
        names = [d[0] for d in cursor.description]
        row = cursor.fetchone()
        if row is None:
            conn.execute("COMMIT")
            return _failed(ref, session.session_id, session.project, "opencode_session_vanished")
        session_row = dict(zip(names, row))
        digest.update(compact_json(session_row).encode())
        messages: dict[str, tuple[str, Any, int] | None] = {}
        message_updated = _newest(conn, "message")
        newest_message = conn.execute(
            f"SELECT {message_updated} FROM message WHERE session_id = ?", (session.session_id,)
        ).fetchone()[0]
        for index, (message_id, created, data) in enumerate(
            conn.execute(
                "SELECT id, time_created, CAST(data AS BLOB) FROM message WHERE session_id = ? ORDER BY time_created, id",
                (session.session_id,),
            )
        ):
            digest.update(f"\0m\0{message_id}\0{created}\0".encode())
            digest.update(_bytes(data))
            try:
                info = _message_info(json.loads(data), created)
            except (TypeError, ValueError, RecursionError):  # NULL or not JSON
                collector.malformed += 1
                info = None
            messages[message_id] = (info[0], info[1], index) if info else None
        current = None
        part_columns = {row[1] for row in conn.execute("PRAGMA table_info(part)")}
        # Part ids sort in time; an old schema without ids is ordered by time, then insertion.
        id_column, part_order = ("p.id", "p.id") if "id" in part_columns else ("p.rowid", "p.time_created, p.rowid")
        part_count = 0
        part_updated = "p.time_updated" if _newest(conn, "part") != "NULL" else "NULL"
        newest_part = None
        for part_id, message_id, data, part_time in conn.execute(
            # As a BLOB: bytes straight from the page, no UTF-8 decode of tool output.
            f"SELECT {id_column}, p.message_id, CAST(p.data AS BLOB), {part_updated}"
            " FROM part p JOIN message m ON m.id = p.message_id"
            f" WHERE m.session_id = ? ORDER BY m.time_created, m.id, {part_order}",
            (session.session_id,),
        ):
            part_count += 1
            if part_time is not None and (newest_part is None or part_time > newest_part):
                newest_part = part_time
            digest.update(f"\0p\0{part_id}\0{message_id}\0".encode())
            digest.update(_bytes(data))
            message = messages.get(message_id)
            if message is None:
                collector.tally.note(INJECTED)  # a part of a compaction summary or a non-prose message
                continue
            if message_id != current:
                collector.start(*message)
                current = message_id
            _part_text(data, collector)
        collector.flush()
        conn.execute("COMMIT")
    finally:
        conn.close()
    unit = collector.unit(
        ref,
        session.session_id,
        session.project,
        digest.hexdigest(),
        session_row.get("time_created"),
        session_row.get("time_updated"),
    )
    # The version of the snapshot read, in discovery's terms.
    unit.stat_key = _version(
        session_row.get("time_updated"), (len(messages), newest_message), (part_count, newest_part)
    )
    return unit


def _bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    return b"" if value is None else str(value).encode("utf-8", "surrogatepass")


# ------------------------------------------------------------ legacy tree


def _discover_storage(storage: Path, covered: set[str]) -> Iterator[SourceRef]:
    session_files = sorted((storage / "session").glob("*/*.json"), key=str)
    for path in session_files:
        session_id = path.stem
        if session_id in covered:
            continue  # migrated into a DB: read there, not twice
        try:
            st = path.stat()
            version: tuple[Any, ...] | None = (
                st.st_size,
                st.st_mtime_ns,
                st.st_ino,
                *_tree_version(storage, session_id),
            )
        except OSError:
            version = None
        yield SourceRef(TOOL, "session", "json", str(path), stat_key=version)


def _tree_version(storage: Path, session_id: str) -> tuple[int, int, int]:
    """(files, total size, newest mtime_ns) of a legacy session's message and
    part files: a part file edited in place changes it."""
    files = size = newest = 0
    message_dir = storage / "message" / session_id
    folders = [message_dir]
    try:
        with os.scandir(message_dir) as entries:
            folders += [storage / "part" / Path(e.name).stem for e in entries if e.name.endswith(".json")]
    except OSError:
        return (0, 0, 0)
    for folder in folders:
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    st = entry.stat(follow_symlinks=False)
                    files, size, newest = files + 1, size + st.st_size, max(newest, st.st_mtime_ns)
        except OSError:
            continue
    return (files, size, newest)


def _read_json_file(path: Path, digest: Any) -> bytes:
    data = read_regular_bytes(path)
    digest.update(f"\0{path.name}\0".encode())
    digest.update(data)
    return data


def _load_storage(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    path = Path(ref.locator)
    storage = path.parent.parent.parent
    session_id = path.stem
    digest = hashlib.sha256()
    collector = _Collector(ProseBudget.for_max_text(settings.max_text))
    try:
        session = json.loads(_read_json_file(path, digest))
    except OSError as exc:
        return _failed(ref, session_id, "", read_error(exc))
    except (ValueError, RecursionError):
        return _failed(ref, session_id, "", "malformed_json: session file")
    if not isinstance(session, dict):
        session = {}
    project = session.get("directory") or session.get("projectID") or ""
    try:
        messages = []
        message_dir = storage / "message" / session_id
        for message_file in sorted(message_dir.glob("*.json")) if message_dir.is_dir() else []:
            try:
                data = json.loads(_read_json_file(message_file, digest))
            except (ValueError, RecursionError):
                collector.malformed += 1
                continue
            info = _message_info(data, None)
            created = info[1] if info else None
            messages.append((created if isinstance(created, (int, float)) else 0, message_file.stem, info))
        messages.sort(key=lambda m: (m[0], m[1]))
        for index, (_, message_id, info) in enumerate(messages):
            part_dir = storage / "part" / message_id
            part_files = sorted(part_dir.glob("*.json")) if part_dir.is_dir() else []
            if info is not None:
                collector.start(info[0], info[1], index)
            for part_file in part_files:
                raw = _read_json_file(part_file, digest)
                if info is not None:
                    _part_text(raw, collector)
        collector.flush()
    except OSError as exc:
        return _failed(ref, session_id, str(project), read_error(exc))
    times: dict[str, Any] = session["time"] if isinstance(session.get("time"), dict) else {}
    return collector.unit(ref, session_id, str(project), digest.hexdigest(), times.get("created"), times.get("updated"))
