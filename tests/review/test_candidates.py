"""`kb candidates list|show|search` and `kb search` on ledgers written by `kb ingest --write`."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from tests.review.conftest import ReviewKb, turn
from tests.testing.gitrepo import write
from tests.testing.sessions import write_omp_session


def ids(result_out: str) -> list[str]:
    return [c["candidate_id"] for c in json.loads(result_out)["candidates"]]


def test_list_shows_every_candidate_with_its_prompt(review_kb: ReviewKb) -> None:
    listed = review_kb.kb("candidates", "list")
    assert listed.code == 0, listed.err
    assert "Why does the TypeScript build fail with error TS2307" in listed.out
    assert "The worker crashes with psycopg2.OperationalError: too many connections" in listed.out
    assert listed.err.strip() == "3 candidate(s)"


def test_list_filters_by_tool_project_and_dates(review_kb: ReviewKb) -> None:
    alias, pool, wal = (review_kb.candidate(w)["candidate_id"] for w in ("TS2307", "psycopg2", "journal_mode"))
    by_tool = review_kb.kb("candidates", "list", "--tool", "codex", "--format", "json")
    assert ids(by_tool.out) == [pool]
    by_project = review_kb.kb("candidates", "list", "--project", "/home/alice/api", "--format", "json")
    assert sorted(ids(by_project.out)) == sorted([pool, wal])
    by_dates = review_kb.kb("candidates", "list", "--since", "2026-03-02", "--until", "2026-03-05", "--format", "json")
    assert ids(by_dates.out) == [pool]
    assert ids(review_kb.kb("candidates", "list", "--decision", "duplicate", "--format", "json").out) == []
    assert alias in ids(review_kb.kb("candidates", "list", "--decision", "jotting", "--format", "json").out)


def test_new_lists_what_the_last_run_added(review_kb: ReviewKb) -> None:
    first = ids(review_kb.kb("candidates", "list", "--new", "--format", "json").out)
    assert len(first) == 3  # the first run added everything
    write_omp_session(
        review_kb.env.omp,
        turn(
            "Why does the nightly job fail with ModuleNotFoundError: No module named 'yaml' on the runner?",
            "The root cause is that PyYAML is only in the dev extra. The fix: move pyyaml into the main "
            "dependencies and rerun the nightly job to verify that the import works.",
        ),
        session_id="s-yaml",
        cwd="/home/alice/jobs",
        started=datetime(2026, 3, 12, 9, 0, tzinfo=UTC),
    )
    review_kb.ingest()
    added = review_kb.candidate("PyYAML")["candidate_id"]
    assert ids(review_kb.kb("candidates", "list", "--new", "--format", "json").out) == [added]
    review_kb.ingest()  # a rerun with nothing new: nothing is new since it
    assert ids(review_kb.kb("candidates", "list", "--new", "--format", "json").out) == []


def test_show_reads_the_turn_its_fields_redactions_and_matching_notes(review_kb: ReviewKb) -> None:
    write(
        review_kb.root / "src/content/note/zh-cn/connection-pool.md",
        "---\ntitle: Connection pool for psycopg workers\nkind: concept\nstatus: active\n"
        "sources: []\ntags: [psycopg2, connection, pool, workers]\n---\n\nShare one pool.\n",
    )
    write_omp_session(
        review_kb.env.omp,
        turn(
            "The psycopg2 workers fail again with too many connections; the connection pool from last week "
            "is configured in /home/alice/api/settings.py. Can you check why the pool is not used?",
            "The root cause is that the workers import the old module and open a connection each. The fix: "
            "use the shared connection pool in the workers; I ran pytest tests/test_load.py to verify it.",
        ),
        session_id="s-pool-again",
        cwd="/home/alice/api",
    )
    review_kb.ingest()
    row = review_kb.candidate("shared connection pool")
    shown = review_kb.kb("candidates", "show", row["candidate_id"][:12])
    assert shown.code == 0, shown.err
    out = shown.out
    assert out.startswith(f"candidate {row['candidate_id']}\n")
    assert "── user" in out and "── assistant" in out
    assert "The psycopg2 workers fail again" in out and "<PRIVATE_PATH>" in out
    assert "/home/alice" not in out
    assert f"redactions: {', '.join(row['redactions'])}" in out and row["redactions"]
    assert "notes it matches: connection-pool (src/content/note/zh-cn/connection-pool.md)" in out
    assert "root_cause: The root cause is that the workers import the old module" in out
    as_json = json.loads(review_kb.kb("candidates", "show", row["candidate_id"], "--format", "json").out)
    assert [m["role"] for m in as_json["messages"]] == ["user", "assistant"]
    assert as_json["note_matches"] == [{"slug": "connection-pool", "path": "src/content/note/zh-cn/connection-pool.md"}]


def test_search_ranks_candidates_by_their_words(review_kb: ReviewKb) -> None:
    found = json.loads(review_kb.kb("candidates", "search", "connection pool", "--format", "json").out)
    refs = [r["ref"] for r in found["results"]]
    assert refs == [review_kb.candidate("psycopg2")["candidate_id"]]
    # stemming and punctuation: "locking" finds "locked", tsconfig.json is one phrase
    assert [
        r["ref"] for r in json.loads(review_kb.kb("candidates", "search", "locking", "--format", "json").out)["results"]
    ] == [review_kb.candidate("journal_mode")["candidate_id"]]
    assert json.loads(review_kb.kb("candidates", "search", "tsconfig.json", "--format", "json").out)["count"] == 1
    none = review_kb.kb("candidates", "search", "kubernetes")
    assert none.code == 0 and none.out == "" and none.err.strip() == "0 result(s)"


def test_search_finds_a_candidate_after_a_rerun_that_only_appended_a_session(review_kb: ReviewKb) -> None:
    from kbtools.review.index import first_seen

    assert review_kb.kb("candidates", "search", "flaky").err.strip() == "0 result(s)"
    before_run, before = first_seen(review_kb.env.out)
    write_omp_session(
        review_kb.env.omp,
        turn(
            "The flaky test test_export_roundtrip fails one run in five with AssertionError on CI. "
            "Can you find out why?",
            "The root cause is a dict iteration order assumption in the exporter. The fix: sort the keys "
            "before writing; I ran pytest -k export 50 times and the error did not come back.",
        ),
        session_id="s-flaky",
    )
    review_kb.ingest()
    hits = json.loads(review_kb.kb("candidates", "search", "flaky", "--format", "json").out)["results"]
    assert [h["ref"] for h in hits] == [review_kb.candidate("flaky test")["candidate_id"]]
    last_run, after = first_seen(review_kb.env.out)
    assert last_run != before_run
    # incremental, not rebuilt: the old candidates keep the run that first saw them
    assert {cid: after[cid] for cid in before} == before


def test_kb_search_covers_notes_raw_evidence_and_candidates(review_kb: ReviewKb) -> None:
    write(
        review_kb.root / "src/content/note/zh-cn/sqlite-wal.md",
        "---\ntitle: SQLite WAL for concurrent writers\nkind: concept\nstatus: active\nsources: []\n---\n\n"
        "Enable the write-ahead log so that readers never block the writer.\n",
    )
    result = review_kb.kb("search", "wal", "--format", "json")
    assert result.code == 0, result.err
    kinds = {(r["kind"], r["ref"]) for r in json.loads(result.out)["results"]}
    assert ("note", "zh-cn/sqlite-wal.md") in kinds
    assert ("candidate", review_kb.candidate("journal_mode")["candidate_id"]) in kinds
    raw_slug = next((review_kb.root / "src/content/raw/zh-cn").glob("*.md")).stem
    raw_word = next(w for w in raw_slug.split("-") if len(w) > 3)
    raw_hits = json.loads(review_kb.kb("search", raw_word, "--format", "json").out)["results"]
    assert any(r["kind"] == "raw" for r in raw_hits)
    # a note edited after it was indexed is found by its new words
    note = review_kb.root / "src/content/note/zh-cn/sqlite-wal.md"
    note.write_text(note.read_text().replace("write-ahead log", "write-ahead journal with checkpoints"))
    assert json.loads(review_kb.kb("search", "checkpoints", "--format", "json").out)["count"] == 1


def test_bad_filters_and_ids_are_one_line_errors(review_kb: ReviewKb) -> None:
    for args, stem in (
        (("candidates", "list", "--since", "March"), "kb: error: 'March' is not a date (YYYY-MM-DD) (--since)"),
        (("candidates", "show", "0" * 64), "kb: error: no candidate"),
        (("candidates", "show", "abc"), "kb: error: candidate id must have at least 8 characters"),
        (("candidates", "search", "?!"), "kb: error: the query has no words to search for"),
        (("candidates", "list", "--format", "yaml"), "kb: error:"),
    ):
        result = review_kb.kb(*args)
        assert result.code == 2, (args, result.err)
        assert result.err.startswith(stem) and result.err.count("\n") == 1, result.err


def test_no_ledger_yet_is_a_clear_error(tmp_path) -> None:
    from tests.testing.cli import run_kb
    from tests.testing.kbfactory import make_kb

    root = make_kb(tmp_path / "kb").root
    for command in (("candidates", "list"), ("candidates", "search", "pool")):
        result = run_kb(*command, "--root", str(root))
        assert result.code == 2 and "no candidate ledger; run `kb ingest --write` first" in result.err


def test_the_list_filter_refuses_a_limit_under_one_in_one_line() -> None:
    """The MCP tool has no option parser to check it: the filter both build does."""
    import pytest

    from kbtools.errors import KbError
    from kbtools.review.listing import CandidateFilter

    with pytest.raises(KbError, match="at least 1, not 0"):
        CandidateFilter(limit=0)
