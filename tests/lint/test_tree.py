"""Finding raw sources and notes: sorted, drafts and hidden files skipped, slugs per locale."""

from __future__ import annotations

from kbtools.kb.tree import scan_layer
from tests.testing.gitrepo import write


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
