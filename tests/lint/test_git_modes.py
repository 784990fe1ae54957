"""Checks 6, 7 and 15 in the three git modes, against real git in temporary repositories."""

from __future__ import annotations

from tests.testing.cli import run_kb, run_kb_process
from tests.testing.gitrepo import git
from tests.testing.kbfactory import BREAKERS, MANIFEST, RAW_DIR, make_kb, sha256_bytes


def lint(kb, *args: str):
    return run_kb("lint", "--root", str(kb.root), *args)


def problems(result) -> list[str]:
    return [line[2:] for line in result.err.splitlines() if line.startswith("- ")]


def test_raw_edit_committed_with_reblessed_manifest_fails_since(tmp_path):
    kb = make_kb(tmp_path / "kb")
    before = kb.head()
    expected = BREAKERS[6](kb)  # edit + re-bless the manifest line in place
    commit = kb.commit("edit evidence and re-bless it")
    assert lint(kb).code == 0  # HEAD alone looks consistent: the checksum matches
    result = lint(kb, "--since", before)
    assert result.code == 1
    found = problems(result)
    assert f"{expected} (commit {commit[:12]})" in found
    assert any(p.startswith("raw manifest rewritten: ") for p in found)


def test_removed_manifest_line_fails_since_and_staged(tmp_path):
    kb = make_kb(tmp_path / "kb")
    before = kb.head()
    lines = kb.manifest.read_text().splitlines()
    kb.manifest.write_text(lines[1] + "\n")
    kb.raw_path("source-1").unlink()
    kb.stage(kb.manifest, kb.raw_path("source-1"))
    staged = lint(kb, "--staged")
    assert f"raw manifest rewritten: {lines[0]}" in problems(staged)
    assert f"raw snapshot changed or deleted: D\t{RAW_DIR}/zh-cn/source-1.md" in problems(staged)
    kb.commit("drop evidence")
    assert f"raw manifest rewritten: {lines[0]} (commit {kb.head()[:12]})" in problems(lint(kb, "--since", before))


def test_rewritten_manifest_line_is_named(tmp_path):
    kb = make_kb(tmp_path / "kb")
    lines = kb.manifest.read_text().splitlines()
    kb.manifest.write_text(lines[0].replace(lines[0][:64], "f" * 64) + "\n" + lines[1] + "\n")
    found = problems(lint(kb))
    assert f"raw manifest rewritten: {lines[0]}" in found


def test_inserting_a_manifest_line_in_the_middle_is_not_a_rewrite(tmp_path):
    """Append-only means no entry (path -> hash) removed or changed; where a new line
    sits is not evidence (issue 14, item 2: a re-sorted manifest is not a rewrite)."""
    kb = make_kb(tmp_path / "kb")
    lines = kb.manifest.read_text().splitlines()
    path = kb.add_raw("source-3", register=False)
    kb.manifest.write_text(lines[0] + "\n" + f"{sha256_bytes(path.read_bytes())} zh-cn/source-3.md\n" + lines[1] + "\n")
    kb.write_index()
    assert problems(lint(kb)) == []


def test_adding_a_raw_file_with_its_line_passes_every_mode(tmp_path):
    kb = make_kb(tmp_path / "kb")
    before = kb.head()
    kb.add_raw("source-3")
    kb.write_index()
    kb.append_log("2026-08-09", "ingest", "source 3")
    assert lint(kb).code == 0
    kb.git("add", "-A")
    assert lint(kb, "--staged").code == 0
    kb.commit("ingest source 3")
    result = lint(kb, "--since", before)
    assert result.code == 0, result.err


def test_staged_mode_sees_the_index_not_the_work_tree(tmp_path):
    kb = make_kb(tmp_path / "kb")
    path = kb.raw_path("source-2")
    path.write_bytes(path.read_bytes() + b"tampered\n")
    # Not staged: the hook judges what is being committed.
    assert not any(p.startswith("raw snapshot") for p in problems(lint(kb, "--staged")))
    kb.stage(path)
    assert f"raw snapshot changed or deleted: M\t{RAW_DIR}/zh-cn/source-2.md" in problems(lint(kb, "--staged"))


