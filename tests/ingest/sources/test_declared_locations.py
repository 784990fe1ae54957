"""A reader's locations come from its declaration alone: flag, environment
variable, `.kb.yaml` key and default, through `kb ingest` itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbtools.config import Config, load_config
from kbtools.errors import ConfigError
from kbtools.ingest.sources import LOCATIONS, resolve_settings
from tests.testing.cli import run_kb


def _gemini_session(home: Path, text: str) -> None:
    path = home / "tmp" / "proj" / "chats" / "session-2026-07-01T10-00-abcdef12.jsonl"
    path.parent.mkdir(parents=True)
    lines = [
        {"sessionId": "g-1", "projectHash": "p", "startTime": "2026-07-01T10:00:00Z"},
        {"id": "u", "timestamp": "2026-07-01T10:00:00Z", "type": "user", "content": text},
        {
            "id": "g",
            "timestamp": "2026-07-01T10:00:01Z",
            "type": "gemini",
            "content": "The root cause is the missing alias; the fix is to add it to tsconfig.json and rerun the build.",
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_every_declared_location_has_flag_env_and_key() -> None:
    names = {location.name for location in LOCATIONS}
    assert {"gemini_dir", "copilot_dir", "cursor_dir", "cursor_user_dir", "aider_roots"} <= names


def test_flag_env_kb_yaml_and_default_precedence(
    hermetic_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = hermetic_env
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / ".kb.yaml").write_text("ingest:\n  gemini_dir: from-yaml\n  aider_roots: [one, two]\n")
    config = load_config(kb)
    s = resolve_settings(config)
    assert s.paths("gemini_dir") == (kb / "from-yaml",)
    assert s.paths("aider_roots") == (kb / "one", kb / "two")
    assert s.paths("copilot_dir") == (home / ".copilot",)
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gh"))
    assert resolve_settings(config).paths("gemini_dir") == (tmp_path / "gh" / ".gemini",)
    assert resolve_settings(config, {"gemini_dir": str(tmp_path / "flag")}).paths("gemini_dir") == (tmp_path / "flag",)


def test_a_location_key_no_reader_declares_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / ".kb.yaml").write_text("ingest:\n  notanagent_dir: x\n")
    with pytest.raises(ConfigError, match="unknown key 'ingest.notanagent_dir'"):
        resolve_settings(load_config(tmp_path))
    assert resolve_settings(Config(root=tmp_path)).paths("notanagent_dir") == ()


def test_kb_ingest_takes_a_declared_flag(hermetic_env: Path, tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    _gemini_session(tmp_path / "gem", "Why does the TypeScript build fail with error TS2307 after the upgrade?")
    result = run_kb("ingest", "--root", str(kb), "--skip-hindsight", "--gemini-dir", str(tmp_path / "gem"))
    assert result.code == 0, result.err
    summary = json.loads(result.out.strip().splitlines()[-1])
    assert summary["records"]["user_prose"] >= 1 and summary["unknown_records"] == 0
    assert summary["failed"] == 0


def test_kb_yaml_with_an_undeclared_location_exits_2(tmp_path: Path) -> None:
    (tmp_path / ".kb.yaml").write_text("ingest:\n  notanagent_dir: x\n")
    result = run_kb("ingest", "--root", str(tmp_path), "--skip-hindsight")
    assert result.code == 2
    assert "kb: error: unknown key 'ingest.notanagent_dir'" in result.err


EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "sessions"


@pytest.mark.parametrize(
    "module_name, location, folder",
    [
        ("gemini", "gemini_dir", "gemini"),
        ("copilot", "copilot_dir", "copilot"),
        ("aider", "aider_roots", "aider"),
        ("cursor", "cursor_dir", "cursor"),
    ],
)
def test_bundled_sample_sessions_read_as_prose(module_name: str, location: str, folder: str) -> None:
    import importlib

    from kbtools.ingest.model import SourceSettings

    module = importlib.import_module(f"kbtools.ingest.sources.{module_name}")
    cfg = SourceSettings(locations=((location, (EXAMPLES / folder,)), ("cursor_user_dir", (EXAMPLES / "absent",))))
    (unit,) = [module.load(ref, cfg) for ref in module.discover(cfg)]
    assert (unit.error, unit.skip_reason) == ("", "")
    assert [r.role for r in unit.records] == ["user", "assistant"]
    assert "unknown" not in unit.decisions


def test_every_bundled_sample_store_yields_candidates(tmp_path: Path) -> None:
    """The README's first command ingests the bundled sample stores through the
    repository's own `.kb.yaml`: each agent wired there shows what it brings,
    and every record is decided (none unknown)."""
    repo = EXAMPLES.parents[1]
    from ruamel.yaml import YAML

    wired = YAML(typ="safe").load((repo / ".kb.yaml").read_text())["ingest"]
    out = tmp_path / "ledgers"
    result = run_kb("ingest", "--write", "--output-dir", str(out), "--root", str(repo), cwd=repo)
    assert result.code == 0, result.err
    summary = json.loads(result.out)
    assert (summary["failed"], summary["errors"], summary["unknown_records"]) == (0, 0, 0)
    tools = {json.loads(line)["tool"] for line in (out / "candidates.jsonl").read_text().splitlines()}
    expected = {"omp", "codex", "opencode", "claude", "gemini", "copilot", "cursor", "aider"}
    assert {key.split("_")[0] for key in wired if not key.startswith(("skip", "prompt"))} == expected
    assert tools == expected
