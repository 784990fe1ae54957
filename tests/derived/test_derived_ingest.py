"""The seed's assertions end to end: real session files → `kb ingest --write` → ledgers → `kb verify`."""

from __future__ import annotations

import hashlib
import json

from tests.derived.grades import INFRA, WAL, WAL_PAGE_V1, page_body
from tests.ingest.conftest import TECH_ANSWER, TECH_PROMPT, IngestEnv, env  # noqa: F401 - env is a fixture
from tests.testing.cli import run_kb
from tests.testing.gitrepo import write
from tests.testing.sessions import assistant, user, write_omp_session

MENTION = TECH_PROMPT + " I used the infra-root-causes skill yesterday and it pointed at the connection pool."


def install_artifacts(env: IngestEnv) -> None:
    write(env.root / INFRA.path, INFRA.text)
    write(env.root / WAL.path, WAL.text)


def candidate_texts(env: IngestEnv) -> str:
    return "\n".join(c["text"] for c in env.rows("candidates"))


def test_derived_filter_a1_a2_a3_end_to_end(env: IngestEnv) -> None:
    install_artifacts(env)
    write_omp_session(
        env.omp,
        [
            user(TECH_PROMPT),
            assistant(INFRA.records["verbatim"][0]),
            user(WAL.records["quoted inside a longer message"][0]),
            assistant(TECH_ANSWER),
            user(MENTION),
            assistant(TECH_ANSWER),
        ],
        session_id="s1",
    )
    summary, _ = env.run()
    assert summary["derived_excluded"] == 2
    texts = candidate_texts(env)
    assert "Freeze the state" not in texts  # a1: the verbatim skill
    assert "readers do not block the" not in texts  # a2: the reformatted page inside a longer message
    assert "I used the infra-root-causes skill yesterday" in texts  # a3: the mention is kept
    assert "path alias in tsconfig.json" in texts


def test_derived_filter_a5_exclusion_logged_end_to_end(env: IngestEnv) -> None:
    install_artifacts(env)
    write_omp_session(
        env.omp,
        [user(TECH_PROMPT), assistant(INFRA.records["reformatted"][0]), user(MENTION), assistant(TECH_ANSWER)],
        session_id="s1",
    )
    env.run()
    (event,) = env.rows("events", event="derived_excluded")
    assert event["artifact"] == {
        "name": "infra-root-causes",
        "path": INFRA.path,
        "sha256": hashlib.sha256(INFRA.text.encode()).hexdigest(),
    }
    assert event["overlap"] > event["threshold"] == 0.8
    assert event["role"] == "assistant" and event["message_index"] >= 0
    assert event["source_key"] in {r["source_key"] for r in env.rows("manifest", tool="omp")}


def test_derived_filter_a6_verify_catches_a_leak_end_to_end(env: IngestEnv) -> None:
    install_artifacts(env)
    write_omp_session(
        env.omp,
        [user(TECH_PROMPT), assistant(INFRA.records["reformatted"][0]), user(MENTION), assistant(TECH_ANSWER)],
        session_id="s1",
    )
    leaky, _ = env.run("--no-derived-filter")
    assert leaky["derived_excluded"] == 0
    leaked_ids = [c["candidate_id"] for c in env.rows("candidates") if "Freeze the state" in c["text"]]
    assert leaked_ids
    result = run_kb("verify", "--derived-filter", "--root", str(env.root))
    assert result.code == 1
    for candidate_id in leaked_ids:
        assert f"{candidate_id} matches infra-root-causes" in result.err

    clean_out = env.root / "clean"
    env.run("--output-dir", str(clean_out))
    assert run_kb("verify", "--derived-filter", "--output-dir", str(clean_out), "--root", str(env.root)).code == 0


def test_derived_filter_a7_threshold_in_config_and_run_summary(env: IngestEnv) -> None:
    install_artifacts(env)
    partial = INFRA.records["partial quote"][0]
    write_omp_session(env.omp, [user(TECH_PROMPT + "\n\n" + partial), assistant(TECH_ANSWER)], session_id="s1")
    default, _ = env.run(write=False)
    assert default["derived_filter"]["threshold"] == 0.8 and default["derived_excluded"] == 0
    write(env.root / ".kb.yaml", "derived:\n  threshold: 0.2\n")
    lowered, _ = env.run(write=False)
    assert lowered["derived_filter"]["threshold"] == 0.2 and lowered["derived_excluded"] == 1
    assert lowered["derived_filter"]["shingle_params"]["n"] == 5
    assert lowered["derived_filter"]["artifact_count"] == 2
    env.run()
    assert "threshold 0.2" in (env.out / "run-summary.md").read_text()


