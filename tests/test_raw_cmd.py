from __future__ import annotations

import datetime as dt
import hashlib
import os

import pytest
from ruamel.yaml import YAML

from kbtools.kb.raw_add import slug_from_filename
from tests.testing.cli import run_kb
from tests.testing.kbfactory import MANIFEST, make_kb


def _frontmatter(path):
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return YAML(typ="safe").load(text[4 : text.index("\n---", 3)])


def _manifest_lines(root):
    return (root / MANIFEST).read_text(encoding="utf-8").splitlines()


@pytest.fixture
def kb(tmp_path):
    """A clean, committed KB whose canonical locale is en."""
    return make_kb(tmp_path / "kb", locale="en")


def test_raw_add_copies_markdown_completes_frontmatter_and_appends_its_manifest_line(kb, tmp_path):
    source = tmp_path / "Design Notes_v2.md"
    source.write_text("# Loader choice\n\nMeasured 0.17 ms per frontmatter.\n", encoding="utf-8")
    before = _manifest_lines(kb.root)
    result = run_kb("raw", "add", str(source), cwd=kb.root)
    assert result.code == 0, result.err
    raw = kb.root / "src/content/raw/en/design-notes-v2.md"
    assert (
        f"added src/content/raw/en/design-notes-v2.md (sha256 {hashlib.sha256(raw.read_bytes()).hexdigest()}"
        in result.out
    )
    fields = _frontmatter(raw)
    assert fields["title"] == "Loader choice"
    assert fields["sourceType"] == "file" and fields["sourceUrl"] == "file:Design Notes_v2.md"
    assert fields["immutable"] is True
    captured = fields["capturedAt"]
    assert abs((dt.datetime.now(dt.UTC) - captured.replace(tzinfo=dt.UTC)).total_seconds()) < 60
    assert raw.read_bytes().endswith(source.read_bytes())  # the evidence body is kept byte for byte
    after = _manifest_lines(kb.root)
    assert after[: len(before)] == before  # existing lines untouched
    assert after[len(before) :] == [f"{hashlib.sha256(raw.read_bytes()).hexdigest()} en/design-notes-v2.md"]


def test_raw_add_adds_only_missing_fields_and_keeps_existing_lines_byte_identical(kb, tmp_path):
    head = '---\ntitle: "Original: title"\nsourceType: gist\ntags: [a, b]\n---\n'
    source = tmp_path / "given.md"
    source.write_text(head + "body text\n", encoding="utf-8")
    assert run_kb("raw", "add", str(source), "--source-url", "https://example.org/g", cwd=kb.root).code == 0
    text = (kb.root / "src/content/raw/en/given.md").read_text(encoding="utf-8")
    assert text.startswith('---\ntitle: "Original: title"\nsourceType: gist\ntags: [a, b]\ncapturedAt: ')
    assert text.endswith("---\nbody text\n")
    fields = _frontmatter(kb.root / "src/content/raw/en/given.md")
    assert fields["sourceUrl"] == "https://example.org/g" and fields["title"] == "Original: title"


def test_raw_add_wraps_text_in_a_fence_no_backtick_run_inside_can_close(kb, tmp_path):
    body = "line one\n```` four backticks\n```\nlast line"
    source = tmp_path / "session.log"
    source.write_text(body, encoding="utf-8")
    result = run_kb("raw", "add", str(source), cwd=kb.root)
    assert result.code == 0 and "wrapped in a fenced block" in result.out
    text = (kb.root / "src/content/raw/en/session.md").read_text(encoding="utf-8")
    assert f"\n`````log\n{body}\n`````\n" in text
    assert _frontmatter(kb.root / "src/content/raw/en/session.md")["title"] == "session.log"


def test_raw_add_refuses_binary_input(kb, tmp_path):
    source = tmp_path / "image.md"
    source.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    result = run_kb("raw", "add", str(source), cwd=kb.root)
    assert result.code == 2 and "binary file refused" in result.err
    assert not (kb.root / "src/content/raw/en/image.md").exists()


