from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def hermetic_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test reads the real home, agent stores or git config."""
    home = tmp_path_factory.mktemp("home")
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(
        "[user]\n\tname = KB Test\n\temail = kb-test@example.invalid\n"
        "[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(var, str(home / var.lower()))
    for var in (
        "CODEX_HOME", "HINDSIGHT_API_URL", "HINDSIGHT_API_KEY", "KB_IDENTIFIER_LOSS_REFUSE",
        "OPENCODE_DB", "CLAUDE_CONFIG_DIR", "PI_CODING_AGENT_DIR",
        "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE",
    ):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One PRE_COMMIT_HOME for the whole run: a hook environment (built from PyPI) is installed once.

    Pass it to `pre-commit` subprocesses as ``PRE_COMMIT_HOME``; run `try-repo` with an explicit
    ``--ref`` so every test reuses the same environment instead of a fresh shadow commit each.
    """
    return tmp_path_factory.mktemp("pre-commit-home")
