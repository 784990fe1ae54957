"""Extraction memos: a grown source is extracted again from what is new, with the same rows."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

from kbtools.ingest.candidates import NoteIndex, SourceMeta
from kbtools.ingest.extract import ProcessContext, build_rows, pack_rows
from kbtools.ingest.memo import MEMO_FILE, MEMO_INDEX, MemoStore, SourceMemo
from kbtools.ingest.model import Record, SourceSettings, SourceUnit
from kbtools.ingest.pipeline import redaction_key
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
        prompt = (
            f"Step {n}: why does the TypeScript build fail with error TS2307 after the upgrade? "
            "Please diagnose the root cause and propose a fix we can verify."
        )
        if n % 2:
            prompt += " " + plant(make_secret("github-classic", rng), "dotenv", name="GITHUB_TOKEN")
            prompt += f" The log is in /home/dana/work/build-{n}.log."
        answer = (
            f"Turn {n}: the root cause is a missing path alias in tsconfig.json. The fix: add it to "
            "compilerOptions.paths, then run `pnpm build` to verify the error is gone."
        )
        records += [
            Record("user", prompt, f"2026-03-01T10:{n:02d}:00.000Z", 2 * n),
            Record("assistant", answer, f"2026-03-01T10:{n:02d}:30.000Z", 2 * n + 1),
        ]
    return records


def _unit(records: list[Record]) -> SourceUnit:
    return SourceUnit(
        "omp",
        "session",
        "jsonl",
        "x",
        "s",
        "p",
        records[0].created_at,
        records[-1].created_at,
        f"{len(records):064d}",
        records,
    )


def _meta(key: str, records: list[Record]) -> SourceMeta:
    return SourceMeta(
        key * 64, "s" * 64, "p" * 64, "omp", "session", "jsonl", records[0].created_at, records[-1].created_at
    )


def _ctx(redactor: Redactor) -> ProcessContext:
    return ProcessContext(SourceSettings(), redactor, None, NoteIndex(), {}, 8_000, 120_000, "")


def _extract(
    records: list[Record], key: str, memo: SourceMemo | None, redactor: Redactor | None = None
) -> tuple[dict[str, Any], list[bytes]]:
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
    return {
        name: [{k: v for k, v in row.items() if k != "run_at"} for row in read_jsonl(out / f"{name}.jsonl")]
        for name in ("manifest", "candidates", "rejected", "events")
    }


def test_a_grown_session_is_ingested_the_same_with_and_without_memos(env: IngestEnv, tmp_path: Path) -> None:
    turns = [
        tech_turn(
            f"Step {n}: why does the TypeScript build fail with error TS2307 after the upgrade? "
            "Please diagnose the root cause and propose a fix we can verify."
        )
        for n in range(4)
    ]
    session = dict(session_id="grows", cwd="/home/a/proj")
    write_omp_session(env.omp, [m for turn in turns[:3] for m in turn], **session)  # type: ignore[arg-type]
    env.run()
    (first,) = env.rows("manifest", tool="omp")
    assert _stored(env.out) == {first["source_key"]}

    write_omp_session(env.omp, [m for turn in turns for m in turn], **session)  # type: ignore[arg-type]
    without = tmp_path / "without-memos"
    shutil.copytree(env.out, without)
    (without / MEMO_INDEX).unlink()
    env.run()
    env.run("--output-dir", str(without))

    assert _ledgers(env.out) == _ledgers(without)
    (grown,) = env.rows("manifest", tool="omp")
    assert grown["candidate_count"] == 4 and grown["source_key"] != first["source_key"]
    # The superseded version's memo is no longer kept.
    assert _stored(env.out) == {grown["source_key"]}


def _stored(out: Path) -> set[str]:
    """The source_keys with a readable memo in ``out``."""
    store = MemoStore.open(out, redaction_key(Redactor()))
    try:
        return {key for key in store.index if store.get(key)}
    finally:
        store.close()


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


def _blob(n: int, size: int = 100) -> bytes:
    return bytes([n % 251]) * size


def _reopen(out: Path, rules: str = "rules-1") -> MemoStore:
    return MemoStore.open(out, rules, purge=True)


def _write_run(out: Path, memos: dict[str, bytes], rules: str = "rules-1", *, compact: bool = False) -> None:
    """What a --write run does with the store: keeps each source's memo (b"": its old one), commits."""
    store = _reopen(out, rules)
    for key, blob in memos.items():
        store.keep(key, blob)
    store.commit(compact=compact)
    store.close()


