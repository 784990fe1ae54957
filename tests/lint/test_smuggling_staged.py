"""Evidence smuggled past `kb lint --staged` and the default mode (issue 18), with real git.

`--staged` judges what the commit will hold: the index (`git ls-files -s` names the blobs,
`git cat-file --batch` reads them, as git-scm.com's git-cat-file(1) documents: no filter
applies to a blob read by name). Nothing in the raw root escapes the checks by its name.
"""

from __future__ import annotations

from tests.testing.cli import run_kb
from tests.testing.gitrepo import git
from tests.testing.kbfactory import RAW_DIR, make_kb, raw_text, sha256_bytes


def lint(kb, *args: str):
    return run_kb("lint", "--root", str(kb.root), *args)


def problems(result) -> list[str]:
    return [line[2:] for line in result.err.splitlines() if line.startswith("- ")]


def test_staged_new_raw_file_is_hashed_from_the_index_not_the_work_tree(tmp_path):
    kb = make_kb(tmp_path / "kb")
    path = kb.add_raw("source-3")  # registered with the hash of these bytes
    kb.write_index()
    registered = path.read_bytes()
    path.write_bytes(registered.replace(b"Evidence captured", b"Evidence altered"))
    kb.git("add", "-A")  # the altered bytes are what the commit holds
    path.write_bytes(registered)  # ... while the work tree shows the registered ones
    assert lint(kb).code == 0  # the work tree is consistent
    found = problems(lint(kb, "--staged"))
    assert found == ["raw checksum mismatch: zh-cn/source-3.md"]


def test_staged_note_and_index_are_read_from_the_index(tmp_path):
    kb = make_kb(tmp_path / "kb")
    note = kb.note_path("note-1")
    good = note.read_text()
    note.write_text(good.replace("kind: concept\n", ""))
    kb.stage(note)
    note.write_text(good)
    assert "wiki page missing kind: zh-cn/note-1.md" in problems(lint(kb, "--staged"))
    # The staged index drops an active note; the work tree's index still lists it.
    index_text = kb.index.read_text()
    kb.write_index(skip_notes=["note-1"])
    kb.stage(kb.index)
    kb.index.write_text(index_text)
    assert "active/provisional wiki page missing from index: zh-cn/note-1.md" in problems(lint(kb, "--staged"))


def test_a_clean_filter_does_not_change_the_verdict(tmp_path):
    """A clean filter (gitattributes(5), "filter") rewrites what is staged; the registered
    hash is of the work-tree bytes, so the commit would hold unregistered bytes."""
    kb = make_kb(tmp_path / "kb")
    kb.git("config", "filter.tamper.clean", "sed s/Evidence/Forged/")
    kb.git("config", "filter.tamper.smudge", "cat")
    (kb.root / ".gitattributes").write_text(f"{RAW_DIR}/zh-cn/source-3.md filter=tamper\n")
    kb.add_raw("source-3")
    kb.write_index()
    kb.git("add", "-A")
    staged = git(kb.root, "cat-file", "-p", f":{RAW_DIR}/zh-cn/source-3.md")
    assert "Forged" in staged  # the filter ran
    assert lint(kb).code == 0  # the work tree matches its manifest line
    assert problems(lint(kb, "--staged")) == ["raw checksum mismatch: zh-cn/source-3.md"]
    # The same verdict as a fresh clone, which has no filter configured.
    kb.commit("smuggled through a filter")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(kb.root), str(clone))
    result = run_kb("lint", "--root", str(clone))
    assert "raw checksum mismatch: zh-cn/source-3.md" in problems(result)


def test_assume_unchanged_and_skip_worktree_do_not_hide_an_edit(tmp_path):
    """git-update-index(1): with these bits set, `git diff` trusts the index and does not
    look at the file; the checks must still see the edit (and its re-blessed line)."""
    for flag in ("--assume-unchanged", "--skip-worktree"):
        kb = make_kb(tmp_path / flag.strip("-"))
        path = kb.raw_path("source-1")
        kb.git("update-index", flag, f"{RAW_DIR}/zh-cn/source-1.md", f"{RAW_DIR}/.manifest.sha256")
        path.write_bytes(path.read_bytes() + b"edited\n")
        lines = kb.manifest.read_text().splitlines()
        lines[0] = f"{sha256_bytes(path.read_bytes())} zh-cn/source-1.md"
        kb.manifest.write_text("\n".join(lines) + "\n")
        assert git(kb.root, "diff", "--name-only", "HEAD") == ""  # git itself shows nothing
        found = problems(lint(kb))
        assert f"raw snapshot changed or deleted: M\t{RAW_DIR}/zh-cn/source-1.md" in found, (flag, found)
        assert any(p.startswith("raw manifest rewritten: ") for p in found), (flag, found)


