"""Hindsight memory server over HTTP (``--hindsight-url`` / ``HINDSIGHT_API_URL``).

Discovery pages through the API — ``GET <base>/v1/default/banks`` (page by
page while ``total`` says there are more), then per
bank ``GET …/banks/<id>/memories/list?limit=500&offset=N`` until a short page
or ``total`` — and yields one ref per memory, the memory itself as payload,
so ``load`` does no I/O. Every request has one deadline for all of it
(``hindsight_timeout``: connect, headers and body together — a server that
drips a byte a second is cut off at the deadline, not after a timeout per
read); 5xx answers, timeouts and connection failures are retried with
exponential backoff (``hindsight_retries``); an optional
``Authorization: Bearer <HINDSIGHT_API_KEY>`` header is sent. The base URL's
path is kept (the reference dropped it), so a server behind a path prefix
works.

On failure the memories already listed are kept and one ``memory-store``
unit carries the reason (``hindsight_unavailable: HTTP 500 after 4
attempts``, ``… timed out (10s) after 4 attempts``, ``… invalid JSON response``) — never the URL
or a byte of the response.

Each memory is a unit (anchor §2.5): text = ``text`` or ``content`` (string
or ``{text}``), role ``assistant``; session = memory ``id`` (else the sha256
of its text), project = bank id; content hash = sha256 of the item's compact
JSON.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kbtools.ingest.hashing import iso_time, sha256_hex
from kbtools.ingest.model import SourceRef, SourceSettings, SourceUnit
from kbtools.ingest.sources.common import ASSISTANT, METADATA, compact_json, make_record, text_of

TOOL = "hindsight"
PAGE_SIZE = 500
# First retry waits this long, then twice as long each time.
BACKOFF_S = 0.5
_MAX_BACKOFF_S = 8.0
_MAX_RESPONSE_BYTES = 256 * 1024 * 1024


class HindsightUnavailable(Exception):
    """The reason the store could not be read, safe to record."""


@dataclass(frozen=True)
class Memory:
    """A listed memory, with what discovery already derived from it."""

    bank_id: str
    memory_id: str
    item: dict[str, Any]
    content_hash: str  # sha256 of the item's compact JSON


def discover(settings: SourceSettings) -> Iterator[SourceRef]:
    base = settings.hindsight_url
    if not base:
        return
    client = _Client(base, settings.hindsight_api_key, settings.hindsight_timeout, settings.hindsight_retries)
    try:
        for bank_id in _all_bank_ids(client):
            yield from _memories(client, base, bank_id)
    except HindsightUnavailable as exc:
        yield SourceRef(TOOL, "memory-store", "api", base, payload=f"hindsight_unavailable: {exc}")


def _all_bank_ids(client: _Client) -> list[str]:
    """Every bank, page after page: ``GET banks?limit=&offset=`` while the
    answer's ``total`` says there are more (a server that does not page sends
    them all at once, without ``total``). A page that adds no new bank ends
    the listing, so a server ignoring ``offset`` cannot loop it."""
    ids: list[str] = []
    seen: set[str] = set()
    while True:
        answer = client.get("banks", {"limit": PAGE_SIZE, "offset": len(ids)})
        new = [bank for bank in _bank_ids(answer) if bank not in seen]
        seen.update(new)
        ids += new
        total = answer.get("total") if isinstance(answer, dict) else None
        if not new or not isinstance(total, int) or isinstance(total, bool) or len(ids) >= total:
            return ids


def _bank_ids(answer: Any) -> list[str]:
    banks = answer.get("banks") if isinstance(answer, dict) else answer
    if not isinstance(banks, list):
        raise HindsightUnavailable("unexpected response shape (banks)")
    ids = []
    for bank in banks:
        if isinstance(bank, dict):
            bank_id = bank.get("bank_id") or bank.get("id") or bank.get("name")
            if isinstance(bank_id, str) and bank_id:
                ids.append(bank_id)
        elif isinstance(bank, str) and bank:
            ids.append(bank)
    return ids


def _memories(client: _Client, base: str, bank_id: str) -> Iterator[SourceRef]:
    path = f"banks/{urllib.parse.quote(bank_id, safe='')}/memories/list"
    offset = 0
    while True:
        page = client.get(path, {"limit": PAGE_SIZE, "offset": offset})
        items = page.get("items") if isinstance(page, dict) else None
        if not isinstance(items, list):
            raise HindsightUnavailable("unexpected response shape (memories)")
        for item in items:
            if isinstance(item, dict):
                yield _memory_ref(base, bank_id, item)
        offset += len(items)
        total = page.get("total")
        if len(items) < PAGE_SIZE or (isinstance(total, int) and offset >= total):
            return


def _memory_ref(base: str, bank_id: str, item: dict[str, Any]) -> SourceRef:
    memory = Memory(bank_id, _memory_id(item), item, sha256_hex(compact_json(item)))
    return SourceRef(
        TOOL,
        "memory",
        "api",
        f"{base}\0{bank_id}\0{memory.memory_id}",
        stat_key=(memory.content_hash,),
        payload=memory,
    )


def _memory_id(item: dict[str, Any]) -> str:
    memory_id = item.get("id")
    if isinstance(memory_id, (str, int)) and not isinstance(memory_id, bool) and str(memory_id):
        return str(memory_id)
    return sha256_hex(_text(item))


def _text(item: dict[str, Any]) -> str:
    return text_of(item.get("text")) or text_of(item.get("content"))


def load(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    if ref.record_type == "memory-store":
        error = str(ref.payload)
        return SourceUnit(
            tool=TOOL,
            record_type="memory-store",
            format="api",
            source_identity=ref.locator,
            session_identity="unavailable",
            project_identity="",
            created_at="",
            updated_at="",
            content_hash=sha256_hex("hindsight_unavailable"),
            error=error,
        )
    memory: Memory = ref.payload
    item = memory.item
    created = iso_time(_first(item, "date", "mentioned_at", "created_at"))
    updated = iso_time(_first(item, "edited_at", "updated_at")) or created
    text = _text(item)
    return SourceUnit(
        tool=TOOL,
        record_type="memory",
        format="api",
        source_identity=ref.locator,
        session_identity=memory.memory_id,
        project_identity=memory.bank_id,
        created_at=created,
        updated_at=updated,
        content_hash=memory.content_hash,
        records=[make_record("assistant", text, created, 0)] if text.strip() else [],
        stat_key=ref.stat_key,
        # A memory is the agent's statement of a fact it kept: assistant prose;
        # one without text is bookkeeping.
        decisions={ASSISTANT if text.strip() else METADATA: 1},
    )


def _first(item: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if item.get(key) is not None:
            return item[key]
    return None


class _Client:
    """GET requests to the Hindsight API, each bounded by one deadline for the
    whole request — connect, headers and body — not by a timeout per socket
    read: a server that drips a byte a second cannot hold a run for longer
    than ``timeout`` per attempt. The request runs on a helper thread; at the
    deadline its socket is shut down, which ends the blocked read at once."""

    def __init__(self, base: str, api_key: str | None, timeout: float, retries: int) -> None:
        self.root = base.rstrip("/") + "/v1/default/"
        self.api_key = api_key
        self.timeout = timeout
        self.attempts = 1 + max(0, retries)

    def get(self, path: str, query: dict[str, Any] | None = None) -> Any:
        url = self.root + path + ("?" + urllib.parse.urlencode(query) if query else "")
        headers = {"Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last = ""
        for attempt in range(self.attempts):
            if attempt:
                time.sleep(min(BACKOFF_S * 2 ** (attempt - 1), _MAX_BACKOFF_S))
            try:
                status, body = _fetch(url, headers, self.timeout)
            except TimeoutError:
                last = f"timed out ({self.timeout:g}s)"
                continue
            except OSError as exc:
                last = f"connection failed ({exc.strerror or type(exc).__name__})"
                continue
            except Exception as exc:  # a bad URL, a broken response (http.client.HTTPException)
                last = f"request failed ({type(exc).__name__})"
                continue
            if status >= 500:
                last = f"HTTP {status}"
                continue
            if status >= 300:
                raise HindsightUnavailable(f"HTTP {status}")
            if len(body) > _MAX_RESPONSE_BYTES:
                raise HindsightUnavailable("response too large")
            try:
                return json.loads(body)
            except (ValueError, RecursionError):
                raise HindsightUnavailable("invalid JSON response") from None
        noun = "attempt" if self.attempts == 1 else "attempts"
        raise HindsightUnavailable(f"{last} after {self.attempts} {noun}")


def _fetch(url: str, headers: dict[str, str], timeout: float) -> tuple[int, bytes]:
    """(status, body) of one GET, within ``timeout`` seconds in all."""
    # Imported here: http.client pulls in email (a tenth of `kb ingest`'s start-up),
    # which a run without Hindsight never needs.
    import http.client
    import threading

    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("not an http(s) URL")
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = kind(parts.hostname, parts.port, timeout=timeout)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    outcome: list[Any] = []

    def run() -> None:
        try:
            conn.request("GET", target, headers=headers)
            response = conn.getresponse()
            outcome.append((response.status, response.read(_MAX_RESPONSE_BYTES + 1)))
        except BaseException as exc:  # handed to the caller's thread
            outcome.append(exc)

    worker = threading.Thread(target=run, name="kb-hindsight-request", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        _abort(conn)
        worker.join(1.0)
        raise TimeoutError("deadline")
    conn.close()
    result = outcome[0]
    if isinstance(result, BaseException):
        if isinstance(result, (TimeoutError, socket.timeout)):
            raise TimeoutError("deadline")
        raise result
    status, body = result
    return int(status), bytes(body)


def _abort(conn: Any) -> None:
    sock = conn.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    conn.close()
