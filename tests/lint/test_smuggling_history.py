"""Evidence smuggled past the history modes (issue 18; issue 14 item 8), with real git.

A shallow clone (git-clone(1) ``--depth``) cuts history: git shows the boundary commit as
if it were a root, so a range that reaches it cannot be judged. A rewritten history (an
orphan branch, ``git commit --amend`` then a force-push) is compared with the revision it
replaced. Where evidence lives (the raw root, ``paths.raw`` in ``.kb.yaml``) is evidence too:
a submodule (git-submodule(1), a gitlink of mode 160000), a symlink, or a moved root.
"""

from __future__ import annotations

import shutil

from tests.testing.cli import run_kb
from tests.testing.gitrepo import git
from tests.testing.kbfactory import MANIFEST, RAW_DIR, make_kb, sha256_bytes
from tests.testing.secrets import make_secret

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's empty tree (git hash-object -t tree /dev/null)


def lint(root, *args: str):
    return run_kb("lint", "--root", str(root), *args)


def problems(result) -> list[str]:
    return [line[2:] for line in result.err.splitlines() if line.startswith("- ")]


def edit_and_rebless(kb, slug: str = "source-1") -> str:
    """Edit a raw file and re-bless its manifest line in place; the expected check-6 message stem."""
    path = kb.raw_path(slug)
    path.write_bytes(path.read_bytes() + b"edited\n")
    rel = f"{kb.raw[slug]}/{slug}.md"
    lines = kb.manifest.read_text().splitlines()
    kb.manifest.write_text(
        "".join((f"{sha256_bytes(path.read_bytes())} {rel}" if ln.endswith(" " + rel) else ln) + "\n" for ln in lines)
    )
    return f"raw snapshot changed or deleted: M\t{RAW_DIR}/{rel}"


def test_since_across_a_shallow_boundary_is_an_error_not_a_pass(tmp_path):
    kb = make_kb(tmp_path / "kb")
    base = kb.head()
    edit_and_rebless(kb)
    edit = kb.commit("edit and re-bless")
    kb.append_log("2026-08-09", "lint", "later")
    kb.commit("later")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "2", f"file://{kb.root}", str(shallow))
    assert git(shallow, "rev-parse", "--is-shallow-repository").strip() == "true"
    # The boundary (the edit commit) looks like a root commit to git: every file "added".
    result = lint(shallow, "--all-history")
    assert result.code == 2, result.err
    assert result.err.startswith(f"kb: error: history is shallow: commit {edit[:12]} ")
    result = lint(shallow, "--since", base)  # the base is beyond the boundary: not in the clone
    assert result.code == 2
    assert "history is shallow" in result.err and "fetch-depth: 0" in result.err
    # Deep enough to hold the whole range: judged as usual, the edit is caught.
    deeper = tmp_path / "deeper"
    git(tmp_path, "clone", "-q", "--depth", "3", f"file://{kb.root}", str(deeper))
    found = problems(lint(deeper, "--since", base))
    assert any(p.startswith("raw snapshot changed or deleted: M") and edit[:12] in p for p in found), found


