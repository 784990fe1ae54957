from __future__ import annotations

from tests.testing.cli import kb_command, run_kb, run_kb_process


def test_version_and_help(tmp_path):
    assert run_kb("--version").out.strip().startswith("kb ")
    result = run_kb("--help")
    assert result.code == 0 and "Usage: kb" in result.out


def test_unknown_command_is_a_one_line_usage_error(tmp_path):
    result = run_kb_process("no-such-command", cwd=tmp_path)
    assert result.code == 2
    assert result.err.startswith("kb: error: ")
    assert "Traceback" not in result.err


def test_ctrl_c_exits_130_with_one_line_and_no_traceback(tmp_path):
    """SIGINT while a command runs (here `kb redact --jsonl` waiting for its next line)."""
    import json
    import signal
    import subprocess

    proc = subprocess.Popen(
        [*kb_command(), "redact", "--jsonl"],
        cwd=tmp_path,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({"text": "hello"}) + "\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["text"] == "hello"  # running, inside its loop
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert err == "kb: interrupted\n"


def test_the_kb_process_leaves_with_all_its_output_and_its_exit_code(tmp_path):
    """What `kb` printed, through a pipe and buffered, arrives whole, and its exit code is the command's."""
    import json

    lines = "".join(json.dumps({"text": f"line {n} " + "x" * 200}) + "\n" for n in range(2_000))
    result = run_kb_process("redact", "--jsonl", cwd=tmp_path, stdin=lines)
    assert result.code == 0, result.err
    assert [json.loads(line)["text"] for line in result.out.splitlines()] == [
        json.loads(line)["text"] for line in lines.splitlines()
    ]
    assert run_kb_process("lint", "--root", str(tmp_path / "missing"), cwd=tmp_path).code == 2