def test_derived_filter_a8_no_manifest_is_safe_end_to_end(env: IngestEnv) -> None:
    write_omp_session(env.omp, [user(TECH_PROMPT), assistant(INFRA.records["verbatim"][0])], session_id="s1")
    summary, result = env.run()
    assert summary["derived_excluded"] == 0
    assert summary["derived_filter"]["enabled"] is True and summary["derived_filter"]["artifact_count"] == 0
    assert summary["derived_filter"]["manifest_present"] is False
    assert "Freeze the state" in candidate_texts(env)
    assert env.rows("events", event="derived_excluded") == []


def test_derived_filter_recorded_old_version_excluded_end_to_end(env: IngestEnv) -> None:
    """The page was rewritten after a session quoted it; the manifest still knows the old version."""
    write(env.root / WAL.path, WAL_PAGE_V1)
    assert run_kb("artifacts", "record", str(env.root / WAL.path), "--root", str(env.root)).code == 0
    write(env.root / WAL.path, WAL.text)
    old_body = page_body(WAL_PAGE_V1)
    write_omp_session(
        env.omp, [user(TECH_PROMPT), assistant(old_body), user(MENTION), assistant(TECH_ANSWER)], session_id="s1"
    )
    summary, _ = env.run()
    assert summary["derived_excluded"] == 1
    (event,) = env.rows("events", event="derived_excluded")
    assert event["artifact"]["sha256"] == hashlib.sha256(WAL_PAGE_V1.encode()).hexdigest()


def _earlier_format_row(path: str, text: str, *, with_body: bool) -> str:
    """A manifest line as earlier versions of `kb artifacts record` wrote it: shingles a list of hex strings."""
    from kbtools.derived.normalise import strip_frontmatter, tokens
    from kbtools.derived.shingles import body_hash, shingle_hashes

    words = tokens(strip_frontmatter(text))
    row: dict[str, object] = {
        "name": path.rsplit("/", 1)[-1][:-3],
        "path": path,
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
    }
    if with_body:
        row.update(body_hash=body_hash(words), words=len(words))
    row.update(
        shingles=sorted(f"{h & (2**64 - 1):016x}" for h in set(shingle_hashes(words))),
        shingle_params={
            "n": 5,
            "unit": "word",
            "normaliser": "kb-words-1",
            "normaliser_hash": "1627b1f835219618",
            "hash": "xxh-lanes64(blake3-61 word ids)",
        },
        emitted_at="2026-11-01T00:00:00Z",
    )
    return json.dumps(row, separators=(",", ":")) + "\n"


def test_derived_filter_earlier_manifest_format_is_reshingled_or_skipped_never_blocks(env: IngestEnv) -> None:
    """Rows of an earlier manifest format: re-shingled from the file at that sha256, else one warning each."""
    install_artifacts(env)  # INFRA and WAL (current version) in the working tree
    manifest = env.root / "src/content/note/.manifest.jsonl"
    history = (
        _earlier_format_row(INFRA.path, INFRA.text, with_body=False)  # file still at this sha256
        + _earlier_format_row(WAL.path, WAL_PAGE_V1, with_body=True)
    )  # file has moved on
    manifest.write_text(history)
    write_omp_session(
        env.omp,
        [user(TECH_PROMPT), assistant(INFRA.records["verbatim"][0]), user(MENTION), assistant(TECH_ANSWER)],
        session_id="s1",
    )

    summary, result = env.run()
    assert summary["derived_excluded"] == 1
    assert summary["derived_filter"]["manifest_rows"] == 2
    assert summary["derived_filter"]["manifest_rows_stale"] == 2
    assert summary["derived_filter"]["from_manifest"] == 1  # INFRA re-shingled from its file
    warnings = [line for line in result.err.splitlines() if "manifest" in line]
    assert len(warnings) == 1, result.err
    assert "src/content/note/.manifest.jsonl:2" in warnings[0] and WAL.path in warnings[0]
    assert "earlier format" in warnings[0]

    verify = run_kb("verify", "--derived-filter", "--root", str(env.root))
    assert verify.code == 0, verify.err
    assert "src/content/note/.manifest.jsonl:2" in verify.err

    record = run_kb("artifacts", "record", str(env.root / WAL.path), "--root", str(env.root))
    assert record.code == 0, record.err
    assert manifest.read_text().startswith(history)  # history kept byte for byte, the new version appended
    assert len(manifest.read_text().splitlines()) == 3
