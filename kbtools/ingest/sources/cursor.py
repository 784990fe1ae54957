"""Cursor: the agent CLI's chat stores and the editor's chat store.

Both are SQLite, opened read-only (``file:…?mode=ro``), never written.

Agent CLI (``cursor-agent``): ``~/.cursor/chats/<workspace md5>/<chat id>/store.db``
with a ``meta`` table (key ``0``: hex-encoded JSON ``{agentId, name, mode,
createdAt, latestRootBlobId, lastUsedModel}``) and a content-addressed
``blobs`` table (``id``, ``data``) whose JSON blobs are the messages
``{role, id?, content}`` (``role`` system | user | assistant | tool;
``content`` a string or parts ``text`` | ``reasoning`` | ``tool-call`` |
``tool-result``); the other blobs are the binary tree that orders them
(metadata). One unit per chat.

Editor: ``<Cursor user dir>/globalStorage/state.vscdb``, table
``cursorDiskKV``: ``composerData:<id>`` (a composer: ``createdAt``,
``lastUpdatedAt``, ``fullConversationHeadersOnly`` [``{bubbleId, type}``], or
an inline ``conversation`` in older versions) and ``bubbleId:<composer>:<bubble>``
(a message: ``type`` 1 = user, 2 = assistant, ``text``, ``thinking``,
``toolFormerData``, ``codeBlocks``…). One unit per composer.

Decisions: user text is the user's prose, less the context the agent CLI wraps
around it (``<user_info>``, ``<attached_files>``… — inside ``<user_query>``
is the prompt); assistant text is assistant prose; system messages are
injected; tool calls and results are tool I/O; thinking and reasoning parts
are reasoning; other blobs are metadata; other roles and bubble types are
unknown.

Locations: ``--cursor-dir``/``$CURSOR_CONFIG_DIR``/``ingest.cursor_dir``
(default ``~/.cursor``) for the CLI, ``ingest.cursor_user_dir`` (default
``$XDG_CONFIG_HOME/Cursor/User``, ``~/Library/Application Support/Cursor/User``
on macOS) for the editor.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
    Location,
    ProseBudget,
    Reader,
    Tally,
    error_unit,
    remove_tagged_blocks,
    unavailable_ref,
    unavailable_unit,
    walk_files,
)

TOOL = "cursor"
_EDITOR_DEFAULT = (
    "~/Library/Application Support/Cursor/User" if sys.platform == "darwin" else "{xdg_config}/Cursor/User"
)
READER = Reader(
    tool=TOOL,
    locations=(
        Location(
            "cursor_dir",
            env="CURSOR_CONFIG_DIR",
            default="~/.cursor",
            help="Cursor agent CLI home (default: ~/.cursor).",
        ),
        Location(
            "cursor_user_dir",
            env=None,
            default=_EDITOR_DEFAULT,
            help="Cursor editor user folder holding globalStorage/state.vscdb (default: the platform's).",
        ),
    ),
)
BUSY_TIMEOUT_S = 2.0
_USER_QUERY = re.compile(r"<user_query>\s*(.*?)\s*</user_query>", re.S)
_CONTEXT_TAGS = ("user_info", "attached_files", "project_layout", "git_status", "rules", "system_reminder")
_PART_DECISIONS = {"reasoning": REASONING, "thinking": REASONING, "tool-call": TOOL_IO, "tool-result": TOOL_IO}


def discover(settings: SourceSettings) -> Iterator[SourceRef]:
    (cli,) = settings.paths("cursor_dir") or (None,)
    (editor,) = settings.paths("cursor_user_dir") or (None,)
    chats = cli / "chats" if cli is not None else None
    state = editor / "globalStorage" / "state.vscdb" if editor is not None else None
    found = False
    if chats is not None and chats.is_dir():
        for path in walk_files(chats, "store.db"):
            found = True
            yield _db_ref("session", path)
    if state is not None and state.is_file():
        found = True
        try:
            composers = _composers(state)
        except Exception as exc:  # sqlite3.Error: a locked or corrupt store
            yield SourceRef(TOOL, "session-store", "sqlite", str(state), payload=f"cursor_db_unreadable: {exc}")
            composers = []
        for composer_id, version in composers:
            yield SourceRef(TOOL, "composer", "sqlite", f"{state}\0{composer_id}", stat_key=version)
    if not found:
        yield unavailable_ref(TOOL, chats or "cursor-chats")


def _db_ref(record_type: str, path: str) -> SourceRef:
    from kbtools.ingest.sources.common import file_ref

    # The WAL holds recent writes: its size and mtime are part of the version.
    ref = file_ref(TOOL, record_type, path, fmt="sqlite")
    wal = Path(path + "-wal")
    if ref.stat_key is not None and wal.exists():
        st = wal.stat()
        ref = ref._replace(stat_key=(*ref.stat_key, st.st_size, st.st_mtime_ns))
    return ref


def _connect(db: Path) -> Any:
    from kbtools.ingest.sources.opencode import connect_readonly

    return connect_readonly(db)


def _composers(state: Path) -> list[tuple[str, tuple[Any, ...]]]:
    conn = _connect(state)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'cursorDiskKV'").fetchone():
            return []
        rows = conn.execute(
            "SELECT key, length(value), CAST(value AS BLOB) FROM cursorDiskKV WHERE key LIKE 'composerData:%' ORDER BY key"
        )
        listing = []
        for key, size, value in rows:
            digest = hashlib.sha256(value or b"").hexdigest()[:16]
            bubbles = conn.execute(
                "SELECT count(*), sum(length(value)) FROM cursorDiskKV WHERE key LIKE ?",
                (f"bubbleId:{key[len('composerData:') :]}:%",),
            ).fetchone()
            listing.append((key[len("composerData:") :], (size, digest, bubbles[0], bubbles[1] or 0)))
        return listing
    finally:
        conn.close()


def load(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    import sqlite3

    if ref.format == "unavailable" or ref.record_type == "session-store":
        return unavailable_unit(ref)
    try:
        if ref.record_type == "composer":
            return _load_composer(ref, settings)
        return _load_chat(ref, settings)
    except sqlite3.Error as exc:
        return error_unit(ref, f"cursor_db_unreadable: {exc}")


def _json(value: Any) -> Any:
    if isinstance(value, (bytes, str)) and value[:1] in (b"{", "{", b"[", "["):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return None
    return None


def _user_prompt(text: str) -> str:
    """The prompt inside the context the agent CLI wraps around it."""
    found = _USER_QUERY.search(text)
    if found:
        return found.group(1)
    for tag in _CONTEXT_TAGS:
        if f"<{tag}" in text:
            text = remove_tagged_blocks(text, tag)
    return text.strip()


def _load_chat(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    path = Path(ref.locator)
    conn = _connect(path)
    digest = hashlib.sha256()
    tally = Tally()
    budget = ProseBudget.for_max_text(settings.max_text)
    records: list[Record] = []
    meta: dict[str, Any] = {}
    try:
        conn.execute("BEGIN")
        row = conn.execute("SELECT value FROM meta WHERE key = '0'").fetchone()
        if row is not None:
            try:
                decoded = json.loads(bytes.fromhex(row[0]) if isinstance(row[0], str) else row[0])
                meta = decoded if isinstance(decoded, dict) else {}
            except (ValueError, TypeError):
                meta = {}
            digest.update(str(row[0]).encode())
        for blob_id, data in conn.execute("SELECT id, CAST(data AS BLOB) FROM blobs ORDER BY rowid"):
            digest.update(f"\0{blob_id}\0".encode())
            digest.update(data or b"")
            message = _json(data)
            if not isinstance(message, dict) or "role" not in message:
                tally.note(METADATA)  # the tree that orders the messages
                continue
            _chat_message(message, tally, budget, records, meta.get("createdAt"))
        conn.execute("COMMIT")
    finally:
        conn.close()
    agent_id = meta.get("agentId")
    chat_id = agent_id if isinstance(agent_id, str) and agent_id else path.parent.name
    return SourceUnit(
        tool=TOOL,
        record_type="session",
        format="sqlite",
        source_identity=str(path),
        session_identity=chat_id,
        project_identity=path.parent.parent.name,  # the workspace's md5
        created_at=iso_time(meta.get("createdAt")),
        updated_at="",
        content_hash=digest.hexdigest(),
        records=records,
        truncated=budget.truncated,
        stat_key=ref.stat_key,
        decisions=dict(tally.counts),
    )


def _chat_message(
    message: dict[str, Any], tally: Tally, budget: ProseBudget, records: list[Record], created: Any
) -> None:
    role = message.get("role")
    if role in ("system", "tool"):
        tally.note(INJECTED if role == "system" else TOOL_IO)
        return
    if role not in ("user", "assistant"):
        tally.note(UNKNOWN)
        return
    content = message.get("content")
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
    texts: list[str] = []
    other = ""
    for part in parts if isinstance(parts, list) else []:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        else:
            other = other or _PART_DECISIONS.get(str(kind), UNKNOWN)
    text = "\n\n".join(t for t in texts if t.strip())
    if role == "user":
        text = _user_prompt(text)
    if not text:
        tally.note(other or (INJECTED if role == "user" else METADATA))
        return
    tally.note(USER if role == "user" else ASSISTANT)
    if (record := budget.record(role, text, created, len(records))) is not None:
        records.append(record)


def _load_composer(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    db, composer_id = ref.locator.split("\0", 1)
    conn = _connect(Path(db))
    digest = hashlib.sha256()
    tally = Tally()
    budget = ProseBudget.for_max_text(settings.max_text)
    records: list[Record] = []
    try:
        conn.execute("BEGIN")
        row = conn.execute(
            "SELECT CAST(value AS BLOB) FROM cursorDiskKV WHERE key = ?", (f"composerData:{composer_id}",)
        ).fetchone()
        composer = _json(row[0]) if row is not None else None
        if not isinstance(composer, dict):
            conn.execute("COMMIT")
            return error_unit(ref, "cursor_composer_unreadable", session_identity=composer_id)
        digest.update(row[0])
        tally.note(METADATA)
        bubbles: list[Any] = []
        headers = composer.get("fullConversationHeadersOnly")
        if isinstance(headers, list):
            for header in headers:
                bubble_id = header.get("bubbleId") if isinstance(header, dict) else None
                found = conn.execute(
                    "SELECT CAST(value AS BLOB) FROM cursorDiskKV WHERE key = ?",
                    (f"bubbleId:{composer_id}:{bubble_id}",),
                ).fetchone()
                if found is not None:
                    digest.update(found[0] or b"")
                bubbles.append(_json(found[0]) if found is not None else None)
        elif isinstance(composer.get("conversation"), list):
            bubbles = composer["conversation"]
        conn.execute("COMMIT")
    finally:
        conn.close()
    created = composer.get("createdAt")
    for bubble in bubbles:
        _bubble(bubble, tally, budget, records, created)
    return SourceUnit(
        tool=TOOL,
        record_type="composer",
        format="sqlite",
        source_identity=ref.locator,
        session_identity=composer_id,
        project_identity=str(composer.get("workspaceIdentifier") or composer.get("context", {}).get("folder") or "")
        if isinstance(composer.get("context", {}), dict)
        else "",
        created_at=iso_time(created),
        updated_at=iso_time(composer.get("lastUpdatedAt")),
        content_hash=digest.hexdigest(),
        records=records,
        truncated=budget.truncated,
        stat_key=ref.stat_key,
        decisions=dict(tally.counts),
    )


def _bubble(bubble: Any, tally: Tally, budget: ProseBudget, records: list[Record], created: Any) -> None:
    if not isinstance(bubble, dict):
        tally.note(UNKNOWN)
        return
    kind = bubble.get("type")
    role = {1: "user", 2: "assistant"}.get(kind) if isinstance(kind, int) else None
    if role is None:
        tally.note(UNKNOWN)
        return
    if bubble.get("thinking"):
        tally.note(REASONING)
    if bubble.get("toolFormerData"):
        tally.note(TOOL_IO)
    text = bubble.get("text")
    if not isinstance(text, str) or not text.strip():
        if not bubble.get("thinking") and not bubble.get("toolFormerData"):
            tally.note(METADATA)
        return
    tally.note(USER if role == "user" else ASSISTANT)
    if (record := budget.record(role, text, bubble.get("createdAt") or created, len(records))) is not None:
        records.append(record)
