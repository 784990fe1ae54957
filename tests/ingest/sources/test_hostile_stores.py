"""Session stores and servers that try to hang or exhaust ingest (issue 18).

A real slow HTTP server on 127.0.0.1, a real FIFO, a real device and a
symlink to /dev/zero, real SQLite files and the legacy JSON tree of OpenCode
(anomalyco/opencode ``packages/opencode/src/storage/json-migration.ts``
names the tables and the ``storage/{session,message,part}`` layout).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kbtools.ingest.model import SourceSettings
from kbtools.ingest.sources import claude, codex, hindsight, omp, opencode


def _drip_server() -> tuple[socket.socket, threading.Event]:
    """Accepts connections and answers one byte a second, for ever."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            threading.Thread(target=drip, args=(conn,), daemon=True).start()

    def drip(conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                for (
                    byte
                ) in b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 9999\r\n\r\n{"banks"':
                    if stop.wait(1.0):
                        return
                    conn.sendall(bytes([byte]))
            except OSError:
                return

    threading.Thread(target=serve, daemon=True).start()
    return server, stop


def test_a_server_dripping_a_byte_a_second_cannot_hold_the_run(tmp_path: Path) -> None:
    server, stop = _drip_server()
    try:
        url = f"http://127.0.0.1:{server.getsockname()[1]}"
        cfg = SourceSettings(hindsight_url=url, hindsight_timeout=1.0, hindsight_retries=1)
        started = time.monotonic()
        (ref,) = list(hindsight.discover(cfg))
        took = time.monotonic() - started
    finally:
        stop.set()
        server.close()
    # Two attempts of one second each, and the back-off between them; a timeout per
    # socket read would wait ~90 s for the headers alone.
    assert took < 6, took
    assert ref.payload == "hindsight_unavailable: timed out (1s) after 2 attempts"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("kind", ["fifo", "device", "dev-zero-link"])
def test_a_session_file_that_is_not_a_regular_file_is_skipped_unread(tmp_path: Path, kind: str) -> None:
    stores = {
        "claude": (claude, SourceSettings(claude_dir=tmp_path / "claude"), tmp_path / "claude" / "projects" / "-p"),
        "codex": (codex, SourceSettings(codex_dir=tmp_path / "codex"), tmp_path / "codex" / "sessions" / "2026"),
        "omp": (omp, SourceSettings(omp_sessions=tmp_path / "omp"), tmp_path / "omp" / "-p"),
    }
    for module, cfg, folder in stores.values():
        folder.mkdir(parents=True)
        path = folder / "rollout-2026-01-01T00-00-00-x.jsonl"
        if kind == "fifo":
            os.mkfifo(path)
        else:
            path.symlink_to("/dev/urandom" if kind == "device" else "/dev/zero")
        started = time.monotonic()
        units = [module.load(ref, cfg) for ref in module.discover(cfg)]
        assert time.monotonic() - started < 5
        (unit,) = [u for u in units if u.source_identity == str(path)]
        assert (unit.skip_reason, unit.error, unit.records) == ("not_a_regular_file", "", [])
        assert unit.stat_key is None  # looked at again next run, never cached


def _omp_line(i: int, parent: str | None) -> dict[str, object]:
    role = "user" if i % 2 == 0 else "assistant"
    return {
        "type": "message",
        "id": f"{i:08x}",
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:00Z",
        "message": {"role": role, "content": f"message number {i} of many"},
    }


def _claude_line(i: int, parent: str | None) -> dict[str, object]:
    # The line shape daaain/claude-code-log documents (claude_code_log/models.py; test_claude_decisions.py).
    common = {"parentUuid": parent, "isSidechain": False, "uuid": f"{i:08x}-0000-4000-8000-000000000000"}
    common |= {"sessionId": "big", "cwd": "/p", "timestamp": "2026-01-01T00:00:00Z"}
    if i % 2 == 0:
        return common | {"type": "user", "message": {"role": "user", "content": f"message number {i} of many"}}
    content = [{"type": "text", "text": f"message number {i} of many"}]
    return common | {"type": "assistant", "message": {"id": f"msg_{i}", "role": "assistant", "content": content}}


def write_big_session(root: Path, store: str, count: int = 1_000_000) -> tuple[Path, str]:
    """One session of ``count`` messages for ``store`` ("omp" or "claude") under ``root``;
    returns the store's folder and the SourceSettings field that names it (also used by
    bench/big_session.py)."""
    if store == "omp":
        path = root / "omp" / "-p" / "big.jsonl"
        head = {"type": "session", "version": 3, "id": "big", "cwd": "/p", "timestamp": "2026-01-01T00:00:00Z"}
        lines, key, field = _omp_line, "id", "omp_sessions"
    else:
        path = root / "claude" / "projects" / "-p" / "3f0c9c2e-1111-4222-8333-444455556666.jsonl"
        head, lines, key, field = None, _claude_line, "uuid", "claude_dir"
    path.parent.mkdir(parents=True)
    with path.open("w") as fh:
        if head is not None:
            fh.write(json.dumps(head) + "\n")
        parent = None
        for i in range(count):
            entry = lines(i, parent)
            parent = str(entry[key])
            fh.write(json.dumps(entry, separators=(",", ":")))
            fh.write("\n")
    return root / store, field


@pytest.mark.parametrize("store", ["omp", "claude"])
def test_a_million_message_session_stays_under_the_memory_bound(tmp_path: Path, store: str) -> None:
    """Peak RSS of reading one 10^6-message session (a child process, so the
    measure is the reader's alone), under the 200 MB bound. Past the prose budget
    (a few thousand messages in) the rest is read and left out."""
    folder, field = write_big_session(tmp_path, store)
    script = (
        "import resource, sys\n"
        "from pathlib import Path\n"
        "from kbtools.ingest.model import SourceSettings\n"
        f"from kbtools.ingest.sources import {store} as reader\n"
        f"cfg = SourceSettings({field}=Path(sys.argv[1]))\n"
        "(ref,) = [r for r in reader.discover(cfg)]\n"
        "unit = reader.load(ref, cfg)\n"
        "assert unit.records and unit.truncated and not unit.error, unit.error\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    out = subprocess.run([sys.executable, "-c", script, str(folder)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    peak_mb = int(out.stdout.strip()) / 1024
    assert peak_mb < 200, peak_mb


def _opencode_db(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT, directory TEXT, time_created INTEGER,"
        " time_updated INTEGER);"
        "CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, time_updated INTEGER,"
        " data TEXT);"
        "CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, time_created INTEGER,"
        " time_updated INTEGER, data TEXT);"
    )
    conn.execute("INSERT INTO session VALUES ('ses_1', 'p', '/home/alice/app', 1000, 1000)")
    conn.execute(
        "INSERT INTO message VALUES ('msg_1', 'ses_1', 1000, 1000, ?)",
        (json.dumps({"role": "user", "time": {"created": 1000}}),),
    )
    conn.execute(
        "INSERT INTO part VALUES ('prt_1', 'msg_1', 'ses_1', 1000, 1000, ?)",
        (json.dumps({"type": "text", "text": "first wording"}),),
    )
    conn.commit()
    return conn


def test_an_opencode_part_edited_in_place_changes_the_sessions_version(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    conn = _opencode_db(db)
    cfg = SourceSettings(opencode_db=db, opencode_storage=tmp_path / "storage")
    (before,) = list(opencode.discover(cfg))
    # The part is rewritten in place; OpenCode bumps the part row's time_updated only.
    conn.execute(
        "UPDATE part SET data = ?, time_updated = 2000 WHERE id = 'prt_1'",
        (json.dumps({"type": "text", "text": "second wording"}),),
    )
    conn.commit()
    conn.close()
    (after,) = list(opencode.discover(cfg))
    assert before.stat_key != after.stat_key
    unit = opencode.load(after, cfg)
    assert [r.text for r in unit.records] == ["second wording"]
    assert unit.stat_key == after.stat_key  # what was read is what discovery saw


def test_an_edited_legacy_part_file_changes_the_sessions_version(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    (storage / "session" / "p").mkdir(parents=True)
    (storage / "session" / "p" / "ses_1.json").write_text(json.dumps({"id": "ses_1", "directory": "/p"}))
    (storage / "message" / "ses_1").mkdir(parents=True)
    (storage / "message" / "ses_1" / "msg_1.json").write_text(json.dumps({"role": "user", "time": {"created": 1}}))
    part = storage / "part" / "msg_1" / "prt_1.json"
    part.parent.mkdir(parents=True)
    part.write_text(json.dumps({"type": "text", "text": "first"}))
    cfg = SourceSettings(opencode_db=tmp_path / "absent.db", opencode_storage=storage)
    (before,) = list(opencode.discover(cfg))
    part.write_text(json.dumps({"type": "text", "text": "edited!"}))
    os.utime(part, ns=(part.stat().st_atime_ns, part.stat().st_mtime_ns + 5_000_000_000))
    (after,) = list(opencode.discover(cfg))
    assert before.stat_key != after.stat_key
    assert [r.text for r in opencode.load(after, cfg).records] == ["edited!"]