def test_git_replace_does_not_hide_a_change(tmp_path):
    """git-replace(1): a replace ref shows another object in place of the real one; the
    checks read the objects the commit names (GIT_NO_REPLACE_OBJECTS)."""
    kb = make_kb(tmp_path / "kb")
    before = kb.head()
    path = kb.raw_path("source-1")
    original = path.read_bytes()
    path.write_bytes(original + b"edited\n")
    lines = kb.manifest.read_text().splitlines()
    lines[0] = f"{sha256_bytes(path.read_bytes())} zh-cn/source-1.md"
    kb.manifest.write_text("\n".join(lines) + "\n")
    edit = kb.commit("edit and re-bless")
    # Replace the edit commit by a commit whose tree is the untouched one.
    tree = git(kb.root, "rev-parse", f"{before}^{{tree}}").strip()
    fake = git(kb.root, "commit-tree", tree, "-p", before, "-m", "nothing to see").strip()
    git(kb.root, "replace", edit, fake)
    assert git(kb.root, "diff", "--name-only", before, "HEAD") == ""  # hidden from plain git
    found = problems(lint(kb, "--since", before))
    assert f"raw snapshot changed or deleted: M\t{RAW_DIR}/zh-cn/source-1.md (commit {edit[:12]})" in found


def test_names_starting_with_underscore_or_dot_are_evidence_too(tmp_path):
    kb = make_kb(tmp_path / "kb")
    outside = tmp_path / "passwd"
    outside.write_text("root:x:0:0:root:/root:/bin/sh\n")
    evil = kb.raw_root / "zh-cn" / "_evil.md"
    evil.symlink_to(outside)
    kb.register("zh-cn/_evil.md", sha=sha256_bytes(outside.read_bytes()))
    (kb.raw_root / "zh-cn" / "notes.txt").write_text("loose evidence\n")
    (kb.raw_root / "zh-cn" / "_draft.md").write_text(raw_text("draft"))
    (kb.raw_root / ".hidden").write_text("hidden\n")
    found = problems(lint(kb))
    assert any(p.startswith("invalid raw manifest entry: ") and "_evil.md (symlink leads out" in p for p in found)
    assert "raw file missing from manifest: zh-cn/notes.txt" in found
    assert "raw file missing from manifest: zh-cn/_draft.md" in found
    assert "raw file missing from manifest: .hidden" in found
    kb.git("add", "-A")
    staged = problems(lint(kb, "--staged"))
    assert "raw file missing from manifest: zh-cn/notes.txt" in staged
    assert "raw file missing from manifest: zh-cn/_draft.md" in staged
    assert any("_evil.md" in p for p in staged), staged


def test_registered_symlink_inside_the_raw_root_is_not_read(tmp_path):
    kb = make_kb(tmp_path / "kb")
    link = kb.raw_root / "zh-cn" / "alias.md"
    link.symlink_to("source-1.md")
    kb.register("zh-cn/alias.md", sha=sha256_bytes(kb.raw_path("source-1").read_bytes()))
    expected = "raw checksum mismatch: zh-cn/alias.md (not a regular file: symlink)"
    assert expected in problems(lint(kb))
    kb.git("add", "-A")
    assert expected in problems(lint(kb, "--staged"))


def test_registered_non_markdown_evidence_is_hashed(tmp_path):
    kb = make_kb(tmp_path / "kb")
    data = kb.raw_root / "zh-cn" / "table.csv"
    data.write_text("a,b\n1,2\n")
    kb.register("zh-cn/table.csv")
    assert lint(kb).code == 0
    kb.commit("csv evidence")
    data.write_text("a,b\n1,3\n")
    assert "raw checksum mismatch: zh-cn/table.csv" in problems(lint(kb))


def test_manifest_resorted_with_normalised_separators_is_not_a_rewrite(tmp_path):
    """Issue 14 item 2: the real KB re-sorted its manifest in one commit and switched to
    `sha256sum`'s two-space separator; no entry was removed and no hash changed."""
    kb = make_kb(tmp_path / "kb", raws=4)
    before = kb.head()
    entries = [line.split(" ", 1) for line in kb.manifest.read_text().splitlines()]
    kb.manifest.write_text("".join(f"{sha}  {rel}\r\n" for sha, rel in sorted(entries, key=lambda e: e[1])[::-1]))
    kb.commit("re-sort the manifest")
    assert lint(kb).code == 0
    result = lint(kb, "--since", before)
    assert result.code == 0, result.err
    # Still caught: a changed hash, and a removed entry, in the same kind of commit.
    first_sha, first_rel = entries[0]
    kb.manifest.write_text("".join(f"{sha} {rel}\n" for sha, rel in entries[2:]) + f"{'0' * 64} {first_rel}\n")
    kb.commit("drop and change entries")
    found = problems(lint(kb, "--since", before))
    assert f"raw manifest rewritten: {first_sha}  {first_rel} (commit {kb.head()[:12]})" in found
    assert any(p.startswith("raw manifest rewritten: ") and entries[1][1] in p for p in found)


def test_staged_manifest_resort_is_not_a_rewrite(tmp_path):
    kb = make_kb(tmp_path / "kb", raws=3)
    lines = kb.manifest.read_text().splitlines()
    kb.manifest.write_text("\n".join(sorted(lines, reverse=True)) + "\n")
    kb.stage(kb.manifest)
    result = lint(kb, "--staged")
    assert result.code == 0, result.err
