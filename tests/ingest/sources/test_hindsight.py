"""Hindsight against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from kbtools.ingest.model import SourceSettings
from kbtools.ingest.sources import hindsight
from tests.testing.sessions import HindsightServer, hindsight_memory_api, send_json

Handler = Callable[[BaseHTTPRequestHandler], None]


@pytest.fixture
def serve() -> Iterator[Callable[[Handler], HindsightServer]]:
    servers: list[HindsightServer] = []

    def start(handle: Handler) -> HindsightServer:
        servers.append(HindsightServer(handler=handle))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hindsight, "BACKOFF_S", 0.01)


def run(url: str, **kw: object) -> list:
    settings = SourceSettings(hindsight_url=url, **kw)  # type: ignore[arg-type]
    return [hindsight.load(ref, settings) for ref in hindsight.discover(settings)]


def test_memories_become_units_across_pages_and_banks(serve, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(hindsight, "PAGE_SIZE", 2)
    memories = {
        "team": [{"id": f"m{i}", "text": f"fact {i}", "date": 1700000000 + i} for i in range(5)],
        "solo bank": [{"id": "x", "content": {"text": "object text"}, "edited_at": "2026-01-01T00:00:00Z"}],
        "empty": [{"id": "e", "text": "  "}],
    }
    server = serve(hindsight_memory_api(memories))
    *units, empty = run(server.url)
    # Each memory is counted per decision: the agent's kept fact, or bookkeeping without text.
    assert all(u.decisions == {"assistant_prose": 1} for u in units)
    assert (empty.records, empty.decisions) == ([], {"metadata": 1})
    assert [(u.project_identity, u.session_identity, u.records[0].text) for u in units] == [
        *[("team", f"m{i}", f"fact {i}") for i in range(5)],
        ("solo bank", "x", "object text"),
    ]
    assert all(u.records[0].role == "assistant" and u.record_type == "memory" for u in units)
    assert units[0].created_at == "2023-11-14T22:13:20.000Z"
    assert units[5].updated_at == "2026-01-01T00:00:00.000Z"
    paths = [p for p, _ in server.requests]
    assert "/v1/default/banks/team/memories/list?limit=2&offset=4" in paths
    assert "/v1/default/banks/solo%20bank/memories/list?limit=2&offset=0" in paths
    assert len(units[0].content_hash) == 64 and units[0].content_hash != units[1].content_hash


def test_bearer_header_sent_only_with_a_key(serve) -> None:  # type: ignore[no-untyped-def]
    key = "hs_" + secrets.token_hex(12)
    server = serve(hindsight_memory_api({"b": []}))
    run(server.url, hindsight_api_key=key)
    run(server.url)
    with_key, without = server.requests[0][1], server.requests[-1][1]
    assert with_key.get("Authorization") == f"Bearer {key}"
    assert "Authorization" not in without


def test_base_url_path_prefix_is_kept(serve) -> None:  # type: ignore[no-untyped-def]
    seen: list[str] = []

    def handle(handler: BaseHTTPRequestHandler) -> None:
        seen.append(handler.path)
        send_json(handler, {"banks": []})

    server = serve(handle)
    assert run(server.url + "/hindsight/") == []
    assert seen == ["/hindsight/v1/default/banks?limit=500&offset=0"]  # banks are paged too


def test_http_500_is_retried_then_one_error_unit(serve) -> None:  # type: ignore[no-untyped-def]
    server = serve(lambda h: send_json(h, {"detail": "boom"}, status=500))
    (unit,) = run(server.url, hindsight_retries=2)
    assert (unit.record_type, unit.session_identity) == ("memory-store", "unavailable")
    assert unit.error == "hindsight_unavailable: HTTP 500 after 3 attempts"
    assert len(server.requests) == 3


def test_transient_500_recovers(serve) -> None:  # type: ignore[no-untyped-def]
    answers = iter([500, 200])
    api = hindsight_memory_api({"b": [{"id": "1", "text": "kept"}]})

    def handle(handler: BaseHTTPRequestHandler) -> None:
        if handler.path.endswith("/banks") and next(answers) == 500:
            send_json(handler, {}, status=503)
        else:
            api(handler)

    server = serve(handle)
    (unit,) = run(server.url)
    assert unit.records[0].text == "kept" and unit.error == ""


def test_hanging_server_times_out_into_an_error_unit(serve) -> None:  # type: ignore[no-untyped-def]
    release = threading.Event()

    def hang(handler: BaseHTTPRequestHandler) -> None:
        release.wait(5)

    server = serve(hang)
    started = time.monotonic()
    try:
        (unit,) = run(server.url, hindsight_timeout=0.2, hindsight_retries=1)
    finally:
        release.set()
    assert time.monotonic() - started < 3
    assert unit.error == "hindsight_unavailable: timed out (0.2s) after 2 attempts"


def test_garbage_json_is_an_error_unit_without_quoting_it(serve) -> None:  # type: ignore[no-untyped-def]
    def garbage(handler: BaseHTTPRequestHandler) -> None:
        body = b"<html>secret-ish " + secrets.token_hex(8).encode()
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    server = serve(garbage)
    (unit,) = run(server.url)
    assert unit.error == "hindsight_unavailable: invalid JSON response"


def test_failure_midway_keeps_the_memories_already_listed(serve, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(hindsight, "PAGE_SIZE", 1)
    api = hindsight_memory_api({"b": [{"id": "1", "text": "first"}, {"id": "2", "text": "second"}]})

    def handle(handler: BaseHTTPRequestHandler) -> None:
        if "offset=1" in handler.path:
            send_json(handler, {}, status=502)
        else:
            api(handler)

    server = serve(handle)
    units = run(server.url, hindsight_retries=0)
    assert [u.record_type for u in units] == ["memory", "memory-store"]
    assert units[1].error == "hindsight_unavailable: HTTP 502 after 1 attempt"


def test_connection_refused_is_an_error_unit() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    (unit,) = run(f"http://127.0.0.1:{port}", hindsight_retries=0)
    assert unit.error.startswith("hindsight_unavailable: connection failed")


def test_no_url_means_no_units() -> None:
    assert run("") == []
