"""The raw manifest: parsing, path safety (reported, never followed) and appending."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbtools.config import Config
from kbtools.errors import KbError
from kbtools.kb import manifest
from kbtools.kb.layout import Layout
from kbtools.kb.manifest import (
    append_manifest_line,
    manifest_entries,
    parse_manifest,
    removed_entries,
    sha256_file,
)
from tests.testing.cli import run_kb_process
from tests.testing.kbfactory import make_kb, sha256_bytes

SHA = "a" * 64


def test_sha256sum_two_space_format_and_blank_lines_parse():
    manifest = parse_manifest(f"{SHA}  zh-cn/a.md\n\n{'b' * 64} zh-cn/b.md\n")
    assert [(e.rel, e.line_no) for e in manifest.entries] == [("zh-cn/a.md", 1), ("zh-cn/b.md", 3)]
    assert manifest.issues == ()


@pytest.mark.parametrize(
    "line,reason",
    [
        ("A" * 64 + " x.md", "not '<sha256> <path>'"),
        ("abc x.md", "not '<sha256> <path>'"),
        (SHA, "not '<sha256> <path>'"),
        (SHA + " ../../etc/passwd", "path leaves the raw root"),
        (SHA + " /etc/passwd", "absolute path"),
        (SHA + " zh-cn/./a.md", "path is not normalised"),
    ],
)
def test_malformed_or_unsafe_lines_are_issues(line, reason):
    manifest = parse_manifest(line + "\n")
    assert manifest.entries == ()
    assert [(i.line, i.reason) for i in manifest.issues] == [(line, reason)]


def test_duplicate_path_is_an_issue_and_first_line_wins():
    manifest = parse_manifest(f"{SHA} a.md\n{'b' * 64} a.md\n")
    assert manifest.sha_by_rel() == {"a.md": SHA}
    assert [(i.line_no, i.reason) for i in manifest.issues] == [(2, "duplicate path")]


def _fifo_kb(tmp_path):
    """A KB plus a FIFO outside the raw root: reading it would block the lint for ever."""
    kb = make_kb(tmp_path / "kb")
    fifo = tmp_path / "outside.md"
    os.mkfifo(fifo)
    return kb, fifo


def _lint_quickly(kb):
    return run_kb_process("lint", cwd=kb.root, timeout=15)


def test_dotdot_path_is_reported_and_never_read(tmp_path):
    kb, fifo = _fifo_kb(tmp_path)
    rel = os.path.relpath(fifo, kb.raw_root)
    assert rel.startswith("../")
    line = kb.register(rel, sha=SHA)
    result = _lint_quickly(kb)
    assert f"- invalid raw manifest entry: {line} (path leaves the raw root)" in result.err.splitlines()
    assert "checksum" not in result.err and "missing raw file" not in result.err


def test_absolute_path_is_reported_and_never_read(tmp_path):
    kb, fifo = _fifo_kb(tmp_path)
    line = kb.register(str(fifo), sha=SHA)
    result = _lint_quickly(kb)
    assert f"- invalid raw manifest entry: {line} (absolute path)" in result.err.splitlines()


def test_symlink_out_of_the_raw_root_is_reported_and_never_read(tmp_path):
    kb, fifo = _fifo_kb(tmp_path)
    link = kb.raw_root / "zh-cn" / "escape.md"
    link.symlink_to(fifo)
    line = kb.register("zh-cn/escape.md", sha=SHA)
    result = _lint_quickly(kb)
    lines = result.err.splitlines()
    assert f"- invalid raw manifest entry: {line} (symlink leads out of the raw root)" in lines
    assert not any("escape.md" in ln and "invalid raw manifest entry" not in ln for ln in lines), lines


def test_symlinked_folder_out_of_the_raw_root_is_reported(tmp_path):
    kb, fifo = _fifo_kb(tmp_path)
    (kb.raw_root / "elsewhere").symlink_to(tmp_path)
    line = kb.register("elsewhere/outside.md", sha=SHA)
    result = _lint_quickly(kb)
    assert f"- invalid raw manifest entry: {line} (symlink leads out of the raw root)" in result.err.splitlines()


def test_hash_is_over_bytes_not_reencoded_text(tmp_path):
    kb = make_kb(tmp_path / "kb")
    data = b"---\ntitle: x\ncapturedAt: 2026-08-07\nsourceType: gist\nsourceUrl: https://example.com\n---\n"
    data += b"caf\xc3\xa9 \xff\xfe not utf-8 in the body\r\n"
    kb.add_raw("bytes-source", text=data)
    kb.write_index()
    assert sha256_file(kb.raw_path("bytes-source")) == sha256_bytes(data)
    result = run_kb_process("lint", cwd=kb.root)
    assert "checksum" not in result.err


def _layout(kb) -> Layout:
    return Layout(Config(root=kb.root))


def test_append_adds_a_line_and_never_rewrites(tmp_path):
    kb = make_kb(tmp_path / "kb")
    before = kb.manifest.read_bytes()
    assert append_manifest_line(_layout(kb), "zh-cn/new.md", SHA) is True
    assert kb.manifest.read_bytes() == before + f"{SHA} zh-cn/new.md\n".encode()
    assert append_manifest_line(_layout(kb), "zh-cn/new.md", SHA) is False  # idempotent
    assert kb.manifest.read_bytes() == before + f"{SHA} zh-cn/new.md\n".encode()


def test_append_completes_a_last_line_without_newline(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.manifest.write_bytes(kb.manifest.read_bytes().rstrip(b"\n"))
    append_manifest_line(_layout(kb), "zh-cn/new.md", SHA)
    assert kb.manifest.read_text().splitlines()[-1] == f"{SHA} zh-cn/new.md"
    assert len(parse_manifest(kb.manifest.read_text()).entries) == 3


@pytest.mark.parametrize(
    "rel,sha", [("../x.md", SHA), ("/abs.md", SHA), ("zh-cn/x.md", "XYZ"), ("zh-cn/source-1.md", SHA)]
)
def test_append_refuses_unsafe_bad_or_conflicting_lines(tmp_path, rel, sha):
    kb = make_kb(tmp_path / "kb")
    before = kb.manifest.read_bytes()
    with pytest.raises(KbError):
        append_manifest_line(_layout(kb), rel, sha)
    assert kb.manifest.read_bytes() == before


def test_removed_entries_sees_an_edited_last_line_behind_an_append():
    a, b, c = ("a" * 64 + " zh-cn/a.md"), ("b" * 64 + " zh-cn/b.md"), ("c" * 64 + " zh-cn/c.md")
    assert removed_entries(f"{a}\n{b}\n", f"{a}\n{b}\n{c}\n") == []  # appended
    assert removed_entries(f"{a}\n{b}", f"{a}\n{b}x\n{c}\n") == [b]  # the unterminated last line was edited
    assert removed_entries(f"{a}\n{b}\n", f"{b}\n{a}\n") == []  # re-sorted
    assert removed_entries(f"{a}\n{b}\n", f"{a}\n") == [b]
    assert removed_entries("", f"{a}\n") == []


_MANIFEST_LINES = st.sampled_from(
    [
        f"{'a' * 64} zh-cn/a.md",
        f"{'b' * 64}  zh-cn/b.md",
        f"{'c' * 64}\tc.md",
        f"{'d' * 64} zh-cn/a.md",  # the same path again
        f"{'A' * 64} zh-cn/e.md",
        f"{'e' * 64} ./zh-cn/e.md",
        f"{'f' * 64} zh-cn/f.md\r",
        f"{'0' * 64} zh-cn/with space.md",
        f"{'1' * 64} 见/笔记.md",
        "",
        "  ",
        "not a line",
    ]
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_MANIFEST_LINES, min_size=1, max_size=6), st.booleans())
def test_a_manifest_read_in_one_pass_reads_as_line_by_line(lines, final_newline):
    text = "\n".join(lines) + ("\n" if final_newline else "")
    assert parse_manifest(text) == manifest._parse_lines(text, None, None, True)
    assert manifest_entries(text) == manifest._entries_by_line(text)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(_MANIFEST_LINES, max_size=5),
    st.lists(_MANIFEST_LINES, max_size=3),
    st.booleans(),
    st.one_of(st.none(), _MANIFEST_LINES),
)
def test_appended_entries_are_what_keying_the_old_manifest_finds(old_lines, added, old_terminated, first):
    old = "\n".join(old_lines) + ("\n" if old_terminated and old_lines else "")
    new = old + "\n".join(added) + ("\n" if added else "")
    if first is not None:  # a rewritten first line: not an append
        new = first + new[new.find("\n") :] if "\n" in new else first
    current = parse_manifest(new)
    appended = manifest.appended_rels(current, old)
    if appended is not None:
        keyed = manifest_entries(old)
        assert appended == {e.rel for e in current.entries if keyed.get(e.rel) != e.sha}


def test_an_appended_plain_line_is_told_without_keying_the_old_manifest():
    old = f"{'a' * 64} zh-cn/a.md\n"
    assert manifest.appended_rels(parse_manifest(old + f"{'b' * 64} zh-cn/b.md\n"), old) == {"zh-cn/b.md"}
