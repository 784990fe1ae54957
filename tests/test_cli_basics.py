from __future__ import annotations

from tests.testing.cli import run_kb, run_kb_process


def test_version_and_help(tmp_path):
    assert run_kb("--version").out.strip().startswith("kb ")
    result = run_kb("--help")
    assert result.code == 0 and "Usage: kb" in result.out


def test_unknown_command_is_a_one_line_usage_error(tmp_path):
    result = run_kb_process("no-such-command", cwd=tmp_path)
    assert result.code == 2
    assert result.err.startswith("kb: error: ")
    assert "Traceback" not in result.err
