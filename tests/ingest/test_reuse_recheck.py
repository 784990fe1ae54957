"""Reused candidates meet the derived filter again when, and only when, the wiki's artifact set changed."""

from __future__ import annotations

import pytest

from tests.ingest.conftest import TECH_PROMPT, IngestEnv, tech_turn
from tests.testing.sessions import age, assistant, user, write_omp_session

# Every test here runs with ingest's caches and without them (see conftest.cache_mode).
pytestmark = pytest.mark.usefixtures("cache_mode")
# A test of a cache itself runs with the caches only.
CACHED_ONLY = pytest.mark.parametrize("cache_mode", ["cached"], indirect=True)

PAGE_BODY = (
    "Pinning the TypeScript compiler in CI keeps the build reproducible: the lockfile records the exact "
    "version, the cache key includes it, and an upgrade becomes a reviewed change instead of a surprise. "
    "When the build breaks after an upgrade, compare the compiler versions first."
)


@CACHED_ONLY
def test_a_page_written_after_ingest_drops_the_reused_candidate_that_quotes_it(env: IngestEnv) -> None:
    session = write_omp_session(env.omp, [user(TECH_PROMPT), assistant(PAGE_BODY), *tech_turn()], session_id="s1")
    age(session)  # old enough for the stat cache: the source is reused unread
    summary, _ = env.run()
    assert summary["candidates"] == 2 and summary["derived_excluded"] == 0
    assert any("lockfile records the exact" in c["text"] for c in env.rows("candidates"))
    digest_before = env.rows("manifest", tool="omp")[0]["rows_digest"]

    # Unchanged artifacts: the stored lines are trusted as they are.
    summary, _ = env.run()
    assert summary["reused_unread"] == 1 and summary["candidates"] == 2
    assert env.rows("manifest", tool="omp")[0]["rows_digest"] == digest_before

    page = env.root / "src/content/note/en/pin-typescript.md"
    page.parent.mkdir(parents=True)
    page.write_text(
        "---\ntitle: Pin TypeScript\nkind: concept\nstatus: active\nsources: [x]\n---\n\n" + PAGE_BODY + "\n"
    )
    summary, _ = env.run()
    assert summary["reused_unread"] == 1 and summary["unchanged"] == 1
    assert summary["candidates"] == 1 and summary["derived_excluded"] == 1
    assert all("lockfile records the exact" not in c["text"] for c in env.rows("candidates"))
    (event,) = env.rows("events")
    assert event["event"] == "derived_excluded" and event["artifact"]["path"].endswith("pin-typescript.md")
    (row,) = env.rows("manifest", tool="omp")
    assert row["candidate_count"] == 1 and row["rows_digest"] != digest_before

    # The next run trusts the re-checked lines and keeps the event.
    summary, _ = env.run()
    assert summary["candidates"] == 1 and summary["derived_excluded"] == 1
    assert env.rows("manifest", tool="omp")[0]["rows_digest"] == row["rows_digest"]


@CACHED_ONLY
def test_dedup_counts_are_the_same_from_the_key_cache_from_the_lines_and_from_a_damaged_cache(
    env: IngestEnv,
) -> None:
    block = "```\nnpm ERR! code ERESOLVE unable to resolve dependency tree for the build\n```"
    for i in range(3):
        path = write_omp_session(
            env.omp,
            [
                user(f"{TECH_PROMPT} ({i})"),
                assistant(f"The build error comes from the lockfile:\n{block}\nThe fix is to pin the peer ({i})."),
            ],
            session_id=f"s{i}",
        )
        age(path)
    first, _ = env.run()
    assert first["duplicate_code_blocks"] == 2
    cache = env.out / "dedup-keys.marshal"
    assert cache.exists()
    counts = ("candidates", "duplicates", "duplicate_code_blocks", "duplicate_error_logs")
    cached, _ = env.run()
    cache.write_bytes(b"\x00 not marshal")
    damaged, _ = env.run()
    cache.unlink()
    missing, _ = env.run()
    for summary in (cached, damaged, missing):
        assert summary["reused_unread"] == 3
        assert {k: summary[k] for k in counts} == {k: first[k] for k in counts}
