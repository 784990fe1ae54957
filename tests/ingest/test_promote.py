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


def test_promote_never_overwrites_raw_evidence(env: IngestEnv, tmp_path: Path) -> None:
    root, candidate = ingested_kb(env, tmp_path)
    cid = str(candidate["candidate_id"])
    assert run_kb("promote", cid, "--root", str(root)).code == 0
    manifest = (root / "src/content/raw/.manifest.sha256").read_text()
    again = run_kb("promote", cid, "--root", str(root))
    assert again.code == 2 and "never overwritten" in again.err
    assert (root / "src/content/raw/.manifest.sha256").read_text() == manifest


def test_unknown_or_ambiguous_candidate_is_a_clear_error(env: IngestEnv, tmp_path: Path) -> None:
    root, _ = ingested_kb(env, tmp_path)
    missing = run_kb("promote", "0" * 64, "--root", str(root))
    assert missing.code == 2 and missing.err.startswith("kb: error: no candidate")
    short = run_kb("promote", "abc", "--root", str(root))
    assert short.code == 2 and "at least 8" in short.err
