from __future__ import annotations

from pathlib import Path

from kbtools.ingest.hashing import hash_identifier, hashed_identity_key, sha256_hex, source_key_of
from kbtools.ingest.model import SourceSettings
from kbtools.ingest.sources import load, prompt_history
from tests.testing.sessions import write_opencode_prompt_history


def load_one(path: Path):  # type: ignore[no-untyped-def]
    settings = SourceSettings(prompt_history=path)
    (ref,) = prompt_history.discover(settings)
    return load(ref, settings)  # through the registry: routed to prompt_history


def test_prompts_are_user_records_kept_exactly(tmp_path: Path) -> None:
    path = write_opencode_prompt_history(tmp_path / "prompt-history.jsonl", ["first prompt", "  second\nprompt "])
    unit = load_one(path)
    assert [(r.role, r.text) for r in unit.records] == [("user", "first prompt"), ("user", "  second\nprompt ")]
    assert (unit.tool, unit.record_type, unit.format) == ("opencode", "prompt-history", "jsonl")
    assert unit.content_hash == sha256_hex(path.read_bytes())


def test_identity_is_the_file_path_and_stable_on_append(tmp_path: Path) -> None:
    path = write_opencode_prompt_history(tmp_path / "prompt-history.jsonl", ["one"])
    before = load_one(path)
    with path.open("a") as fh:
        fh.write('{"input":"two","parts":[],"mode":"normal"}\n')
    after = load_one(path)
    assert before.session_identity == after.session_identity == str(path)
    assert hash_identifier(before.session_identity) == hash_identifier(after.session_identity)
    assert before.content_hash != after.content_hash
    before_key, after_key = (
        source_key_of(
            hashed_identity_key("opencode", hash_identifier(u.project_identity), hash_identifier(u.session_identity)),
            u.content_hash,
        )
        for u in (before, after)
    )
    assert before_key != after_key
    assert [r.text for r in after.records] == ["one", "two"]


def test_text_field_and_object_forms_are_read(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text('{"text":"from text","ts":1700000000}\n{"input":{"text":"from object"}}\n[1,2]\n')
    unit = load_one(path)
    assert [r.text for r in unit.records] == ["from text", "from object"]
    assert unit.records[0].created_at == "2023-11-14T22:13:20.000Z"


def test_missing_file_yields_nothing(tmp_path: Path) -> None:
    assert list(prompt_history.discover(SourceSettings(prompt_history=tmp_path / "none.jsonl"))) == []


def test_file_removed_before_its_load_is_a_read_error_unit_without_records(tmp_path: Path) -> None:
    path = write_opencode_prompt_history(tmp_path / "prompt-history.jsonl", ["lost prompt"])
    settings = SourceSettings(prompt_history=path)
    (ref,) = prompt_history.discover(settings)
    path.unlink()
    unit = load(ref, settings)
    assert unit.error == "read_error: No such file or directory"
    assert (unit.records, unit.stat_key, unit.session_identity) == ([], None, str(path))
