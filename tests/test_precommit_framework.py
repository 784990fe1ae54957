"""The hooks under the real pre-commit framework, against real git repositories."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.testing.cli import run_kb
from tests.testing.gitrepo import git
from tests.testing.kbfactory import make_kb

REPO_ROOT = Path(__file__).resolve().parents[1]
PRE_COMMIT = [sys.executable, "-m", "pre_commit"]


def _run(command: list[str], *, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(home),
        # `language: system` hooks and the installed git hook find this interpreter's `kb`.
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    return subprocess.run(command, cwd=cwd, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=300)


def _pre_commit(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return _run([*PRE_COMMIT, *args], cwd=cwd, home=home)


def _commit_via_git(repo: Path, message: str, home: Path) -> subprocess.CompletedProcess[str]:
    return _run(["git", "commit", "-m", message], cwd=repo, home=home)


def _edit_raw(kb) -> Path:
    raw = kb.raw_path("source-1")
    raw.write_bytes(raw.read_bytes() + b"edited after the fact\n")
    kb.stage(raw)
    return raw


def _add_clean_evidence(kb) -> None:
    kb.add_raw("new-source")
    kb.write_index()
    kb.append_log("2026-08-09", "ingest", "new source")
    kb.git("add", "-A")


def test_hooks_manifest_is_valid_for_pre_commit(pre_commit_home):
    result = _pre_commit("validate-manifest", ".pre-commit-hooks.yaml", cwd=REPO_ROOT, home=pre_commit_home)
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize("options", [(), ("--local-hooks",)])
def test_scaffolded_and_own_configs_are_valid_for_pre_commit(tmp_path, pre_commit_home, options):
    assert run_kb("init", str(tmp_path / "kb"), *options).code == 0
    for config in (tmp_path / "kb" / ".pre-commit-config.yaml", REPO_ROOT / ".pre-commit-config.yaml"):
        result = _pre_commit("validate-config", str(config), cwd=tmp_path, home=pre_commit_home)
        assert result.returncode == 0, result.stdout


@pytest.mark.slow
@pytest.mark.skipif(not (REPO_ROOT / ".git").exists(), reason="try-repo needs this project as a git repository")
def test_try_repo_kb_lint_refuses_a_staged_raw_edit(tmp_path, pre_commit_home):
    """`pre-commit try-repo <this repo> kb-lint`: the published hook, pip-installed from this checkout.

    try-repo builds a fresh hook environment on every call (about 7 s on a quiet machine), so it
    runs once; a clean commit through the framework is the next test's job. The exact problem
    list shows the hook really ran the lint: a broken hook cannot produce it.
    """
    kb = make_kb(tmp_path / "kb", locale="en")
    _edit_raw(kb)
    refused = _pre_commit("try-repo", str(REPO_ROOT), "kb-lint", cwd=kb.root, home=pre_commit_home)
    assert refused.returncode == 1, refused.stdout
    assert "kb lint (every check, staged)" in refused.stdout and "Failed" in refused.stdout
    assert (
        "KB lint failed (2 issues)\n"
        "- raw checksum mismatch: en/source-1.md\n"
        "- raw snapshot changed or deleted: M\tsrc/content/raw/en/source-1.md\n"
    ) in refused.stdout


def test_installed_framework_hook_refuses_a_raw_edit_and_lets_a_clean_commit_through(tmp_path, pre_commit_home):
    """`kb init --local-hooks` config + `pre-commit install`, then real `git commit`s."""
    kb = make_kb(tmp_path / "kb", locale="en")
    (kb.root / ".pre-commit-config.yaml").unlink(missing_ok=True)
    assert run_kb("init", str(kb.root), "--local-hooks", "--force").code == 0
    kb.commit("add hook config")
    installed = _pre_commit("install", cwd=kb.root, home=pre_commit_home)
    assert installed.returncode == 0, installed.stdout
    commits = git(kb.root, "rev-list", "--count", "HEAD")

    _edit_raw(kb)
    refused = _commit_via_git(kb.root, "edit evidence", pre_commit_home)
    assert refused.returncode != 0
    assert "raw snapshot changed or deleted: M\tsrc/content/raw/en/source-1.md" in refused.stdout
    assert git(kb.root, "rev-list", "--count", "HEAD") == commits

    kb.git("reset", "-q", "HEAD", "--", "src/content/raw/en/source-1.md")
    kb.git("checkout", "--", "src/content/raw/en/source-1.md")
    _add_clean_evidence(kb)
    accepted = _commit_via_git(kb.root, "ingest new source", pre_commit_home)
    assert accepted.returncode == 0, accepted.stdout
    assert int(git(kb.root, "rev-list", "--count", "HEAD")) == int(commits) + 1

