"""`kb redact [--jsonl]`: a filter from stdin to stdout."""

from __future__ import annotations

import json

from tests.testing.cli import run_kb, run_kb_process
from tests.testing.secrets import make_secret


def test_plain_text_is_redacted_from_stdin_to_stdout(tmp_path):
    token = make_secret("npm", 1)
    result = run_kb("redact", "--root", str(tmp_path), stdin=f"NPM_CONFIG_VALUE={token}\nmail bob" + "@example.com\n")
    assert result.code == 0
    assert result.out == "NPM_CONFIG_VALUE=<REDACTED_TOKEN>\nmail <PRIVATE_EMAIL>\n"


def test_jsonl_lines_get_redacted_text_and_their_labels(tmp_path):
    lines = [json.dumps({"text": "password=hunter2 at /home/bob/x"}), "", json.dumps({"text": "nothing here"})]
    result = run_kb("redact", "--jsonl", "--root", str(tmp_path), stdin="\n".join(lines) + "\n")
    assert result.code == 0
    records = [json.loads(line) for line in result.out.splitlines()]
    assert records == [
        {
            "text": "password=<REDACTED_PASSWORD> at <PRIVATE_PATH>",
            "redactions": ["<REDACTED_PASSWORD>", "<PRIVATE_PATH>"],
        },
        {"text": "nothing here", "redactions": []},
    ]


def test_bad_jsonl_line_is_a_one_line_error_naming_the_line(tmp_path):
    stdin = json.dumps({"text": "ok"}) + "\n{not json\n" + json.dumps({"text": "never reached"}) + "\n"
    result = run_kb_process("redact", "--jsonl", cwd=tmp_path, stdin=stdin)
    assert result.code == 2
    assert result.err.strip() == "kb: error: invalid JSON (stdin line 2)"
    assert "Traceback" not in result.err


def test_jsonl_line_without_text_is_an_error(tmp_path):
    result = run_kb("redact", "--jsonl", "--root", str(tmp_path), stdin='{"text": 3}\n')
    assert result.code == 2 and "stdin line 1" in result.err


def test_kb_yaml_public_prefixes_apply(tmp_path):
    (tmp_path / ".kb.yaml").write_text("redaction:\n  public_path_prefixes: ['/data/']\n  allow: ['build.corp']\n")
    result = run_kb("redact", "--root", str(tmp_path), stdin="/data/x/y on build.corp, /srv/a/b\n")
    assert result.out == "/data/x/y on build.corp, <PRIVATE_PATH>\n"


def test_invalid_utf8_on_stdin_is_not_a_crash(tmp_path):
    result = run_kb_process("redact", cwd=tmp_path, stdin=b"ok \xff\xfe password=hunter2\n")
    assert result.code == 0
    assert "hunter2" not in result.out and "<REDACTED_PASSWORD>" in result.out


def test_non_ascii_text_passes_through_under_an_ascii_locale(tmp_path):
    env = {"LC_ALL": "C", "LANG": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}
    result = run_kb_process("redact", cwd=tmp_path, stdin="中文 /home/alice/x\n".encode(), env=env)
    assert result.code == 0 and result.out == "中文 <PRIVATE_PATH>\n"
