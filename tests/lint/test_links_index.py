"""Check 12 (links) and check 14 (index membership by exact target, never by substring)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from kbtools.lint import notes
from tests.testing.cli import run_kb
from tests.testing.kbfactory import make_kb


def problems(kb) -> list[str]:
    result = run_kb("lint", "--root", str(kb.root))
    return [line[2:] for line in result.err.splitlines() if line.startswith("- ")]


def test_relative_and_site_links_resolve_and_broken_ones_are_named(tmp_path):
    kb = make_kb(tmp_path / "kb")
    body = "\n".join(
        [
            "# links",
            "[ok relative](./note-1.md) [ok no suffix](note-2) [ok raw](../../raw/zh-cn/source-1.md)",
            "[ok site](/note/note-1/) [ok anchor](/note/note-2#part) [ok locale](/zh-cn/note/note-1)",
            "[external](https://example.com/x) [mail](mailto:a@example.com) [here](#top) [page](/kb)",
            "![img](./missing.png) [gone](./no-such.md) [site gone](/note/no-such-note)",
            "",
            "[ref]: ../../raw/zh-cn/nope.md",
            "`[in code](./code.md)`",
            "```",
            "[in fence](./fence.md)",
            "```",
            "[other locale](/en/note/note-1)",
        ]
    )
    kb.add_note("linker", body=body, related=["note-1", "missing-related"])
    kb.write_index()
    found = [p for p in problems(kb) if p.startswith("wiki page zh-cn/linker.md has broken link: ")]
    targets = sorted(p.rsplit(": ", 1)[1] for p in found)
    assert targets == sorted(
        [
            "./missing.png",
            "./no-such.md",
            "/note/no-such-note",
            "../../raw/zh-cn/nope.md",
            "/en/note/note-1",
            "missing-related",
        ]
    )


def test_links_in_code_and_comments_are_not_links_and_lines_are_exact(tmp_path):
    """What CommonMark (spec.commonmark.org, as markdown-it-py implements it) calls a link is
    checked; text in fenced or indented code, code spans and HTML comments is not."""
    kb = make_kb(tmp_path / "kb")
    body = "\n".join(
        [
            "# Links in code",  # body line 1
            "",
            "Run `grep '](./not-a-link.md)'` first; a [real one](./gone-1.md) is",
            "continued on a second line with [another](./gone-2.md).",
            "",
            "~~~markdown",
            "[fenced](./fenced.md)",
            "~~~",
            "",
            "    [indented](./indented.md)",
            "",
            "<!-- [commented](./commented.md) -->",
            "",
            "Inline <!-- [hidden](./hidden.md) --> comment and ``[span](./span.md)``.",
            "",
            "A [reference][r] link.",
            "",
            "[r]: ./gone-3.md",
            "[unused]: ./gone-4.md",
        ]
    )
    kb.add_note("code-links", body=body)
    kb.write_index()
    result = run_kb("lint", "--root", str(kb.root), "--format", "json")
    found = {
        (p["line"], p["message"].rsplit(": ", 1)[1])
        for p in json.loads(result.out)["problems"]
        if p["path"].endswith("code-links.md")
    }
    first = kb.note_path("code-links").read_text(encoding="utf-8").split("\n").index("# Links in code") + 1
    assert found == {
        (first + 2, "./gone-1.md"),
        (first + 3, "./gone-2.md"),
        (first + 15, "./gone-3.md"),
        (first + 18, "./gone-4.md"),
    }


def test_link_with_non_ascii_target_is_reported_as_written(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.add_note("cjk", body="# x\n\n见 [笔记](/note/不存在的笔记) 和 [文件](<./缺失 文件.md>)。\n")
    kb.write_index()
    assert sorted(p.rsplit(": ", 1)[1] for p in problems(kb) if "cjk.md has broken link" in p) == [
        "./缺失 文件.md",
        "/note/不存在的笔记",
    ]


def test_site_links_of_a_translation_fall_back_to_the_canonical_locale(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.add_note("note-1", locale="en", body="[zh](/note/note-2) [en](/en/note/note-1)", related=["note-2"])
    assert problems(kb) == []


def test_index_membership_is_exact_never_a_substring(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.add_note("java", sources=["source-1"])
    kb.add_note("java-null-value", sources=["source-1"])
    kb.write_index(skip_notes=["java"])  # lists /note/java-null-value, which contains "java"
    assert "active/provisional wiki page missing from index: zh-cn/java.md" in problems(kb)


def test_raw_slug_substring_does_not_count(tmp_path):
    kb = make_kb(tmp_path / "kb", raws=0, notes=0)
    kb.add_raw("legacy")
    kb.add_raw("legacy-java")
    kb.write_index(skip_raw=["legacy"])
    assert problems(kb) == ["raw source missing from index: legacy"]


def test_backticked_slug_and_relative_link_both_list_a_note(tmp_path):
    kb = make_kb(tmp_path / "kb", notes=0)
    kb.add_note("by-backticks")
    kb.add_note("by-relative-link")
    kb.write_index(skip_notes=["by-backticks", "by-relative-link"])
    with kb.index.open("a", encoding="utf-8") as fh:
        fh.write("- `by-backticks`\n- [rel](../../note/zh-cn/by-relative-link.md)\n")
    assert problems(kb) == []


def test_only_live_canonical_notes_must_be_listed_and_quoted_status_counts(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.add_note("old-news", status="deprecated")
    kb.add_note("translated", locale="en")
    kb.add_note("quoted-active", status='"active"')
    kb.add_note("single-quoted", status="'provisional'")
    kb.write_index(skip_notes=["quoted-active", "single-quoted"])
    assert problems(kb) == [
        "active/provisional wiki page missing from index: zh-cn/quoted-active.md",
        "active/provisional wiki page missing from index: zh-cn/single-quoted.md",
    ]


def test_raw_slugs_resolve_per_locale_with_canonical_fallback(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.add_raw("english-only", locale="en")
    kb.write_index()
    kb.add_note("cites-en-raw", sources=["english-only"])  # zh-cn note: no such zh-cn raw
    kb.add_note("cites-en-raw", locale="en", sources=["english-only", "source-1"], related=["note-1"])
    kb.write_index()
    assert problems(kb) == ["wiki page zh-cn/cites-en-raw.md references missing raw source: english-only"]


def test_enum_values_come_from_the_config(tmp_path):
    kb = make_kb(tmp_path / "kb")
    (kb.root / ".kb.yaml").write_text("enums:\n  kind: [concept, synthesis, howto]\n")
    kb.add_note("guide", kind="howto")
    kb.add_note("odd", kind="entity")
    kb.write_index()
    assert problems(kb) == ["wiki page invalid kind 'entity': zh-cn/odd.md"]


# -- plain links are read as markdown-it reads them ---------------------------------------------

_LINK_PIECES = [
    *("[", "]", "(", ")", "![", "](", "`", "``", "\n", "  \n", " ", "!", "*", "_", "\\", "<", "&amp;", '"t"'),
    *("a", "见", "./n.md", "/note/x", "#top", "javascript:x", "DATA:x", "\x7f", "\t", "\u3000"),
    *(["[x](y)", "[a\nb](./n.md)", "![i\nj](p.png)", "[](/note/x)", "` `", "[j](javascript:x)", "[d]( DATA:x)"] * 4),
    *("[e](a&amp;b)", '<a title="[h](y)">', "[f](a\x7fb)", "[g](a\\)b)"),
]
_PARAGRAPH = st.lists(st.sampled_from(_LINK_PIECES), max_size=14).map("".join)


@settings(max_examples=3000, deadline=None)
@given(_PARAGRAPH, st.integers(min_value=1, max_value=50))
def test_plain_links_are_what_markdown_it_finds(text, line):
    """Wherever the hand reader answers, it answers what markdown-it's inline parse does
    (targets and lines); otherwise it leaves the paragraph to markdown-it."""
    plain = notes.plain_links(text, line)
    if plain is not None:
        assert plain == list(notes._inline_links(notes._markdown(), {}, text, line, set()))


def test_plain_links_answer_for_the_usual_paragraph():
    text = "See [a](/note/a) and\n[the\nother](./b.md), `raw-1` and ``[not](x)`` ![img](./i.png) [c]()."
    assert notes.plain_links(text, 10) == [(10, "/note/a"), (11, "./b.md"), (12, "./i.png"), (12, "")]