def test_the_store_keeps_new_memos_and_carries_old_ones_across_runs(tmp_path: Path) -> None:
    store = _reopen(tmp_path)
    for n in range(3):
        store.keep(f"k{n}", _blob(n))
    store.keep("nothing", b"")  # no memo, none before: not kept
    store.commit()
    store.close()

    store = _reopen(tmp_path)
    assert {key: store.get(key) for key in store.index} == {f"k{n}": _blob(n) for n in range(3)}
    store.keep("k0", b"")  # unchanged: its old memo stays
    store.keep("k3", _blob(3))  # new
    store.keep("k1", _blob(9))  # a new version under the same key
    store.commit()  # k2 is gone from the ledgers
    store.close()

    store = _reopen(tmp_path)
    assert {key: store.get(key) for key in store.index} == {"k0": _blob(0), "k1": _blob(9), "k3": _blob(3)}
    assert (tmp_path / MEMO_FILE).stat().st_size == 500  # appended, not rewritten (small)
    store.close()


def test_a_damaged_memo_or_a_replaced_file_is_a_miss_and_a_copied_folder_keeps_its_memos(tmp_path: Path) -> None:
    out = tmp_path / "ledgers"
    out.mkdir()
    store = _reopen(out)
    for n in range(3):
        store.keep(f"k{n}", _blob(n))
    store.commit()
    store.close()
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)

    with (out / MEMO_FILE).open("r+b") as memo:
        memo.seek(150)
        memo.write(b"x")  # inside k1's memo
    store = _reopen(out)
    assert [store.get(f"k{n}") for n in range(3)] == [_blob(0), b"", _blob(2)]
    store.close()

    (out / MEMO_FILE).write_bytes(b"y" * 300)  # another file altogether
    store = _reopen(out)
    assert [store.get(f"k{n}") for n in range(3)] == [b"", b"", b""]
    store.close()

    store = _reopen(copy)
    assert [store.get(f"k{n}") for n in range(3)] == [_blob(n) for n in range(3)]
    store.close()


def test_new_memos_reach_the_file_as_the_run_goes_and_an_unfinished_run_loses_nothing_older(tmp_path: Path) -> None:
    _write_run(tmp_path, {"old": _blob(1)})

    store = _reopen(tmp_path)
    big = 300_000
    for n in range(5):
        store.keep(f"new{n}", _blob(n, big))
    assert (tmp_path / MEMO_FILE).stat().st_size >= 1 << 20  # flushed before commit: memory stays flat
    store.close()  # killed before commit: the index is the old one

    store = _reopen(tmp_path)
    assert list(store.index) == ["old"] and store.get("old") == _blob(1)
    store.keep("old", b"")
    store.keep("next", _blob(7))  # appended after what the unfinished run left
    store.commit()
    store.close()
    store = _reopen(tmp_path)
    assert {key: store.get(key) for key in store.index} == {"old": _blob(1), "next": _blob(7)}
    store.close()


def test_a_file_mostly_of_unused_memos_is_written_anew(tmp_path: Path) -> None:
    store = _reopen(tmp_path)
    for n in range(8):
        store.keep(f"k{n}", _blob(n, 300_000))
    store.commit()
    store.close()
    assert (tmp_path / MEMO_FILE).stat().st_size == 2_400_000

    store = _reopen(tmp_path)
    store.keep("k0", b"")
    store.keep("k9", _blob(9, 300_000))  # the rest left the ledgers
    store.commit()
    store.close()

    assert (tmp_path / MEMO_FILE).stat().st_size == 600_000
    store = _reopen(tmp_path)
    assert {key: store.get(key) for key in store.index} == {"k0": _blob(0, 300_000), "k9": _blob(9, 300_000)}
    store.close()


