"""The search index of a first `kb ingest --write` built while the workers read
(kbtools.review.index_builder): the index equals the one built after the run, whatever
happens to the builder, the run or the ledger meanwhile."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kbtools.review import index_builder
from kbtools.review.index import INDEX_FILE, STAMP_FILE, IndexUpdate, _read_stamp, _stamp_text, update_index
from kbtools.review.index_builder import DRAFT_FILE, IndexDraft
from tests.testing.cli import kb_command, run_kb

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "sessions"
sys.path.insert(0, str(REPO / "bench"))

from corpus import generate, ingest_flags  # noqa: E402

# Every row of the index, as tests compare two of them (row ids are the ledger's order too).
TABLES = {
    "candidate": "SELECT * FROM candidate ORDER BY id",
    "features": "SELECT * FROM candidate_features ORDER BY id",
    "fts": "SELECT rowid, topic, goal, body, conclusions FROM candidate_fts ORDER BY rowid",
    "ledger_source": "SELECT * FROM ledger_source ORDER BY source_key",
    "posting": "SELECT hash, lead FROM cluster_posting ORDER BY hash, lead",
    "meta": "SELECT key, value FROM meta WHERE key != 'ledger_stamp' ORDER BY key",
}


def rows(index: Path) -> dict[str, list[tuple[Any, ...]]]:
    con = sqlite3.connect(index)
    try:
        return {name: con.execute(query).fetchall() for name, query in TABLES.items()}
    finally:
        con.close()


def normal_build(out: Path, run_id: str, tmp_path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """The rows the index of ``out``'s ledgers holds when built after the run (its own index
    set aside meanwhile): the same files, so ingest's ledger index vouches for them alike."""
    kept = tmp_path / "kept-index"
    kept.mkdir(exist_ok=True)
    for name in (INDEX_FILE, STAMP_FILE):
        os.replace(out / name, kept / name)
    try:
        update = update_index(out, run_id=run_id)
        assert update.rebuilt == "missing" and update.ledger_read
        return rows(out / INDEX_FILE)
    finally:
        for name in (INDEX_FILE, STAMP_FILE):
            os.replace(kept / name, out / name)


class Spy:
    """What the builder of each run did: the drafts started and what adopting them gave."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started: list[IndexDraft] = []
        self.adopted: list[IndexUpdate | None] = []
        start, adopt = IndexDraft.start, IndexDraft.adopt

        def spied_start(draft: IndexDraft, run_id: str, inherited: Any) -> int:
            self.started.append(draft)
            return start(draft, run_id, inherited)

        def spied_adopt(draft: IndexDraft, run_id: str) -> IndexUpdate | None:
            found = adopt(draft, run_id)
            self.adopted.append(found)
            return found

        monkeypatch.setattr(IndexDraft, "start", spied_start)
        monkeypatch.setattr(IndexDraft, "adopt", spied_adopt)


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Spy:
    return Spy(monkeypatch)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated store of every agent, 2 MB."""
    where = tmp_path_factory.mktemp("corpus")
    generate(where, total_bytes=2_000_000, seed=3)
    return where


def example_flags() -> list[str]:
    return [
        "--omp-sessions",
        str(EXAMPLES / "omp" / "agent" / "sessions"),
        "--codex-dir",
        str(EXAMPLES / "codex"),
        "--opencode-db",
        str(EXAMPLES / "opencode" / "opencode.db"),
        "--prompt-history",
        str(EXAMPLES / "opencode-state" / "prompt-history.jsonl"),
        "--claude-dir",
        str(EXAMPLES / "claude"),
    ]


def ingest(root: Path, out: Path, flags: list[str], *extra: str) -> dict[str, Any]:
    result = run_kb(
        "ingest", "--root", str(root), "--write", "--skip-hindsight", "--output-dir", str(out), *flags, *extra
    )
    assert result.code == 0, result.err
    summary: dict[str, Any] = json.loads(result.out.strip().splitlines()[-1])
    return summary


def assert_in_step(out: Path, run_id: str, tmp_path: Path) -> None:
    """The index is trusted and in step (nothing to do), holds what a build after the run
    holds, and no draft is left."""
    assert not list(out.glob(DRAFT_FILE + "*"))
    update = update_index(out, run_id=run_id)
    assert (update.rebuilt, update.added, update.removed) == ("", 0, 0)
    assert rows(out / INDEX_FILE) == normal_build(out, run_id, tmp_path)


