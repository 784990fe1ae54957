from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.testing.cli import Result, run_kb
from tests.testing.sessions import Msg, assistant, user

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
            "ingest", "--root", str(self.root),
            "--omp-sessions", str(self.omp), "--codex-dir", str(self.codex),
            "--opencode-db", str(self.opencode_db), "--prompt-history", str(self.prompt_history),
            "--claude-dir", str(self.claude),
            *(() if "--hindsight-url" in extra else ("--skip-hindsight",)),
            *(["--write"] if write else []), *extra,
        ]

    def run(self, *extra: str, write: bool = True) -> tuple[dict[str, Any], Result]:
        result = run_kb(*self.args(*extra, write=write))
        assert result.code == 0, result.err
        lines = result.out.splitlines()
        assert len(lines) == 1, result.out
        return json.loads(lines[0]), result

    def rows(self, ledger: str, *, partial: bool = False, **match: Any) -> list[dict[str, Any]]:
        name = f"{ledger}.partial.jsonl" if partial else f"{ledger}.jsonl"
        return [r for r in read_jsonl(self.out / name) if all(r.get(k) == v for k, v in match.items())]

    def write_rows(self, ledger: str, rows: Iterable[dict[str, Any]], *, partial: bool = False) -> None:
        name = f"{ledger}.partial.jsonl" if partial else f"{ledger}.jsonl"
        text = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows)
        (self.out / name).write_text(text, encoding="utf-8")


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


class FakeHindsight(BaseHTTPRequestHandler):
    """A Hindsight API on 127.0.0.1: one bank ``team`` holding ``memories``; ``mode`` breaks it."""

    mode = "ok"  # ok | 500 | garbage | hang
    memories: list[dict[str, Any]] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        if self.mode == "500":
            self.send_response(500)
            self.end_headers()
            return
        if self.mode == "hang":
            threading.Event().wait(30)
            return
        if self.mode == "garbage":
            body = b"<html>not json"
        elif "/memories/list" in self.path:
            body = json.dumps({"items": self.memories}).encode()
        else:
            body = json.dumps({"banks": [{"bank_id": "team"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hindsight() -> Iterator[tuple[str, type[FakeHindsight]]]:
    handler = type("Handler", (FakeHindsight,), {"memories": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    server.server_close()
