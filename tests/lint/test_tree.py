"""Finding raw sources and notes: sorted, drafts and hidden files skipped, slugs per locale."""

from __future__ import annotations

from pathlib import Path

from kbtools.kb.tree import layer_entry, layer_path, scan_layer
from tests.testing.gitrepo import write
from tests.testing.kbfactory import make_kb


def test_scan_names_files_by_locale_and_slug_in_path_order(tmp_path):
    for rel in (
        "zh-cn/b.md",
        "zh-cn/a.md",
        "en/a.md",
        "zh-cn/series/part-1.md",
        "top.md",
        "zh-cn/_draft.md",
        "_drafts/x.md",
        ".hidden/x.md",
        "zh-cn/.x.md",
        "zh-cn/image.png",
    ):
        write(tmp_path / rel, "x\n")
    layer = scan_layer(tmp_path)
    assert [(f.rel, f.locale, f.slug) for f in layer.files] == [
        ("en/a.md", "en", "a"),
        ("top.md", "", "top"),
        ("zh-cn/a.md", "zh-cn", "a"),
        ("zh-cn/b.md", "zh-cn", "b"),
        ("zh-cn/series/part-1.md", "zh-cn", "series/part-1"),
    ]
    assert layer.by_locale()["zh-cn"]["series/part-1"].rel == "zh-cn/series/part-1.md"


def test_symlinked_folders_are_listed_as_symlinks_not_entered(tmp_path):
    outside = tmp_path / "outside"
    write(outside / "secret.md", "x\n")
    layer_root = tmp_path / "raw"
    write(layer_root / "zh-cn" / "a.md", "x\n")
    (layer_root / "zh-cn" / "linked").symlink_to(outside)
    (layer_root / "zh-cn" / "file-link.md").symlink_to(outside / "secret.md")
    layer = scan_layer(layer_root)
    assert [f.rel for f in layer.files] == ["zh-cn/a.md", "zh-cn/file-link.md"]
    assert layer.symlinks == {"zh-cn/linked", "zh-cn/file-link.md"}


def test_missing_layer_is_empty(tmp_path):
    assert scan_layer(tmp_path / "nope").files == ()


# -- one definition of notes and slugs (issue 16) --------------------------------------------


def _tree_with_drafts(root: Path) -> None:
    for rel in (
        "zh-cn/kept.md",
        "zh-cn/sub/nested.md",
        "zh-cn/_draft.md",
        "zh-cn/_drafts/inside.md",
        "zh-cn/.hidden.md",
        ".obsidian/x.md",
        "top.md",
        "zh-cn/notes.txt",
    ):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("---\ntitle: kept words here\n---\n\nkept words here for the index\n")


def test_layer_entry_is_the_rule_scan_layer_applies(tmp_path):
    _tree_with_drafts(tmp_path)
    every = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    by_rule = {rel: layer_entry(rel) for rel in every}
    scanned = {f.rel: (f.locale, f.slug) for f in scan_layer(tmp_path).files}
    assert scanned == {rel: entry for rel, entry in by_rule.items() if entry is not None}
    assert scanned == {
        "top.md": ("", "top"),
        "zh-cn/kept.md": ("zh-cn", "kept"),
        "zh-cn/sub/nested.md": ("zh-cn", "sub/nested"),
    }
    assert layer_path(tmp_path, "zh-cn", "sub/nested") == tmp_path / "zh-cn/sub/nested.md"


def test_derived_filter_ingest_and_retention_see_the_notes_lint_sees(tmp_path):
    from kbtools.config import load_config
    from kbtools.derived.artifacts import current_artifact_files, is_artifact_path
    from kbtools.ingest.candidates import NoteIndex
    from kbtools.kb.layout import Layout

    kb = make_kb(tmp_path / "kb", notes=0)
    _tree_with_drafts(kb.note_root)
    layout = Layout(load_config(kb.root))
    lint_notes = {f.abspath for f in scan_layer(layout.note_root).files}
    assert {str(p) for p in current_artifact_files(layout)} == lint_notes, "the derived filter counted a draft"
    assert is_artifact_path(layout, "src/content/note/zh-cn/kept.md")
    assert not is_artifact_path(layout, "src/content/note/zh-cn/_draft.md")
    slugs = {s for found in NoteIndex.load(layout.note_root).by_keyword.values() for s in found}
    assert slugs == {"kept", "sub/nested", "top"}


def test_kb_layer_does_not_import_lint_or_cli():
    """kbtools/kb is the model; lint and the CLI are built on it, never the other way round."""
    import ast

    package = Path(__file__).resolve().parents[2] / "kbtools" / "kb"
    offenders = []
    for module in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            offenders += [f"{module.name}: {n}" for n in names if n.startswith(("kbtools.lint", "kbtools.cli"))]
    assert offenders == []
