"""Real ledgers for the review commands: `kb ingest --write` over sessions written in each
agent's on-disk format (tests/testing/sessions.py), into a KB made by tests/testing/kbfactory.py."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.ingest.conftest import IngestEnv, env  # noqa: F401  (the fixture, requested by name)
from tests.testing.cli import Result, run_kb
from tests.testing.kbfactory import make_kb
from tests.testing.sessions import Msg, assistant, user, write_claude_session, write_codex_session, write_omp_session

ALIAS_PROMPT = (
    "Why does the TypeScript build fail with error TS2307 after the upgrade? "
    "Please diagnose the root cause and propose a fix we can verify."
)
ALIAS_ANSWER = (
    "The root cause is a missing path alias in tsconfig.json. The fix: add the alias to "
    "compilerOptions.paths, then run pnpm build to verify that the error is gone."
)
POOL_PROMPT = (
    "The worker crashes with psycopg2.OperationalError: too many connections for role 'app' "
    "under load. What is going on and how do we fix it?"
)
POOL_ANSWER = (
    "Each request opens its own connection and never returns it. The root cause is the missing "
    "connection pool; the fix is a psycopg_pool ConnectionPool with max_size=10 shared by the "
    "workers. I ran pytest tests/test_load.py and the error no longer appears."
)
WAL_PROMPT = (
    "Decision needed: sqlite database is locked errors appear when the exporter and the web "
    "process write at the same time. Should we switch the journal mode?"
)
WAL_ANSWER = (
    "We decided to enable WAL with PRAGMA journal_mode=WAL and a busy_timeout of 5000 ms. "
    "The root cause was rollback journaling blocking readers; I ran the exporter test suite "
    "and the locked error is gone."
)


def turn(prompt: str, answer: str) -> list[Msg]:
    return [user(prompt), assistant(answer)]


@dataclass
class ReviewKb:
    env: IngestEnv

    @property
    def root(self) -> Path:
        return self.env.root

    def kb(self, *args: str) -> Result:
        return run_kb(*args, "--root", str(self.root))

    def ingest(self) -> dict[str, Any]:
        summary, _ = self.env.run()
        return summary

    def candidate(self, word: str) -> dict[str, Any]:
        (found,) = [r for r in self.env.rows("candidates") if word in str(r["text"])]
        return found


@pytest.fixture
def review_kb(env: IngestEnv, tmp_path: Path) -> ReviewKb:  # noqa: F811
    """A committed KB and three sessions (OMP, Codex, Claude Code) on three days, ingested once."""
    kb = make_kb(tmp_path / "repo")
    env.root = kb.root
    write_omp_session(
        env.omp,
        turn(ALIAS_PROMPT, ALIAS_ANSWER),
        session_id="s-alias",
        cwd="/home/alice/web",
        started=datetime(2026, 3, 1, 9, 0, tzinfo=UTC),
    )
    write_codex_session(
        env.codex,
        turn(POOL_PROMPT, POOL_ANSWER),
        session_id="0199pool",
        cwd="/home/alice/api",
        started=datetime(2026, 3, 5, 9, 0, tzinfo=UTC),
    )
    write_claude_session(
        env.claude,
        turn(WAL_PROMPT, WAL_ANSWER),
        session_id="c-wal",
        cwd="/home/alice/api",
        started=datetime(2026, 3, 9, 9, 0, tzinfo=UTC),
    )
    review = ReviewKb(env)
    review.ingest()
    return review
