from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from kbtools.ingest.model import SourceSettings
from kbtools.ingest.sources import opencode
from tests.testing.sessions import OpenCodeDb, assistant, user, write_opencode_storage


def cfg(data: Path, db: str = "opencode*.db") -> SourceSettings:
    return SourceSettings(opencode_db=data / db, opencode_storage=data / "storage")


def load_all(settings: SourceSettings) -> list:
    return [opencode.load(ref, settings) for ref in opencode.discover(settings)]


def fingerprint(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return hashlib.sha256(path.read_bytes()).hexdigest(), st.st_mtime_ns, st.st_size


def test_text_parts_kept_exactly_synthetic_reasoning_and_tools_skipped(tmp_path: Path) -> None:
    db = OpenCodeDb(tmp_path / "opencode.db")
    conv = db.session(
        [user("Why is the build red?"), assistant("A flaky test.", thinking="REASONING", tool=("npm t", "TOOL-OUT"))],
        session_id="ses_one",
        directory="/home/alice/app",
    )
    conv.user("Can you fix it?", synthetic="SYNTHETIC FILE CONTENT")
    db.flush(conv)
    db.close()
    (unit,) = load_all(cfg(tmp_path))
    assert [(r.role, r.text) for r in unit.records] == [
        ("user", "Why is the build red?"),
        ("assistant", "A flaky test."),
        ("user", "Can you fix it?"),
    ]
    assert (unit.session_identity, unit.project_identity) == ("ses_one", "/home/alice/app")
    assert unit.format == "sqlite" and unit.error == ""
    assert unit.created_at == "2026-03-01T09:00:00.000Z"


def test_database_is_opened_read_only_and_left_byte_identical(tmp_path: Path) -> None:
    path = tmp_path / "opencode.db"
    db = OpenCodeDb(path)
    db.session([user("q"), assistant("a")], session_id="ses_a")
    db.close()
    before = fingerprint(path)
    settings = cfg(tmp_path)
    units = load_all(settings)
    assert [u.records[0].text for u in units] == ["q"]
    assert fingerprint(path) == before
    conn = opencode.connect_readonly(path)
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("INSERT INTO project (id, worktree, time_created, time_updated) VALUES ('x', '/', 1, 1)")
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("DELETE FROM session")
    conn.close()
    assert fingerprint(path) == before


def test_session_version_and_hash_change_only_with_that_session(tmp_path: Path) -> None:
    db = OpenCodeDb(tmp_path / "opencode.db")
    conv = db.session([user("q1")], session_id="ses_a")
    db.session([user("other")], session_id="ses_b")
    settings = cfg(tmp_path)
    first = {u.session_identity: u for u in load_all(settings)}
    refs = {r.payload.session_id: r for r in opencode.discover(settings)}
    conv.assistant("a1")
    db.flush(conv)
    second = {u.session_identity: u for u in load_all(settings)}
    refs2 = {r.payload.session_id: r for r in opencode.discover(settings)}
    db.close()
    assert first["ses_a"].content_hash != second["ses_a"].content_hash
    assert first["ses_b"].content_hash == second["ses_b"].content_hash
    assert refs["ses_a"].stat_key != refs2["ses_a"].stat_key
    assert refs["ses_b"].stat_key == refs2["ses_b"].stat_key
    assert refs2["ses_a"].stat_key[1:3] == (2, 4)  # messages; parts: text + step-start, text, step-finish
    assert second["ses_a"].stat_key == refs2["ses_a"].stat_key  # the version read = the version discovered


def test_garbage_file_named_opencode_db_is_an_error_unit(tmp_path: Path) -> None:
    (tmp_path / "opencode.db").write_bytes(b"this is not sqlite\n" * 100)
    (unit,) = load_all(cfg(tmp_path))
    assert unit.record_type == "session-store"
    assert unit.error == "opencode_db_unreadable: file is not a database"


def test_database_locked_by_a_writer_is_an_error_unit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "opencode.db"
    db = OpenCodeDb(path, wal=False)
    db.session([user("q")], session_id="ses_a")
    db.close()
    monkeypatch.setattr(opencode, "BUSY_TIMEOUT_S", 0.05)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")
    try:
        (unit,) = load_all(cfg(tmp_path))
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert unit.error == "opencode_db_unreadable: database is locked"


def test_lock_taken_between_discovery_and_load_fails_only_that_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "opencode.db"
    db = OpenCodeDb(path, wal=False)
    db.session([user("q")], session_id="ses_a", directory="/home/alice/app")
    db.close()
    monkeypatch.setattr(opencode, "BUSY_TIMEOUT_S", 0.05)
    settings = cfg(tmp_path)
    (ref,) = opencode.discover(settings)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")
    try:
        unit = opencode.load(ref, settings)
    finally:
        writer.close()
    assert unit.error == "opencode_db_unreadable: database is locked"
    assert (unit.session_identity, unit.project_identity) == ("ses_a", "/home/alice/app")
    assert unit.records == []


def test_channel_databases_are_all_read(tmp_path: Path) -> None:
    for name, sid in (("opencode.db", "ses_stable"), ("opencode-beta.db", "ses_beta")):
        db = OpenCodeDb(tmp_path / name)
        db.session([user(sid)], session_id=sid)
        db.close()
    assert sorted(u.session_identity for u in load_all(cfg(tmp_path))) == ["ses_beta", "ses_stable"]


def test_legacy_storage_read_only_for_sessions_the_db_lacks(tmp_path: Path) -> None:
    db = OpenCodeDb(tmp_path / "opencode.db")
    db.session([user("migrated prompt")], session_id="ses_migrated")
    db.close()
    write_opencode_storage(tmp_path, [user("migrated prompt")], session_id="ses_migrated")
    write_opencode_storage(
        tmp_path,
        [user("only in json"), assistant("json reply", tool=("ls", "OUT"))],
        session_id="ses_old",
        directory="/home/alice/old",
    )
    units = load_all(cfg(tmp_path))
    by_id = {u.session_identity: u for u in units}
    assert sorted(by_id) == ["ses_migrated", "ses_old"]
    assert by_id["ses_migrated"].format == "sqlite"
    legacy = by_id["ses_old"]
    assert legacy.format == "json"
    assert [r.text for r in legacy.records] == ["only in json", "json reply"]
    assert legacy.project_identity == "/home/alice/old"
    assert legacy.content_hash == load_all(cfg(tmp_path))[1].content_hash


def test_legacy_storage_alone_without_a_db(tmp_path: Path) -> None:
    write_opencode_storage(tmp_path, [user("json only")], session_id="ses_x")
    (unit,) = load_all(cfg(tmp_path))
    assert [r.text for r in unit.records] == ["json only"]


def test_missing_store_gives_one_unavailable_unit(tmp_path: Path) -> None:
    (unit,) = load_all(cfg(tmp_path / "nothing"))
    assert (unit.format, unit.skip_reason, unit.error) == ("unavailable", "source_store_unavailable", "")


def test_malformed_part_row_is_counted(tmp_path: Path) -> None:
    path = tmp_path / "opencode.db"
    db = OpenCodeDb(path)
    conv = db.session([user("fine")], session_id="ses_a")
    message_id = conv.user("second")
    db.flush(conv)
    db.conn.execute(
        "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?,?,?,?,?,?)",
        ("prt_zzzz", message_id, "ses_a", 1, 1, '{"type":"text","text":"cut'),
    )
    db.conn.commit()
    db.close()
    (unit,) = load_all(cfg(tmp_path))
    assert unit.error == "malformed_records: 1"
    assert [r.text for r in unit.records] == ["fine", "second"]


def test_minimal_schema_of_the_reference_fixture_is_read(tmp_path: Path) -> None:
    path = tmp_path / "opencode.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE session (id TEXT, project_id TEXT, directory TEXT, time_created INTEGER, time_updated INTEGER);"
        "CREATE TABLE message (id TEXT, session_id TEXT, time_created INTEGER, data TEXT);"
        "CREATE TABLE part (message_id TEXT, data TEXT, time_created INTEGER);"
    )
    conn.execute("INSERT INTO session VALUES ('ses-secret', 'p', '/home/alice/app', 1780000000000, 1780000001000)")
    conn.execute("""INSERT INTO message VALUES ('m1', 'ses-secret', 1, '{"role":"user","time":{"created":1}}')""")
    conn.execute("""INSERT INTO message VALUES ('m2', 'ses-secret', 2, '{"role":"assistant","time":{"created":2}}')""")
    conn.execute("""INSERT INTO part VALUES ('m1', '{"type":"text","text":"visible question"}', 1)""")
    conn.execute("""INSERT INTO part VALUES ('m2', '{"type":"reasoning","text":"hidden"}', 2)""")
    conn.execute("""INSERT INTO part VALUES ('m2', '{"type":"text","text":"visible answer"}', 3)""")
    conn.commit()
    conn.close()
    before = fingerprint(path)
    (unit,) = load_all(cfg(tmp_path))
    assert [r.text for r in unit.records] == ["visible question", "visible answer"]
    assert unit.updated_at == "2026-05-28T20:26:41.000Z"
    assert fingerprint(path) == before


def test_null_and_non_utf8_rows_are_counted_not_fatal(tmp_path: Path) -> None:
    db = OpenCodeDb(tmp_path / "opencode.db")
    conv = db.session([user("fine")], session_id="ses_a")
    message_id = conv.user("second")
    db.flush(conv)
    db.conn.execute("PRAGMA ignore_check_constraints = ON")
    db.conn.execute("CREATE TABLE part2 AS SELECT * FROM part")  # same columns, no NOT NULL
    db.conn.execute("DROP TABLE part")
    db.conn.execute("ALTER TABLE part2 RENAME TO part")
    db.conn.execute(
        "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?,?,?,?,?,?)",
        ("prt_zz1", message_id, "ses_a", 1, 1, None),
    )
    db.conn.execute(
        "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?,?,?,?,?,?)",
        ("prt_zz2", message_id, "ses_a", 1, 1, b'{"type":"text","text":"caf\xe9"}'),
    )
    db.conn.commit()
    db.close()
    (unit,) = load_all(cfg(tmp_path))
    assert unit.error == "malformed_records: 2"
    assert [r.text for r in unit.records] == ["fine", "second"]