def test_a_rerun_recalls_a_grown_sessions_old_turns_from_the_prior_ledger(env: IngestEnv) -> None:
    """Through the whole pipeline (worker processes included): the old turns' candidates are
    the prior ledger's lines — one edited in place here (its topic) to tell a recall from a build."""
    turns = [
        tech_turn(
            f"Step {n}: why does the TypeScript build fail with error TS2307 after the upgrade? "
            "Please diagnose the root cause and propose a fix we can verify."
        )
        for n in range(3)
    ]
    session = dict(session_id="grows", cwd="/home/a/proj")
    write_omp_session(env.omp, [m for turn in turns[:2] for m in turn], **session)  # type: ignore[arg-type]
    env.run()
    path = env.out / "candidates.jsonl"
    rows = read_jsonl(path)
    assert [r["turn_index"] for r in rows] == [0, 1]
    rows[0]["topic"] = "recalled, not built"
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows), encoding="utf-8")

    write_omp_session(env.omp, [m for turn in turns for m in turn], **session)  # type: ignore[arg-type]
    env.run()
    assert [(r["turn_index"], r["topic"] == "recalled, not built") for r in env.rows("candidates")] == [
        (0, True),
        (1, False),
        (2, False),
    ]


def test_memos_made_under_other_redaction_rules_are_never_used_and_a_write_run_removes_them(tmp_path: Path) -> None:
    _write_run(tmp_path, {"k0": _blob(0)}, "rules-1")

    dry = MemoStore.open(tmp_path, "rules-2")  # a dry run: ignores them, removes nothing
    assert dry.index == {} and dry.get("k0") == b""
    dry.close()
    assert (tmp_path / MEMO_FILE).exists() and (tmp_path / MEMO_INDEX).exists()

    write = _reopen(tmp_path, "rules-2")  # a --write run: their text leaves the disk at once
    assert write.index == {} and not (tmp_path / MEMO_FILE).exists() and not (tmp_path / MEMO_INDEX).exists()
    write.keep("k1", _blob(1))
    write.commit()
    write.close()
    store = _reopen(tmp_path, "rules-2")
    assert {key: store.get(key) for key in store.index} == {"k1": _blob(1)}
    assert (tmp_path / MEMO_FILE).stat().st_size == 100
    store.close()


def test_a_run_that_pruned_sources_writes_the_memo_file_anew_without_them(tmp_path: Path) -> None:
    _write_run(tmp_path, {f"k{n}": _blob(n) for n in range(3)})
    _write_run(tmp_path, {"k1": b""}, compact=True)  # k0 and k2 were pruned
    assert (tmp_path / MEMO_FILE).read_bytes() == _blob(1)


def test_a_store_that_cannot_write_keeps_no_memo_in_memory_and_promises_none(tmp_path: Path) -> None:
    _write_run(tmp_path, {"old": _blob(1)})
    store = _reopen(tmp_path)
    with (tmp_path / MEMO_FILE).open("ab") as memo:
        memo.write(b"written by someone else")  # the offsets it would write at no longer hold
    for n in range(12):
        store.keep(f"new{n}", _blob(n, 200_000))
    store.keep("old", b"")
    store.commit()
    store.close()
    assert store._pending == []  # nothing piles up once writing failed
    store = _reopen(tmp_path)
    assert list(store.index) == ["old"] and store.get("old") == _blob(1)  # the previous index stands
    store.close()


def test_a_write_run_after_a_redaction_settings_change_leaves_no_memo_of_the_old_rules(env: IngestEnv) -> None:
    write_omp_session(env.omp, tech_turn(), session_id="s1")
    env.run()
    assert (env.out / MEMO_FILE).exists()
    (env.root / ".kb.yaml").write_text("redaction:\n  private_names: [zebulon]\n", encoding="utf-8")
    env.run(write=False)
    assert (env.out / MEMO_FILE).exists()  # a dry run changes nothing
    env.run()
    assert not (env.out / MEMO_FILE).exists()  # nothing was extracted under the new rules
