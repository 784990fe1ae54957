"""Inputs that must not crash, hang or exhaust kb (issue 18), with real files and real git.

- a file name that is not UTF-8 (POSIX allows any bytes but "/" and NUL; Python hands such a
  name over with lone surrogates, PEP 383): one clear error or finding, never "internal error";
- Ctrl-C while the CLI is still being imported: "kb: interrupted", exit 130, no traceback;
- a FIFO given to `kb retention check`: refused at once (only regular files are read);
- a large raw file staged: hashed and scanned for secrets in pieces, with flat memory.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tracemalloc

from tests.testing.cli import run_kb_process
from tests.testing.kbfactory import make_kb, raw_text

BAD = b"caf\xe9"  # Latin-1 "café": not UTF-8


def problems(result) -> list[str]:
    return [line[2:] for line in result.err.splitlines() if line.startswith("- ")]


def test_kb_raw_add_with_a_non_utf8_name_is_a_clear_error(tmp_path):
    kb = make_kb(tmp_path / "kb")
    source = os.path.join(os.fsencode(tmp_path), BAD + b".md")
    with open(source, "wb") as fh:
        fh.write(raw_text("cafe").encode())
    result = run_kb_process("raw", "add", os.fsdecode(source), cwd=kb.root)
    assert result.code == 2, result.err
    assert result.err.startswith("kb: error: file name is not valid UTF-8; rename the file (")
    assert "caf\\xe9.md" in result.err and "internal error" not in result.err
    assert kb.manifest.read_text().count("\n") == 2  # nothing registered


def test_a_staged_note_with_a_non_utf8_name_is_one_finding_in_the_plain_hook(tmp_path):
    kb = make_kb(tmp_path / "kb")
    folder = os.fsencode(kb.note_root / "zh-cn")
    with open(os.path.join(folder, BAD + b".md"), "wb") as fh:
        fh.write(b"---\ntitle: x\n---\n\nbody\n")
    kb.git("add", "-A")
    expected = "wiki page name is not valid UTF-8: zh-cn/caf\\xe9.md"
    staged = run_kb_process("lint", "--staged", cwd=kb.root)
    assert staged.code == 1
    assert problems(staged) == [expected]
    hook = run_kb_process("hooks", "run", "pre-commit", cwd=kb.root)
    assert hook.code == 1
    assert f"- {expected}" in hook.err.splitlines()
    assert "internal error" not in hook.err + hook.out and "Traceback" not in hook.err
    as_json = run_kb_process("lint", "--staged", "--format", "json", cwd=kb.root)
    assert as_json.code == 1 and "caf\\\\xe9" in as_json.out
    recorded = run_kb_process("artifacts", "record", "--staged", cwd=kb.root)
    assert "internal error" not in recorded.err and "Traceback" not in recorded.err
    # Renamed, the same commit passes.
    kb.git("rm", "-q", "--cached", "--", os.fsdecode(os.path.join(folder, BAD + b".md")))
    os.unlink(os.path.join(folder, BAD + b".md"))
    assert run_kb_process("lint", "--staged", cwd=kb.root).code == 0


def test_ctrl_c_while_the_cli_is_being_imported_prints_no_traceback(tmp_path):
    """SIGINT lands while `typer` is being imported (an import hook sends it at that moment,
    the way a Ctrl-C in the first ~80 ms does)."""
    script = textwrap.dedent(
        """
        import os, signal, sys

        class Trip:
            def find_spec(self, name, path=None, target=None):
                if name == "typer":
                    sys.meta_path.remove(self)
                    os.kill(os.getpid(), signal.SIGINT)
                return None

        sys.meta_path.insert(0, Trip())
        sys.argv = ["kb", "--version"]
        from kbtools.__main__ import main
        main()
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr == "kb: interrupted\n"
    assert proc.stdout == ""


def test_retention_check_on_a_fifo_does_not_hang(tmp_path):
    fifo = tmp_path / "page.md"
    os.mkfifo(fifo)
    page = tmp_path / "new.md"
    page.write_text("# page\n")
    kb = make_kb(tmp_path / "kb", git=False)
    for args in ((str(fifo), str(page)), (str(page), str(fifo))):
        result = run_kb_process("retention", "check", *args, cwd=kb.root, timeout=60)
        assert result.code == 2, result.err
        assert result.err == f"kb: error: cannot read page: not a regular file ({fifo})\n"


def _staged_peak(tmp_path, megabytes: int) -> int:
    """Peak Python allocation (tracemalloc) of a warm `kb lint --staged` with a raw file of
    ``megabytes`` staged."""
    from kbtools.config import load_config
    from kbtools.kb.layout import Layout
    from kbtools.lint.engine import LintMode, run_lint

    kb = make_kb(tmp_path / f"kb{megabytes}")
    line = "Evidence line with some words in it, long enough to look like prose in a transcript.\n"
    kb.add_raw("big", body="# big\n\n" + line * (megabytes * 1024 * 1024 // len(line)))
    kb.write_index()
    kb.git("add", "-A")
    layout = Layout(load_config(kb.root))
    assert run_lint(layout, LintMode(staged=True)).ok  # imports and caches outside the measure
    tracemalloc.start()
    try:
        report = run_lint(layout, LintMode(staged=True))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.ok, report.problems
    return peak


def test_a_large_staged_raw_file_is_hashed_and_scanned_with_flat_memory(tmp_path):
    """Four times the bytes, the same peak: neither the blob nor the diff is held whole
    (a 12 MB diff held whole would be 12 MB of bytes and more of text)."""
    small, large = _staged_peak(tmp_path, 3), _staged_peak(tmp_path, 12)
    assert large < small + 2 * 1024 * 1024, (small, large)
    assert large < 10 * 1024 * 1024, large
