"""`kb ingest` end to end: reuse, reprocessing, carried-forward rows, dry run, partial recovery."""

from __future__ import annotations

import hashlib
import json
import stat
from pathlib import Path

import pytest

from kbtools.redact import REDACTION_VERSION
from tests.ingest.conftest import TECH_ANSWER, TECH_PROMPT, IngestEnv, read_jsonl, tech_turn
from tests.testing.cli import kb_command, run_kb, run_on_terminal
from tests.testing.sessions import (
    OmpSession,
    age,
    assistant,
    log_paste,
    user,
    write_lines,
    write_omp_advisor,
    write_omp_session,
)

# Every test here runs with ingest's caches and without them (see conftest.cache_mode).
pytestmark = pytest.mark.usefixtures("cache_mode")
# A test of a cache itself runs with the caches only.
CACHED_ONLY = pytest.mark.parametrize("cache_mode", ["cached"], indirect=True)


def omp_session(env: IngestEnv, **kwargs: object):
    return write_omp_session(env.omp, tech_turn(), session_id="session-private", cwd="/home/a/proj", **kwargs)


def test_dry_run_creates_nothing_and_reports_the_same_counts_as_a_write(env: IngestEnv) -> None:
    omp_session(env)
    dry, _ = env.run(write=False)
    assert dry["dry_run"] is True
    assert not (env.root / ".agent").exists()
    wet, _ = env.run()
    assert wet["dry_run"] is False
    for key in ("discovered", "processed", "unchanged", "skipped", "failed", "candidates", "rejected"):
        assert dry[key] == wet[key], key
    assert wet["processed"] == 1 and wet["candidates"] == 1


@CACHED_ONLY
def test_write_makes_private_dirs_and_files_and_hashes_identities(env: IngestEnv) -> None:
    omp_session(env)
    env.run()
    assert stat.S_IMODE(env.out.stat().st_mode) == 0o700
    assert stat.S_IMODE(env.out.parent.stat().st_mode) == 0o700  # .agent/ itself
    assert stat.S_IMODE(env.checkpoint.parent.stat().st_mode) == 0o700
    for path in [*env.out.iterdir(), env.checkpoint]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name
    manifest = (env.out / "manifest.jsonl").read_text()
    assert "/home/a" not in manifest and "session-private" not in manifest
    assert not list(env.out.glob("*.partial.jsonl"))


def test_unchanged_source_is_reused_on_rerun(env: IngestEnv) -> None:
    omp_session(env)
    env.run()
    first = env.rows("candidates")
    summary, _ = env.run()
    assert summary["unchanged"] == 1 and summary["processed"] == 0
    assert [c["candidate_id"] for c in env.rows("candidates")] == [c["candidate_id"] for c in first]
    (row,) = env.rows("manifest", tool="omp")
    assert row["parse_status"] == "unchanged"
    assert row["redaction_status"].endswith(f":{REDACTION_VERSION}")


def test_previously_failed_source_is_reprocessed_with_unchanged_content(env: IngestEnv) -> None:
    omp_session(env)
    env.run()
    (row,) = env.rows("manifest", tool="omp")
    env.write_rows("manifest", [{**row, "parse_status": "failed", "candidate_count": 0}])
    env.write_rows("candidates", [])
    env.write_rows(
        "rejected",
        [
            {
                "rejection_id": "x",
                "source_key": row["source_key"],
                "reason": "malformed_or_unavailable_source",
                "run_at": "",
            }
        ],
    )
    summary, _ = env.run()
    assert summary["processed"] == 1 and summary["candidates"] == 1


def test_stale_redaction_version_forces_reprocessing(env: IngestEnv) -> None:
    omp_session(env)
    env.run()
    rows = [{**r, "redaction_status": "none:v5"} for r in env.rows("manifest")]
    env.write_rows("manifest", rows)
    summary, _ = env.run()
    assert summary["processed"] == 1 and summary["unchanged"] == 0


def test_incomplete_prior_ledger_is_not_reused(env: IngestEnv) -> None:
    omp_session(env)
    env.run()
    env.write_rows("candidates", [])
    summary, _ = env.run()
    assert summary["processed"] == 1 and summary["candidates"] == 1


