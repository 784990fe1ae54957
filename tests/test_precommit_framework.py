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
    return subprocess.run(
        command, cwd=cwd, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300
    )


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
def test_try_repo_kb_lint_refuses_a_staged_raw_edit_and_lets_a_clean_commit_through(tmp_path, pre_commit_home):
    """`pre-commit try-repo <this repo> kb-lint`: the published hook, pip-installed from this checkout.

    try-repo builds a fresh hook environment on every call (about 7 s on a quiet machine), so the
    refused and the clean KB run side by side, one try-repo each. The exact problem list shows the
    hook really ran the lint: a broken hook cannot produce it.
    """
    refused_kb = make_kb(tmp_path / "refused", locale="en")
    _edit_raw(refused_kb)
    clean_kb = make_kb(tmp_path / "clean", locale="en")
    _add_clean_evidence(clean_kb)
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(pre_commit_home),
        "PRE_COMMIT_COLOR": "never",
        "PIP_CACHE_DIR": str(pre_commit_home / "pip-cache"),
    }
    running = [
        subprocess.Popen(
            [*PRE_COMMIT, "try-repo", str(REPO_ROOT), "kb-lint"],
            cwd=kb.root,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for kb in (refused_kb, clean_kb)
    ]
    (refused_out, _), (clean_out, _) = (proc.communicate(timeout=600) for proc in running)
    refused_code, clean_code = (proc.returncode for proc in running)

    assert refused_code == 1, refused_out
    assert "kb lint (every check, staged)" in refused_out and "Failed" in refused_out
    assert (
        "KB lint failed (2 issues)\n"
        "- raw checksum mismatch: en/source-1.md\n"
        "- raw snapshot changed or deleted: M\tsrc/content/raw/en/source-1.md\n"
    ) in refused_out

    assert clean_code == 0, clean_out
    assert "kb lint (every check, staged)" in clean_out and "Passed" in clean_out
    commits = int(git(clean_kb.root, "rev-list", "--count", "HEAD"))
    clean_kb.git("commit", "-q", "-m", "ingest new source")
    assert int(git(clean_kb.root, "rev-list", "--count", "HEAD")) == commits + 1


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
