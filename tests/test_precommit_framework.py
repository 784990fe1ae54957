"""The hooks under the real pre-commit framework, against real git repositories."""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from kbtools.derived.manifest import read_manifest
from tests.testing.cli import run_kb
from tests.testing.gitrepo import git, write
from tests.testing.kbfactory import Kb, make_kb, note_text, rebless_raw_edit
from tests.testing.secrets import make_secret

REPO_ROOT = Path(__file__).resolve().parents[1]
PRE_COMMIT = [sys.executable, "-m", "pre_commit"]


def _run(
    command: list[str], *, cwd: Path, home: Path, extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        **(extra or {}),
        "PRE_COMMIT_HOME": str(home),
        # `language: system` hooks and the installed git hook find this interpreter's `kb`.
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    return subprocess.run(
        command, cwd=cwd, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300
    )


def _pre_commit(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return _run([*PRE_COMMIT, *args], cwd=cwd, home=home)


def _commit_via_git(repo: Path, message: str, home: Path, *, skip: str = "") -> subprocess.CompletedProcess[str]:
    """A real `git commit`, its hooks run by the installed pre-commit (``skip``: pre-commit's SKIP)."""
    return _run(["git", "commit", "-m", message], cwd=repo, home=home, extra={"SKIP": skip} if skip else {})


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
    assert "kb lint (every check)" in refused_out and "Failed" in refused_out
    assert (
        "KB lint failed (2 issues)\n"
        "- raw checksum mismatch: en/source-1.md\n"
        "- raw snapshot changed or deleted: M\tsrc/content/raw/en/source-1.md\n"
    ) in refused_out

    assert clean_code == 0, clean_out
    assert "kb lint (every check)" in clean_out and "Passed" in clean_out
    commits = int(git(clean_kb.root, "rev-list", "--count", "HEAD"))
    clean_kb.git("commit", "-q", "-m", "ingest new source")
    assert int(git(clean_kb.root, "rev-list", "--count", "HEAD")) == commits + 1


def test_installed_framework_hook_refuses_a_raw_edit_and_lets_a_clean_commit_through(tmp_path, pre_commit_home):
    """`kb init --local-hooks` config + `pre-commit install`, then real `git commit`s."""
    kb = _kb_with_local_hooks(tmp_path, pre_commit_home)
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


def _kb_with_local_hooks(tmp_path: Path, home: Path) -> Kb:
    """A committed KB whose `.pre-commit-config.yaml` is `kb init --local-hooks`', installed with `pre-commit install`."""
    kb = make_kb(tmp_path / "kb", locale="en")
    (kb.root / ".pre-commit-config.yaml").unlink(missing_ok=True)
    assert run_kb("init", str(kb.root), "--local-hooks", "--force").code == 0
    kb.commit("add hook config")
    installed = _pre_commit("install", cwd=kb.root, home=home)
    assert installed.returncode == 0, installed.stdout
    # default_install_hook_types in the config: the push hook comes with the commit hook.
    assert "pre-commit installed at .git/hooks/pre-commit" in installed.stdout
    assert "pre-commit installed at .git/hooks/pre-push" in installed.stdout
    return kb


ARTIFACTS = "src/content/note/.manifest.jsonl"


def _committed_artifact_rows(kb: Kb) -> list[tuple[str, str]]:
    committed = kb.root / "committed.jsonl"
    committed.write_text(git(kb.root, "show", f"HEAD:{ARTIFACTS}"))
    try:
        return [(row.path, row.sha256) for row in read_manifest(committed)]
    finally:
        committed.unlink()


def test_record_artifacts_commits_rows_only_for_the_versions_the_commit_holds(tmp_path, pre_commit_home):
    """A first attempt refused by kb-lint (the page is not in the index) must not leave its version's row
    in the manifest the final commit holds: the manifest is append-only, a stray row would stay forever."""
    kb = _kb_with_local_hooks(tmp_path, pre_commit_home)
    before = git(kb.root, "rev-parse", "HEAD")
    page = kb.add_note("wal-mode", body="# WAL mode\n\nReaders do not block the writer.\n")
    kb.git("add", "-A")  # not listed in the index yet: kb-lint refuses
    refused = _commit_via_git(kb.root, "add wal page", pre_commit_home)
    assert refused.returncode != 0 and "active/provisional wiki page missing from index" in refused.stdout
    assert git(kb.root, "rev-parse", "HEAD") == before
    first_version = hashlib.sha256(page.read_bytes()).hexdigest()
    assert [r.sha256 for r in read_manifest(kb.root / ARTIFACTS)] == [first_version]  # recorded, not committed

    write(page, note_text("wal-mode", sources=["source-1"], body="# WAL mode\n\nReaders never block writers.\n"))
    kb.write_index()
    kb.append_log("2026-08-09", "write", "wal mode")
    kb.git("add", "-A")  # stages the manifest with the refused version's row too
    second = _commit_via_git(kb.root, "add wal page", pre_commit_home)
    assert second.returncode != 0, second.stdout
    assert f"dropped the row of an uncommitted version of src/content/note/en/wal-mode.md from {ARTIFACTS}" in (
        second.stdout
    )
    assert f"git add {ARTIFACTS}" in second.stdout

    kb.git("add", ARTIFACTS)
    third = _commit_via_git(kb.root, "add wal page", pre_commit_home)
    assert third.returncode == 0, third.stdout
    committed_version = hashlib.sha256(page.read_bytes()).hexdigest()
    assert _committed_artifact_rows(kb) == [("src/content/note/en/wal-mode.md", committed_version)]
    assert git(kb.root, "status", "--porcelain") == ""


def test_retention_warning_shows_on_a_passing_commit(tmp_path, pre_commit_home):
    """pre-commit prints a passing hook's output only for a verbose hook (pre_commit/commands/run.py,
    _run_single_hook): a rewrite losing one identifier passes, and its warning must still reach the user."""
    kb = _kb_with_local_hooks(tmp_path, pre_commit_home)
    note = kb.note_path("note-1")
    write(note, note.read_text() + "\nPinned at v2.14.1 since 2026-07-27.\n")
    kb.git("add", "-A")
    skip = "kb-record-artifacts"  # it asks for a second attempt with the manifest staged: not the point here
    assert _commit_via_git(kb.root, "pin the version", pre_commit_home, skip=skip).returncode == 0

    write(note, note.read_text().replace("v2.14.1", "the current release"))
    kb.git("add", "-A")
    result = _commit_via_git(kb.root, "say current release", pre_commit_home, skip=skip)
    assert result.returncode == 0, result.stdout
    assert "kb identifier retention" in result.stdout and "Passed" in result.stdout
    assert (
        "identifier-retention: src/content/note/en/note-1.md dropped 1 identifier(s) present in the previous "
        "version: v2.14.1 (warning: refuses at 3)"
    ) in result.stdout


def _commit_past_the_hooks(kb: Kb, message: str) -> str:
    """What `git commit --no-verify` lets through: the hooks never ran on it."""
    kb.git("add", "-A")
    kb.git("commit", "-q", "--no-verify", "-m", message)
    return git(kb.root, "rev-parse", "HEAD").strip()


def _committed_token(kb: Kb) -> str:
    token = make_secret("github-classic", random.Random(14))
    note = kb.note_path("note-1")
    write(note, note.read_text() + f"\nThe deploy used GITHUB_TOKEN={token} back then.\n")
    return token


def test_all_files_checks_the_whole_kb_and_its_history_not_the_empty_staging_area(tmp_path, pre_commit_home):
    """`pre-commit run --all-files` (pre-commit.ci runs exactly this) passes files with nothing staged:
    the hooks check every file's content and every commit, so neither a committed token nor a raw edit
    committed with its manifest line re-blessed passes."""
    kb = _kb_with_local_hooks(tmp_path, pre_commit_home)
    clean = _pre_commit("run", "--all-files", cwd=kb.root, home=pre_commit_home)
    assert clean.returncode == 0, clean.stdout

    _committed_token(kb)
    _commit_past_the_hooks(kb, "note the deploy")
    rebless_raw_edit(kb)
    edit = _commit_past_the_hooks(kb, "touch up the evidence")
    assert _pre_commit("run", cwd=kb.root, home=pre_commit_home).returncode == 0  # nothing staged: nothing to see

    result = _pre_commit("run", "--all-files", cwd=kb.root, home=pre_commit_home)
    assert result.returncode == 1, result.stdout
    assert "secret in src/content/note/en/note-1.md:" in result.stdout and "(github-token)" in result.stdout
    assert f"raw snapshot changed or deleted: M\tsrc/content/raw/en/source-1.md (commit {edit[:12]})" in result.stdout
    assert make_secret("github-classic", random.Random(14)) not in result.stdout


def test_pre_push_checks_every_pushed_commit(tmp_path, pre_commit_home):
    """A real `git push` runs the installed pre-push hook; pre-commit gives the hooks the pushed range as
    PRE_COMMIT_FROM_REF..PRE_COMMIT_TO_REF (pre_commit/commands/hook_impl.py, _pre_push_ns)."""
    kb = _kb_with_local_hooks(tmp_path, pre_commit_home)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    kb.git("remote", "add", "origin", str(remote))
    kb.git("push", "-q", "--no-verify", "origin", "HEAD:refs/heads/main")
    pushed = git(kb.root, "rev-parse", "HEAD").strip()

    rebless_raw_edit(kb)
    edit = _commit_past_the_hooks(kb, "touch up the evidence")
    _add_clean_evidence(kb)
    _commit_past_the_hooks(kb, "ingest new source")  # the tip is clean: only the range shows the edit

    refused = _run(["git", "push", "origin", "HEAD:refs/heads/main"], cwd=kb.root, home=pre_commit_home)
    assert refused.returncode != 0, refused.stdout
    assert f"raw snapshot changed or deleted: M\tsrc/content/raw/en/source-1.md (commit {edit[:12]})" in refused.stdout
    assert git(str(remote), "rev-parse", "main").strip() == pushed

    # The same stage by hand, on a range without the edit, passes.
    clean = _pre_commit(
        "run", "--hook-stage", "pre-push", "--from-ref", edit, "--to-ref", "HEAD", cwd=kb.root, home=pre_commit_home
    )
    assert clean.returncode == 0, clean.stdout
    assert "kb lint (every check)" in clean.stdout and "Passed" in clean.stdout


def test_pre_push_refuses_a_pushed_rewrite_that_dropped_its_identifiers(tmp_path, pre_commit_home):
    kb = _kb_with_local_hooks(tmp_path, pre_commit_home)
    note = kb.note_path("note-1")
    anchors = "Pinned v2.14.1 on 2026-07-27 at 5ef5a70 per TRIAL-CLOSE-RUNBOOK.md.\n"
    write(note, note.read_text() + anchors)
    base = _commit_past_the_hooks(kb, "anchor the note")
    write(note, note.read_text().replace(anchors, "Pinned a while ago, see the runbook.\n"))
    rewrite = _commit_past_the_hooks(kb, "vaguer")

    result = _pre_commit(
        "run", "--hook-stage", "pre-push", "--from-ref", base, "--to-ref", rewrite, cwd=kb.root, home=pre_commit_home
    )
    assert result.returncode == 1, result.stdout
    assert f"identifier-retention: src/content/note/en/note-1.md (commit {rewrite[:12]}) dropped 4 identifier(s)" in (
        result.stdout
    )


def test_a_baseline_accepts_committed_findings_in_every_mode_without_holding_the_secret(tmp_path, pre_commit_home):
    """Adopting kbtools on an old KB: `kb baseline create` accepts what is committed (a detect-secrets-style
    baseline: fingerprints, never the secret), and every mode and hook then passes; a new finding still fails."""
    kb = _kb_with_local_hooks(tmp_path, pre_commit_home)
    token = _committed_token(kb)
    _commit_past_the_hooks(kb, "note the deploy")
    assert run_kb("lint", "--all", cwd=kb.root).code == 1

    created = run_kb("baseline", "create", cwd=kb.root)
    assert created.code == 0, created.err
    assert "wrote .kb-baseline.json: 1 finding(s) accepted (1 new, 0 no longer found)" in created.out
    assert token not in (kb.root / ".kb-baseline.json").read_text()
    kb.git("add", ".kb-baseline.json")
    committed = _commit_via_git(kb.root, "accept the old findings", pre_commit_home)
    assert committed.returncode == 0, committed.stdout

    for args in (("lint", "--all"), ("lint", "--since", "HEAD~2"), ("lint",)):
        result = run_kb(*args, cwd=kb.root)
        assert result.code == 0, (args, result.err)
        assert "1 finding(s) accepted by .kb-baseline.json" in result.err or args == ("lint",)
    assert _pre_commit("run", "--all-files", cwd=kb.root, home=pre_commit_home).returncode == 0

    fresh = make_secret("github-classic", random.Random(15))
    note = kb.note_path("note-2")
    write(note, note.read_text() + f"\nAnd GITHUB_TOKEN={fresh} today.\n")
    kb.git("add", "-A")
    refused = _commit_via_git(kb.root, "another token", pre_commit_home)
    assert refused.returncode != 0 and "secret in src/content/note/en/note-2.md:" in refused.stdout
