"""``KB_INGEST_NO_CACHE=1`` turns every ingest cache off, and the ledgers stay the same:
a first run, a rerun of grown sessions and an unchanged rerun, each with the caches
and without, give byte-identical ledgers (``run_at`` aside)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from kbtools.ingest.caches import KEY_CACHE_FILE, LEDGER_INDEX_FILE, NO_CACHE_ENV
from kbtools.ingest.rows import LEDGERS
from tests.ingest.conftest import IngestEnv, tech_turn
from tests.testing.sessions import age, assistant, user, write_claude_session, write_codex_session, write_omp_session

_RUN_AT = re.compile(rb'"run_at":"[^"]*"')


def _ledgers(env: IngestEnv) -> dict[str, bytes]:
    return {name: _RUN_AT.sub(b'"run_at":""', (env.out / f"{name}.jsonl").read_bytes()) for name in LEDGERS}


def _sessions(env: IngestEnv, turns: int) -> None:
    for n in range(4):
        messages = []
        for t in range(turns):
            messages += tech_turn(
                f"Why does the build of package {n} fail with error TS23{t:02d} after the upgrade? Diagnose it.",
                f"The root cause in package {n}, step {t}: a missing path alias in tsconfig.json. "
                "Fix it in compilerOptions.paths, then run pnpm build to verify.",
            )
        messages += tech_turn()  # the same turn in every session: duplicates to mark
        age(write_omp_session(env.omp, messages, session_id=f"s{n}"))
    age(write_codex_session(env.codex, [user("short"), assistant("no signal here")], session_id="c1"))
    age(write_claude_session(env.claude, tech_turn(), session_id="cl1"))


def test_caches_on_and_off_give_identical_ledgers(
    env: IngestEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uncached = dataclasses.replace(env, root=tmp_path / "kb-uncached")
    uncached.root.mkdir()

    def both() -> None:
        monkeypatch.delenv(NO_CACHE_ENV, raising=False)
        env.run()
        monkeypatch.setenv(NO_CACHE_ENV, "1")
        uncached.run()
        monkeypatch.delenv(NO_CACHE_ENV)
        assert _ledgers(env) == _ledgers(uncached)

    _sessions(env, turns=2)
    both()
    _sessions(env, turns=4)  # grown: trusted prior lines come into play
    both()
    both()  # unchanged: the stat cache, the ledger index
    assert (env.out / LEDGER_INDEX_FILE).exists() and (env.out / KEY_CACHE_FILE).exists()
    for name in (LEDGER_INDEX_FILE, KEY_CACHE_FILE):
        assert not (uncached.out / name).exists(), name  # off means off: nothing kept for speed


def test_caches_off_reuse_nothing_unread(env: IngestEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    _sessions(env, turns=1)
    env.run()
    cached, _ = env.run()
    assert cached["reused_unread"] > 0
    monkeypatch.setenv(NO_CACHE_ENV, "1")
    summary, _ = env.run()
    assert summary["reused_unread"] == 0 and summary["unchanged"] == cached["unchanged"] > 0


def test_a_shared_read_is_what_this_process_wrote_while_the_file_is_the_one_it_wrote(tmp_path: Path) -> None:
    """A reader that changes nothing is given what was written, without reading the file, as
    long as the file is still the one written; a file replaced since (another process, by hand)
    is read."""
    import marshal
    import os
    import zlib

    from kbtools.ingest import caches

    data = {"candidates": ((1, 2, 3), ("context", {"k": "d"}, {"k": [0, 10]}))}
    caches.write(tmp_path, caches.LEDGER_INDEX_FILE, data)
    assert caches.read(tmp_path, caches.LEDGER_INDEX_FILE, shared=True) is data
    assert caches.read(tmp_path, caches.LEDGER_INDEX_FILE) == data
    other = {"candidates": ((4, 5, 6), ("context", {}, {}))}
    payload = marshal.dumps(other)
    fmt = caches._FORMATS[caches.LEDGER_INDEX_FILE]
    replaced = tmp_path / "replaced"
    replaced.write_bytes(marshal.dumps((fmt, zlib.crc32(payload), payload)))
    os.replace(replaced, tmp_path / caches.LEDGER_INDEX_FILE)  # as another writer does: a new file
    assert caches.read(tmp_path, caches.LEDGER_INDEX_FILE, shared=True) == other
    (tmp_path / caches.LEDGER_INDEX_FILE).write_bytes(b"damaged")
    assert caches.read(tmp_path, caches.LEDGER_INDEX_FILE, shared=True) is None
