"""The candidates offset index: a rerun reads unchanged sources' lines by their offsets;
the ledger it writes is the same as a full scan's, and a damaged or stale index is a miss."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.ingest.conftest import TECH_PROMPT, IngestEnv
from tests.testing.sessions import Msg, age, assistant, user, write_omp_session


def _turn(i: int) -> list[Msg]:
    """A turn of its own (no duplicates: every stored line keeps its marking)."""
    return [
        user(f"{TECH_PROMPT} ({i})"),
        assistant(
            f"Session {i}: the build broke because the lockfile pinned compiler {i}.0 while CI installed {i}.1; "
            f"pinning the compiler to {i}.0 in CI and clearing the cache key fixed it (step {i})."
        ),
    ]


def _sessions(env: IngestEnv, count: int) -> list[Path]:
    paths = []
    for i in range(count):
        path = write_omp_session(env.omp, _turn(i), session_id=f"s{i}")
        age(path)
        paths.append(path)
    return paths


def _grow(path: Path, i: int) -> None:
    """The session of ``path`` with a turn more, written over it and aged like the others: a file
    younger than the racy-mtime window gets no stat key, and whether a later run still sees it as
    young would depend on the machine's speed."""
    written = write_omp_session(
        path.parent.parent,
        dir_name=path.parent.name,
        messages=[
            *_turn(i),
            user(f"{TECH_PROMPT} again ({i})"),
            assistant(f"The second fix pins the compiler version in CI as well ({i})."),
        ],
        session_id=f"s{i}",
    )
    assert written == path  # the same file: its name comes from the session id and start
    age(written)


def _without_run_at(path: Path) -> list[dict[str, object]]:
    return [{k: v for k, v in json.loads(line).items() if k != "run_at"} for line in path.read_bytes().splitlines()]


def test_a_rerun_from_the_index_writes_the_same_ledgers_as_a_full_scan(env: IngestEnv) -> None:
    paths = _sessions(env, 5)
    # No technical knowledge: a rejected row, re-emitted like the manifest's.
    age(write_omp_session(env.omp, [user("hi"), assistant("hello")], session_id="chit-chat", dir_name="chat"))
    env.run()
    env.run()  # every row "unchanged" now: the next run reads them by the index
    index = env.out / "ledger-index.marshal"
    assert index.exists()
    _grow(paths[2], 2)  # a source in the middle: the indexed lines around it move
    before = env.out.parent / "before"
    shutil.copytree(env.out, before)
    summary, _ = env.run()
    assert summary["processed"] == 1 and summary["reused_unread"] == 5 and summary["rejected"] >= 1
    from_index = {name: (env.out / f"{name}.jsonl").read_bytes() for name in ("candidates", "manifest", "rejected")}
    run_at = json.loads(from_index["manifest"].splitlines()[0])["run_at"]
    assert all(json.loads(line)["run_at"] == run_at for line in from_index["manifest"].splitlines())
    shutil.rmtree(env.out)
    shutil.copytree(before, env.out)
    (env.out / "ledger-index.marshal").unlink()
    scanned, _ = env.run()
    assert from_index["candidates"] == (env.out / "candidates.jsonl").read_bytes()
    for name in ("manifest", "rejected"):
        assert _without_run_at(env.out / f"{name}.jsonl") == [
            {k: v for k, v in json.loads(line).items() if k != "run_at"} for line in from_index[name].splitlines()
        ]
    assert [json.loads(line)["source_key"] for line in from_index["candidates"].splitlines()]
    assert scanned["candidates"] == summary["candidates"] and scanned["duplicates"] == summary["duplicates"]


def test_a_damaged_or_stale_index_is_a_miss(env: IngestEnv) -> None:
    _sessions(env, 3)
    first, _ = env.run()
    expected = (env.out / "candidates.jsonl").read_bytes()
    index = env.out / "ledger-index.marshal"
    index.write_bytes(b"\x00 not marshal")
    damaged, _ = env.run()
    assert (env.out / "candidates.jsonl").read_bytes() == expected
    stale = index.read_bytes()
    env.run()
    index.write_bytes(stale)  # written for an earlier file: size, mtime or inode differ
    again, _ = env.run()
    assert (env.out / "candidates.jsonl").read_bytes() == expected
    for summary in (damaged, again):
        assert summary["candidates"] == first["candidates"] and summary["malformed_prior_rows"] == 0
