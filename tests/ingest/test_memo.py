"""Extraction memos: a grown source is extracted again from what is new, with the same rows."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

from kbtools.ingest.candidates import NoteIndex, SourceMeta
from kbtools.ingest.memo import MEMO_DIR, SourceMemo
from kbtools.ingest.model import Record, SourceSettings, SourceUnit
from kbtools.ingest.pipeline import ProcessContext, build_rows, pack_rows
from kbtools.redact import Redactor
from kbtools.redact.engine import Redacted
from tests.ingest.conftest import IngestEnv, read_jsonl, tech_turn
from tests.testing.secrets import make_secret, plant
from tests.testing.sessions import write_omp_session

CONTEXT = "context-1"


class CountingRedactor(Redactor):
    """The real redactor, counting the messages it is asked to redact."""

    calls = 0

    def redact(self, text: str) -> Redacted:
        self.calls += 1
        return super().redact(text)


def _turns(count: int, rng: random.Random) -> list[Record]:
    """``count`` technical turns; every other one carries a secret and a private path."""
    records: list[Record] = []
    for n in range(count):
        prompt = (f"Step {n}: why does the TypeScript build fail with error TS2307 after the upgrade? "
                  "Please diagnose the root cause and propose a fix we can verify.")
        if n % 2:
            prompt += " " + plant(make_secret("github-classic", rng), "dotenv", name="GITHUB_TOKEN")
            prompt += f" The log is in /home/dana/work/build-{n}.log."
        answer = (f"Turn {n}: the root cause is a missing path alias in tsconfig.json. The fix: add it to "
                  "compilerOptions.paths, then run `pnpm build` to verify the error is gone.")
        records += [Record("user", prompt, f"2026-03-01T10:{n:02d}:00.000Z", 2 * n),
                    Record("assistant", answer, f"2026-03-01T10:{n:02d}:30.000Z", 2 * n + 1)]
    return records


def _unit(records: list[Record]) -> SourceUnit:
    return SourceUnit("omp", "session", "jsonl", "x", "s", "p", records[0].created_at, records[-1].created_at,
                      f"{len(records):064d}", records)


def _meta(key: str, records: list[Record]) -> SourceMeta:
    return SourceMeta(key * 64, "s" * 64, "p" * 64, "omp", "session", "jsonl", records[0].created_at,
                      records[-1].created_at)


def _ctx(redactor: Redactor) -> ProcessContext:
    return ProcessContext(SourceSettings(), redactor, None, NoteIndex(), {}, 8_000, 120_000, "")


def _extract(records: list[Record], key: str, memo: SourceMemo | None,
             redactor: Redactor | None = None) -> tuple[dict[str, Any], list[bytes]]:
    rows = pack_rows(build_rows(_unit(records), _meta(key, records), "", _ctx(redactor or Redactor()), memo))
    return rows.manifest, [line for line in rows.candidate_lines if line is not None]


def _grown(old_turns: int = 4, new_turns: int = 2) -> tuple[list[Record], list[Record], SourceMemo, list[bytes]]:
    """A source of ``old_turns`` extracted with a memo, then grown by ``new_turns``: the
    old and new records, the old memo and the old candidate lines."""
    records = _turns(old_turns + new_turns, random.Random(3))
    old = records[: 2 * old_turns]
    first = SourceMemo(CONTEXT, _meta("a", old))
    _, old_lines = _extract(old, "a", first)
    return old, records, first, old_lines


def test_a_grown_source_recalls_its_old_turns_and_redacts_only_its_new_messages() -> None:
    old, records, first, old_lines = _grown()
    fresh_manifest, fresh_lines = _extract(records, "b", None)

    redactor = CountingRedactor()
    memo = SourceMemo(CONTEXT, _meta("b", records), first.blob(), lambda: old_lines)
    manifest, lines = _extract(records, "b", memo, redactor)

    assert (manifest, lines) == (fresh_manifest, fresh_lines)
    assert len(lines) == 6 and sum(bool(json.loads(line)["redactions"]) for line in lines) == 3
    assert memo.recalled_turns == 4 and memo.recalled_messages == 8
    assert redactor.calls == 4  # the two new turns' messages only
    # What this version records serves the next one the same way.
    again = SourceMemo(CONTEXT, _meta("c", records), memo.blob(), lambda: lines)
    assert _extract(records, "c", again) == _extract(records, "c", None)
    assert again.recalled_turns == 6


def test_a_memo_of_another_context_is_not_used() -> None:
    old, records, first, old_lines = _grown()
    memo = SourceMemo("context-2", _meta("b", records), first.blob(), lambda: old_lines)
    assert _extract(records, "b", memo) == _extract(records, "b", None)
    assert memo.recalled_turns == 0 and memo.recalled_messages == 0


def test_a_turn_whose_lines_are_not_as_recorded_is_built_again() -> None:
    old, records, first, old_lines = _grown()
    # The first turn's line is gone, the second's fingerprint differs, the third is damaged.
    altered = [json.loads(line) for line in old_lines[1:]]
    altered[0]["fingerprint"] = "0" * 64
    lines = [json.dumps(row).encode() + b"\n" for row in altered]
    lines[1] = lines[1][:40] + b"\n"
    memo = SourceMemo(CONTEXT, _meta("b", records), first.blob(), lambda: lines)
    assert _extract(records, "b", memo) == _extract(records, "b", None)
    assert memo.recalled_turns == 1  # the fourth only


def test_a_turn_the_budget_now_cuts_is_built_again_and_cut_the_same_way() -> None:
    old, records, first, old_lines = _grown()
    ctx_small = ProcessContext(SourceSettings(), Redactor(), None, NoteIndex(), {}, 8_000, 700, "")
    memo = SourceMemo(CONTEXT, _meta("b", records), first.blob(), lambda: old_lines)
    got = build_rows(_unit(records), _meta("b", records), "", ctx_small, memo)
    want = build_rows(_unit(records), _meta("b", records), "", ctx_small)
    assert got == want and got.manifest["truncated"] is True
    assert 0 < len(got.candidates) < 6


def test_a_damaged_memo_is_a_miss() -> None:
    old, records, first, old_lines = _grown()
    for blob in (b"", b"\x00garbage", first.blob()[:-3]):
        memo = SourceMemo(CONTEXT, _meta("b", records), blob, lambda: old_lines)
        assert _extract(records, "b", memo) == _extract(records, "b", None)
        assert memo.recalled_turns == 0


def _ledgers(out: Path) -> dict[str, list[dict[str, Any]]]:
    return {name: [{k: v for k, v in row.items() if k != "run_at"} for row in read_jsonl(out / f"{name}.jsonl")]
            for name in ("manifest", "candidates", "rejected", "events")}


def test_a_grown_session_is_ingested_the_same_with_and_without_memos(env: IngestEnv, tmp_path: Path) -> None:
    turns = [tech_turn(f"Step {n}: why does the TypeScript build fail with error TS2307 after the upgrade? "
                       "Please diagnose the root cause and propose a fix we can verify.") for n in range(4)]
    session = dict(session_id="grows", cwd="/home/a/proj")
    write_omp_session(env.omp, [m for turn in turns[:3] for m in turn], **session)  # type: ignore[arg-type]
    env.run()
    memos = env.out / MEMO_DIR
    (first,) = env.rows("manifest", tool="omp")
    assert [p.name for p in memos.iterdir()] == [first["source_key"]]

    write_omp_session(env.omp, [m for turn in turns for m in turn], **session)  # type: ignore[arg-type]
    without = tmp_path / "without-memos"
    shutil.copytree(env.out, without)
    shutil.rmtree(without / MEMO_DIR)
    env.run()
    env.run("--output-dir", str(without))

    assert _ledgers(env.out) == _ledgers(without)
    (grown,) = env.rows("manifest", tool="omp")
    assert grown["candidate_count"] == 4 and grown["source_key"] != first["source_key"]
    # The superseded version's memo is gone once the run committed.
    assert [p.name for p in memos.iterdir()] == [grown["source_key"]]


def test_a_dry_run_stores_no_memos(env: IngestEnv) -> None:
    write_omp_session(env.omp, tech_turn())
    env.run(write=False)
    assert not env.out.exists()


def test_a_turn_without_times_is_recalled_only_while_the_source_times_it_falls_back_to_hold() -> None:
    records = [Record(r.role, r.text, "", r.index) for r in _turns(3, random.Random(4))]
    ctx = _ctx(Redactor())

    def meta(key: str, updated: str) -> SourceMeta:
        return SourceMeta(key * 64, "s" * 64, "p" * 64, "omp", "session", "jsonl", "2026-03-01T10:00:00.000Z", updated)

    first = SourceMemo(CONTEXT, meta("a", "2026-03-01T11:00:00.000Z"))
    old = pack_rows(build_rows(_unit(records), first.meta, "", ctx, first))
    old_lines = [line for line in old.candidate_lines if line is not None]
    for updated, recalled in (("2026-03-01T11:00:00.000Z", 3), ("2026-03-02T09:00:00.000Z", 0)):
        memo = SourceMemo(CONTEXT, meta("b", updated), first.blob(), lambda: old_lines)
        got = build_rows(_unit(records), memo.meta, "", ctx, memo)
        assert got == build_rows(_unit(records), memo.meta, "", ctx)
        assert {c["updated_at"] for c in got.candidates} == {updated} and memo.recalled_turns == recalled
