from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from kbtools.ingest.ledger import ledger_path
from tests.testing.cli import Result, kb_command, run_kb
from tests.testing.sessions import HindsightServer, Msg, assistant, hindsight_memory_api, send_body, user

# A turn with a technical signal and enough text to become a candidate.
TECH_PROMPT = (
    "Why does the TypeScript build fail with error TS2307 after the upgrade? "
    "Please diagnose the root cause and propose a fix we can verify."
)
TECH_ANSWER = (
    "The root cause is a missing path alias in tsconfig.json. The fix: add the alias to "
    "compilerOptions.paths, then run pnpm build to verify that the error is gone."
)


def tech_turn(prompt: str = TECH_PROMPT, answer: str = TECH_ANSWER) -> list[Msg]:
    return [user(prompt), assistant(answer)]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass
class IngestEnv:
    """A KB root and agent stores in a hermetic home; `run` is `kb ingest` in-process."""

    home: Path
    root: Path
    omp: Path
    codex: Path
    opencode_db: Path
    prompt_history: Path
    claude: Path

    @property
    def out(self) -> Path:
        return self.root / ".agent" / "kb-ingest"

    @property
    def checkpoint(self) -> Path:
        return self.root / ".agent" / "checkpoints" / "current-task.md"

    def args(self, *extra: str, write: bool = True) -> list[str]:
        return [
            "ingest",
            "--root",
            str(self.root),
            "--omp-sessions",
            str(self.omp),
            "--codex-dir",
            str(self.codex),
            "--opencode-db",
            str(self.opencode_db),
            "--prompt-history",
            str(self.prompt_history),
            "--claude-dir",
            str(self.claude),
            *(() if "--hindsight-url" in extra else ("--skip-hindsight",)),
            *(["--write"] if write else []),
            *extra,
        ]

    def command(self, *extra: str) -> list[str]:
        """`kb ingest --write` as a child process's command line."""
        return kb_command(*self.args(*extra))

    def run(self, *extra: str, write: bool = True) -> tuple[dict[str, Any], Result]:
        result = run_kb(*self.args(*extra, write=write))
        assert result.code == 0, result.err
        lines = result.out.splitlines()
        assert len(lines) == 1, result.out
        return json.loads(lines[0]), result

    def rows(self, ledger: str, *, partial: bool = False, **match: Any) -> list[dict[str, Any]]:
        rows = read_jsonl(ledger_path(self.out, ledger, partial=partial))
        return [r for r in rows if all(r.get(k) == v for k, v in match.items())]

    def write_rows(self, ledger: str, rows: Iterable[dict[str, Any]], *, partial: bool = False) -> None:
        text = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows)
        ledger_path(self.out, ledger, partial=partial).write_text(text, encoding="utf-8")


@pytest.fixture
def env(tmp_path: Path, hermetic_env: Path) -> IngestEnv:
    root = tmp_path / "kb"
    root.mkdir()
    return IngestEnv(
        home=hermetic_env,
        root=root,
        omp=tmp_path / "omp-sessions",
        codex=tmp_path / "codex",
        opencode_db=tmp_path / "opencode" / "opencode.db",
        prompt_history=tmp_path / "state" / "prompt-history.jsonl",
        claude=tmp_path / "claude",
    )


class FakeHindsight:
    """What the ``hindsight`` fixture's API serves: one bank ``team`` holding ``memories``; ``mode`` breaks it."""

    mode = "ok"  # ok | 500 | garbage | hang
    memories: list[dict[str, Any]] = []

    @classmethod
    def handle(cls, handler: BaseHTTPRequestHandler) -> None:
        if cls.mode == "500":
            handler.send_response(500)
            handler.end_headers()
        elif cls.mode == "hang":
            threading.Event().wait(30)
        elif cls.mode == "garbage":
            send_body(handler, b"<html>not json")
        else:
            hindsight_memory_api({"team": cls.memories})(handler)


@pytest.fixture
def hindsight() -> Iterator[tuple[str, type[FakeHindsight]]]:
    """A Hindsight API on 127.0.0.1 and the class whose ``mode``/``memories`` a test sets."""
    state = type("Hindsight", (FakeHindsight,), {"memories": []})
    with HindsightServer(handler=state.handle) as server:
        yield server.url, state


@pytest.fixture(params=["cached", "uncached"])
def cache_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test that uses it runs twice: with ingest's caches, and with all of them off
    (``KB_INGEST_NO_CACHE=1``, see kbtools/ingest/caches.py)."""
    from kbtools.ingest.caches import NO_CACHE_ENV

    if request.param == "uncached":
        monkeypatch.setenv(NO_CACHE_ENV, "1")
    else:
        monkeypatch.delenv(NO_CACHE_ENV, raising=False)
    return str(request.param)
