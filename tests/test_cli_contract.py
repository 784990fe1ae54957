"""The command line's contract (SPEC §2): help for every command, exit codes, Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kbtools import __version__
from tests.testing.cli import kb_command, run_kb, run_kb_process
from tests.testing.kbfactory import make_kb
from tests.testing.sessions import HindsightServer


def _command_tree() -> Any:
    from typer.main import get_command

    from kbtools.cli import build_app

    return get_command(build_app())


def _leaf_paths(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    children = getattr(command, "commands", None)
    if not children:
        return [path]
    return [leaf for name, child in children.items() for leaf in _leaf_paths(child, (*path, name))]


def _listed_commands(help_text: str) -> dict[str, str]:
    """``name → description`` from the "Commands:" section of a help page."""
    listed: dict[str, str] = {}
    lines = help_text.split("Commands:\n", 1)[1].splitlines()
    for line in lines:
        if not line.strip():
            break
        assert line.startswith("  ") and not line.startswith("   "), f"a description spills over: {line!r}"
        name, _, description = line.strip().partition(" ")
        listed[name] = description.strip()
    return listed


def test_python_m_kbtools_runs_the_cli(tmp_path: Path) -> None:
    result = run_kb_process("--version", cwd=tmp_path)
    assert (result.code, result.out, result.err) == (0, f"kb {__version__}\n", "")


@pytest.mark.parametrize("group", ["", "raw", "artifacts", "retention", "hooks"])
def test_help_lists_every_command_with_a_whole_one_line_description(
    group: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")  # a narrow terminal: descriptions must still fit
    tree = _command_tree()
    command = tree.commands[group] if group else tree
    result = run_kb(*([group] if group else []), "--help")
    assert result.code == 0
    listed = _listed_commands(result.out)
    assert sorted(listed) == sorted(command.commands)
    for name, description in listed.items():
        assert description and not description.endswith("..."), f"kb {group} {name}: {description!r}"


@pytest.mark.parametrize("path", _leaf_paths(_command_tree()), ids=" ".join)
def test_every_command_help_shows_usage_description_and_options(path: tuple[str, ...]) -> None:
    result = run_kb(*path, "--help")
    assert result.code == 0, result.err
    assert result.out.startswith(f"Usage: kb {' '.join(path)} ")
    description = result.out.split("\n\n", 2)[1].strip()
    assert len(description.split()) >= 4, f"kb {' '.join(path)} has no description"
    assert "--help" in result.out.split("Options:", 1)[1]


def test_no_arguments_shows_help_and_exits_2(tmp_path: Path) -> None:
    result = run_kb_process(cwd=tmp_path)
    assert result.code == 2 and "Usage: kb" in result.err and "Traceback" not in result.err


def test_unknown_option_is_one_line_naming_the_command_help(tmp_path: Path) -> None:
    result = run_kb_process("lint", "--no-such-option", cwd=tmp_path)
    assert result.code == 2
    assert result.err.count("\n") == 1 and result.err.startswith("kb: error: ")
    assert "(kb lint --help)" in result.err


def test_bad_config_is_one_line_exit_2(tmp_path: Path) -> None:
    kb = make_kb(tmp_path / "kb")
    (kb.root / ".kb.yaml").write_text("no_such_key: 1\n", encoding="utf-8")
    result = run_kb_process("lint", cwd=kb.root)
    assert result.code == 2
    assert result.err.count("\n") == 1 and "no_such_key" in result.err and ".kb.yaml" in result.err


def test_lint_exits_0_when_clean_and_1_on_findings(tmp_path: Path) -> None:
    kb = make_kb(tmp_path / "kb")
    assert run_kb_process("lint", cwd=kb.root).code == 0
    note = next((kb.note_root).rglob("*.md"))
    note.write_text(note.read_text(encoding="utf-8").replace("kind: ", "kind: not-a-kind-", 1), encoding="utf-8")
    result = run_kb_process("lint", cwd=kb.root)
    assert result.code == 1 and "KB lint failed" in result.err


def _hang(handler: Any) -> None:
    threading.Event().wait(30)  # a Hindsight that never answers: ingest blocks reading it


def test_ctrl_c_during_ingest_exits_130_with_one_line(tmp_path: Path) -> None:
    kb = make_kb(tmp_path / "kb")
    with HindsightServer(handler=_hang) as server:
        proc = subprocess.Popen(
            [*kb_command(), "ingest", "--hindsight-url", server.url, "--output-dir", str(tmp_path / "out")],
            cwd=kb.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 30
            while not server.requests and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            assert server.requests, "ingest never asked Hindsight"
            proc.send_signal(signal.SIGINT)  # what Ctrl-C in a terminal sends
            out, err = proc.communicate(timeout=30)
        finally:
            proc.kill()
    assert proc.returncode == 130
    assert err == "kb: interrupted\n" and out == ""


def test_ctrl_c_to_the_whole_process_group_stops_a_parallel_ingest(tmp_path: Path) -> None:
    """A terminal's Ctrl-C reaches every process of the foreground group, workers included."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from corpus import generate, ingest_flags

    kb = make_kb(tmp_path / "kb")
    corpus = tmp_path / "corpus"
    generate(corpus, total_bytes=40_000_000, seed=3, agents=["omp"], secret_mode="none")
    with HindsightServer(handler=_hang) as server:
        proc = subprocess.Popen(
            [
                *kb_command(),
                "ingest",
                "--jobs",
                "2",
                *ingest_flags(corpus, ["omp"]),
                "--hindsight-url",
                server.url,
                "--output-dir",
                str(tmp_path / "out"),
            ],
            cwd=kb.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 30
            # Hindsight is read after the OMP sources went to the pool: the workers are alive now.
            while not server.requests and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            assert server.requests, "ingest never asked Hindsight"
            os.killpg(proc.pid, signal.SIGINT)
            signalled = time.monotonic()
            out, err = proc.communicate(timeout=60)
            # Not a hang: the Hindsight stub would answer only after 30 s.
            assert time.monotonic() - signalled < 10
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert proc.returncode == 130
    assert err == "kb: interrupted\n" and out == ""
