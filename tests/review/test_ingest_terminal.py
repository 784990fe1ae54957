"""`kb ingest` on a terminal: a progress bar and a text summary on stderr (the JSON line stays
on stdout), and `--explain`, which names a source's local file on a terminal only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.review.conftest import ReviewKb
from tests.testing.cli import kb_command, run_kb, run_on_terminal
from tests.testing.gitrepo import write


def on_a_terminal(command: list[str], cwd: Path, *, stdout_too: bool = False) -> tuple[int, bytes, bytes]:
    pytest.importorskip("pty")
    return run_on_terminal(command, cwd, stdout_too=stdout_too)


def test_a_terminal_gets_a_progress_bar_and_a_summary_per_agent(review_kb: ReviewKb) -> None:
    code, out, terminal = on_a_terminal(review_kb.env.command(), review_kb.root)
    assert code == 0, terminal
    (line,) = out.decode().splitlines()  # stdout stays one JSON line
    summary = json.loads(line)
    assert summary["clusters"]["threshold"] > 0
    text = terminal.decode("utf-8", "replace")
    assert f"0/{summary['discovered']}" in text  # the bar: done of the sources discovered
    assert f"kb ingest: {summary['discovered']} source(s) in" in text and "ledgers in .agent/kb-ingest" in text
    for tool in ("omp", "codex", "claude"):
        assert any(row.lstrip().startswith(tool) and "new candidate(s)" in row for row in text.splitlines()), text
    assert "near-duplicate clusters: 0" in text


def test_a_pipe_gets_no_bar_and_no_summary(review_kb: ReviewKb) -> None:
    _, result = review_kb.env.run()
    assert result.err == ""


def test_explain_names_the_local_file_of_a_failed_source_on_a_terminal_only(review_kb: ReviewKb) -> None:
    broken = write(review_kb.env.omp / "-work-broken" / "2026-03-02T10-00-00-000Z_s-broken.jsonl", "")
    broken.write_bytes(b"\x00\x01\x02 not a session \xff\xfe")
    summary = review_kb.ingest()
    assert summary["failed"] == 1
    (failed,) = review_kb.env.rows("manifest", parse_status="failed")
    key = failed["source_key"]
    before = {p.name: p.stat().st_mtime_ns for p in review_kb.env.out.iterdir()}
    code, out, terminal = on_a_terminal(
        kb_command(*review_kb.env.args("--explain", key[:12], write=False)),
        review_kb.root,
        stdout_too=True,
    )
    text = terminal.decode()
    assert code == 0, text
    assert f"source {key}" in text and f"from: {broken}" in text
    assert f"error: {failed['error']}" in text and failed["error"]
    after = {p.name: p.stat().st_mtime_ns for p in review_kb.env.out.iterdir()}
    assert after == before  # nothing written
    piped = run_kb(*review_kb.env.args("--explain", key[:12], write=False))
    assert piped.code == 2 and "terminal only" in piped.err and str(broken) not in piped.out + piped.err