def test_changed_content_is_reprocessed_and_supersedes_the_old_row(env: IngestEnv) -> None:
    path = omp_session(env)
    env.run()
    old_key = env.rows("manifest", tool="omp")[0]["source_key"]
    with path.open("a") as fh:
        line = {
            "type": "message",
            "message": {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Also, the Docker build fails with a config error; how do we debug it?"}
                ],
            },
        }
        fh.write(json.dumps(line) + "\n")
    summary, _ = env.run()
    assert summary["processed"] == 1
    (row,) = env.rows("manifest", tool="omp")
    assert row["source_key"] != old_key
    assert all(c["source_key"] == row["source_key"] for c in env.rows("candidates"))


def test_advisor_file_is_skipped_as_control_plane_and_leaves_the_ledger_when_deleted(env: IngestEnv) -> None:
    session = omp_session(env)
    advisor = write_omp_advisor(session, [assistant("Silent. The agent is still reading the build config.")])
    summary, _ = env.run()
    (row,) = env.rows("manifest", record_type="advisor")
    assert row["parse_status"] == "skipped" and row["skip_reason"] == "internal_control_plane"
    assert summary["candidates"] == 1  # only the real session's turn
    advisor.unlink()
    env.run()
    assert '"record_type":"advisor"' not in (env.out / "manifest.jsonl").read_text()


def test_prompt_history_keeps_one_row_as_the_file_grows(env: IngestEnv) -> None:
    pytest.importorskip("kbtools.ingest.sources.prompt_history")
    env.prompt_history.parent.mkdir(parents=True)
    line = {"input": TECH_PROMPT + " " + TECH_ANSWER}
    write_lines(env.prompt_history, [json.dumps(line)])
    env.run()
    (first,) = env.rows("manifest", record_type="prompt-history")
    write_lines(
        env.prompt_history,
        [
            json.dumps(line),
            json.dumps({"input": "How do I configure the Docker build cache for CI so the tests run faster?"}),
        ],
    )
    env.run()
    (second,) = env.rows("manifest", record_type="prompt-history")
    assert second["session_hash"] == first["session_hash"]
    assert second["content_hash"] != first["content_hash"]


def test_partial_ledger_from_an_interrupted_run_wins_over_the_final_one(env: IngestEnv) -> None:
    path = omp_session(env)
    env.run()
    (row,) = env.rows("manifest", tool="omp")
    with path.open("a") as fh:
        fh.write(
            json.dumps(
                {
                    "type": "message",
                    "message": {
                        "role": "assistant",
                        "content": [{"type": "text", "text": "Verified: pnpm build passes after the fix."}],
                    },
                }
            )
            + "\n"
        )
    # What an interrupted run left: the new content seen, under an old redaction version.
    new_hash = hashlib.sha256(path.read_bytes()).hexdigest()
    env.write_rows(
        "manifest",
        [{**row, "content_hash": new_hash, "redaction_status": "none:v5", "candidate_count": 1, "_run": "interrupted"}],
        partial=True,
    )
    env.write_rows("candidates", [], partial=True)
    summary, _ = env.run()
    assert summary["processed"] == 1 and summary["candidates"] == 1
    assert not list(env.out.glob("*.partial.jsonl"))
    summary, _ = env.run()
    assert summary["unchanged"] == 1


def test_stale_internal_text_in_a_stored_candidate_is_filtered_on_rerun(env: IngestEnv) -> None:
    omp_session(env)
    env.run()
    (candidate,) = env.rows("candidates")
    env.write_rows("candidates", [{**candidate, "text": "[user] _thinking_: stale internal transcript"}])
    summary, _ = env.run()
    assert summary["unchanged"] == 1
    assert summary["candidates"] == 0 and summary["rejected"] >= 1
    assert summary["internal_filtered"] == 1
    assert "_thinking_:" not in (env.out / "candidates.jsonl").read_text()
    assert env.rows("rejected", reason="internal_transcript_filtered")
    # The ledger stays complete: the next run reuses it without reprocessing,
    # and the source still says what the filter kept out of it.
    summary, _ = env.run()
    assert summary["unchanged"] == 1 and summary["processed"] == 0
    assert summary["internal_filtered"] == 1


