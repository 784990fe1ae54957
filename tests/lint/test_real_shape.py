"""Acceptance (issue 14): a KB in the shape of the one the contract comes from lints clean with
no `.kb.yaml`, and still catches a raw edit committed with its re-blessed manifest line.

The shape (tests/testing/realkb.py) follows DavidHLP/DavidHLP.github.io: indexes for en, ja and
zh-cn, raw evidence only under zh-cn, translations citing the zh-cn raw slugs, drafts, a manifest
in sha256sum format re-sorted in one commit.
"""

from __future__ import annotations

import pytest

from tests.testing.cli import run_kb_process
from tests.testing.gitrepo import write
from tests.testing.kbfactory import sha256_bytes
from tests.testing.realkb import RAW, build


@pytest.fixture
def kb(tmp_path):
    return build(tmp_path / "kb")


def root_commit(kb) -> str:
    return kb.git("rev-list", "--max-parents=0", "HEAD").strip()


def test_real_shape_lints_clean_without_config(kb):
    assert not (kb.root / ".kb.yaml").exists()
    result = run_kb_process("lint", cwd=kb.root)
    assert result.code == 0, result.err
    assert result.out == "KB lint passed: 6 raw source(s), 14 wiki page(s), canonical index/log present.\n"
    assert result.err == (
        "kb: canonical locale zh-cn inferred: the only locale with raw sources "
        "(indexes exist for en, ja, zh-cn); set canonical_locale in .kb.yaml to choose\n"
    )
    staged = run_kb_process("lint", "--staged", cwd=kb.root)
    assert staged.code == 0, staged.err


def test_real_shape_history_with_a_resorted_manifest_lints_clean(kb):
    """Re-sorting the manifest and normalising its separators removes no entry and changes no hash."""
    result = run_kb_process("lint", "--since", root_commit(kb), cwd=kb.root)
    assert result.code == 0, result.err
    assert "raw manifest rewritten" not in result.err


def test_raw_edit_reblessed_in_the_same_commit_is_caught(kb):
    base = kb.head()
    rel = "zh-cn/legacy-java-null-value.md"
    raw = kb.path(f"{RAW}/{rel}")
    raw.write_bytes(raw.read_bytes() + "- 补记 v5.3.40\n".encode())
    lines = [
        f"{sha256_bytes(raw.read_bytes())}  {rel}" if line.endswith(" " + rel) else line for line in kb.manifest_lines()
    ]
    write(kb.path(f"{RAW}/.manifest.sha256"), "\n".join(lines) + "\n")
    kb.commit("edit evidence and bless it")
    assert run_kb_process("lint", cwd=kb.root).code == 0, "the checksums agree: only history can tell"
    result = run_kb_process("lint", "--since", base, cwd=kb.root)
    assert result.code == 1
    assert f"- raw snapshot changed or deleted: M\t{RAW}/{rel} (commit " in result.err
    since_root = run_kb_process("lint", "--since", root_commit(kb), cwd=kb.root)
    assert f"- raw snapshot changed or deleted: M\t{RAW}/{rel} (commit " in since_root.err
