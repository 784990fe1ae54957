"""`kb lint` output formats, family selection, config, and the reference layout."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.testing.cli import run_kb, run_kb_process
from tests.testing.kbfactory import BREAKERS, make_kb
from tests.testing.secrets import make_secret


def lint(kb, *args: str):
    return run_kb("lint", "--root", str(kb.root), *args)


def test_json_lists_problems_with_check_path_line_and_counts(tmp_path):
    kb = make_kb(tmp_path / "kb")
    expected = BREAKERS[12](kb)
    result = lint(kb, "--format", "json")
    assert result.code == 1
    payload = json.loads(result.out)
    assert payload["ok"] is False
    assert payload["counts"] == {"problems": 1, "raw": 2, "notes": 3}
    assert payload["problems"] == [
        {"check": "note-link", "message": expected, "path": "src/content/note/zh-cn/linking-note.md", "line": 13}
    ]


def test_json_on_success(tmp_path):
    kb = make_kb(tmp_path / "kb")
    payload = json.loads(lint(kb, "--format", "json").out)
    assert payload == {"ok": True, "problems": [], "counts": {"problems": 0, "raw": 2, "notes": 2}, "notices": []}


def test_github_format_prints_annotations(tmp_path):
    kb = make_kb(tmp_path / "kb")
    expected = BREAKERS[10](kb)
    result = lint(kb, "--format", "github")
    assert result.code == 1
    assert result.out == f"::error file=src/content/note/zh-cn/odd-note.md,line=1::{expected}\n"


def test_only_selects_families(tmp_path):
    kb = make_kb(tmp_path / "kb")
    raw_problem = BREAKERS[3](kb)
    note_problem = BREAKERS[10](kb)
    assert lint(kb, "--only", "notes").err.splitlines()[1:] == [f"- {note_problem}"]
    assert lint(kb, "--only", "raw").err.splitlines()[1:] == [f"- {raw_problem}"]
    assert lint(kb, "--only", "secrets").code == 0
    assert lint(kb, "--only", "raw,notes").err.splitlines()[0] == "KB lint failed (2 issues)"


@pytest.mark.parametrize("args", [("--only", "nonsense"), ("--format", "xml"), ("--staged", "--since", "HEAD")])
def test_bad_flags_are_usage_errors(tmp_path, args):
    kb = make_kb(tmp_path / "kb")
    result = lint(kb, *args)
    assert result.code == 2
    assert result.err.startswith("kb: error: ") and len(result.err.splitlines()) == 1
    assert result.err.endswith("(kb lint --help)\n"), "the usage error names the command it belongs to"


def test_problems_come_out_in_a_stable_order(tmp_path):
    kb = make_kb(tmp_path / "kb")
    for check in (15, 12, 4, 9, 3):
        BREAKERS[check](kb)
    first = lint(kb).err
    assert first == lint(kb).err
    lines = first.splitlines()[1:]
    assert lines[0].startswith("- raw file missing from manifest") and lines[-1].startswith(
        "- kb-log.md entry out of order"
    )


def test_kb_yaml_moves_every_path(tmp_path):
    kb = make_kb(tmp_path / "kb", git=False)
    root = kb.root
    (root / "src").rename(root / "content")
    (root / "content/content/information/zh-cn").rename(root / "content/content/information/main")
    (root / ".kb.yaml").write_text(
        "canonical_locale: zh-cn\n"
        "paths:\n"
        "  raw: content/content/raw\n"
        "  raw_manifest: content/content/raw/.manifest.sha256\n"
        "  notes: content/content/note\n"
        "  index: content/content/information/main/kb-index.md\n"
        "  log: content/content/information/main/kb-log.md\n"
    )
    result = run_kb("lint", "--root", str(root))
    assert result.code == 0, result.err
    (root / "content/content/raw/.manifest.sha256").unlink()
    assert "- missing raw manifest: content/content/raw/.manifest.sha256" in run_kb("lint", "--root", str(root)).err


def test_unknown_config_key_is_one_line_exit_2(tmp_path):
    kb = make_kb(tmp_path / "kb")
    (kb.root / ".kb.yaml").write_text("paths:\n  rawz: x\n")
    result = run_kb_process("lint", cwd=kb.root)
    assert result.code == 2
    assert result.err == f"kb: error: unknown key 'paths.rawz' ({kb.root / '.kb.yaml'}:2:3)\n"


@pytest.mark.parametrize(
    "text,message",
    [
        (
            "derived:\n  threshold: 1.5\n",
            "'derived.threshold' must be between 0 and 1, got 1.5 ({file}:2:14: derived.threshold)",
        ),
        ("ingest:\n  jobs: -1\n", "'ingest.jobs' must be at least 1, got -1 ({file}:2:9: ingest.jobs)"),
        ("derived:\n  threshold: high\n", "'derived.threshold' must be a number ({file}:2:14: derived.threshold)"),
        ("enums:\n  kind: 5\n", "'enums.kind' must be a list of strings ({file}:2:9: enums.kind)"),
        ("paths:\n  raw: ../evidence\n", "'paths.raw' is outside the repository: ../evidence ({file}:2:8: paths.raw)"),
        (
            "paths:\n  notes: /srv/notes\n",
            "'paths.notes' is outside the repository: /srv/notes ({file}:2:10: paths.notes)",
        ),
        ("paths:\n  raw: [unclosed\n", "invalid YAML: did not find expected ',' or ']' ({file}:3:1)"),
        ("- a\n- b\n", "top level must be a mapping ({file})"),
    ],
)
def test_bad_config_value_is_one_line_naming_key_and_file(tmp_path, text, message):
    kb = make_kb(tmp_path / "kb")
    (kb.root / ".kb.yaml").write_text(text)
    result = lint(kb)
    assert result.code == 2
    assert result.err == "kb: error: " + message.format(file=kb.root / ".kb.yaml") + "\n"


def test_ambiguous_canonical_locale_is_a_config_error_naming_the_candidates(tmp_path):
    """Raw sources under two locales with an index each, neither index listing them all."""
    kb = make_kb(tmp_path / "kb")
    kb.add_raw("english-source", locale="en")
    other = kb.root / "src/content/information/en"
    other.mkdir(parents=True)
    (other / "kb-index.md").write_text("# index\n\n- `english-source`\n")
    result = lint(kb)
    assert result.code == 2
    assert result.err.startswith("kb: error: canonical locale is ambiguous: indexes exist for en, zh-cn; ")
    assert "raw sources under en, zh-cn; no index lists them all; set canonical_locale" in result.err
    assert len(result.err.splitlines()) == 1


def test_reference_layout_lints_clean_without_config(tmp_path):
    """zh-cn canonical, en/ja translations citing zh-cn raw; quoted, unquoted and block lists."""
    kb = make_kb(tmp_path / "kb", raws=3, notes=0)
    kb.add_note("java-null-value", sources=["source-1", "source-2"], related=["legacy-notes"], list_style="quoted")
    kb.add_note(
        "legacy-notes",
        sources=["source-3"],
        related=["java-null-value"],
        list_style="unquoted",
        status="provisional",
        kind="synthesis",
    )
    kb.add_note("block-style", sources=["source-1"], related=["java-null-value", "legacy-notes"], list_style="block")
    for locale in ("en", "ja"):
        for slug in ("java-null-value", "legacy-notes", "block-style"):
            kb.add_note(
                slug,
                locale=locale,
                sources=["source-1"],
                related=["java-null-value"],
                body=f"See [the page](/note/{slug}) and [Java](/{locale}/note/java-null-value).\n",
            )
    kb.write_index()
    kb.commit("reference layout")
    result = run_kb_process("lint", cwd=kb.root)
    assert result.code == 0, result.err
    assert result.out == "KB lint passed: 3 raw source(s), 9 wiki page(s), canonical index/log present.\n"
    assert result.err == ""


def test_new_secret_in_a_note_is_reported_but_committed_evidence_is_not_reflagged(tmp_path):
    pytest.importorskip("kbtools.lint.secrets")
    kb = make_kb(tmp_path / "kb")
    token = make_secret("github-classic", 11)
    kb.add_note("leaky", body=f"# leaky\n\nexport GH_CLI_VALUE={token}\n")
    kb.write_index()
    result = lint(kb)
    found = [ln for ln in result.err.splitlines() if ln.startswith("- secret in ")]
    assert len(found) == 1 and found[0].startswith("- secret in src/content/note/zh-cn/leaky.md:")
    assert token not in result.err
    kb.commit("committed with --no-verify")
    assert lint(kb).code == 0  # not a change any more
    kb.git("add", "-A")
    path = kb.note_path("note-1")
    path.write_text(path.read_text() + f"\ntoken {token}\n")
    kb.stage(path)
    assert any(
        ln.startswith("- secret in src/content/note/zh-cn/note-1.md:") for ln in lint(kb, "--staged").err.splitlines()
    )


def test_secret_committed_in_the_range_is_reported_by_since(tmp_path):
    pytest.importorskip("kbtools.lint.secrets")
    kb = make_kb(tmp_path / "kb")
    before = kb.head()
    kb.add_note("leaky", body=f"# leaky\n\nGH_CLI_VALUE={make_secret('github-classic', 5)}\n")
    kb.write_index()
    kb.commit("leak")
    assert lint(kb).code == 0
    found = [ln for ln in lint(kb, "--since", before).err.splitlines() if ln.startswith("- secret in ")]
    assert found == ["- secret in src/content/note/zh-cn/leaky.md:13 (github-token)"]


def test_the_hook_command_lines_answer_as_the_typer_app_does(tmp_path):
    """`kb lint`, `kb lint --staged` and the hook's steps run without typer (plain_command):
    the same report, streams and exit code as the same command spelled out to the typer app."""
    kb = make_kb(tmp_path / "kb")
    anchors = "See src/app/main.py at 3f2a9c1d, released 2026-03-14 as v4.2.1 (https://example.com/notes)."
    kb.add_note("anchored", sources=["source-1"], body=f"# Anchored\n\n{anchors}\n")
    kb.write_index()
    kb.commit("anchored note")
    kb.add_note("anchored", sources=["source-1"], body="# Anchored\n\nRewritten without its anchors.\n")
    BREAKERS[4](kb)
    BREAKERS[10](kb)
    kb.git("add", "-A")
    spelled = {
        ("lint",): ("lint", "--format", "text", "--root", str(kb.root)),
        ("lint", "--staged"): ("lint", "--staged", "--format", "text", "--root", str(kb.root)),
        ("retention", "check", "--staged"): ("retention", "check", "--staged", "--format", "text"),
    }
    for plain, typed in spelled.items():
        result = run_kb(*plain, cwd=kb.root)
        assert result.code == 1 and result.err, plain
        assert result == run_kb(*typed, cwd=kb.root), plain
    assert run_kb("lint", cwd=tmp_path / "kb" / "src").code == 1  # the KB found from a sub-folder, as with typer


def test_the_commit_hook_does_not_import_typer(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.add_note("new-note", sources=["source-1"])
    kb.write_index()
    kb.git("add", "-A")
    probe = "import sys; from kbtools.cli import main; code = main(sys.argv[1:]); print(code, 'typer' in sys.modules)"
    for args in (["hooks", "run", "pre-commit"], ["lint"], ["lint", "--staged"]):
        proc = subprocess.run([sys.executable, "-c", probe, *args], cwd=kb.root, capture_output=True, text=True)
        assert proc.stdout.split()[-2:] == [str(1 if args[0] == "hooks" else 0), "False"], (args, proc.stderr)
    proc = subprocess.run([sys.executable, "-c", probe, "lint", "--only", "raw"], cwd=kb.root, capture_output=True)
    assert proc.stdout.split()[-1:] == [b"True"]  # anything else is parsed by typer
