"""No secret, user name, host name, home path or session id from the inputs reaches disk or the terminal."""

from __future__ import annotations

import json
import random

from tests.ingest.conftest import FakeHindsight, IngestEnv
from tests.testing.secrets import SECRET_FAMILIES, SURROUNDINGS, make_secret, plant, rand
from tests.testing.sessions import (
    OpenCodeDb,
    assistant,
    user,
    write_claude_session,
    write_codex_history,
    write_codex_session,
    write_omp_session,
    write_opencode_prompt_history,
    write_opencode_storage,
)


class Planted:
    """Private values generated for this run, and prose that carries them."""

    def __init__(self, seed: int) -> None:
        rng = self.rng = random.Random(seed)
        self.user_name = "quill" + rand(rng, "abcdefghijklmnopqrstuvwxyz", 6)
        self.host = "buildbox-" + rand(rng, "abcdefghijklmnopqrstuvwxyz", 6)
        self.home = f"/home/{self.user_name}"
        self.cwd = f"{self.home}/work/orchid-{rand(rng, 'abcdefghij', 5)}"
        self.secrets: list[str] = []
        self.session_ids: list[str] = []
        self.surroundings = sorted(SURROUNDINGS)

    def session_id(self) -> str:
        value = "sess-" + rand(self.rng, "abcdef0123456789", 16)
        self.session_ids.append(value)
        return value

    def prose(self, i: int) -> str:
        """One technical paragraph hiding a secret, a home path, a host and a user."""
        families = sorted(SECRET_FAMILIES)
        family = families[i % len(families)]
        secret = make_secret(family, self.rng)
        self.secrets.append(secret)
        planted = plant(secret, self.surroundings[i % len(self.surroundings)], name=SECRET_FAMILIES[family].name)
        return (
            f"The build fails with a config error in {self.cwd}/src/app.ts on {self.host}.internal "
            f"(10.1.{i % 250}.7); mail {self.user_name}@{self.host}.corp or ssh {self.user_name}@{self.host}. "
            f"Here is what we ran:\n{planted}\nPlease debug the failure."
        )

    def conversation(self, start: int) -> list:
        return [
            user(self.prose(start)),
            assistant("Fixed: " + self.prose(start + 1)),
            user(self.prose(start + 2)),
            assistant("The root cause: " + self.prose(start + 3)),
        ]

    @property
    def forbidden(self) -> list[str]:
        return [*self.secrets, self.user_name, self.host, self.home, *self.session_ids]


def test_nothing_private_reaches_the_ledgers_or_the_output(
    env: IngestEnv, hindsight: tuple[str, type[FakeHindsight]]
) -> None:
    p = Planted(20261129)
    write_omp_session(env.omp, p.conversation(0), session_id=p.session_id(), cwd=p.cwd)
    write_codex_session(env.codex, p.conversation(4), session_id=p.session_id(), cwd=p.cwd)
    write_codex_history(env.codex, [p.prose(8)], session_id=p.session_ids[-1])
    db = OpenCodeDb(env.opencode_db)
    db.session(p.conversation(9), session_id=p.session_id(), directory=p.cwd)
    db.close()
    write_opencode_storage(env.opencode_db.parent, p.conversation(13), session_id=p.session_id(), directory=p.cwd)
    env.prompt_history.parent.mkdir(parents=True, exist_ok=True)
    write_opencode_prompt_history(env.prompt_history, [p.prose(17), p.prose(18)])
    write_claude_session(env.claude, p.conversation(19), session_id=p.session_id(), cwd=p.cwd)
    url, handler = hindsight
    handler.memories = [{"id": p.session_id(), "text": p.prose(23), "created_at": "2026-03-01T00:00:00Z"}]
    tools = {"omp", "codex", "opencode", "claude", "hindsight"}
    # Every secret family and every surrounding is exercised.
    assert len(p.secrets) >= len(SECRET_FAMILIES)
    summary, result = env.run("--hindsight-url", url)
    dry = env.run("--hindsight-url", url, write=False)[1]
    assert env.rows("manifest", record_type="prompt-history", parse_status="processed")
    produced = {c["tool"] for c in env.rows("candidates")}
    assert produced >= tools, produced
    assert summary["candidates"] >= len(tools)

    texts = {"stdout": result.out + dry.out, "stderr": result.err + dry.err}
    for path in sorted((env.root / ".agent").rglob("*")):
        if path.is_file():
            texts[str(path.relative_to(env.root))] = path.read_bytes().decode("utf-8", "replace")
    assert any(name.endswith("candidates.jsonl") for name in texts)
    # Nor the stores' own locations (the fixtures' paths, the server's address).
    locations = [
        str(env.omp),
        str(env.codex),
        str(env.opencode_db.parent),
        str(env.prompt_history),
        str(env.claude),
        url.split("//")[1],
    ]
    leaks = [(name, value) for name, text in texts.items() for value in [*p.forbidden, *locations] if value in text]
    assert not leaks, leaks[:5]
    # Redaction labels are recorded per candidate.
    labels = {label for c in env.rows("candidates") for label in c["redactions"]}
    assert {"<PRIVATE_PATH>", "<PRIVATE_EMAIL>", "<PRIVATE_HOST>"} <= labels
    for c in env.rows("candidates"):
        json.dumps(c)  # rows stay plain JSON


def test_errors_that_reach_the_ledger_carry_no_input_bytes(env: IngestEnv) -> None:
    p = Planted(7)
    secret = make_secret("github-classic", p.rng)
    path = write_omp_session(env.omp, p.conversation(0), session_id=p.session_id(), cwd=p.cwd)
    with path.open("a") as fh:
        fh.write(f'{{"type":"message","message":{{"role":"user","content":"{secret} {p.home}\n')
    env.run()
    ledger_text = "".join(f.read_text() for f in env.out.glob("*.jsonl"))
    assert secret not in ledger_text and p.home not in ledger_text
    (row,) = env.rows("manifest", tool="omp")
    assert row["error"]
