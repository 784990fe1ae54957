"""`kb retention check OLD NEW`: files in, one line per loss on stderr, exit 1 when refused."""

from __future__ import annotations

import json

from tests.testing.cli import run_kb, run_kb_process
from tests.testing.gitrepo import write

OLD = (
    "Shipped v1.2 on 2026-07-27 from release/notes.md at 5ef5a70; config in $HOME/.config/kb/kb.yaml,\n"
    "served at https://docs.example.com/kb/ (port localhost:6280), flag KB_IDENTIFIER_LOSS_REFUSE.\n"
)


def pages(tmp_path, old: str, new: str):
    return write(tmp_path / "old.md", old), write(tmp_path / "new.md", new)


def test_a_rewrite_that_keeps_every_identifier_is_silent(tmp_path):
    old, new = pages(tmp_path, OLD, "Rewritten.\n" + OLD.replace("\n", " ") + "\nMore.")
    result = run_kb("retention", "check", str(old), str(new), cwd=tmp_path)
    assert (result.code, result.out, result.err) == (0, "", "")


def test_a_single_loss_warns_naming_it_and_exits_zero(tmp_path):
    old, new = pages(tmp_path, OLD, OLD.replace("v1.2 ", ""))
    result = run_kb("retention", "check", str(old), str(new), cwd=tmp_path)
    assert result.code == 0
    assert "dropped 1 identifier(s)" in result.err and ": v1.2 (warning: refuses at 3)" in result.err


def test_three_losses_refuse_with_exit_one(tmp_path):
    new_text = OLD.replace("v1.2 ", "").replace("2026-07-27", "July").replace("5ef5a70", "HEAD")
    old, new = pages(tmp_path, OLD, new_text)
    result = run_kb("retention", "check", str(old), str(new), cwd=tmp_path)
    assert result.code == 1
    assert "2026-07-27, 5ef5a70, v1.2 (refused: 3 >= threshold 3)" in result.err


def test_json_reports_lost_refused_and_threshold(tmp_path):
    old, new = pages(tmp_path, OLD, OLD.replace("5ef5a70", "HEAD").replace("release/notes.md", "the notes"))
    result = run_kb("retention", "check", str(old), str(new), "--format", "json", "--threshold", "2", cwd=tmp_path)
    doc = json.loads(result.out)
    assert result.code == 1
    assert doc["lost"] == ["5ef5a70", "release/notes.md"]
    assert doc["refused"] is True and doc["threshold"] == 2 and doc["threshold_source"] == "--threshold"
    assert {d["kind"] for d in doc["lost_detail"]} == {"hex_id", "relative_path"}


def test_threshold_flag_zero_warns_only(tmp_path):
    old, new = pages(tmp_path, OLD, "gone")
    result = run_kb("retention", "check", str(old), str(new), "--threshold", "0", cwd=tmp_path)
    assert result.code == 0 and "warning only" in result.err


def test_dash_old_is_a_new_page_and_a_missing_old_is_an_error(tmp_path):
    new = write(tmp_path / "new.md", OLD)
    dash = run_kb("retention", "check", "-", str(new), "--threshold", "1", "--format", "json", cwd=tmp_path)
    assert dash.code == 0 and json.loads(dash.out)["new_page"] is True
    missing = run_kb("retention", "check", str(tmp_path / "nope.md"), str(new), "--threshold", "1", cwd=tmp_path)
    assert missing.code == 2 and missing.err.startswith("kb: error: previous version not found")
    assert len(missing.err.splitlines()) == 1


def test_dash_new_reads_standard_input(tmp_path):
    old = write(tmp_path / "old.md", OLD)
    result = run_kb("retention", "check", str(old), "-", stdin="nothing left", cwd=tmp_path)
    assert result.code == 1 and "refused" in result.err


def test_env_threshold_and_garbage_env(tmp_path, monkeypatch):
    old, new = pages(tmp_path, OLD, OLD.replace("v1.2 ", ""))
    monkeypatch.setenv("KB_IDENTIFIER_LOSS_REFUSE", "1")
    assert run_kb("retention", "check", str(old), str(new), cwd=tmp_path).code == 1
    monkeypatch.setenv("KB_IDENTIFIER_LOSS_REFUSE", "three")
    result = run_kb("retention", "check", str(old), str(new), cwd=tmp_path)
    assert result.code == 0
    assert "kb: warning: KB_IDENTIFIER_LOSS_REFUSE='three' is not an integer; using 3" in result.err


def test_kb_yaml_threshold_applies(tmp_path):
    write(tmp_path / ".kb.yaml", "retention:\n  refuse: 1\n")
    old, new = pages(tmp_path, OLD, OLD.replace("v1.2 ", ""))
    assert run_kb("retention", "check", str(old), str(new), cwd=tmp_path).code == 1


def test_kb_yaml_registry_prefixes_extend_the_taxonomy(tmp_path):
    old, new = pages(tmp_path, "Tracked as HQ-123 and OPS-9.", "Tracked.")
    assert run_kb("retention", "check", str(old), str(new), "--threshold", "1", cwd=tmp_path).code == 0
    write(tmp_path / ".kb.yaml", "retention:\n  registry_prefixes: [HQ-, OPS-]\n")
    result = run_kb("retention", "check", str(old), str(new), "--threshold", "1", cwd=tmp_path)
    assert result.code == 1 and "HQ-123, OPS-9" in result.err


def test_a_missing_new_page_is_a_one_line_error(tmp_path):
    old = write(tmp_path / "old.md", OLD)
    result = run_kb_process("retention", "check", str(old), str(tmp_path / "missing.md"), cwd=tmp_path)
    assert result.code == 2
    assert result.err.startswith("kb: error: cannot read page") and result.err.count("\n") == 1


def test_usage_errors_exit_two(tmp_path):
    old, new = pages(tmp_path, OLD, OLD)
    assert run_kb("retention", "check", str(old), cwd=tmp_path).code == 2
    assert run_kb("retention", "check", str(old), str(new), "--staged", cwd=tmp_path).code == 2
    assert run_kb("retention", "check", str(old), str(new), "--format", "xml", cwd=tmp_path).code == 2
    assert run_kb("retention", "check", str(old), str(new), "--threshold", "many", cwd=tmp_path).code == 2
