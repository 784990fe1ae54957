from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from kbtools.config import Config, IngestConfig
from kbtools.ingest.model import SourceRef, SourceSettings
from kbtools.ingest.sources import SOURCES, discover_all, load, resolve_settings, source_for
from tests.testing.sessions import (
    CodexSession,
    OpenCodeDb,
    assistant,
    user,
    write_claude_session,
    write_codex_history,
    write_omp_session,
    write_opencode_prompt_history,
)


def test_registry_is_in_loader_order() -> None:
    assert [s.name for s in SOURCES] == [
        "omp",
        "opencode",
        "codex",
        "prompt_history",
        "hindsight",
        "claude",
        # then every other module of the package that declares a READER, by name
        "aider",
        "copilot",
        "cursor",
        "gemini",
    ]


def test_defaults_follow_home_and_xdg(hermetic_env: Path, tmp_path: Path) -> None:
    s = resolve_settings(Config(root=tmp_path))
    home = hermetic_env
    assert s.omp_sessions == home / ".omp/agent/sessions"
    assert s.codex_dir == home / ".codex"
    assert s.opencode_db == home / "xdg_data_home/opencode/opencode*.db"
    assert s.opencode_storage == home / "xdg_data_home/opencode/storage"
    assert s.prompt_history == home / "xdg_state_home/opencode/prompt-history.jsonl"
    assert s.claude_dir == home / ".claude"
    assert s.hindsight_url is None
    assert s.max_text == 120_000


def test_empty_or_relative_xdg_falls_back_to_the_home_default(
    hermetic_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", "")
    monkeypatch.setenv("XDG_STATE_HOME", "relative/state")
    s = resolve_settings(Config(root=tmp_path))
    assert s.opencode_db == hermetic_env / ".local/share/opencode/opencode*.db"
    assert s.prompt_history == hermetic_env / ".local/state/opencode/prompt-history.jsonl"


def test_flag_beats_env_beats_kb_yaml_beats_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = Config(root=tmp_path, ingest=IngestConfig(codex_dir="stores/codex", hindsight_url="http://file:1"))
    assert resolve_settings(config).codex_dir == tmp_path / "stores/codex"  # relative to the KB root
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "env-codex"))
    monkeypatch.setenv("HINDSIGHT_API_URL", "http://env:2")
    monkeypatch.setenv("HINDSIGHT_API_KEY", "k")
    s = resolve_settings(config)
    assert (s.codex_dir, s.hindsight_url, s.hindsight_api_key) == (tmp_path / "env-codex", "http://env:2", "k")
    s = resolve_settings(config, {"codex_dir": str(tmp_path / "flag"), "hindsight_url": "http://flag:3"})
    assert (s.codex_dir, s.hindsight_url) == (tmp_path / "flag", "http://flag:3")
    assert resolve_settings(config, {"skip_hindsight": True}).hindsight_url is None


def test_agent_env_vars_select_stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", f"{tmp_path / 'c1'},{tmp_path / 'c2'}")
    monkeypatch.setenv("OPENCODE_DB", "opencode-dev.db")
    s = resolve_settings(Config(root=tmp_path))
    assert s.omp_sessions == tmp_path / "agent/sessions"
    assert s.claude_dir == tmp_path / "c1"
    assert s.opencode_db is not None and s.opencode_db.name == "opencode-dev.db"


def test_every_store_end_to_end_through_the_registry(hermetic_env: Path, tmp_path: Path) -> None:
    home = hermetic_env
    write_omp_session(home / ".omp/agent/sessions", [user("omp q"), assistant("omp a")])
    CodexSession(session_id="c").add([user("codex q")]).write(home / ".codex")
    write_codex_history(home / ".codex", ["codex q"])
    db = OpenCodeDb(home / "xdg_data_home/opencode/opencode.db")
    db.session([user("opencode q")], session_id="ses_1")
    db.close()
    write_opencode_prompt_history(home / "xdg_state_home/opencode/prompt-history.jsonl", ["typed"])
    write_claude_session(home / ".claude", [user("claude q")])
    settings = resolve_settings(Config(root=tmp_path))
    refs = list(discover_all(settings))
    # Refs, settings and units cross process boundaries (--jobs N).
    units = [pickle.loads(pickle.dumps(load(*pickle.loads(pickle.dumps((ref, settings)))))) for ref in refs]
    assert [(u.tool, u.record_type) for u in units] == [
        ("omp", "session"),
        ("opencode", "session"),
        ("codex", "session"),
        ("codex", "prompt-history"),
        ("opencode", "prompt-history"),
        ("claude", "session"),
        ("aider", "session-store"),
        ("copilot", "session-store"),
        ("cursor", "session-store"),
        ("gemini", "session-store"),
    ]
    assert [u.records[0].text for u in units if u.records] == ["omp q", "opencode q", "codex q", "typed", "claude q"]
    assert all(u.error == "" for u in units)


