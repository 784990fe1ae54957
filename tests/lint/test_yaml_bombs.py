"""YAML alias and merge-key bombs in note frontmatter and `.kb.yaml`: a problem or a config
error in well under a second and a few hundred MB, never minutes and gigabytes.

The documents are the classic shapes ("billion laughs": each anchor a list of nine aliases
of the previous one; the merge variant: each mapping merging the previous one nine times,
which ruamel flattens by copying). Each test runs `kb` as a child process under an address
space limit and a wall-clock timeout, so a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import os
import resource
import subprocess
import time

import pytest

from tests.testing.cli import kb_command
from tests.testing.kbfactory import make_kb

MEMORY_LIMIT = 1024 * 1024 * 1024  # 1 GiB of address space for the whole `kb` process
TIME_LIMIT = 20.0  # seconds; a bounded parse takes a fraction of one


def laughs(levels: int = 9) -> str:
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def merges(levels: int = 8) -> str:
    lines = ["m0: &m0 {k0: v, k1: v, k2: v, k3: v}"]
    for i in range(1, levels):
        lines.append(f"m{i}: &m{i} {{<<: [" + ", ".join([f"*m{i - 1}"] * 9) + "]}")
    return "\n".join(lines) + "\n"


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_bounded(*args: str, cwd) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    proc = subprocess.run(
        kb_command(*args),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIME_LIMIT,
        preexec_fn=_limited,
        env=os.environ,
    )
    return proc, time.monotonic() - started


@pytest.mark.parametrize("bomb", [laughs, merges], ids=["aliases", "merge-keys"])
def test_frontmatter_bomb_is_a_problem_of_that_note(tmp_path, bomb):
    kb = make_kb(tmp_path / "kb")
    last = "*l8" if bomb is laughs else "*m7"
    # `related` is read as a list of slugs: an unbounded loader builds it, then lint stringifies it.
    path = kb.add_note("bomb", extra=bomb() + f"related: [{last}]\n")
    path.write_text(path.read_text(encoding="utf-8").replace("related: []\n", "", 1), encoding="utf-8")
    kb.write_index()
    assert path.stat().st_size < 2000, "a small document"
    proc, elapsed = run_bounded("lint", cwd=kb.root)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == "KB lint failed (1 issue)"
    assert lines[1].startswith(
        "- wiki page invalid frontmatter: zh-cn/bomb.md (YAML aliases expand to more than 100,000"
    )
    assert elapsed < TIME_LIMIT


@pytest.mark.parametrize("bomb", [laughs, merges], ids=["aliases", "merge-keys"])
def test_kb_yaml_bomb_is_a_config_error(tmp_path, bomb):
    kb = make_kb(tmp_path / "kb")
    (kb.root / ".kb.yaml").write_text("canonical_locale: zh-cn\n" + bomb())
    proc, _ = run_bounded("lint", cwd=kb.root)
    assert proc.returncode == 2
    assert proc.stderr.startswith("kb: error: YAML aliases expand to more than 100,000 nodes (")
    assert str(kb.root / ".kb.yaml") + ":" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_recursive_alias_is_a_problem_not_a_hang(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.add_note("loop", extra="loop: &x [1, *x]\n")
    kb.write_index()
    proc, _ = run_bounded("lint", cwd=kb.root)
    assert "- wiki page invalid frontmatter: zh-cn/loop.md (YAML alias refers to itself)" in proc.stderr


def test_oversized_frontmatter_is_a_problem(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.add_note("huge", extra="padding: " + "x" * (300 * 1024) + "\n")
    kb.write_index()
    proc, _ = run_bounded("lint", cwd=kb.root)
    assert "- wiki page invalid frontmatter: zh-cn/huge.md (YAML document of " in proc.stderr
    assert "bytes is over the 262,144-byte limit)" in proc.stderr


def test_shared_aliases_of_an_ordinary_size_still_parse(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.add_note("anchors", extra="defaults: &d {lang: zh-cn}\nen: {<<: *d, lang: en}\nja: *d\n")
    kb.write_index()
    proc, _ = run_bounded("lint", cwd=kb.root)
    assert proc.returncode == 0, proc.stderr
