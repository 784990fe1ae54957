"""The `kb-identifier-retention` hook through the real pre-commit framework and real git."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.retention.test_staged_and_probe import ANCHORS, kb_with_note, page
from tests.testing.gitrepo import write

REPO = Path(__file__).resolve().parents[2]
HOOK = "kb-identifier-retention"


@pytest.fixture(scope="module")
def project_ref() -> str:
    """The project's HEAD, read once: the hook environment is keyed by it, so one ref means one install."""
    proc = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    if proc.returncode != 0:
        pytest.skip("the project is not a git checkout: nothing for pre-commit to install")
    return proc.stdout.strip()


def run(args: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    # try-repo builds its hook environment in a fresh temporary store, whatever PRE_COMMIT_HOME says;
    # pip's wheel cache at least is shared.
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(home),
        "PIP_CACHE_DIR": str(home / "pip-cache"),
        "PRE_COMMIT_COLOR": "never",
    }
    return subprocess.run(
        args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600
    )


@pytest.mark.slow
def test_try_repo_blocks_a_rewrite_dropping_three_identifiers_but_not_one_moving_them(
    tmp_path, pre_commit_home, project_ref
):
    kb, note = kb_with_note(tmp_path)
    moved = write(kb.note_path("moved"), page("moved", *ANCHORS))
    kb.commit("second note")
    write(note, page("close", *ANCHORS[3:]) + "\nLonger, and without its anchors.\n")
    write(moved, page("moved", *reversed(ANCHORS)) + "\nReordered.\n")
    kb.stage(note, moved)

    # try-repo always installs into a temporary store; --ref skips its shadow commit of local changes.
    result = run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(REPO), HOOK, "--ref", project_ref],
        kb.root,
        pre_commit_home,
    )
    assert result.returncode == 1, result.stdout
    assert "close.md dropped 3 identifier(s)" in result.stdout
    assert "2026-07-27, 5ef5a70, TRIAL-CLOSE-RUNBOOK.md" in result.stdout
    assert "moved.md" not in result.stdout
