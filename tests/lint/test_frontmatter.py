"""Frontmatter: any YAML list style, dates, and bad input as a Problem naming the file."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kbtools.kb import frontmatter
from kbtools.kb.frontmatter import FrontmatterError, parse_frontmatter, split_frontmatter
from tests.testing.cli import run_kb, run_kb_process
from tests.testing.kbfactory import make_kb


@pytest.mark.parametrize(
    "block",
    [
        'sources: ["a", "b"]\n',
        "sources: ['a', 'b']\n",
        "sources: [a, b]\n",
        "sources:\n  - a\n  - b\n",
        'sources:\n- a\n- "b"\n',
        "sources: [\n  a,\n  b,\n]\n",
    ],
)
def test_every_list_style_gives_the_same_list(block):
    assert parse_frontmatter(f"---\n{block}---\nbody\n").fields["sources"] == ["a", "b"]


def test_quoted_and_unquoted_scalars_agree():
    fields = parse_frontmatter('---\nstatus: "active"\nkind: concept\nimmutable: true\nq: "true"\nn: ~\n---\n').fields
    assert fields == {"status": "active", "kind": "concept", "immutable": True, "q": "true", "n": None}


@pytest.mark.parametrize("value", ["2026-08-07", "2026-08-07 00:00:00+00:00", "2026-13-45", "2026-02-30T25:61:00Z"])
def test_dates_are_kept_as_text_and_never_break(value):
    for block in (f"capturedAt: {value}\n", f"capturedAt: {value}\nanchor: &a x\nalias: *a\n"):
        assert str(parse_frontmatter(f"---\n{block}---\n").fields["capturedAt"]) == value


def test_no_frontmatter_is_empty_not_an_error():
    doc = parse_frontmatter(b"# Title\n\ntext\n")
    assert (doc.present, dict(doc.fields), doc.body_line) == (False, {}, 1)


def test_body_line_counts_the_frontmatter():
    doc = parse_frontmatter("---\na: 1\nb: 2\n---\nfirst body line\n")
    assert doc.body_line == 5 and doc.body.startswith("first body line")


@pytest.mark.parametrize(
    "data,reason",
    [
        (b"---\ntitle: x\n", "frontmatter has no closing ---"),
        (b"---\ntitle: [unclosed\n---\n", "invalid YAML: "),
        (b"---\na: 1\na: 2\n---\n", "invalid YAML: duplicate key 'a'"),
        (b"---\n- a\n- b\n---\n", "frontmatter is a list, not a mapping"),
        (b"---\njust text\n---\n", "frontmatter is a str, not a mapping"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary file, not UTF-8 text"),
        (b"---\ntitle: caf\xe9\n---\n", "not valid UTF-8 (byte 14)"),
        (b"---\nt: !custom x\n---\n", "invalid YAML: "),
    ],
)
def test_bad_frontmatter_raises_a_one_line_reason(data, reason):
    with pytest.raises(FrontmatterError) as info:
        parse_frontmatter(data)
    assert info.value.reason.startswith(reason)
    assert "\n" not in info.value.reason


def test_split_accepts_crlf_and_trailing_spaces_on_fences():
    block, body, line = split_frontmatter("--- \r\ntitle: x\r\n---\r\nbody\r\n")
    assert block == "title: x\r\n" and body == "body\r\n" and line == 4


@pytest.mark.parametrize(
    "data", [b"---\nkind: [unclosed\n---\n", b"---\nkind: concept\n", b"\x00\x01binary", b"---\nkind: caf\xe9\n---\n"]
)
def test_bad_note_frontmatter_is_a_problem_naming_the_file(tmp_path, data):
    kb = make_kb(tmp_path / "kb")
    kb.note_path("broken").write_bytes(data)
    result = run_kb_process("lint", cwd=kb.root)
    assert result.code == 1
    assert "Traceback" not in result.err
    assert any(ln.startswith("- wiki page invalid frontmatter: zh-cn/broken.md (") for ln in result.err.splitlines())


def test_bad_raw_frontmatter_is_a_problem_naming_the_file(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.add_raw("broken-source", text=b"---\ntitle: [x\n---\nbody\n")
    kb.write_index()
    result = run_kb("lint", "--root", str(kb.root))
    lines = result.err.splitlines()
    assert any(ln.startswith("- raw source invalid frontmatter: zh-cn/broken-source.md (invalid YAML") for ln in lines)


def test_raw_without_frontmatter_misses_every_field(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.add_raw("bare-source", text="just evidence\n")
    kb.write_index()
    lines = run_kb("lint", "--root", str(kb.root)).err.splitlines()
    for field in ("title", "capturedAt", "sourceType", "sourceUrl"):
        assert f"- raw source missing {field}: zh-cn/bare-source.md" in lines


def test_raw_immutable_must_be_true_where_present(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.add_raw("mutable-source", immutable="false")
    kb.add_raw("quoted-source", immutable='"true"')
    kb.add_raw("absent-source", immutable=None)
    kb.write_index()
    lines = run_kb("lint", "--root", str(kb.root)).err.splitlines()
    assert lines[1:] == [
        "- raw source invalid immutable 'False': zh-cn/mutable-source.md",
        "- raw source invalid immutable 'true': zh-cn/quoted-source.md",
    ]


def test_drafts_are_not_linted(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.note_path("_draft").write_text("no frontmatter at all\n[x](/note/nowhere)\n")
    (kb.note_root / "zh-cn" / "_wip").mkdir()
    (kb.note_root / "zh-cn" / "_wip" / "page.md").write_text("nothing\n")
    result = run_kb("lint", "--root", str(kb.root))
    assert result.code == 0, result.err
    assert "2 wiki page(s)" in result.out


def test_undecodable_bytes_after_the_frontmatter_are_tolerated():
    doc = parse_frontmatter(b"---\ntitle: x\n---\nbody \xff\x00 old capture\n")
    assert doc.fields == {"title": "x"} and "old capture" in doc.body


# -- the simple-block fast path gives what the C parser gives ---------------------------------

_TRICKY = " :#,[]{}'\"\\&*!|>%@`-?~.+/_\t\r\u2028\u0085\u00a0\ufeff\u3000é见"
# Words and the characters YAML treats specially, so that many blocks are of the simple shape
# and the rest fall near it.
_PIECES = ["a", "x1", "9", "见", "é", "2026-08-07", "a/b.c", "true", "null", "~", " ", ": ", " #", "  "]
_SCALAR = st.lists(st.sampled_from(_PIECES * 2 + list(_TRICKY)), max_size=5).map("".join)
_KEYS = st.one_of(
    st.sampled_from(["title", "sources", "a-b", "_x", "k9", "A_B"]),
    st.sampled_from(["true", "null", "No", "k" * 128, "k" * 1100]),
    _SCALAR,
)


def _quoted(q: str) -> st.SearchStrategy[str]:
    return _SCALAR.map(lambda s: q + s + q)


_ITEM = st.one_of(_SCALAR, _quoted('"'), _quoted("'"))
_FLOW = st.tuples(st.lists(_ITEM, max_size=3), st.sampled_from([", ", ",", " , "])).map(
    lambda t: "[" + t[1].join(t[0]) + "]"
)
_VALUE = st.one_of(
    _SCALAR, _quoted('"'), _quoted("'"), _FLOW, st.sampled_from(["", "[ ]", "[a, ]", "[a] b", "|", "- a"])
)
_KEY_VALUE = st.tuples(_KEYS, st.sampled_from([": ", ":", ":  ", " : "]), _VALUE).map("".join)
_ODD_LINE = st.sampled_from(["", "  - a", "- b", "# comment", "  k: v", "...", "%YAML 1.2", "\r"])
_USUAL_LINE = st.sampled_from(['title: "Note 1"', "kind: concept", "sources: [a, b]", "empty:"])


@settings(max_examples=2000, deadline=None)
@given(st.lists(_USUAL_LINE, max_size=2), st.one_of(_KEY_VALUE, _ODD_LINE), st.sampled_from(["\n", "\r\n"]))
@example([], "k: a: b", "\n")
@example([], "k: a #c", "\n")
@example([], "k: a:", "\n")
@example([], "k: a\rb", "\n")
@example(["kind: concept"], "k: [a] b", "\r\n")
def test_simple_blocks_parse_as_the_c_parser_parses_them(usual, line, newline):
    """One generated line among usual ones: wherever the fast path answers, it answers what
    the C parser does (a block it would reject or read otherwise is left to the C parser)."""
    block = newline.join([*usual, line]) + newline
    if frontmatter._needs_full_constructor(block) or not block.strip():
        return
    simple = frontmatter._simple_load(block)
    if simple is None:
        return  # not the simple shape: the C parser decides
    assert frontmatter._lean_load(block) == simple


def test_the_simple_shape_covers_the_usual_frontmatter():
    block = (
        'title: "Raw source 1"\ncapturedAt: 2026-08-07 00:00:00+00:00\nsourceType: gist\n'
        "sourceUrl: https://example.com/x?a=b#c\nimmutable: true\nsources: [\"raw-1\", 'raw-2', raw-3]\n"
        "related: []\nnote: 笔记 [draft], a:b\nempty:\n"
    )
    assert frontmatter._simple_load(block) == frontmatter._lean_load(block) != {}


_FILE_PIECES = [b"---\n", b"---", b"--- \n", b"----\n", b"\n", b"\r\n", b"a: 1\n", b"a: 1\n", b"b: [x]\n", b"body"]
_FILE_PIECES += [b"\x00", b"\xe9", b"\xef\xbb\xbf", "见".encode(), b"k: v", b": bad\n", b"\n---\n"]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_FILE_PIECES), max_size=8).map(b"".join))
@example(b"---\na: \x00\n---\nbody")
@example(b"---\na: caf\xe9\n---\nbody")
@example(b"---\na: 1\n---\nbody \xe9\x00")
def test_fields_read_from_the_block_alone_are_the_fields_of_the_whole_file(data):
    def outcome(read):
        try:
            return dict(read(data))
        except FrontmatterError as exc:
            return exc.reason

    assert outcome(frontmatter.frontmatter_fields) == outcome(lambda d: parse_frontmatter(d).fields)