def test_nothing_installed_gives_one_unavailable_unit_per_session_store(tmp_path: Path) -> None:
    settings = resolve_settings(Config(root=tmp_path))
    units = [load(ref, settings) for ref in discover_all(settings)]
    assert [(u.tool, u.format, u.skip_reason, u.error) for u in units] == [
        ("omp", "unavailable", "source_store_unavailable", ""),
        ("opencode", "unavailable", "source_store_unavailable", ""),
        ("codex", "unavailable", "source_store_unavailable", ""),
        ("claude", "unavailable", "source_store_unavailable", ""),
        ("aider", "unavailable", "source_store_unavailable", ""),
        ("copilot", "unavailable", "source_store_unavailable", ""),
        ("cursor", "unavailable", "source_store_unavailable", ""),
        ("gemini", "unavailable", "source_store_unavailable", ""),
    ]


def test_load_turns_an_unexpected_exception_into_an_error_unit(tmp_path: Path) -> None:
    ref = SourceRef("opencode", "session", "sqlite", "x\0y", payload=None)  # no session payload: a bug
    unit = load(ref, SourceSettings())
    assert unit.error == "opencode_session_unavailable: AttributeError"


def test_refs_route_to_the_module_that_found_them() -> None:
    assert source_for(SourceRef("opencode", "prompt-history", "jsonl", "p")).name == "prompt_history"
    assert source_for(SourceRef("opencode", "session", "sqlite", "p")).name == "opencode"
    assert source_for(SourceRef("codex", "prompt-history", "jsonl", "p")).name == "codex"


def test_a_file_where_a_store_directory_should_be_is_unavailable(tmp_path: Path) -> None:
    (tmp_path / "projects").mkdir()
    settings = SourceSettings(claude_dir=tmp_path, codex_dir=tmp_path / "codex", omp_sessions=tmp_path / "omp")
    (tmp_path / "codex").write_text("a file where a directory should be")
    refs = list(discover_all(settings))
    assert ("codex", "unavailable") in [(r.tool, r.format) for r in refs]


def test_discovery_exception_is_contained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbtools.ingest.sources import codex

    def broken(settings: SourceSettings) -> object:
        raise PermissionError("denied: /home/alice/secret")
        yield  # pragma: no cover

    monkeypatch.setattr(
        "kbtools.ingest.sources.SOURCES",
        tuple(s if s.name != "codex" else type(s)(s.name, broken, codex.load, s.handles) for s in SOURCES),
    )
    refs = list(discover_all(SourceSettings()))
    (broken_ref,) = [r for r in refs if r.tool == "codex"]
    assert load(broken_ref, SourceSettings()).error == "codex_discovery_failed: PermissionError"


@pytest.mark.parametrize("name", [source.name for source in SOURCES])
def test_every_reader_loads_its_broken_discovery_as_a_failure_naming_it(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(settings: SourceSettings) -> object:
        raise OSError("the store broke")
        yield  # pragma: no cover

    monkeypatch.setattr(
        "kbtools.ingest.sources.SOURCES",
        tuple(s if s.name != name else type(s)(s.name, broken, s.load, s.handles) for s in SOURCES),
    )
    source = next(s for s in SOURCES if s.name == name)
    tool = source.handles[0][0]
    # Hindsight's discovery runs only with a URL (never contacted: its discovery is the broken one).
    settings = SourceSettings(hindsight_url="http://127.0.0.1:9" if name == "hindsight" else None)
    (broken_ref,) = [r for r in discover_all(settings) if r.tool == tool and r.locator == name]
    unit = load(broken_ref, settings)  # routed as the pipeline routes it
    assert unit.error == f"{tool}_discovery_failed: OSError"
