from __future__ import annotations

import os
from pathlib import Path

from kbtools.ingest.hashing import sha256_hex
from kbtools.ingest.model import SourceSettings
from kbtools.ingest.sources import omp
from tests.testing.sessions import OmpSession, assistant, user, write_omp_advisor, write_omp_session


def settings(root: Path, **kw: object) -> SourceSettings:
    return SourceSettings(omp_sessions=root, **kw)  # type: ignore[arg-type]


def load_all(root: Path, **kw: object) -> list:
    cfg = settings(root, **kw)
    return [omp.load(ref, cfg) for ref in omp.discover(cfg)]


def test_user_and_assistant_text_kept_exactly_tool_and_thinking_dropped(tmp_path: Path) -> None:
    path = write_omp_session(
        tmp_path,
        [
            user("How do I pin astro@latest in CI?"),
            assistant("Pin it in package.json.", thinking="_thinking_ internal", tool=("cat package.json", "OUTPUT")),
            user("Thanks, that worked."),
        ],
        session_id="sess-1",
        cwd="/home/alice/proj",
    )
    (unit,) = load_all(tmp_path)
    assert [(r.role, r.text) for r in unit.records] == [
        ("user", "How do I pin astro@latest in CI?"),
        ("assistant", "Pin it in package.json."),
        ("user", "Thanks, that worked."),
    ]
    assert unit.session_identity == "sess-1"
    assert unit.project_identity == "/home/alice/proj"
    assert unit.created_at == "2026-03-01T09:00:00.000Z"
    assert unit.content_hash == sha256_hex(path.read_bytes())
    assert unit.error == ""
    st = path.stat()
    assert unit.stat_key == (st.st_size, st.st_mtime_ns, st.st_ino)


def test_string_content_message_is_kept(tmp_path: Path) -> None:
    session = OmpSession(session_id="s")
    session.user("plain string prompt", as_string=True)
    session.assistant("reply")
    session.write(tmp_path)
    (unit,) = load_all(tmp_path)
    assert [r.text for r in unit.records] == ["plain string prompt", "reply"]


def test_only_the_active_branch_is_kept(tmp_path: Path) -> None:
    session = OmpSession(session_id="s")
    first = session.user("root question")
    session.assistant("abandoned answer")
    session.user("abandoned follow-up")
    session.user("edited follow-up", parent=first)
    session.assistant("active answer", tool=("ls", "files"))
    session.write(tmp_path)
    (unit,) = load_all(tmp_path)
    assert [r.text for r in unit.records] == ["root question", "edited follow-up", "active answer"]


def test_v1_linear_session_is_read_whole(tmp_path: Path) -> None:
    OmpSession(session_id="old", version=1).add([user("one"), assistant("two")]).write(tmp_path)
    (unit,) = load_all(tmp_path)
    assert [r.text for r in unit.records] == ["one", "two"]
    assert unit.session_identity == "old"


def test_advisor_file_is_a_skipped_unit_without_records(tmp_path: Path) -> None:
    session_file = write_omp_session(tmp_path, [user("hi"), assistant("hello")], session_id="s")
    advisor = write_omp_advisor(session_file, [user("# Session update ..."), assistant("No action needed")])
    named = write_omp_advisor(session_file, [user("x")], name="__advisor.security.jsonl")
    units = load_all(tmp_path)
    by_path = {u.source_identity: u for u in units}
    for path in (advisor, named):
        unit = by_path[str(path)]
        assert unit.record_type == "advisor"
        assert unit.skip_reason == "internal_control_plane"
        assert unit.records == []
        assert unit.content_hash == sha256_hex(path.read_bytes())
        assert unit.stat_key is not None
    # Never parsed, yet every line (header and messages) is counted: the watchdog's own, injected.
    for path, messages in ((advisor, 2), (named, 1)):
        lines = path.read_text().splitlines()
        assert len(lines) > messages
        assert by_path[str(path)].decisions == {"injected": len(lines)}
    assert by_path[str(session_file)].record_type == "session"


def test_missing_store_gives_one_unavailable_unit(tmp_path: Path) -> None:
    (unit,) = load_all(tmp_path / "nope")
    assert unit.format == "unavailable"
    assert unit.record_type == "session-store"
    assert (unit.skip_reason, unit.error) == ("source_store_unavailable", "")