def test_raw_add_never_overwrites_a_raw_file_or_reuses_a_slug_of_another_locale(kb, tmp_path):
    kb.add_raw("shared-slug", locale="fr")
    before = (kb.root / MANIFEST).read_bytes()
    source = tmp_path / "shared-slug.md"
    source.write_text("# new\n", encoding="utf-8")
    result = run_kb("raw", "add", str(source), cwd=kb.root)
    assert result.code == 2 and "raw slug 'shared-slug' already exists" in result.err
    assert not (kb.root / "src/content/raw/en/shared-slug.md").exists()
    existing = tmp_path / "source-1.md"
    existing.write_text("# again\n", encoding="utf-8")
    assert run_kb("raw", "add", str(existing), cwd=kb.root).code == 2
    assert (kb.root / MANIFEST).read_bytes() == before


def test_raw_add_never_reuses_a_path_the_manifest_already_names(kb, tmp_path):
    kb.register("en/ghost.md", sha="a" * 64)
    source = tmp_path / "ghost.md"
    source.write_text("# ghost\n", encoding="utf-8")
    result = run_kb("raw", "add", str(source), cwd=kb.root)
    assert result.code == 2 and "manifest already has a line for en/ghost.md" in result.err
    assert not (kb.root / "src/content/raw/en/ghost.md").exists()


def test_raw_add_checks_every_file_before_writing_any(kb, tmp_path):
    good = tmp_path / "good.md"
    good.write_text("# good\n", encoding="utf-8")
    twin = tmp_path / "sub" / "good.txt"
    twin.parent.mkdir()
    twin.write_text("same slug\n", encoding="utf-8")
    result = run_kb("raw", "add", str(good), str(twin), cwd=kb.root)
    assert result.code == 2 and "raw slug 'good' already exists" in result.err
    assert not (kb.root / "src/content/raw/en/good.md").exists()


def test_raw_add_refuses_evidence_that_declares_itself_mutable(kb, tmp_path):
    source = tmp_path / "mutable.md"
    source.write_text("---\ntitle: x\nimmutable: false\n---\nbody\n", encoding="utf-8")
    result = run_kb("raw", "add", str(source), cwd=kb.root)
    assert result.code == 2 and "immutable" in result.err


def test_raw_add_creates_the_manifest_and_locale_folder_when_missing(tmp_path):
    kb = make_kb(tmp_path / "kb", locale="en", raws=0, notes=0)
    (kb.root / MANIFEST).unlink()
    source = tmp_path / "first.md"
    source.write_text("# first\n", encoding="utf-8")
    result = run_kb("raw", "add", str(source), "--locale", "pt-br", "--slug", "first-evidence", cwd=kb.root)
    assert result.code == 0, result.err
    raw = kb.root / "src/content/raw/pt-br/first-evidence.md"
    assert _manifest_lines(kb.root) == [f"{hashlib.sha256(raw.read_bytes()).hexdigest()} pt-br/first-evidence.md"]


@pytest.mark.parametrize(
    ("args", "stem"),
    [
        (("--slug", "Bad_Slug"), "invalid slug 'Bad_Slug'"),
        (("--locale", "../up"), "invalid locale '../up'"),
    ],
)
def test_raw_add_rejects_bad_slug_and_locale(kb, tmp_path, args, stem):
    source = tmp_path / "x.md"
    source.write_text("# x\n", encoding="utf-8")
    result = run_kb("raw", "add", str(source), *args, cwd=kb.root)
    assert result.code == 2 and stem in result.err


def test_slug_option_names_one_file_only(kb, tmp_path):
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    a.write_text("# a\n"), b.write_text("# b\n")
    result = run_kb("raw", "add", str(a), str(b), "--slug", "ab", cwd=kb.root)
    assert result.code == 2 and "--slug names one file" in result.err


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("Design Notes_v2.md", "design-notes-v2"),
        ("2026-08-07 meeting.TXT", "2026-08-07-meeting"),
        ("already-kebab.md", "already-kebab"),
        ("--weird--.md", "weird"),
        ("no_extension", "no-extension"),
        ("日本語.md", ""),
    ],
)
def test_slug_from_filename_is_lowercase_kebab_case(name, slug):
    assert slug_from_filename(name) == slug


