"""Every check of SPEC §3 fires on a KB built to trigger it and stays quiet on a clean KB."""

from __future__ import annotations

import pytest

from tests.testing.cli import run_kb
from tests.testing.kbfactory import BREAKERS, LIST_STYLES, make_kb


def lint(kb, *args: str):
    return run_kb("lint", "--root", str(kb.root), *args)


def test_clean_kb_passes_with_the_reference_summary(tmp_path):
    kb = make_kb(tmp_path / "kb")
    result = lint(kb)
    assert result.code == 0, result.err
    assert result.out == "KB lint passed: 2 raw source(s), 2 wiki page(s), canonical index/log present.\n"
    assert result.err == ""


@pytest.mark.parametrize("check", sorted(BREAKERS))
def test_each_check_fires_with_its_message(tmp_path, check):
    kb = make_kb(tmp_path / "kb")
    expected = BREAKERS[check](kb)
    result = lint(kb)
    assert result.code == 1
    lines = result.err.splitlines()
    assert lines[0].startswith("KB lint failed (")
    assert any(line == f"- {expected}" or line.startswith(f"- {expected} (") for line in lines[1:]), result.err


def test_missing_canonical_log_is_named_once(tmp_path):
    kb = make_kb(tmp_path / "kb", git=False)
    kb.log.unlink()
    result = lint(kb)
    assert result.code == 1
    problems = [line for line in result.err.splitlines() if line.startswith("- ")]
    assert problems == ["- missing canonical log: src/content/information/zh-cn/kb-log.md"]


def test_failure_header_counts_issues_with_singular_and_plural(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.add_note("kindless", kind=None)
    kb.write_index()
    assert lint(kb).err.splitlines()[0] == "KB lint failed (1 issue)"
    kb.add_note("statusless", status=None)
    assert lint(kb).err.splitlines()[0] == "KB lint failed (2 issues)"


@pytest.mark.parametrize("style", LIST_STYLES)
def test_every_yaml_list_style_lints_clean(tmp_path, style):
    kb = make_kb(tmp_path / "kb", list_style=style, notes=3, raws=3)
    kb.add_note(
        "multi", sources=["source-1", "source-2"], related=["note-1", "note-2"], list_style=style, status='"active"'
    )
    kb.write_index()
    kb.commit("multi")
    result = lint(kb)
    assert result.code == 0, result.err