def test_discovery_is_sorted_and_skips_directory_symlinks(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    b = write_omp_session(root, [user("b")], session_id="b", dir_name="b")
    a = write_omp_session(root, [user("a")], session_id="a", dir_name="a")
    outside = write_omp_session(tmp_path / "outside", [user("x")], session_id="x", dir_name="x")
    os.symlink(outside.parent, root / "linked", target_is_directory=True)
    refs = list(omp.discover(settings(root)))
    assert [r.locator for r in refs] == [str(a), str(b)]


def test_session_without_header_id_keeps_identity_when_it_grows(tmp_path: Path) -> None:
    path = tmp_path / "d" / "2026_sess.jsonl"
    path.parent.mkdir()
    path.write_text('{"type":"message","message":{"role":"user","content":"first"}}\n')
    (before,) = load_all(tmp_path)
    with path.open("a") as fh:
        fh.write('{"type":"message","message":{"role":"assistant","content":"second"}}\n')
    (after,) = load_all(tmp_path)
    assert before.session_identity == after.session_identity == "2026_sess"
    assert before.content_hash != after.content_hash


def test_large_tool_output_is_skipped_silently_and_keeps_the_tree_linked(tmp_path: Path) -> None:
    session = OmpSession(session_id="s")
    session.user("first question")
    session.assistant("running it", tool=("cat big.log", "L" * (3 << 20)))
    session.assistant("the log says the disk is full")
    session.write(tmp_path)
    (unit,) = load_all(tmp_path)
    assert unit.error == ""
    assert [r.text for r in unit.records] == ["first question", "running it", "the log says the disk is full"]


def test_reference_fixture_shape_keeps_visible_prose_and_reports_the_bad_line(tmp_path: Path) -> None:
    def message(role: str, content: object) -> dict:
        return {"type": "message", "message": {"role": role, "content": content}}

    import json

    lines = [
        {"type": "session", "id": "omp-secret-id", "cwd": "/home/alice/app", "timestamp": "2026-08-12T00:00:00.000Z"},
        message("system", [{"type": "text", "text": "system prompt"}]),
        message(
            "user",
            [
                {"type": "text", "text": "Keep this user question"},
                {"type": "toolCall", "id": "t", "name": "read", "arguments": {}},
            ],
        ),
        message(
            "assistant", [{"type": "thinking", "thinking": "hidden"}, {"type": "text", "text": "Keep this answer"}]
        ),
        message("toolResult", [{"type": "text", "text": "tool output"}]),
    ]
    path = tmp_path / "d" / "s.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines) + "not-json\n")
    (unit,) = load_all(tmp_path)
    assert [r.text for r in unit.records] == ["Keep this user question", "Keep this answer"]
    assert unit.error == "malformed_json: 1 line (first at line 6)"
    assert unit.session_identity == "omp-secret-id"


def _skipped_by_searches(head: bytes, always: bool) -> tuple[str, str | None, str | None] | None:
    """What the reader did before the one-match read of OMP's own head shape."""
    if not always and not omp._skippable(head):
        return None
    return omp._decision_from_head(head), *omp._ids_from_head(head)


def test_a_head_is_read_by_one_match_as_by_the_searches() -> None:
    heads = [
        b'{"type":"message","id":"a1","parentId":"b2","timestamp":"2026-05-01T01:38:24.638Z","message":{"role":"toolResult","content":[]}}',
        b'{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi"}}',
        b'{"type":"message","id":"a1","parentId":"b2","timestamp":"t","message":{"role":"assistant"',
        b'{"type":"message","id":"a1","parentId":"b2","timestamp":"t","message":{"role":"tool-x","role":"user"}}',
        b'{"type":"message","id":"a1","parentId":"b2","timestamp":"t","message":{"content":[],"role":"bashExecution"}}',
        b'{"type":"message","id":"a1","parentId":"b2","message":{"role":"custom"}}',
        b'{"type":"message","id":"a1","parentId":"b2","timestamp":"t\\"","message":{"role":"user"}}',
        b'{"type":"message","id":"a\\"1","parentId":"b2","timestamp":"t","message":{"role":"toolResult"}}',
        b'{"type":"message","id":"a1","parentId":"b\\\\2","message":{"role":"toolResult"}}',
        b'{"type":"message","id":"\xff\xfe","parentId":"\xc3","message":{"role":"toolResult"}}',
        b'{"type":"session","id":"s","parentId":null,"timestamp":"t","role":"toolResult"}',
        b'{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/w"}',
        b'{"type":"model_change","id":"m","parentId":null,"timestamp":"t","model":"x","role":"default"}',
        b'{"type":"compaction","id":"c","parentId":"m","timestamp":"t","summary":"s"}',
        b'{"type":"brand_new","id":"","parentId":""}',
        b'{"type":"message","role":"user","id":"a1","parentId":"b2"}',
        b'{ "type": "message", "id": "a1", "parentId": "b2", "message": {"role": "toolResult"}}',
        b'{"id":"a1","parentId":"b2","message":{"role":"toolResult"}}',
        b'{"type":"message","id":"a1"}',
        b"not json",
    ]
    for head in heads:
        for always in (False, True):
            assert omp._skipped(head, always=always) == _skipped_by_searches(head, always), (head, always)
