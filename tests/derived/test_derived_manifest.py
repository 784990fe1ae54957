"""`kb artifacts record` and the artifact manifest: idempotent, append-only, the staged hook in real git."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from kbtools.config import load_config
from kbtools.derived.filter import DerivedFilter
from kbtools.derived.manifest import read_manifest
from kbtools.derived.normalise import strip_frontmatter, tokens
from kbtools.derived.shingles import unpack
from kbtools.errors import KbError
from kbtools.kb.layout import Layout
from tests.derived.grades import INFRA, WAL, WAL_PAGE_V1, page_body
from tests.testing.cli import run_kb, run_kb_process
from tests.testing.gitrepo import commit_all, git, init_repo, write

MANIFEST = "src/content/note/.manifest.jsonl"


def record(kb: Path, *paths: str):  # type: ignore[no-untyped-def]
    return run_kb("artifacts", "record", *[str(kb / p) for p in paths], "--root", str(kb))


def rows(kb: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (kb / MANIFEST).read_text().splitlines()]


def load(kb: Path) -> DerivedFilter:
    return DerivedFilter.load(Layout(load_config(kb)), threshold=0.8)


def test_derived_filter_record_is_idempotent_and_keeps_old_versions(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb / WAL.path, WAL_PAGE_V1)
    first = record(kb, WAL.path)
    assert first.code == 0 and "recorded src/content/note/en/sqlite-wal-mode.md (sqlite-wal-mode" in first.out
    again = record(kb, WAL.path)
    assert again.code == 0 and "already recorded" in again.out
    assert len(rows(kb)) == 1
    before = (kb / MANIFEST).read_bytes()
    write(kb / WAL.path, WAL.text)
    assert record(kb, WAL.path).code == 0
    after = (kb / MANIFEST).read_bytes()
    assert after.startswith(before)  # append-only: the old line byte for byte
    assert [r["path"] for r in rows(kb)] == [WAL.path, WAL.path]
    assert rows(kb)[0]["sha256"] != rows(kb)[1]["sha256"]


def test_derived_filter_manifest_row_shape(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb / INFRA.path, INFRA.text)
    assert record(kb, INFRA.path).code == 0
    (row,) = rows(kb)
    assert list(row) == ["name", "path", "sha256", "body_hash", "words", "shingles", "shingle_params", "emitted_at"]
    assert row["name"] == "infra-root-causes" and row["path"] == INFRA.path
    shingles = unpack(row["shingles"])  # type: ignore[arg-type]
    assert shingles == sorted(shingles) and len(shingles) == len(set(shingles)) > 50
    assert row["words"] == len(tokens(strip_frontmatter(INFRA.text)))
    assert set(row["shingle_params"]) >= {"n", "normaliser", "normaliser_hash", "hash"}  # type: ignore[arg-type]
    assert stat.S_IMODE(os.stat(kb / MANIFEST).st_mode) == 0o644  # committed, not private


def test_derived_filter_record_folder_and_errors(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb / WAL.path, WAL.text)
    write(kb / "src/content/note/en/other.md", "---\nkind: concept\n---\nAnother page entirely.\n")
    result = run_kb("artifacts", "record", str(kb / "src/content/note"), "--root", str(kb))
    assert result.code == 0 and len(rows(kb)) == 2
    outside = run_kb("artifacts", "record", str(tmp_path), "--root", str(kb))
    assert outside.code == 2 and "not inside the knowledge base" in outside.err
    missing = run_kb("artifacts", "record", str(kb / "nope.md"), "--root", str(kb))
    assert missing.code == 2 and "no such file" in missing.err
    nothing = run_kb("artifacts", "record", "--root", str(kb))
    assert nothing.code == 2


def test_derived_filter_malformed_manifest_line_is_named(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb / WAL.path, WAL.text)
    assert record(kb, WAL.path).code == 0
    with (kb / MANIFEST).open("a") as fh:
        fh.write('{"name": "x"}\n')
    result = record(kb, WAL.path)
    assert result.code == 2 and f"{MANIFEST}:2" in result.err and "missing" in result.err
    with pytest.raises(KbError, match="invalid artifact manifest line"):
        load(kb)


def test_derived_filter_rows_with_other_shingle_params(tmp_path: Path) -> None:
    """A row shingled under other parameters is re-shingled from its file, or reported, never silently compared."""
    kb = tmp_path / "kb"
    write(kb / WAL.path, WAL_PAGE_V1)
    assert record(kb, WAL.path).code == 0
    data = rows(kb)[0]
    data["shingle_params"] = {**data["shingle_params"], "n": 7}  # type: ignore[dict-item]
    (kb / MANIFEST).write_text(json.dumps(data) + "\n")
    old_body = page_body(WAL_PAGE_V1)

    same_file = load(kb)
    assert same_file.warnings == () and same_file.settings["manifest_rows_stale"] == 1
    assert same_file.match(old_body) is not None

    write(kb / WAL.path, WAL.text)  # the file moved on: the old version cannot be re-shingled
    moved_on = load(kb)
    assert len(moved_on.warnings) == 1 and "other parameters" in moved_on.warnings[0]
    assert moved_on.match(old_body) is None
    assert moved_on.match(WAL.records["verbatim"][0]) is not None  # the current page still counts


def test_derived_filter_staged_hook_records_and_asks_to_restage(tmp_path: Path) -> None:
    kb = init_repo(tmp_path / "kb")
    write(kb / "README.md", "hello\n")
    commit_all(kb, "init")
    write(kb / WAL.path, WAL_PAGE_V1)
    write(kb / ".claude/skills/infra-root-causes/SKILL.md", INFRA.text)
    write(kb / "docs/not-an-artifact.md", "Some docs.\n")
    git(kb, "add", "-A")
    write(kb / WAL.path, WAL.text)  # working tree differs from the index: the staged version is recorded

    hook = run_kb_process("artifacts", "record", "--staged", cwd=kb / "src")
    assert hook.code == 1
    assert f"stage it (git add {MANIFEST})" in hook.err
    recorded = {r["path"]: r for r in rows(kb)}
    assert set(recorded) == {WAL.path, ".claude/skills/infra-root-causes/SKILL.md"}
    assert recorded[".claude/skills/infra-root-causes/SKILL.md"]["name"] == "infra-root-causes"
    staged_blob = git(kb, "show", f":{WAL.path}")
    assert staged_blob == WAL_PAGE_V1
    recorded_shas = {r.sha256 for r in read_manifest(kb / MANIFEST)}
    assert _sha256(WAL_PAGE_V1) in recorded_shas and _sha256(WAL.text) not in recorded_shas

    git(kb, "add", MANIFEST)
    second = run_kb_process("artifacts", "record", "--staged", cwd=kb)
    assert second.code == 0 and second.out == ""
    git(kb, "commit", "-q", "-m", "pages")
    assert run_kb_process("artifacts", "record", "--staged", cwd=kb).code == 0  # nothing staged


def test_derived_filter_skill_globs_are_configurable(tmp_path: Path) -> None:
    kb = init_repo(tmp_path / "kb")
    write(kb / ".kb.yaml", "derived:\n  skills: ['agents/*/prompt.md']\n")
    write(kb / "agents/triage/prompt.md", INFRA.text)
    write(kb / "skills/other/SKILL.md", WAL.text)  # not a skill under this config
    git(kb, "add", "-A")
    hook = run_kb("artifacts", "record", "--staged", "--root", str(kb))
    assert hook.code == 1
    assert [r["path"] for r in rows(kb)] == ["agents/triage/prompt.md"]
    assert load(kb).match(INFRA.records["verbatim"][0]) is not None
    assert load(kb).match(WAL.records["verbatim"][0]) is None


def test_derived_filter_staged_outside_git_is_usage_error(tmp_path: Path) -> None:
    kb = tmp_path / "plain"
    kb.mkdir()
    result = run_kb("artifacts", "record", "--staged", "--root", str(kb))
    assert result.code == 2
    assert result.err == f"kb: error: cannot list staged files: not a git repository ({kb})\n"  # one line, no git usage


def _sha256(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def test_derived_filter_record_json_lists_recorded_and_already_recorded(tmp_path: Path) -> None:
    kb = init_repo(tmp_path / "kb")
    write(kb / WAL.path, WAL_PAGE_V1)
    first = run_kb("artifacts", "record", str(kb / WAL.path), "--format", "json", "--root", str(kb))
    assert first.code == 0
    doc = json.loads(first.out)
    assert doc["manifest"] == MANIFEST and doc["already"] == [] and doc["restage"] is False
    assert doc["recorded"] == [{"name": "sqlite-wal-mode", "path": WAL.path, "sha256": _sha256(WAL_PAGE_V1)}]
    again = json.loads(run_kb("artifacts", "record", str(kb / WAL.path), "--format", "json", "--root", str(kb)).out)
    assert again["recorded"] == [] and again["already"] == [WAL.path]

    write(kb / WAL.path, WAL.text)
    git(kb, "add", WAL.path)
    hook = run_kb("artifacts", "record", "--staged", "--format", "json", "--root", str(kb))
    assert hook.code == 1 and json.loads(hook.out)["restage"] is True
    assert run_kb("artifacts", "record", "--staged", "--format", "yaml", "--root", str(kb)).code == 2