def test_added_evidence_lints_clean_once_listed_in_the_index(kb, tmp_path):
    source = tmp_path / "new-evidence.md"
    source.write_text("# New evidence\n\nA fact.\n", encoding="utf-8")
    assert run_kb("raw", "add", str(source), cwd=kb.root).code == 0
    missing = run_kb("lint", cwd=kb.root)
    assert missing.code == 1 and "raw source missing from index: new-evidence" in missing.err
    kb.raw["new-evidence"] = "en"
    kb.write_index()
    kb.append_log("2026-08-09", "ingest", "New evidence")
    assert run_kb("lint", cwd=kb.root).code == 0
    kb.commit("ingest new evidence")
    assert run_kb("lint", "--since", "HEAD~1", cwd=kb.root).code == 0


def test_raw_add_works_from_a_subfolder_of_the_kb(kb, tmp_path):
    source = tmp_path / "deep.md"
    source.write_text("# deep\n", encoding="utf-8")
    result = run_kb("raw", "add", str(source), cwd=kb.root / "src/content/note")
    assert result.code == 0, result.err
    assert (kb.root / "src/content/raw/en/deep.md").is_file()


def test_raw_verify_passes_a_clean_kb_and_fails_a_tampered_file(kb):
    clean = run_kb("raw", "verify", cwd=kb.root)
    assert clean.code == 0, clean.err
    raw = kb.raw_path("source-1")
    raw.write_bytes(raw.read_bytes() + b"tampered\n")
    tampered = run_kb("raw", "verify", cwd=kb.root)
    assert tampered.code == 1
    assert "- raw checksum mismatch: en/source-1.md" in tampered.err


def test_raw_verify_needs_no_git(tmp_path):
    kb = make_kb(tmp_path / "export", locale="en", git=False)
    assert run_kb("raw", "verify", "--root", str(kb.root)).code == 0
    os.remove(kb.raw_path("source-2"))
    result = run_kb("raw", "verify", "--root", str(kb.root), "--format", "json")
    assert result.code == 1
    assert "manifest points to missing raw file: en/source-2.md" in result.out


def test_raw_add_registers_a_file_copied_into_the_raw_layer_by_hand(kb):
    copied = kb.root / "src/content/raw/en/dropped-in.md"
    copied.write_text("# Dropped in\n\nCopied here without the tool.\n", encoding="utf-8")
    assert "raw file missing from manifest: en/dropped-in.md" in run_kb("lint", cwd=kb.root).err
    result = run_kb("raw", "add", str(copied), cwd=kb.root)
    assert result.code == 0 and result.out.startswith("registered src/content/raw/en/dropped-in.md"), result.err
    assert _frontmatter(copied)["title"] == "Dropped in"
    assert _manifest_lines(kb.root)[-1] == f"{hashlib.sha256(copied.read_bytes()).hexdigest()} en/dropped-in.md"
    again = run_kb("raw", "add", str(copied), cwd=kb.root)
    assert again.code == 2 and "already in the raw layer and registered" in again.err


def test_raw_add_of_a_missing_file_or_a_folder_is_a_one_line_error(kb, tmp_path):
    missing = run_kb("raw", "add", str(tmp_path / "nope.md"), cwd=kb.root)
    assert missing.code == 2 and missing.err == f"kb: error: no such file ({tmp_path / 'nope.md'})\n"
    folder = tmp_path / "notes"
    folder.mkdir()
    result = run_kb("raw", "add", str(folder), cwd=kb.root)
    assert result.code == 2 and result.err == f"kb: error: is a folder; give the evidence files themselves ({folder})\n"


def test_raw_add_of_several_files_appends_one_line_each_in_order(kb, tmp_path):
    sources = []
    for n in range(5):
        source = tmp_path / f"note-{n}.md"
        source.write_text(f"# Note {n}\n\nevidence {n}\n", encoding="utf-8")
        sources.append(str(source))
    before = _manifest_lines(kb.root)
    result = run_kb("raw", "add", *sources, cwd=kb.root)
    assert result.code == 0, result.err
    raws = [kb.root / f"src/content/raw/en/note-{n}.md" for n in range(5)]
    assert _manifest_lines(kb.root) == before + [
        f"{hashlib.sha256(raw.read_bytes()).hexdigest()} en/{raw.name}" for raw in raws
    ]
    # A second call with one of them again names the taken slug and adds nothing.
    again = run_kb("raw", "add", sources[2], cwd=kb.root)
    assert again.code == 2 and "note-2" in again.err
    assert len(_manifest_lines(kb.root)) == len(before) + 5