def test_sources_not_seen_are_carried_forward_and_pruned_on_request(env: IngestEnv) -> None:
    omp_session(env)
    env.run()
    (candidate,) = env.rows("candidates")
    for path in sorted(env.omp.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    summary, _ = env.run()
    (row,) = env.rows("manifest", tool="omp", record_type="session")
    assert row["parse_status"] == "skipped" and row["skip_reason"] == "source_not_scanned_this_run"
    assert summary["carried_forward"] == 1 and summary["skipped"] >= 1
    assert [c["candidate_id"] for c in env.rows("candidates")] == [candidate["candidate_id"]]
    summary, _ = env.run("--prune")
    assert summary["pruned"] == 1
    assert env.rows("manifest", tool="omp", record_type="session") == [] and env.rows("candidates") == []


def test_prune_keeps_the_rows_of_a_store_that_is_missing_this_run(env: IngestEnv) -> None:
    omp_session(env)
    env.run()
    env.omp.rename(env.omp.with_name("omp-moved"))  # e.g. run with a different PI_CODING_AGENT_DIR
    summary, _ = env.run("--prune")
    assert (summary["pruned"], summary["carried_forward"]) == (0, 1)
    assert len(env.rows("candidates")) == 1


def test_a_message_quoting_a_marker_never_drops_its_session(env: IngestEnv) -> None:
    write_omp_session(
        env.omp,
        [
            user("A legitimate article may quote the _thinking:_ marker; why does our parser test fail on it?"),
            assistant(
                "Because the regex treats the quoted marker as a transcript envelope. The fix is to "
                "apply the filter per message; the unit test then passes."
            ),
        ],
        session_id="s1",
    )
    summary, _ = env.run()
    assert summary["candidates"] == 1
    assert "_thinking:_" in env.rows("candidates")[0]["text"]


def test_internal_messages_are_dropped_but_the_rest_of_the_session_is_kept(env: IngestEnv) -> None:
    write_omp_session(
        env.omp,
        [
            *tech_turn(),
            user("[budget notice] 10% of the context left"),
            assistant("Silent mode: nothing to report."),
        ],
        session_id="s1",
    )
    summary, _ = env.run()
    (candidate,) = env.rows("candidates")
    assert "budget notice" not in candidate["text"] and "Silent mode" not in candidate["text"]
    # Counted per message, on the source's manifest row, so a rerun that reuses it counts the same.
    assert summary["internal_filtered"] == 2
    assert [r["internal_filtered"] for r in env.rows("manifest", tool="omp")] == [2]
    summary, _ = env.run()
    assert (summary["unchanged"], summary["internal_filtered"]) == (1, 2)


def test_each_turn_is_its_own_candidate_and_equal_turns_are_duplicates(env: IngestEnv) -> None:
    write_omp_session(env.omp, [*tech_turn(), *tech_turn()], session_id="s1")
    summary, _ = env.run()
    first, second = env.rows("candidates")
    assert first["candidate_id"] != second["candidate_id"]
    assert (first["turn_index"], second["turn_index"]) == (0, 1)
    assert second["decision"] == "duplicate" and second["duplicate_of"] == first["candidate_id"]
    assert summary["duplicates"] == 1


def test_candidate_times_are_its_messages_times_in_utc(env: IngestEnv) -> None:
    session = OmpSession(session_id="s1")
    session.user(TECH_PROMPT, timestamp="2026-03-01T11:00:05+02:00")  # an offset
    session.assistant(TECH_ANSWER)  # epoch milliseconds, as OMP writes them
    session.write(env.omp)
    env.run()
    (candidate,) = env.rows("candidates")
    assert (candidate["created_at"], candidate["updated_at"]) == (
        "2026-03-01T09:00:05.000Z",
        "2026-03-01T09:00:14.000Z",
    )


def test_long_session_is_split_into_bounded_candidates_and_truncation_is_recorded(env: IngestEnv) -> None:
    (env.root / ".kb.yaml").write_text("ingest:\n  max_text: 3000\n  max_candidate: 1000\n")
    long_answer = " ".join(["The build log shows the TypeScript error again and the fix is to pin the version."] * 12)
    write_omp_session(env.omp, [user(TECH_PROMPT), assistant(long_answer)] * 3, session_id="s1")
    summary, _ = env.run()
    candidates = env.rows("candidates")
    assert len(candidates) >= 3
    assert all(len(c["text"]) <= 1000 for c in candidates)
    assert sum(len(c["text"]) for c in candidates) <= 3000
    (row,) = env.rows("manifest", tool="omp")
    assert row["truncated"] is True and summary["truncated_sources"] == 1


def test_a_pasted_log_over_the_budget_keeps_the_turns_after_it(env: IngestEnv) -> None:
    paste = log_paste(2_800)  # about 300 KB: over the 120,000-character budget, under the reader's cap
    later = [tech_turn(f"{TECH_PROMPT} ({i})", f"{TECH_ANSWER} ({i})") for i in range(6)]
    messages = [user(f"The deploy fails, here is the error log:\n{paste}"), assistant(TECH_ANSWER)]
    write_omp_session(env.omp, messages + [m for turn in later for m in turn], session_id="s1")
    summary, _ = env.run()
    candidates = env.rows("candidates")
    assert sorted({c["turn_index"] for c in candidates}) == list(range(7))
    assert sum(len(c["text"]) for c in candidates) <= 120_000
    assert sum(c["turn_index"] == 0 for c in candidates) > 10  # most of the budget is still the paste's
    (row,) = env.rows("manifest", tool="omp")
    assert row["truncated"] is True and summary["truncated_sources"] == 1


def test_a_prompt_over_the_readers_cap_leaves_its_reply_answering_it_not_the_turn_before(env: IngestEnv) -> None:
    paste = log_paste(6_000)  # about 570 KB: over the reader's cap (4 × max_text) on its own
    reply = "The 503s in that log are the upstream timing out: the build of the api image fails to start it."
    turns = [tech_turn(f"{TECH_PROMPT} ({i})", f"{TECH_ANSWER} ({i})") for i in range(3)]
    messages = [m for turn in turns for m in turn]
    messages += [user(f"Here is the whole log:\n{paste}"), assistant(reply), *tech_turn()]
    write_omp_session(env.omp, messages, session_id="s1")
    env.run()
    candidates = env.rows("candidates")
    (answering,) = [c for c in candidates if reply in c["text"]]
    assert answering["turn_index"] == 3
    assert answering["user_goal"].startswith("[a message of ") and "not kept" in answering["user_goal"]
    assert all(c["turn_index"] != 2 or reply not in c["text"] for c in candidates)
    assert "api.request" not in "".join(c["text"] for c in candidates)
    assert sorted({c["turn_index"] for c in candidates}) == [0, 1, 2, 3, 4]
    (row,) = env.rows("manifest", tool="omp")
    assert row["truncated"] is True


def test_malformed_prior_rows_are_skipped_and_counted(env: IngestEnv) -> None:
    omp_session(env)
    env.run()
    with (env.out / "manifest.jsonl").open("a") as fh:
        fh.write('{"source_key": 5}\nnot json at all\n{"truncated": \n')
    with (env.out / "candidates.jsonl").open("ab") as fh:
        fh.write(b"\xff\xfe garbage\n")
    summary, _ = env.run()
    assert summary["malformed_prior_rows"] == 4
    assert summary["unchanged"] == 1
    summary, _ = env.run()
    assert summary["malformed_prior_rows"] == 0


# The reference's summary keys, in its order, minus its cluster counters (see docs/ingest.md).
REFERENCE_SUMMARY_KEYS = [
    "run_id",
    "started_at",
    "finished_at",
    "dry_run",
    "discovered",
    "processed",
    "unchanged",
    "skipped",
    "failed",
    "candidates",
    "rejected",
    "duplicates",
    "duplicate_code_blocks",
    "duplicate_error_logs",
    "errors",
]


def test_summary_has_the_reference_keys_then_derived_filter_counts_and_settings(env: IngestEnv) -> None:
    omp_session(env)
    summary, _ = env.run(write=False)
    keys = list(summary)
    assert keys[: len(REFERENCE_SUMMARY_KEYS)] == REFERENCE_SUMMARY_KEYS
    assert {"derived_excluded", "internal_filtered", "carried_forward", "pruned", "malformed_prior_rows"} <= set(keys)
    assert summary["derived_filter"]["enabled"] is True and summary["derived_filter"]["threshold"] == 0.8
    assert summary["started_at"] <= summary["finished_at"] and summary["run_id"].startswith("kb-ingest-")
    disabled, _ = env.run("--no-derived-filter", write=False)
    assert disabled["derived_filter"]["enabled"] is False


def test_run_ids_are_unique(env: IngestEnv) -> None:
    ids = {env.run(write=False)[0]["run_id"] for _ in range(3)}
    assert len(ids) == 3


def test_unknown_flag_is_a_usage_error(env: IngestEnv) -> None:
    result = run_kb(*env.args("--frobnicate"))
    assert result.code == 2
    assert "frobnicate" in result.err and not result.out


def test_no_derived_filter_warns_loudly_and_is_recorded(env: IngestEnv) -> None:
    omp_session(env)
    summary, result = env.run("--no-derived-filter", write=False)
    assert "derived filter DISABLED" in result.err
    assert summary["derived_filter"]["enabled"] is False


def test_missing_stores_give_one_skipped_unavailable_row_each_not_a_failure(env: IngestEnv) -> None:
    omp_session(env)  # a user with OMP only: the other agents' stores do not exist
    for _ in range(2):  # and say so on every run, never "unchanged"
        summary, _ = env.run()
        unavailable = env.rows("manifest", format="unavailable")
        assert sorted(r["tool"] for r in unavailable) == [
            "aider",
            "claude",
            "codex",
            "copilot",
            "cursor",
            "gemini",
            "opencode",
        ]
        assert {(r["parse_status"], r["skip_reason"], r["error"]) for r in unavailable} == {
            ("skipped", "source_store_unavailable", "")
        }
        assert {r["reason"] for r in env.rows("rejected")} == {"source_store_unavailable"}
        assert (summary["failed"], summary["errors"], summary["skipped"]) == (0, 0, 7)
        assert summary["candidates"] == 1


def test_an_unreadable_store_fails_and_is_retried(env: IngestEnv) -> None:
    env.opencode_db.parent.mkdir(parents=True)
    env.opencode_db.write_bytes(b"this is not a database, " * 100)
    for _ in range(2):
        summary, _ = env.run()
        (row,) = env.rows("manifest", tool="opencode")
        assert row["parse_status"] == "failed" and row["error"].startswith("opencode_db_unreadable:")
        assert summary["failed"] == 1 and summary["unchanged"] == 0


def test_output_dir_flag_moves_the_ledgers(env: IngestEnv) -> None:
    omp_session(env)
    other = env.root / "elsewhere"
    env.run("--output-dir", str(other))
    assert (other / "manifest.jsonl").is_file() and not env.out.exists()


NOTE_BODY = (
    "Pinning the TypeScript compiler in CI keeps the build reproducible: the lockfile records the exact "
    "version, the cache key includes it, and an upgrade becomes a reviewed change instead of a surprise. "
    "When the build breaks after an upgrade, compare the compiler versions first."
)


def test_a_record_quoting_a_wiki_page_is_excluded_and_logged(env: IngestEnv) -> None:
    note = env.root / "src/content/note/en/pin-typescript.md"
    note.parent.mkdir(parents=True)
    note.write_text(
        "---\ntitle: Pin TypeScript\nkind: concept\nstatus: active\nsources: [x]\n---\n\n" + NOTE_BODY + "\n"
    )
    write_omp_session(env.omp, [user(TECH_PROMPT), assistant(NOTE_BODY), *tech_turn()], session_id="s1")
    summary, _ = env.run()
    assert summary["derived_excluded"] == 1 and summary["derived_filter"]["enabled"] is True
    (event,) = env.rows("events")
    assert event["event"] == "derived_excluded" and event["role"] == "assistant"
    assert event["artifact"]["path"].endswith("pin-typescript.md") and event["overlap"] > event["threshold"]
    assert event["source_key"] == env.rows("manifest", tool="omp")[0]["source_key"]
    assert all("lockfile records the exact" not in c["text"] for c in env.rows("candidates"))
    # Reused on the next run, the event stays in the ledger.
    summary, _ = env.run()
    assert summary["unchanged"] == 1 and summary["derived_excluded"] == 1


def test_carried_forward_text_from_older_rules_is_redacted_again(env: IngestEnv) -> None:
    omp_session(env)
    env.run()
    (candidate,) = env.rows("candidates")
    home = "/home/" + "bob" + "smith"
    text = candidate["text"] + f"\n[assistant] Logs are in {home}/logs/build.log"
    env.write_rows("candidates", [{**candidate, "text": text}])
    env.write_rows("manifest", [{**r, "redaction_status": "none:v5"} for r in env.rows("manifest")])
    for path in sorted(env.omp.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    summary, _ = env.run()
    assert summary["carried_forward"] == 1
    (carried,) = env.rows("candidates")
    assert home not in carried["text"] and "<PRIVATE_PATH>" in carried["text"]
    assert "<PRIVATE_PATH>" in carried["redactions"]
    (row,) = env.rows("manifest", tool="omp", record_type="session")
    assert row["redaction_status"] == f"redacted:{REDACTION_VERSION}"


def test_read_unit_runs_in_a_worker_process(env: IngestEnv) -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from kbtools.cli.common import open_kb
    from kbtools.ingest import sources
    from kbtools.ingest.candidates import NoteIndex
    from kbtools.ingest.extract import ProcessContext, read_unit
    from kbtools.ingest.pipeline import IngestRequest, load_derived_filter
    from kbtools.redact import Redactor

    omp_session(env)
    config, layout = open_kb(env.root)
    settings = sources.resolve_settings(config, {"omp_sessions": env.omp})
    redactor = Redactor(config.redaction)
    derived, _, _ = load_derived_filter(IngestRequest(config, layout, settings, env.out), redactor)
    ctx = ProcessContext(
        settings, redactor, derived, NoteIndex.load(layout.note_root), {}, 8_000, "2026-01-01T00:00:00.000Z"
    )
    (ref,) = [r for r in sources.discover_all(settings) if r.tool == "omp"]
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        remote = pool.submit(read_unit, ref, ctx).result()
    local = read_unit(ref, ctx)
    assert remote == local and remote.rows is not None and len(remote.rows.candidate_lines) == 1


def test_a_source_changed_during_read_yields_no_candidates_and_fails(env: IngestEnv) -> None:
    from kbtools.ingest.candidates import NoteIndex, SourceMeta
    from kbtools.ingest.extract import ProcessContext, build_rows
    from kbtools.ingest.model import Record, SourceSettings, SourceUnit
    from kbtools.redact import Redactor

    records = [Record("user", TECH_PROMPT, "", 0), Record("assistant", TECH_ANSWER, "", 1)]
    unit = SourceUnit(
        "omp", "session", "jsonl", "x", "s", "p", "", "", "h" * 64, records, error="source_changed_during_read"
    )
    ctx = ProcessContext(SourceSettings(), Redactor(), None, NoteIndex(), {}, 8_000, "")
    meta = SourceMeta("k" * 64, "s", "p", "omp", "session", "jsonl", "", "")
    rows = build_rows(unit, meta, unit.error, ctx)
    assert rows.candidate_lines == []
    assert rows.manifest["parse_status"] == "failed"
    assert [r["reason"] for r in rows.rejected] == ["malformed_or_unavailable_source"]
    # The same unit read cleanly gives its candidate.
    unit.error = ""
    assert len(build_rows(unit, meta, "", ctx).candidate_lines) == 1


def test_the_same_session_at_two_paths_is_one_source(env: IngestEnv) -> None:
    path = omp_session(env)
    copy = env.omp / "moved" / path.name
    copy.parent.mkdir()
    copy.write_bytes(path.read_bytes())
    summary, _ = env.run()
    assert summary["discovered"] >= 2
    (row,) = env.rows("manifest", tool="omp")
    assert summary["candidates"] == 1 and env.rows("candidates")[0]["source_key"] == row["source_key"]
    path.unlink()  # moved: still the same source, reused
    summary, _ = env.run()
    assert summary["unchanged"] == 1 and summary["processed"] == 0


def test_two_files_sharing_an_identity_are_both_kept_and_both_reused(env: IngestEnv) -> None:
    # The reference keyed prior rows by identity alone: one of the two was reprocessed every run.
    write_omp_session(env.omp, tech_turn(), session_id="same", cwd="/p", dir_name="a")
    write_omp_session(
        env.omp, [user(TECH_PROMPT + " (fork)"), assistant(TECH_ANSWER)], session_id="same", cwd="/p", dir_name="b"
    )
    summary, _ = env.run()
    assert (summary["processed"], summary["candidates"]) == (2, 2)
    summary, _ = env.run()
    assert (summary["unchanged"], summary["processed"], summary["candidates"]) == (2, 0, 2)
    assert len(env.rows("manifest", tool="omp")) == 2


def test_progress_goes_to_stderr_only_when_it_is_a_terminal(env: IngestEnv) -> None:
    pytest.importorskip("pty")
    omp_session(env)
    code, out, terminal = run_on_terminal([*kb_command(), *env.args(write=False)], env.root)
    assert code == 0
    (line,) = out.decode().splitlines()  # stdout stays one JSON line
    summary = json.loads(line)
    assert summary["dry_run"] is True
    assert f"kb ingest: {summary['discovered']} source(s)".encode() in terminal
    _, piped = env.run(write=False)
    assert "kb ingest:" not in piped.err


def test_jobs_give_the_same_ledgers_as_one_process(env: IngestEnv, tmp_path: Path) -> None:
    # Every session is aged: a file younger than the racy-mtime window gets no stat key, and
    # whether the second run still sees it as young would depend on the machine's speed.
    for i in range(12):
        age(write_omp_session(env.omp, [user(f"{TECH_PROMPT} ({i})"), assistant(TECH_ANSWER)], session_id=f"s{i}"))
    age(write_omp_session(env.omp, tech_turn(), session_id="dup"))
    age(write_omp_session(env.omp, tech_turn(), session_id="dup2"))  # same turn: marked as a duplicate
    one, two = tmp_path / "one", tmp_path / "two"
    env.run("--output-dir", str(one))
    summary, _ = env.run("--output-dir", str(two), "--jobs", "2")
    assert summary["processed"] == 14 and summary["duplicates"] == 1
    for name in ("manifest", "candidates", "rejected", "events"):
        strip = [{k: v for k, v in r.items() if k != "run_at"} for r in read_jsonl(one / f"{name}.jsonl")]
        assert strip == [{k: v for k, v in r.items() if k != "run_at"} for r in read_jsonl(two / f"{name}.jsonl")]


@CACHED_ONLY
def test_an_unchanged_file_is_reused_without_being_read(env: IngestEnv) -> None:
    path = omp_session(env)
    age(path)
    env.run()
    (row,) = env.rows("manifest", tool="omp")
    assert row["locator_key"] and row["stat_key"] and "omp-sessions" not in json.dumps(row)
    summary, _ = env.run()
    assert summary["reused_unread"] == 1 and summary["unchanged"] == 1
    # The stored candidates are still re-checked.
    (candidate,) = env.rows("candidates")
    env.write_rows("candidates", [{**candidate, "text": "[user] _thinking_: stale internal transcript"}])
    summary, _ = env.run()
    assert summary["reused_unread"] == 1 and summary["candidates"] == 0
    # A changed file is read again.
    with path.open("a") as fh:
        fh.write(
            json.dumps(
                {
                    "type": "message",
                    "message": {
                        "role": "assistant",
                        "content": [{"type": "text", "text": "Verified: the Docker build passes after the fix."}],
                    },
                }
            )
            + "\n"
        )
    summary, _ = env.run()
    assert summary["reused_unread"] == 0 and summary["processed"] == 1


def test_a_recently_modified_file_is_not_cached(env: IngestEnv) -> None:
    omp_session(env)  # written just now: its mtime could still change within the same tick
    env.run()
    (row,) = env.rows("manifest", tool="omp")
    assert row["stat_key"] is None
    summary, _ = env.run()
    assert summary["reused_unread"] == 0 and summary["unchanged"] == 1


def test_an_unchanged_rerun_writes_the_candidate_ledger_back_byte_for_byte(env: IngestEnv) -> None:
    write_omp_session(env.omp, [*tech_turn(), *tech_turn()], session_id="s1")
    env.run()
    before = (env.out / "candidates.jsonl").read_bytes()
    (row,) = env.rows("manifest", tool="omp")
    assert len(row["rows_digest"]) == 64
    env.run()
    assert (env.out / "candidates.jsonl").read_bytes() == before
    assert env.rows("manifest", tool="omp")[0]["rows_digest"] == row["rows_digest"]
