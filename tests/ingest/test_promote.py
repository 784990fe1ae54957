from __future__ import annotations

import hashlib
from pathlib import Path

from kbtools.kb.frontmatter import parse_frontmatter
from tests.ingest.conftest import IngestEnv, tech_turn
from tests.testing.cli import run_kb
from tests.testing.kbfactory import make_kb
from tests.testing.sessions import write_omp_session


def ingested_kb(env: IngestEnv, tmp_path: Path) -> tuple[Path, dict[str, object]]:
    kb = make_kb(tmp_path / "repo")
    env.root = kb.root
    write_omp_session(env.omp, tech_turn(), session_id="s1", cwd="/home/alice/proj")
    env.run()
    (candidate,) = env.rows("candidates")
    return kb.root, candidate


def test_promote_writes_raw_evidence_and_appends_its_manifest_line(env: IngestEnv, tmp_path: Path) -> None:
    root, candidate = ingested_kb(env, tmp_path)
    manifest = root / "src/content/raw/.manifest.sha256"
    before = manifest.read_text()
    cid = str(candidate["candidate_id"])
    result = run_kb("promote", cid[:12], "--slug", "ts-path-alias", "--root", str(root))
    assert result.code == 0, result.err
    raw = root / "src/content/raw/zh-cn/ts-path-alias.md"
    data = raw.read_bytes()
    front = parse_frontmatter(data).fields
    assert front["sourceType"] == "session" and front["sourceUrl"] == f"kb-ingest:{cid}"
    assert front["immutable"] is True and front["title"] and front["capturedAt"]
    assert str(candidate["text"]) in data.decode()
    after = manifest.read_text()
    assert after.startswith(before)
    assert after[len(before) :] == f"{hashlib.sha256(data).hexdigest()} zh-cn/ts-path-alias.md\n"
    lint = run_kb("lint", "--root", str(root))
    problems = [line for line in lint.err.splitlines() if line.startswith("- ")]
    assert problems == ["- raw source missing from index: ts-path-alias"], lint.err


def test_a_promoted_candidate_cannot_be_promoted_again(env: IngestEnv, tmp_path: Path) -> None:
    root, candidate = ingested_kb(env, tmp_path)
    cid = str(candidate["candidate_id"])
    first = run_kb("promote", cid, "--root", str(root))
    assert first.code == 0, first.err
    raw_files = sorted((root / "src/content/raw").rglob("*.md"))
    manifest = (root / "src/content/raw/.manifest.sha256").read_text()
    for again in (("promote", cid), ("promote", cid[:10], "--slug", "another-slug", "--locale", "en")):
        refused = run_kb(*again, "--root", str(root))
        assert refused.code == 2 and "already promoted" in refused.err, refused.err
        assert refused.err.count("\n") == 1
    assert (root / "src/content/raw/.manifest.sha256").read_text() == manifest
    assert sorted((root / "src/content/raw").rglob("*.md")) == raw_files


def test_the_new_raw_file_names_its_candidate(env: IngestEnv, tmp_path: Path) -> None:
    root, candidate = ingested_kb(env, tmp_path)
    cid = str(candidate["candidate_id"])
    assert run_kb("promote", cid, "--slug", "alias-fix", "--root", str(root)).code == 0
    front = parse_frontmatter((root / "src/content/raw/zh-cn/alias-fix.md").read_bytes()).fields
    assert front["candidateId"] == cid


def test_promote_obeys_the_slug_rules_of_raw_add(env: IngestEnv, tmp_path: Path) -> None:
    """`kb promote --slug foo --locale ja` used to write ja/foo.md next to an existing zh-cn/foo.md:
    a slug lint resolves by name alone. Both writers now refuse it the same way."""
    root, candidate = ingested_kb(env, tmp_path)
    taken = next((root / "src/content/raw/zh-cn").glob("*.md")).stem
    manifest = (root / "src/content/raw/.manifest.sha256").read_text()
    evidence = tmp_path / f"{taken}.md"
    evidence.write_text("# Some evidence\n\nText.\n")
    by_raw_add = run_kb("raw", "add", str(evidence), "--locale", "ja", "--root", str(root))
    by_promote = run_kb(
        "promote", str(candidate["candidate_id"]), "--slug", taken, "--locale", "ja", "--root", str(root)
    )
    assert by_raw_add.code == by_promote.code == 2
    assert f"raw slug '{taken}' already exists" in by_raw_add.err
    assert f"raw slug '{taken}' already exists" in by_promote.err
    bad = run_kb("promote", str(candidate["candidate_id"]), "--slug", "Not_Kebab", "--root", str(root))
    assert bad.code == 2 and "invalid slug 'Not_Kebab'" in bad.err
    assert (root / "src/content/raw/.manifest.sha256").read_text() == manifest
    assert not (root / "src/content/raw/ja").exists()


def test_promote_with_index_lists_the_source_and_logs_it_so_lint_passes(env: IngestEnv, tmp_path: Path) -> None:
    root, candidate = ingested_kb(env, tmp_path)
    log_before = (root / "src/content/information/zh-cn/kb-log.md").read_text()
    result = run_kb(
        "promote", str(candidate["candidate_id"]), "--slug", "ts-path-alias", "--index", "--root", str(root)
    )
    assert result.code == 0, result.err
    index = (root / "src/content/information/zh-cn/kb-index.md").read_text()
    assert "| `ts-path-alias` | session |" in index
    log = (root / "src/content/information/zh-cn/kb-log.md").read_text()
    assert log.startswith(log_before)
    assert "] ingest | Promoted session evidence: Why does the TypeScript build fail" in log[len(log_before) :]
    lint = run_kb("lint", "--root", str(root))
    assert lint.code == 0, lint.err


def test_unknown_or_ambiguous_candidate_is_a_clear_error(env: IngestEnv, tmp_path: Path) -> None:
    root, _ = ingested_kb(env, tmp_path)
    missing = run_kb("promote", "0" * 64, "--root", str(root))
    assert missing.code == 2 and missing.err.startswith("kb: error: no candidate")
    short = run_kb("promote", "abc", "--root", str(root))
    assert short.code == 2 and "at least 8" in short.err