def test_renamed_raw_file_is_reported(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.git("mv", f"{RAW_DIR}/zh-cn/source-1.md", f"{RAW_DIR}/zh-cn/source-1b.md")
    found = problems(lint(kb, "--staged"))
    assert any(p.startswith("raw snapshot changed or deleted: R") and "source-1.md\t" in p for p in found), found


def test_deleted_manifest_is_reported_as_a_deleted_snapshot(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.manifest.unlink()
    found = problems(lint(kb))
    assert f"missing raw manifest: {MANIFEST}" in found
    assert f"raw snapshot changed or deleted: D\t{MANIFEST}" in found


def test_log_history_rewrite_fails_in_work_tree_and_since(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.append_log("2026-08-08", "ingest", "second")
    kb.commit("log")
    before = kb.head()
    text = kb.log.read_text()
    kb.log.write_text(text.replace("Entry text.", "Rewritten text.", 1))
    expected = "kb-log.md history rewritten: ## [2026-08-07] init | knowledge base"
    assert expected in problems(lint(kb))
    commit = kb.commit("rewrite history")
    assert f"{expected} (commit {commit[:12]})" in problems(lint(kb, "--since", before))


def test_appending_log_entries_passes_and_out_of_order_dates_fail(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.append_log("2026-08-07", "lint", "same day is fine")
    kb.append_log("2026-08-09", "ingest", "later")
    assert lint(kb).code == 0
    kb.append_log("2026-08-08", "ingest", "earlier")
    assert problems(lint(kb)) == ["kb-log.md entry out of order: ## [2026-08-08] ingest | earlier"]


def test_log_without_dated_entry(tmp_path):
    kb = make_kb(tmp_path / "kb", git=False)
    kb.log.write_text("# Log\n\n## Not dated\n\n## [2026-8-7] bad date\n")
    assert problems(lint(kb)) == ["kb-log.md has no parseable dated entry"]


def test_fresh_repository_without_head_compares_against_nothing(tmp_path):
    kb = make_kb(tmp_path / "kb", commit=False)
    assert lint(kb).code == 0
    kb.git("add", "-A")
    result = lint(kb, "--staged")
    assert result.code == 0, result.err


def test_unknown_since_revision_is_a_one_line_error(tmp_path):
    kb = make_kb(tmp_path / "kb")
    result = lint(kb, "--since", "no-such-rev")
    assert result.code == 2
    assert result.err == "kb: error: unknown revision 'no-such-rev' (--since)\n"


def test_outside_git_one_notice_and_no_git_noise(tmp_path):
    kb = make_kb(tmp_path / "kb", git=False)
    for args in ((), ("--staged",)):
        result = run_kb_process("lint", *args, cwd=kb.root)
        assert result.code == 0, result.err
        assert result.out.startswith("KB lint passed: 2 raw source(s), 2 wiki page(s)")
        assert result.err.splitlines() == ["kb lint: git checks skipped (not a git work tree)"]


def test_git_missing_one_notice(tmp_path):
    kb = make_kb(tmp_path / "kb")
    empty = tmp_path / "bin"
    empty.mkdir()
    result = run_kb_process("lint", cwd=kb.root, env={"PATH": str(empty)})
    assert result.code == 0, result.err
    assert result.err.splitlines() == ["kb lint: git checks skipped (git is not installed)"]


def test_content_checks_still_run_outside_git(tmp_path):
    kb = make_kb(tmp_path / "kb", git=False)
    expected = BREAKERS[4](kb)
    result = run_kb_process("lint", cwd=kb.root)
    assert result.code == 1
    assert f"- {expected}" in result.err.splitlines()
    assert "fatal" not in result.err and "usage: git" not in result.err


def test_staged_note_deletion_checks_links_of_unchanged_notes(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.git("rm", "-q", "src/content/note/zh-cn/note-2.md")
    del kb.notes["note-2"]
    kb.write_index()
    kb.stage(kb.index)
    found = problems(lint(kb, "--staged"))
    assert "wiki page zh-cn/note-1.md has broken link: note-2" in found
    assert "wiki page zh-cn/note-1.md has broken link: /note/note-2" in found


def test_staged_index_dropping_an_unchanged_active_note_is_caught(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.write_index(skip_notes=["note-1"])
    kb.stage(kb.index)
    assert "active/provisional wiki page missing from index: zh-cn/note-1.md" in problems(lint(kb, "--staged"))


def test_kb_in_a_subfolder_of_the_repository(tmp_path):
    repo = tmp_path / "repo"
    kb = make_kb(repo / "docs", git=False)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "kb in docs")
    expected = BREAKERS[6](kb)
    result = lint(kb)
    assert f"- {expected}" in result.err.splitlines(), result.err


def test_edit_then_revert_in_the_range_is_still_caught(tmp_path):
    kb = make_kb(tmp_path / "kb")
    before = kb.head()
    path = kb.raw_path("source-1")
    original = path.read_bytes()
    path.write_bytes(original + b"edit\n")
    edit = kb.commit("edit evidence")
    path.write_bytes(original)
    kb.commit("undo it")
    found = problems(lint(kb, "--since", before))
    assert f"raw snapshot changed or deleted: M\t{RAW_DIR}/zh-cn/source-1.md (commit {edit[:12]})" in found


def test_edit_on_a_merged_side_branch_is_caught(tmp_path):
    kb = make_kb(tmp_path / "kb")
    before = kb.head()
    kb.git("checkout", "-q", "-b", "side")
    path = kb.raw_path("source-2")
    path.write_bytes(path.read_bytes() + b"side edit\n")
    side = kb.commit("edit on a side branch")
    kb.git("checkout", "-q", "main")
    kb.append_log("2026-08-09", "lint", "main moves on")
    kb.commit("main work")
    kb.git("merge", "-q", "--no-edit", "--no-ff", "side")
    found = problems(lint(kb, "--since", before))
    assert f"raw snapshot changed or deleted: M\t{RAW_DIR}/zh-cn/source-2.md (commit {side[:12]})" in found


def test_staged_manifest_line_without_its_staged_file_is_caught(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.add_raw("source-3")
    kb.write_index()
    kb.stage(kb.manifest, kb.index)  # the new raw file itself stays untracked
    found = problems(lint(kb, "--staged"))
    assert found == ["manifest points to missing raw file: zh-cn/source-3.md (not staged)"]
    kb.stage(kb.raw_path("source-3"))
    assert problems(lint(kb, "--staged")) == []


def _git_calls(kb, tmp_path, *args: str) -> tuple[object, list[str]]:
    """`kb ARGS` as a process whose `git` is a wrapper logging each invocation, then the real git."""
    import os
    import shutil

    real = shutil.which("git")
    bin_dir = tmp_path / "logging-git"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "git-calls.log"
    log.write_text("")
    wrapper = bin_dir / "git"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    result = run_kb_process(*args, cwd=kb.root, env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    return result, log.read_text().splitlines()


def test_git_is_asked_for_a_patch_only_of_changed_files_and_blobs_through_one_reader(tmp_path):
    from tests.testing.secrets import make_secret

    kb = make_kb(tmp_path / "kb")
    (kb.root / "scratch").mkdir()
    (kb.root / "scratch/untracked.txt").write_text(f"token {make_secret('github-classic')}\n")  # not KB content
    result, calls = _git_calls(kb, tmp_path, "lint")
    assert result.code == 0, result.err
    assert not [c for c in calls if " -p " in f" {c} "], calls  # nothing changed: no patch to scan
    kb.add_raw("source-9", body="# nine\n\nNew evidence.\n")
    kb.write_index()
    kb.git("add", "-A")
    result, calls = _git_calls(kb, tmp_path, "lint", "--staged")
    assert result.code == 0, result.err
    patches = [c for c in calls if " -p " in f" {c} "]
    assert len(patches) == 1 and patches[0].endswith(f":(literal){RAW_DIR}/zh-cn/source-9.md"), calls
    assert sum(c == "cat-file --batch" for c in calls) == 1, calls  # history texts and staged blobs alike
    # the same added lines are scanned as when the patch names the folders: a secret is found
    kb.add_raw("source-10", body=f"# ten\n\ntoken {make_secret('github-classic')}\n")
    kb.git("add", "-A")
    result, _ = _git_calls(kb, tmp_path, "lint", "--staged", "--only", "secrets")
    assert result.code == 1 and "secret in src/content/raw/zh-cn/source-10.md:11" in result.err, result.err
