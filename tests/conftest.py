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
        "CODEX_HOME",
        "HINDSIGHT_API_URL",
        "HINDSIGHT_API_KEY",
        "KB_IDENTIFIER_LOSS_REFUSE",
        "OPENCODE_DB",
        "CLAUDE_CONFIG_DIR",
        "PI_CODING_AGENT_DIR",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        *_reader_env_vars(),
    ):
        monkeypatch.delenv(var, raising=False)
    # Redaction treats the account running kb as a private name; pin it to a generic account so
    # redacted output is the same whoever runs the suite (subprocesses inherit these too).
    for var in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.setenv(var, "runner")
    from kbtools.redact.checks import local_account

    local_account.cache_clear()
    return home


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One PRE_COMMIT_HOME for the whole run: a hook environment (built from PyPI) is installed once.

    Pass it to `pre-commit` subprocesses as ``PRE_COMMIT_HOME``. Only `pre-commit run` / an installed
    hook with a config naming ``repo: <project>`` and ``rev: <its HEAD>`` reuses the environment
    kept here; `pre-commit try-repo` always installs into its own temporary store (about 20-30 s
    a call), so call it once and give it ``--ref`` to skip its shadow commit of local changes.
    """
    return tmp_path_factory.mktemp("pre-commit-home")


def _reader_env_vars() -> list[str]:
    """The environment variables of every location a session reader declares."""
    from kbtools.ingest.sources import LOCATIONS

    return [location.env for location in LOCATIONS if location.env]