def test_orphan_branch_rewritten_from_the_root_is_compared_with_rev(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.git("checkout", "-q", "--orphan", "rewritten")
    expected = edit_and_rebless(kb)
    kb.commit("a fresh root with the edited evidence")
    assert lint(kb.root, "--since", "main").code == 1
    found = problems(lint(kb.root, "--since", "main"))
    label = " (history rewritten: main is not an ancestor of HEAD)"
    assert f"{expected}{label}" in found, found
    assert any(p.startswith("raw manifest rewritten: ") and p.endswith(label) for p in found)


def test_rewrite_from_the_root_that_drops_evidence_is_a_finding(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.git("checkout", "-q", "--orphan", "rewritten")
    lines = kb.manifest.read_text().splitlines()
    kb.manifest.write_text(lines[1] + "\n")
    kb.raw_path("source-1").unlink()
    kb.raw.pop("source-1")
    kb.write_index()
    kb.commit("history without source-1")
    found = problems(lint(kb.root, "--since", "main"))
    label = " (history rewritten: main is not an ancestor of HEAD)"
    assert f"raw snapshot changed or deleted: D\t{RAW_DIR}/zh-cn/source-1.md{label}" in found, found
    assert f"raw manifest rewritten: {lines[0]}{label}" in found


def test_amended_evidence_after_a_force_push_is_caught(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.add_raw("source-3")
    kb.write_index()
    pushed = kb.commit("ingest source 3")
    # Rewrite that commit: other bytes for source-3, registered with their hash.
    kb.git("reset", "-q", "--hard", "HEAD~1")
    kb.add_raw("source-3", body="# source-3\n\nSomething else entirely.\n")
    kb.write_index()
    kb.commit("ingest source 3 (amended)")
    found = problems(lint(kb.root, "--since", pushed))
    label = f" (history rewritten: {pushed} is not an ancestor of HEAD)"
    assert f"raw snapshot changed or deleted: M\t{RAW_DIR}/zh-cn/source-3.md{label}" in found, found
    assert any(p.startswith("raw manifest rewritten: ") and "source-3" in p and p.endswith(label) for p in found)


def test_a_branch_behind_rev_is_not_a_rewrite(tmp_path):
    """REV moved on (new evidence on main) since the branch left it: nothing was dropped."""
    kb = make_kb(tmp_path / "kb")
    kb.git("checkout", "-q", "-b", "topic")
    kb.git("checkout", "-q", "main")
    kb.add_raw("source-3")
    kb.write_index()
    kb.append_log("2026-08-09", "ingest", "source 3")
    kb.commit("main gains evidence")
    kb.git("checkout", "-q", "topic")
    result = lint(kb.root, "--since", "main")
    assert result.code == 0, result.err


def test_all_history_scans_the_root_commit_for_secrets(tmp_path):
    kb = make_kb(tmp_path / "kb", commit=False)
    token = make_secret("github-classic", 7)
    kb.add_note("leaky", body=f"# leaky\n\nexport GH_TOKEN={token}\n")
    kb.write_index()
    kb.commit("adopt an old KB")
    expected = "secret in src/content/note/zh-cn/leaky.md:11 (github-token)"
    assert expected not in problems(lint(kb.root))  # nothing changed since HEAD
    for args in (("--all-history",), ("--since", EMPTY_TREE)):
        found = problems(lint(kb.root, *args))
        assert any(p.startswith("secret in src/content/note/zh-cn/leaky.md:") for p in found), (args, found)
        assert not any(token in p for p in found)


def test_all_history_catches_an_old_reblessed_edit(tmp_path):
    kb = make_kb(tmp_path / "kb")
    expected = edit_and_rebless(kb)
    edit = kb.commit("edit and re-bless")
    found = problems(lint(kb.root, "--all-history"))
    assert f"{expected} (commit {edit[:12]})" in found
    assert lint(kb.root, "--all-history", "--only", "raw").code == 1


def test_raw_root_as_a_submodule_is_a_finding(tmp_path):
    kb = make_kb(tmp_path / "kb")
    before = kb.head()
    evidence = tmp_path / "evidence"
    shutil.copytree(kb.raw_root, evidence)
    git(evidence, "init", "-q", "-b", "main")
    git(evidence, "add", "-A")
    git(evidence, "commit", "-q", "-m", "evidence")
    kb.git("rm", "-q", "-r", RAW_DIR)
    kb.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(evidence), RAW_DIR)
    kb.commit("raw evidence in a submodule")
    # Edit and re-bless inside the submodule, then bump the gitlink.
    sub = kb.raw_root
    page = sub / "zh-cn" / "source-1.md"
    page.write_bytes(page.read_bytes() + b"edited\n")
    lines = (sub / ".manifest.sha256").read_text().splitlines()
    lines[0] = f"{sha256_bytes(page.read_bytes())} zh-cn/source-1.md"
    (sub / ".manifest.sha256").write_text("\n".join(lines) + "\n")
    git(sub, "commit", "-q", "-am", "edit and re-bless")
    kb.git("add", RAW_DIR)
    expected = f"raw root is not a folder of this repository: {RAW_DIR} is a git submodule"
    assert any(p.startswith(expected) for p in problems(lint(kb.root, "--staged")))
    bump = kb.commit("bump the evidence")
    assert any(p.startswith(expected) for p in problems(lint(kb.root)))
    found = problems(lint(kb.root, "--since", before))
    assert f"raw snapshot changed or deleted: M\t{RAW_DIR} (commit {bump[:12]})" in found, found
    assert (
        f"raw snapshot changed or deleted: D\t{MANIFEST} (commit {kb.git('rev-parse', 'HEAD~1').strip()[:12]})" in found
    )


def test_raw_root_moved_through_kb_yaml_is_a_finding(tmp_path):
    kb = make_kb(tmp_path / "kb")
    before = kb.head()
    copy = kb.root / "evidence" / "raw"
    shutil.copytree(kb.raw_root, copy)
    page = copy / "zh-cn" / "source-1.md"
    page.write_bytes(page.read_bytes() + b"edited\n")
    lines = (copy / ".manifest.sha256").read_text().splitlines()
    lines[0] = f"{sha256_bytes(page.read_bytes())} zh-cn/source-1.md"
    (copy / ".manifest.sha256").write_text("\n".join(lines) + "\n")
    (kb.root / ".kb.yaml").write_text("paths:\n  raw: evidence/raw\n  raw_manifest: evidence/raw/.manifest.sha256\n")
    shutil.rmtree(kb.raw_root)
    kb.git("add", "-A")
    moved = "raw root moved: paths.raw 'src/content/raw' -> 'evidence/raw' in .kb.yaml"
    assert moved in problems(lint(kb.root, "--staged"))
    commit = kb.commit("move the evidence")
    found = problems(lint(kb.root, "--since", before))
    assert f"{moved} (commit {commit[:12]})" in found, found
    assert any(p.startswith("raw root moved: paths.raw_manifest ") for p in found)


def test_a_new_kb_yaml_on_a_fresh_kb_is_not_a_move(tmp_path):
    kb = make_kb(tmp_path / "kb")
    before = kb.head()
    (kb.root / ".kb.yaml").write_text("canonical_locale: zh-cn\n")
    kb.commit("configure")
    result = lint(kb.root, "--since", before)
    assert result.code == 0, result.err


def test_raw_root_as_a_symlink_out_of_the_repository_is_a_finding(tmp_path):
    kb = make_kb(tmp_path / "kb")
    before = kb.head()
    outside = tmp_path / "outside-raw"
    shutil.move(str(kb.raw_root), outside)
    kb.raw_root.symlink_to(outside, target_is_directory=True)
    expected = f"raw root is not a folder of this repository: {RAW_DIR} is a symlink to a folder outside"
    result = lint(kb.root)
    assert result.code == 1
    assert any(p.startswith(expected) for p in problems(result)), result.err
    kb.git("add", "-A")
    assert any(
        p.startswith(f"raw root is not a folder of this repository: {RAW_DIR} is a symlink")
        for p in problems(lint(kb.root, "--staged"))
    )
    commit = kb.commit("evidence elsewhere")
    found = problems(lint(kb.root, "--since", before))
    assert f"raw snapshot changed or deleted: A\t{RAW_DIR} (commit {commit[:12]})" in found, found