@pytest.mark.parametrize("store", ["examples", "generated"])
def test_the_first_run_builds_the_index_the_normal_path_builds(
    store: str, corpus: Path, spy: Spy, tmp_path: Path
) -> None:
    flags = example_flags() if store == "examples" else ingest_flags(corpus)
    out = tmp_path / "out"
    summary = ingest(tmp_path, out, flags, "--jobs", "2")
    assert len(spy.started) == 1
    [update] = spy.adopted
    assert update is not None  # made of the draft
    assert update.added == summary["candidates"] > 0 and update.lines_read == update.added
    assert summary["clusters"]["clusters"] == update.clusters
    built = rows(out / INDEX_FILE)
    assert {
        run for (run,) in sqlite3.connect(out / INDEX_FILE).execute("SELECT DISTINCT first_seen FROM candidate")
    } == {summary["run_id"]}
    assert built["ledger_source"]  # ingest's ledger index vouched for the ledger: the source rows are there
    assert built == normal_build(out, summary["run_id"], tmp_path)
    assert_in_step(out, summary["run_id"], tmp_path)


def test_reruns_one_worker_and_dry_runs_start_no_builder(corpus: Path, spy: Spy, tmp_path: Path) -> None:
    out = tmp_path / "out"
    ingest(tmp_path, out, ingest_flags(corpus), "--jobs", "2")
    assert len(spy.started) == 1
    again = ingest(tmp_path, out, ingest_flags(corpus), "--jobs", "2")
    assert len(spy.started) == 1 and spy.adopted[-1] is None
    assert again["processed"] == 0
    ingest(tmp_path, tmp_path / "one", ingest_flags(corpus), "--jobs", "1")
    dry = run_kb(
        "ingest",
        "--root",
        str(tmp_path),
        "--skip-hindsight",
        "--output-dir",
        str(tmp_path / "dry"),
        "--jobs",
        "2",
        *ingest_flags(corpus),
    )
    assert dry.code == 0, dry.err
    assert len(spy.started) == 1
    assert not (tmp_path / "dry").exists()


def feeds(monkeypatch: pytest.MonkeyPatch, each: Callable[[IndexDraft, int], None]) -> None:
    """``each(draft, n)`` before the n-th feed of a source's lines (from 0)."""
    feed = IndexDraft.feed
    count = iter(range(1 << 30))

    def spied(draft: IndexDraft, lines: Any) -> None:
        each(draft, next(count))
        feed(draft, lines)

    monkeypatch.setattr(IndexDraft, "feed", spied)


