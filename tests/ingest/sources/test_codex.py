from __future__ import annotations

from pathlib import Path

from kbtools.ingest.hashing import sha256_hex
from kbtools.ingest.model import SourceSettings
from kbtools.ingest.sources import codex
from tests.testing.sessions import CodexSession, assistant, user, write_codex_history, write_codex_session


def load_all(home: Path) -> list:
    cfg = SourceSettings(codex_dir=home)
    return [codex.load(ref, cfg) for ref in codex.discover(cfg)]


def test_each_message_kept_once_without_developer_event_or_reasoning_traces(tmp_path: Path) -> None:
    path = write_codex_session(
        tmp_path,
        [
            user("Why does the build fail on CI?"),
            assistant("The cache key is stale.", thinking="REASONING-TRACE", tool=("npm test", "TOOL-OUTPUT")),
            user("Fixed, thanks."),
        ],
        session_id="0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000",
        cwd="/home/alice/app",
    )
    (unit,) = load_all(tmp_path)
    assert [(r.role, r.text) for r in unit.records] == [
        ("user", "Why does the build fail on CI?"),
        ("assistant", "The cache key is stale."),
        ("user", "Fixed, thanks."),
    ]
    joined = "\n".join(r.text for r in unit.records)
    for trace in ("REASONING-TRACE", "TOOL-OUTPUT", "permissions", "Filesystem sandboxing"):
        assert trace not in joined
    assert unit.session_identity == "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000"
    assert unit.project_identity == "/home/alice/app"
    assert unit.content_hash == sha256_hex(path.read_bytes())
    assert unit.error == ""


def test_injected_environment_and_agents_md_blocks_are_not_user_prose(tmp_path: Path) -> None:
    session = CodexSession(session_id="s1")
    session.message("user", "<user_instructions>\nbe terse\n</user_instructions>")
    session.message(
        "user", "<environment_context>\n<cwd>/home/alice</cwd>\n</environment_context>\nplease rename the flag"
    )
    session.message("user", "<environment_context><cwd>/x</cwd>")  # cut off: all harness text
    session.write(tmp_path)
    (unit,) = load_all(tmp_path)
    assert [r.text for r in unit.records] == ["please rename the flag"]


def test_session_id_from_payload_id_then_session_id(tmp_path: Path) -> None:
    write_codex_session(tmp_path, [user("a")], session_id="from-id", id_field="id")
    write_codex_session(tmp_path, [user("b")], session_id="from-session-id", id_field="session_id", archived=True)
    ids = sorted(u.session_identity for u in load_all(tmp_path))
    assert ids == ["from-id", "from-session-id"]


def test_session_id_stays_when_a_live_rollout_grows(tmp_path: Path) -> None:
    session = CodexSession(session_id="live").add([user("first")])
    path = session.write(tmp_path)
    (before,) = load_all(tmp_path)
    session.add([assistant("second")]).write(tmp_path)
    (after,) = load_all(tmp_path)
    assert path.exists()
    assert before.session_identity == after.session_identity == "live"
    assert before.content_hash != after.content_hash


def test_archived_sessions_are_read_and_sorted_with_the_live_ones(tmp_path: Path) -> None:
    live = write_codex_session(tmp_path, [user("live")], session_id="b")
    archived = write_codex_session(tmp_path, [user("old")], session_id="a", archived=True)
    refs = list(codex.discover(SourceSettings(codex_dir=tmp_path)))
    assert [r.locator for r in refs] == sorted([str(live), str(archived)])


def test_history_index_is_recorded_but_not_mined(tmp_path: Path) -> None:
    write_codex_session(tmp_path, [user("prompt one")], session_id="s")
    history = write_codex_history(tmp_path, ["prompt one", "prompt two"])
    units = load_all(tmp_path)
    (hist,) = [u for u in units if u.record_type == "prompt-history"]
    assert hist.skip_reason == "prompt_index_covered_by_session_store"
    assert hist.records == []
    assert hist.session_identity == str(history)
    assert hist.content_hash == sha256_hex(history.read_bytes())
    # Not parsed, yet every line is counted: a prompt the rollouts already hold.
    assert hist.decisions == {"duplicate": 2}


def test_history_lines_are_counted_across_read_pieces_and_blank_lines(tmp_path: Path) -> None:
    """codex-rs/core/src/message_history.rs appends one ``{session_id, ts, text}``
    line per prompt; a long prompt can straddle the 1 MiB pieces the file is
    hashed in, blank lines are no prompts, and a last line may lack its newline."""
    history = tmp_path / "history.jsonl"
    line = b'{"session_id":"s","ts":1,"text":"%s"}'
    long = line % (b"x" * ((1 << 20) - 20))
    history.write_bytes(b"\n" + line % b"a" + b"\n\n\n" + long + b"\n" + b"\n" * 3 + line % b"b" + b"\n" + line % b"c")
    (hist,) = [u for u in load_all(tmp_path) if u.record_type == "prompt-history"]
    assert hist.decisions == {"duplicate": 4}


def test_legacy_envelope_less_rollout(tmp_path: Path) -> None:
    path = tmp_path / "sessions" / "2025" / "06" / "01" / "rollout-2025-06-01T10-00-00-legacy.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(
        '{"id":"legacy-id","timestamp":"2025-06-01T10:00:00Z","instructions":""}\n'
        '{"record_type":"state"}\n'
        '{"type":"message","role":"user","content":[{"type":"input_text","text":"old prompt"}]}\n'
        '{"type":"reasoning","summary":[]}\n'
        '{"type":"message","role":"assistant","content":[{"type":"output_text","text":"old reply"}]}\n'
    )
    (unit,) = load_all(tmp_path)
    assert unit.session_identity == "legacy-id"
    assert [r.text for r in unit.records] == ["old prompt", "old reply"]


def test_missing_codex_home_gives_one_unavailable_unit(tmp_path: Path) -> None:
    (unit,) = load_all(tmp_path / "missing")
    assert (unit.format, unit.skip_reason, unit.error) == ("unavailable", "source_store_unavailable", "")


def test_fork_file_sharing_a_thread_id_gets_its_own_identity(tmp_path: Path) -> None:
    thread = "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000"
    session = CodexSession(session_id=thread).add([user("original")])
    original = session.write(tmp_path)
    fork = original.with_name(original.stem + "_0199ffff-0000-7000-8000-000000000001.jsonl")
    fork.write_text(original.read_text())
    ids = sorted(u.session_identity for u in load_all(tmp_path))
    assert ids == [thread, f"{thread}_0199ffff-0000-7000-8000-000000000001"]


def test_injected_block_removal_is_linear_on_unclosed_tags() -> None:
    import time

    from kbtools.ingest.sources.codex import strip_injected

    text = "question " + "<environment_context> x " * 50_000
    started = time.perf_counter()
    assert strip_injected(text) == text  # nothing closed: nothing removed
    assert time.perf_counter() - started < 1.0
    assert strip_injected("a <user_instructions>b</user_instructions> c <INSTRUCTIONSX>d") == "a  c <INSTRUCTIONSX>d"
