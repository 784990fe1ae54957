"""The kb-record-artifacts hook under the real pre-commit framework (`kb init --local-hooks`), with real commits."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kbtools.derived.manifest import read_manifest
from tests.testing.cli import run_kb
from tests.testing.gitrepo import git
from tests.testing.kbfactory import make_kb

ARTIFACT_MANIFEST = "src/content/note/.manifest.jsonl"


def _run(command: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(home),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    return subprocess.run(
        command, cwd=cwd, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300
    )


def test_derived_filter_hook_records_a_new_page_and_asks_for_the_manifest(
    tmp_path: Path, pre_commit_home: Path
) -> None:
    kb = make_kb(tmp_path / "kb", locale="en")
    (kb.root / ".pre-commit-config.yaml").unlink(missing_ok=True)
    assert run_kb("init", str(kb.root), "--local-hooks", "--force").code == 0
    kb.commit("add hook config")
    installed = _run([sys.executable, "-m", "pre_commit", "install"], kb.root, pre_commit_home)
    assert installed.returncode == 0, installed.stdout
    before = git(kb.root, "rev-parse", "HEAD")

    page = kb.add_note("wal-mode", body="# WAL mode\n\nReaders do not block the writer in write-ahead logging mode.\n")
    kb.write_index()
    kb.append_log("2026-08-09", "write", "wal mode")
    kb.git("add", "-A")
    first = _run(["git", "commit", "-m", "add wal page"], kb.root, pre_commit_home)
    assert first.returncode != 0, first.stdout
    assert "kb record emitted artifacts" in first.stdout and f"git add {ARTIFACT_MANIFEST}" in first.stdout
    assert git(kb.root, "rev-parse", "HEAD") == before
    (row,) = read_manifest(kb.root / ARTIFACT_MANIFEST)
    assert row.path == "src/content/note/en/wal-mode.md" and row.name == "wal-mode"

    kb.git("add", ARTIFACT_MANIFEST)
    second = _run(["git", "commit", "-m", "add wal page"], kb.root, pre_commit_home)
    assert second.returncode == 0, second.stdout
    committed = git(kb.root, "show", f"HEAD:{ARTIFACT_MANIFEST}")
    assert '"path":"src/content/note/en/wal-mode.md"' in committed
    assert page.read_text() == git(kb.root, "show", "HEAD:src/content/note/en/wal-mode.md")
