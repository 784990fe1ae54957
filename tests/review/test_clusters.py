"""Near-duplicate clusters on real ledgers: the same fix told in other words by two sessions is
one cluster; different fixes in the same vocabulary are not.

The prose is written the way people and agents report these problems (an error line pasted
from a log, a fix described in the agent's own words), not generated from the shingler's rules:
the pairs share the error text and the names of what they change, little else."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from tests.review.conftest import (
    ALIAS_PROMPT,
    POOL_ANSWER,
    POOL_PROMPT,
    ReviewKb,
    turn,
)
from tests.testing.sessions import write_claude_session, write_codex_session, write_omp_session

POOL_AGAIN = turn(
    "Since Friday's deploy the API returns 500s and the logs say FATAL: too many connections for role "
    '"app". Postgres is fine otherwise. Ideas?',
    "You create a new psycopg2 connection in every handler and nothing closes it, so Postgres runs out "
    "of slots. Put one psycopg_pool ConnectionPool (max_size=10) at startup and borrow connections from "
    "it with pool.connection(). After the change the load test passes without the FATAL error.",
)
REFUSED = turn(
    "The API cannot reach Postgres: psycopg2.OperationalError: could not connect to server: Connection "
    'refused. Is the server running on host "db" and accepting TCP/IP connections on port 5432?',
    "The database container was not started by docker compose because the service name changed. The "
    "fix: rename the service back to db in docker-compose.yml and run docker compose up -d db; the "
    "connection works again.",
)
WAL_AGAIN = turn(
    "The nightly export dies with sqlite3.OperationalError: database is locked while the web app is "
    "serving requests. What should we do?",
    "Two writers share the file in rollback-journal mode, so one blocks the other. Turn on write-ahead "
    "logging (PRAGMA journal_mode=WAL) and set busy_timeout=5000 on both connections; with that the "
    "export finished while the site was under load.",
)
ALIAS_AGAIN = turn(
    "pnpm build now fails: error TS2307: Cannot find module '@/lib/api' or its corresponding type "
    "declarations. It worked before I bumped TypeScript to 5.4.",
    'TypeScript no longer picks up the alias: the "@/*" mapping is missing from compilerOptions.paths in '
    'tsconfig.json (baseUrl alone is not enough). Add "paths": {"@/*": ["src/*"]} and the build finds '
    "the module again.",
)


def listed(review_kb: ReviewKb, *args: str) -> dict[str, dict[str, object]]:
    result = review_kb.kb("candidates", "list", *args, "--format", "json")
    assert result.code == 0, result.err
    return {c["candidate_id"]: c for c in json.loads(result.out)["candidates"]}


def more_sessions(review_kb: ReviewKb) -> dict[str, object]:
    env = review_kb.env
    later = datetime(2026, 4, 2, 9, 0, tzinfo=UTC)
    write_omp_session(env.omp, POOL_AGAIN, session_id="s-pool-2", cwd="/home/bob/api", started=later)
    write_codex_session(env.codex, REFUSED, session_id="0199refused", cwd="/home/bob/api", started=later)
    write_claude_session(env.claude, WAL_AGAIN, session_id="c-wal-2", cwd="/home/bob/export", started=later)
    write_omp_session(env.omp, ALIAS_AGAIN, session_id="s-alias-2", cwd="/home/bob/web", started=later)
    summary = review_kb.ingest()
    return summary


def test_the_same_fix_in_other_words_is_one_cluster_and_other_fixes_are_not(review_kb: ReviewKb) -> None:
    more_sessions(review_kb)
    rows = listed(review_kb)
    pool, pool_again = review_kb.candidate("psycopg2.OperationalError: too many"), review_kb.candidate("Friday")
    wal, wal_again = review_kb.candidate("Decision needed"), review_kb.candidate("nightly export")
    alias, alias_again = review_kb.candidate(ALIAS_PROMPT[:40]), review_kb.candidate("@/lib/api")
    refused = review_kb.candidate("Connection refused")
    order = list(rows)  # ledger order
    for first, second in ((pool, pool_again), (wal, wal_again), (alias, alias_again)):
        a, b = rows[first["candidate_id"]], rows[second["candidate_id"]]
        leader = min(first["candidate_id"], second["candidate_id"], key=order.index)
        assert a["cluster_id"] == b["cluster_id"] == leader  # named after its first member in the ledger
        assert a["cluster_size"] == b["cluster_size"] == 2
    clusters = {rows[c["candidate_id"]]["cluster_id"] for c in (pool, wal, alias)}
    assert len(clusters) == 3
    assert rows[refused["candidate_id"]]["cluster_id"] == "" and rows[refused["candidate_id"]]["cluster_size"] == 1


def test_a_reviewer_reads_one_per_cluster(review_kb: ReviewKb) -> None:
    more_sessions(review_kb)
    pool = review_kb.candidate("psycopg2.OperationalError: too many")["candidate_id"]
    other = review_kb.candidate("Friday")["candidate_id"]
    cluster = str(listed(review_kb)[pool]["cluster_id"])
    in_cluster = listed(review_kb, "--cluster", cluster[:10])
    assert sorted(in_cluster) == sorted([pool, other])
    assert len(listed(review_kb, "--one-per-cluster")) == len(listed(review_kb)) - 3
    firsts = list(listed(review_kb, "--one-per-cluster"))
    assert list(listed(review_kb, "--one-per-cluster", "--limit", "2")) == firsts[:2]  # the limit after the clusters
    shown = review_kb.kb("candidates", "show", pool)
    assert f"cluster {cluster[:12]} (2 candidates): {other[:12]}" in shown.out
    text = review_kb.kb("candidates", "list").out
    assert f"cluster {cluster[:8]}×2" in text


def test_the_run_summary_reports_the_clusters_and_their_threshold(review_kb: ReviewKb) -> None:
    from kbtools.review.clusters import THRESHOLD

    summary = more_sessions(review_kb)
    assert summary["clusters"]["threshold"] == THRESHOLD
    assert summary["clusters"]["clusters"] == 3 and summary["clusters"]["clustered_candidates"] == 6
    report = (review_kb.env.out / "run-summary.md").read_text()
    assert f"- Near-duplicate clusters: 3 (6 candidates; threshold {THRESHOLD}" in report


def test_exact_duplicates_stay_marked(review_kb: ReviewKb) -> None:
    write_omp_session(review_kb.env.omp, turn(POOL_PROMPT, POOL_ANSWER), session_id="s-pool-copy", cwd="/home/bob/api")
    review_kb.ingest()
    rows = [r for r in review_kb.env.rows("candidates") if "too many connections for role 'app'" in r["text"]]
    assert sorted(r["decision"] for r in rows) == ["duplicate", "jotting"]
    canonical = next(r for r in rows if r["decision"] == "jotting")
    assert next(r for r in rows if r["decision"] == "duplicate")["duplicate_of"] == canonical["candidate_id"]


def test_turns_of_one_session_are_not_a_cluster(review_kb: ReviewKb) -> None:
    """A session that comes back to its own problem is one conversation, not two reports."""
    first = turn(
        "The nightly job fails with ModuleNotFoundError: No module named 'yaml' on the CI runner, "
        "locally it works. Why?",
        "PyYAML is only installed by the dev extra, which CI does not install. Move pyyaml into the main "
        "dependencies in pyproject.toml; the nightly job then imports yaml again.",
    )
    again = turn(
        "Still the same error after your change: ModuleNotFoundError: No module named 'yaml' in the nightly "
        "job, the CI log shows the same traceback.",
        "The runner caches the old environment: pyyaml is in the main dependencies of pyproject.toml now, "
        "but the cache key did not change. The fix: bump the cache key so CI installs the dependencies again.",
    )
    write_omp_session(review_kb.env.omp, [*first, *again], session_id="s-yaml", cwd="/home/bob/jobs")
    review_kb.ingest()
    rows = listed(review_kb)
    for word in ("locally it works", "Still the same error"):
        row = rows[review_kb.candidate(word)["candidate_id"]]
        assert (row["cluster_id"], row["cluster_size"]) == ("", 1)