def test_a_builder_killed_mid_run_leaves_the_index_to_the_normal_path(
    corpus: Path, spy: Spy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def kill_at_the_tenth(draft: IndexDraft, n: int) -> None:
        if n == 10:
            os.kill(draft._pid, signal.SIGKILL)
            time.sleep(0.05)  # gone before the next lines are sent

    feeds(monkeypatch, kill_at_the_tenth)
    out = tmp_path / "out"
    summary = ingest(tmp_path, out, ingest_flags(corpus), "--jobs", "2")
    assert len(spy.started) == 1 and spy.adopted == [None]
    assert summary["candidates"] > 0 and summary["errors"] == 0
    assert_in_step(out, summary["run_id"], tmp_path)


def test_lines_fed_that_the_ledger_does_not_hold_leave_the_index_to_the_normal_path(
    corpus: Path, spy: Spy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = IndexDraft.feed

    def changed(draft: IndexDraft, lines: Any) -> None:
        # The first line of each source reaches the builder with another topic.
        if lines:
            first = json.loads(lines[0])
            first["topic"] = "something else"
            lines = [json.dumps(first).encode() + b"\n", *lines[1:]]
        original(draft, lines)

    monkeypatch.setattr(IndexDraft, "feed", changed)
    out = tmp_path / "out"
    summary = ingest(tmp_path, out, ingest_flags(corpus), "--jobs", "2")
    assert spy.adopted == [None]
    assert_in_step(out, summary["run_id"], tmp_path)


def test_a_ledger_changed_after_the_run_leaves_the_index_to_the_normal_path(
    corpus: Path, spy: Spy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adopt = IndexDraft.adopt
    ledger = tmp_path / "out" / "candidates.jsonl"

    def after_an_edit(draft: IndexDraft, run_id: str) -> IndexUpdate | None:
        lines = ledger.read_bytes().splitlines(keepends=True)
        lines[1], lines[2] = lines[2], lines[1]  # two lines swapped: every line there, one moved
        ledger.write_bytes(b"".join(lines))
        return adopt(draft, run_id)

    monkeypatch.setattr(IndexDraft, "adopt", after_an_edit)
    summary = ingest(tmp_path, tmp_path / "out", ingest_flags(corpus), "--jobs", "2")
    assert len(spy.started) == 1
    assert_in_step(tmp_path / "out", summary["run_id"], tmp_path)
    con = sqlite3.connect(tmp_path / "out" / INDEX_FILE)
    order = [cid for (cid,) in con.execute("SELECT candidate_id FROM candidate ORDER BY position")]
    con.close()
    assert order == [json.loads(line)["candidate_id"] for line in ledger.read_bytes().splitlines()]


def kill_run(command: list[str], *, when: Callable[[], bool] | None = None, crash_at: str = "") -> None:
    """``command`` run in its own process group, killed (-9, the whole group) once ``when``
    holds, or by itself at the crash point ``crash_at``."""
    env = {**os.environ, **({"KB_TEST_CRASH_AT": crash_at} if crash_at else {})}
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, start_new_session=True)
    try:
        if when is None:
            proc.wait(timeout=120)
        else:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and proc.poll() is None and not when():
                time.sleep(0.002)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        err = proc.stderr.read().decode() if proc.stderr else ""
        if proc.stderr:
            proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL, err


@pytest.mark.parametrize("moment", ["building", "rename-candidates", "draft-stamped"])
def test_a_run_killed_at_any_moment_leaves_no_index_or_a_trusted_one(
    moment: str, corpus: Path, tmp_path: Path, spy: Spy
) -> None:
    out = tmp_path / "out"
    command = kb_command(
        "ingest", "--root", str(tmp_path), "--write", "--skip-hindsight", "--jobs", "2", "--output-dir", str(out)
    ) + ingest_flags(corpus)
    if moment == "building":
        kill_run(command, when=lambda: (out / DRAFT_FILE).exists())
    else:
        kill_run(command, crash_at=moment)
        assert (out / "candidates.jsonl").exists()
    if (out / INDEX_FILE).exists():  # only ever a trusted one
        assert _stamp_text(out / INDEX_FILE) == _read_stamp(out)
    summary = ingest(tmp_path, out, ingest_flags(corpus), "--jobs", "2")
    assert summary["errors"] == 0
    assert not list(out.glob(DRAFT_FILE + "*"))
    assert_in_step(out, summary["run_id"], tmp_path)
    lines = (out / "candidates.jsonl").read_bytes().splitlines()
    assert len(rows(out / INDEX_FILE)["candidate"]) == len(lines) > 0


def test_remove_draft_removes_a_leftover_and_its_journal(tmp_path: Path) -> None:
    for name in (DRAFT_FILE, DRAFT_FILE + "-journal"):
        (tmp_path / name).write_bytes(b"left by a killed run")
    index_builder.remove_draft(tmp_path)
    assert not list(tmp_path.iterdir())


def test_a_builder_too_far_behind_is_given_up_and_the_run_keeps_its_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A builder that stops taking lines (here: stopped by SIGSTOP) is killed and its draft
    deleted once more than MAX_BACKLOG bytes wait for the pipe: the lines are dropped, not
    held, and adopting gives None (the index is built after the run the usual way)."""
    monkeypatch.setattr(index_builder, "MAX_BACKLOG", 4 << 20)
    draft = IndexDraft(tmp_path)
    draft.start("kb-ingest-20261203T000000000000Z", ())
    pid = draft._pid
    try:
        os.kill(pid, signal.SIGSTOP)
        line = b'{"candidate_id":"c","text":"' + b"x" * 16_000 + b'"}\n'
        fed = 0
        while draft.started and fed < 64 << 20:
            draft.feed([line] * 4)
            fed += 4 * len(line)
        assert not draft.started
        assert fed <= (4 << 20) + index_builder.PIPE_SIZE + 2 * index_builder.FEED_BATCH
        assert draft._backlog_size == 0 and not draft._backlog
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # killed and reaped
        assert not (tmp_path / DRAFT_FILE).exists()
        assert draft.adopt("kb-ingest-20261203T000000000000Z") is None
    finally:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
