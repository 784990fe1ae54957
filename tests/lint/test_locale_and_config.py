"""The canonical locale inferred from the evidence; `.kb.yaml` errors located and in every format.

The multi-locale shape is the one of the KB the contract comes from (DavidHLP/DavidHLP.github.io,
`src/content/information/{en,ja,zh-cn}/kb-index.md`, raw evidence only under `src/content/raw/zh-cn/`;
the `en` and `ja` indexes link to the translated pages only).
"""

from __future__ import annotations

import json

from tests.testing.cli import run_kb, run_kb_process
from tests.testing.gitrepo import write
from tests.testing.kbfactory import INFO_DIR, make_kb


def _translated_index(kb, locale: str) -> None:
    write(
        kb.root / INFO_DIR / locale / "kb-index.md",
        f"# Index\n\nThe canonical pages live in `zh-cn`; see [the note](/{locale}/note/note-1).\n",
    )
    write(kb.root / INFO_DIR / locale / "kb-log.md", "# Log\n\n## [2026-08-07] init | translated entry\n")


def test_locale_holding_the_raw_sources_is_canonical_with_one_notice(tmp_path):
    kb = make_kb(tmp_path / "kb")
    for locale in ("en", "ja"):
        _translated_index(kb, locale)
    result = run_kb("lint", "--root", str(kb.root))
    assert result.code == 0, result.err
    assert result.err == (
        "kb: canonical locale zh-cn inferred: the only locale with raw sources "
        "(indexes exist for en, ja, zh-cn); set canonical_locale in .kb.yaml to choose\n"
    )


def test_index_listing_every_raw_source_decides_when_raw_sits_in_two_locales(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.add_raw("english-source", locale="en")
    _translated_index(kb, "en")
    kb.write_index()  # the zh-cn index lists every raw slug, english-source included
    result = run_kb("lint", "--root", str(kb.root))
    assert "canonical locale zh-cn inferred: the only index that lists every raw source" in result.err
    assert "canonical locale is ambiguous" not in result.err


def test_configured_locale_wins_and_says_nothing(tmp_path):
    kb = make_kb(tmp_path / "kb")
    _translated_index(kb, "en")
    (kb.root / ".kb.yaml").write_text("canonical_locale: zh-cn\n")
    result = run_kb("lint", "--root", str(kb.root))
    assert result.code == 0 and result.err == ""


def test_config_error_in_json_format(tmp_path):
    kb = make_kb(tmp_path / "kb")
    (kb.root / ".kb.yaml").write_text("paths:\n  raw: src/content/raw\n  rawz: x\n")
    result = run_kb_process("lint", "--format", "json", cwd=kb.root)
    assert result.code == 2
    doc = json.loads(result.out)
    assert doc["ok"] is False and doc["problems"] == []
    assert doc["error"] == {
        "kind": "config",
        "message": f"unknown key 'paths.rawz' ({kb.root / '.kb.yaml'}:3:3)",
        "what": "unknown key 'paths.rawz'",
        "path": ".kb.yaml",
        "line": 3,
        "column": 3,
    }


def test_config_error_as_a_github_annotation(tmp_path):
    kb = make_kb(tmp_path / "kb")
    (kb.root / ".kb.yaml").write_text("derived:\n  threshold: 2\n")
    result = run_kb_process("lint", "--format", "github", cwd=kb.root)
    assert result.code == 2
    assert result.out.startswith("::error file=.kb.yaml,line=2,col=14::kb: error: 'derived.threshold' must be between")
    assert len(result.out.splitlines()) == 1


def test_ambiguous_locale_in_json_format(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.add_raw("english-source", locale="en")
    write(kb.root / INFO_DIR / "en" / "kb-index.md", "# index\n")
    result = run_kb("lint", "--root", str(kb.root), "--format", "json")
    assert result.code == 2
    assert json.loads(result.out)["error"]["what"].startswith(
        "canonical locale is ambiguous: indexes exist for en, zh-cn"
    )


def test_config_path_outside_the_repository_is_a_config_error_not_git_noise(tmp_path):
    kb = make_kb(tmp_path / "kb")
    (kb.root / ".kb.yaml").write_text("paths:\n  raw: ../../elsewhere/raw\n")
    result = run_kb_process("lint", "--since", "HEAD", cwd=kb.root)
    assert result.code == 2
    assert result.err.startswith("kb: error: 'paths.raw' is outside the repository: ../../elsewhere/raw (")
    assert "fatal" not in result.err and len(result.err.splitlines()) == 1
