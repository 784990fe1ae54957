"""bench/gen_corpus.py: stores laid out as the agents write them, deterministic, sized, readable by kbtools."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
sys.path.insert(0, str(BENCH))

from corpus import generate, ingest_flags  # noqa: E402

EXAMPLES = REPO / "examples" / "sessions"
EXAMPLE_ARGS = {"total_bytes": 1_500_000, "seed": 20260601, "secret_mode": "placeholder"}

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
OMP_FILE = re.compile(
    rf"^omp/agent/sessions/(-[^/]*|--[^/]+--)/\d{{4}}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{{3}}Z_({UUID})\.jsonl$"
)
CODEX_FILE = re.compile(rf"^codex/sessions/(\d{{4}})/(\d\d)/(\d\d)/rollout-\1-\2-\3T\d\d-\d\d-\d\d-({UUID})\.jsonl$")
CLAUDE_FILE = re.compile(rf"^claude/projects/(-[A-Za-z0-9-]+)/({UUID})\.jsonl$")

# Text that only tool output, thinking or harness scaffolding carries: none of it may reach a record.
NOT_PROSE_MARKERS = (
    "Chunk ID:",
    "     1\t",
    "test session starts",
    "CONTAINER ID",
    "Progress: resolved",
    "The user wants the",
    "Planning the change",
    "You are a coding agent",
    "<environment_context>",
    "<permissions instructions>",
    "AGENTS.md instructions",
    "Called the Read tool",
    "Applied 1 edit",
    "Success. Updated the following files",
    "<system-reminder>",
    "This session is being continued",
    "API Error: 529",
    "<advisory",
    "Summary of the work so far",
    "Caveat: The messages below",
    "<command-name>",
    "<local-command-stdout>",
)

# Real-shaped secrets (random mode) and the committed placeholders (safe mode).
REAL_SHAPED = re.compile(r"sk-proj-[A-Za-z0-9]{48}|gh[pos]_[A-Za-z0-9]{36}|AKIA[A-Z0-9]{16}|xoxb-\d{11,}-")
SECRET_TOKEN = re.compile(
    r"\bsk-[\w-]{8,}|\bgh[pos]_\w{8,}|github_pat_\w+|AKIA[A-Z0-9]{16}|xox[bp]-[\w-]+|eyJ[\w-]+\.[\w-]+\.[\w-]+"
    r"|Bearer [\w.-]+|://[^/\s:@]+:[^@\s/]+@"
)
ANY_SECRET_PREFIX = re.compile(r"sk-(?:proj|ant|EXAMPLE)|gh[pos]_|github_pat_|AKIA|xoxb-|Bearer [A-Za-z0-9]")


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _all_text(root: Path) -> str:
    """Every file's text, the SQLite rows included (the DB pages may hold them compressed by layout)."""
    chunks = [p.read_text("utf-8") for p in root.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json")]
    db = root / "opencode" / "opencode.db"
    if db.exists():
        con = sqlite3.connect(db)
        chunks += [row[0] for row in con.execute("SELECT data FROM message UNION ALL SELECT data FROM part")]
        con.close()
    return "\n".join(chunks)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("corpus")
    generate(out, total_bytes=1_200_000, seed=11, secret_mode="random")
    return out


def test_same_seed_gives_identical_bytes_and_mtimes(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    generate(a, total_bytes=400_000, seed=3)
    generate(b, total_bytes=400_000, seed=3)
    assert _files(a) == _files(b)
    mtimes = lambda root: {p.relative_to(root): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}  # noqa: E731
    assert mtimes(a) == mtimes(b)


def test_another_seed_gives_other_sessions(tmp_path: Path) -> None:
    generate(tmp_path / "a", total_bytes=300_000, seed=1, agents=("omp",))
    generate(tmp_path / "b", total_bytes=300_000, seed=2, agents=("omp",))
    assert set(_files(tmp_path / "a")).isdisjoint(_files(tmp_path / "b"))


@pytest.mark.parametrize("mb", [1, 4])
def test_total_size_roughly_honours_mb(tmp_path: Path, mb: int) -> None:
    stats = generate(tmp_path, total_bytes=mb * 1_000_000, seed=5)
    on_disk = sum(len(b) for b in _files(tmp_path).values())
    assert sum(s.bytes for s in stats) == on_disk
    assert 0.85 * mb * 1_000_000 <= on_disk <= 1.3 * mb * 1_000_000


def test_sizes_are_long_tailed(tmp_path: Path) -> None:
    generate(tmp_path, total_bytes=30_000_000, seed=9, agents=("codex",))
    sizes = sorted(p.stat().st_size for p in (tmp_path / "codex").rglob("rollout-*.jsonl"))
    median = sizes[len(sizes) // 2]
    assert 20_000 <= median <= 200_000
    assert sizes[-1] >= 10 * median


def test_every_store_is_laid_out_as_the_agent_writes_it(corpus: Path) -> None:
    names = list(_files(corpus))
    omp = [n for n in names if OMP_FILE.match(n)]
    assert len(omp) >= 3
    advisors = [n for n in names if n.endswith("/__advisor.jsonl")]
    assert 1 <= len(advisors) <= 2
    # An advisor transcript lives in its session's artifacts dir (the session path minus `.jsonl`).
    assert all(n.rsplit("/", 1)[0] + ".jsonl" in names for n in advisors)
    assert [n for n in names if CODEX_FILE.match(n)]
    assert [n for n in names if n.startswith("codex/archived_sessions/rollout-")]
    assert {"codex/history.jsonl", "codex/session_index.jsonl"} <= set(names)
    assert "opencode/opencode.db" in names
    assert [n for n in names if n.startswith("opencode/storage/session/")]
    assert "opencode-state/prompt-history.jsonl" in names
    claude = [n for n in names if CLAUDE_FILE.match(n)]
    assert claude
    assert [n for n in names if re.search(rf"/{UUID}/subagents/agent-[0-9a-f]+\.jsonl$", n)]


def test_claude_project_dir_is_the_escaped_cwd(corpus: Path) -> None:
    for path in (corpus / "claude" / "projects").glob("*/*.jsonl"):
        first = next(json.loads(line) for line in path.open() if '"cwd"' in line)
        assert path.parent.name == re.sub(r"[^A-Za-z0-9]", "-", first["cwd"])
        assert first["sessionId"] == path.stem


def test_every_jsonl_line_and_json_file_parses(corpus: Path) -> None:
    for path in corpus.rglob("*.jsonl"):
        for line in path.read_text("utf-8").splitlines():
            assert isinstance(json.loads(line), dict), path
    for path in corpus.rglob("*.json"):
        json.loads(path.read_text("utf-8"))


def test_omp_files_have_header_and_a_tree(corpus: Path) -> None:
    for path in (corpus / "omp").rglob("*.jsonl"):
        lines = path.read_bytes().split(b"\n")[:-1]
        first = json.loads(lines[0])
        if first["type"] == "title":
            assert len(lines[0]) + 1 == 256  # the fixed title slot, rewritten in place
            first = json.loads(lines[1])
        assert (
            first["type"] == "session"
            and first["version"] == 3
            and first["cwd"].startswith(("/home/", "/Users/", "/tmp/"))
        )
        entries = [json.loads(line) for line in lines if b'"parentId"' in line]
        ids = {e["id"] for e in entries}
        assert all(e["parentId"] is None or e["parentId"] in ids for e in entries)


def test_some_omp_session_has_an_abandoned_branch(corpus: Path) -> None:
    branched = 0
    for path in (corpus / "omp").rglob("*.jsonl"):
        parents = [json.loads(line)["parentId"] for line in path.read_text().splitlines() if '"parentId"' in line]
        branched += len(parents) != len(set(parents))  # one entry with two children
    assert branched >= 1


def test_codex_rollouts_use_the_envelope(corpus: Path) -> None:
    for path in (corpus / "codex").rglob("rollout-*.jsonl"):
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        assert lines[0]["type"] == "session_meta" and path.stem.endswith(lines[0]["payload"]["id"])
        assert {line["type"] for line in lines} <= {"session_meta", "response_item", "event_msg", "turn_context"}
        texts = [
            c["text"] for line in lines if line["payload"].get("type") == "message" for c in line["payload"]["content"]
        ]
        assert any(t.startswith("<environment_context>") for t in texts)


def test_opencode_db_has_the_real_schema_and_ordered_ids(corpus: Path) -> None:
    con = sqlite3.connect(corpus / "opencode" / "opencode.db")
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"project", "session", "message", "part", "todo", "permission", "session_share"} <= tables
    columns = {r[1] for r in con.execute("PRAGMA table_info(session)")}
    assert {"id", "project_id", "parent_id", "directory", "title", "time_created", "time_updated"} <= columns
    sessions = con.execute("SELECT id, time_created FROM session ORDER BY time_created").fetchall()
    assert len(sessions) >= 2
    # Session ids are bit-inverted: the newest sorts first.
    assert [s[0] for s in sessions] == sorted((s[0] for s in sessions), reverse=True)
    for (data,) in con.execute("SELECT data FROM message"):
        assert json.loads(data)["role"] in ("user", "assistant")
    parts = con.execute("SELECT id, message_id, data FROM part").fetchall()
    kinds = {json.loads(d)["type"] for _i, _m, d in parts}
    assert {"text", "reasoning", "tool", "step-start", "step-finish"} <= kinds
    assert all(p[0].startswith("prt_") and p[1].startswith("msg_") for p in parts)
    con.close()


def test_opencode_legacy_storage_is_a_small_frozen_tree(corpus: Path) -> None:
    storage = corpus / "opencode" / "storage"
    con = sqlite3.connect(corpus / "opencode" / "opencode.db")
    in_db = {r[0] for r in con.execute("SELECT id FROM session")}
    con.close()
    legacy = {p.stem for p in storage.glob("session/*/*.json")}
    assert 1 <= len(legacy) <= 3
    for sid in legacy:
        messages = list((storage / "message" / sid).glob("msg_*.json"))
        assert messages and all(json.loads(m.read_text())["sessionID"] == sid for m in messages)
    assert legacy & in_db  # migrated copies
    if len(legacy) == 3:
        assert legacy - in_db  # and one session the DB no longer has


def test_random_secrets_have_real_shapes(corpus: Path) -> None:
    assert len(set(REAL_SHAPED.findall(_all_text(corpus)))) >= 3


def test_safe_secrets_are_only_placeholders(tmp_path: Path) -> None:
    generate(tmp_path, total_bytes=1_000_000, seed=11, secret_mode="placeholder")
    found = [m.group(0) for m in SECRET_TOKEN.finditer(_all_text(tmp_path))]
    assert len(set(found)) >= 3  # still there, to show redaction working
    assert [f for f in found if "EXAMPLE" not in f] == []


def test_no_secrets_mode_has_none(tmp_path: Path) -> None:
    generate(tmp_path, total_bytes=600_000, seed=11, secret_mode="none")
    assert not ANY_SECRET_PREFIX.search(_all_text(tmp_path))


def test_private_paths_emails_and_hosts_appear_in_prose_and_tool_output(corpus: Path) -> None:
    text = _all_text(corpus)
    assert re.search(r"/home/[a-z]+/", text) and re.search(r"/Users/[a-z]+/", text)
    assert re.search(r"[a-z.]+@(?:example\.(?:com|org|net)|acme-corp\.example|northwind\.example)", text)
    assert re.search(r"\b(?:[a-z0-9-]+\.(?:internal|corp|lan|local)|10\.\d+\.\d+\.\d+|192\.168\.\d+\.\d+)\b", text)


# --------------------------------------------------------------------------- kbtools reads it


def _units(corpus: Path, tool: str) -> Iterator[object]:
    from kbtools.ingest import sources
    from kbtools.ingest.model import SourceSettings

    settings = SourceSettings(
        omp_sessions=corpus / "omp" / "agent" / "sessions",
        codex_dir=corpus / "codex",
        opencode_db=corpus / "opencode" / "opencode.db",
        opencode_storage=corpus / "opencode" / "storage",
        prompt_history=corpus / "opencode-state" / "prompt-history.jsonl",
        claude_dir=corpus / "claude",
    )
    for source in sources.SOURCES:
        if source.name == tool:
            for ref in source.discover(settings):
                yield sources.load(ref, settings)


@pytest.mark.parametrize("tool", ["omp", "codex", "opencode", "claude"])
def test_kbtools_sources_read_every_store_and_keep_only_prose(corpus: Path, tool: str) -> None:
    units = list(_units(corpus, tool))
    sessions = [u for u in units if u.record_type == "session"]
    assert sessions
    assert not [u.error for u in units if u.error]
    records = [r for u in sessions for r in u.records]
    # "agent": a sub-agent's task prompt, written by the parent agent under the user role.
    assert {"user", "assistant"} <= {r.role for r in records} <= {"user", "assistant", "agent"}
    assert any("fails with" in r.text or "Add a `--" in r.text for r in records)
    leaks = [(m, r.text[:80]) for r in records for m in NOT_PROSE_MARKERS if m in r.text]
    assert not leaks


def test_appended_turns_stay_readable_and_add_prose(tmp_path: Path) -> None:
    from corpus.append import append_turns

    generate(tmp_path, total_bytes=600_000, seed=8)
    before = {t: sum(len(u.records) for u in _units(tmp_path, t)) for t in ("omp", "codex", "opencode", "claude")}
    grown = append_turns(tmp_path, fraction=1.0, seed=8)
    assert grown.sessions >= 4
    for tool, count in before.items():
        units = list(_units(tmp_path, tool))
        assert not [u.error for u in units if u.error]
        assert sum(len(u.records) for u in units) > count, tool


def test_kb_ingest_reads_the_generated_corpus(corpus: Path, tmp_path: Path) -> None:
    from tests.testing.cli import run_kb

    kb = tmp_path / "kb"
    kb.mkdir()
    result = run_kb(
        "ingest", "--root", str(kb), "--skip-hindsight", "--output-dir", str(tmp_path / "out"), *ingest_flags(corpus)
    )
    assert result.code == 0, result.err
    summary = json.loads(result.out.strip().splitlines()[-1])
    assert summary["failed"] == 0 and summary["errors"] == 0
    assert summary["candidates"] > 0


# --------------------------------------------------------------------------- CLI and the committed examples


def test_cli_prints_one_json_line_with_ingest_flags(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH / "gen_corpus.py"),
            str(tmp_path),
            "--mb",
            "0.3",
            "--seed",
            "2",
            "--agents",
            "codex,claude",
            "--safe-secrets",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    [line] = proc.stdout.splitlines()
    summary = json.loads(line)
    assert set(summary["agents"]) == {"codex", "claude"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["claude", "codex"]
    assert summary["ingest_flags"] == ["--codex-dir", str(tmp_path / "codex"), "--claude-dir", str(tmp_path / "claude")]
    assert summary["total_bytes"] == sum(len(b) for b in _files(tmp_path).values())


def test_cli_rejects_an_unknown_agent(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH / "gen_corpus.py"), str(tmp_path), "--mb", "1", "--agents", "cursor"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "unknown agent(s) cursor" in proc.stderr
    assert not any(tmp_path.iterdir())


def test_committed_examples_are_what_the_documented_command_generates(tmp_path: Path) -> None:
    generate(tmp_path, **EXAMPLE_ARGS)  # type: ignore[arg-type]
    # The samples of the agents the generator does not write are written by hand after
    # their upstream types (tests/ingest/sources/test_declared_locations.py reads them).
    hand_written = ("aider/", "copilot/", "cursor/", "gemini/")
    committed = {name: data for name, data in _files(EXAMPLES).items() if not name.startswith(hand_written)}
    assert _files(tmp_path) == committed
    readme = (REPO / "examples" / "README.md").read_text()
    assert f"--mb 1.5 --seed {EXAMPLE_ARGS['seed']} --safe-secrets" in readme


@pytest.mark.slow
def test_ingest_bench_reports_three_phases(tmp_path: Path) -> None:
    generate(tmp_path / "corpus", total_bytes=300_000, seed=6)
    proc = subprocess.run(
        [sys.executable, str(BENCH / "ingest_bench.py"), str(tmp_path / "corpus"), str(tmp_path / "work")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    rows = {row["phase"]: row for row in map(json.loads, proc.stdout.splitlines())}
    assert list(rows) == ["first", "unchanged", "append", "appended"]
    assert rows["first"]["processed"] > 0 and rows["first"]["peak_rss_mb"] > 0
    assert rows["unchanged"]["processed"] == 0
    assert rows["appended"]["processed"] == rows["append"]["sessions"]
    # The benchmark grows its own copy, never the corpus it was given.
    assert _files(tmp_path / "corpus") != _files(tmp_path / "work" / "corpus")


def _omp_line_bytes(root: Path) -> tuple[int, int]:
    """Bytes of OMP assistant message lines, and of every OMP line."""
    assistant = total = 0
    for path in (root / "omp").rglob("*.jsonl"):
        for line in path.read_bytes().splitlines():
            total += len(line)
            entry = json.loads(line)
            if entry.get("type") == "message" and entry["message"].get("role") == "assistant":
                assistant += len(line)
    return assistant, total


def test_prose_heavy_shape_has_no_huge_sessions_and_bytes_in_assistant_lines(tmp_path: Path) -> None:
    from corpus import SHAPES

    default = generate(tmp_path / "default", total_bytes=12_000_000, seed=4, agents=("omp",))
    heavy = generate(tmp_path / "heavy", total_bytes=12_000_000, seed=4, agents=("omp",), shape=SHAPES["prose-heavy"])
    assert default[0].sessions and heavy[0].sessions
    # No multi-MB sessions (a session overshoots its target by at most one turn).
    assert max(p.stat().st_size for p in (tmp_path / "heavy" / "omp").rglob("*.jsonl")) < 1_500_000
    share = {name: a / t for name, (a, t) in ((n, _omp_line_bytes(tmp_path / n)) for n in ("default", "heavy"))}
    assert share["default"] < 0.4 < 0.6 < share["heavy"]
    finals = [
        entry["message"]["content"]
        for path in (tmp_path / "heavy" / "omp").rglob("*.jsonl")
        for entry in map(json.loads, path.read_bytes().splitlines())
        if entry.get("type") == "message" and entry["message"].get("stopReason") == "stop"
    ]
    assert any([part["type"] for part in parts] == ["thinking", "text"] for parts in finals)


def test_cli_shape_option(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH / "gen_corpus.py"), str(tmp_path), "--mb", "0.5", "--shape", "prose-heavy"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["shape"] == "prose-heavy"
    bad = subprocess.run(
        [sys.executable, str(BENCH / "gen_corpus.py"), str(tmp_path), "--mb", "0.5", "--shape", "huge"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "--shape: invalid choice: 'huge'" in bad.stderr


# --------------------------------------------------------------------------- the zh-mixed shape

CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def zh_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    """A zh-mixed store and the ledgers of its first `kb ingest --write`."""
    from corpus import SHAPES

    from tests.testing.cli import run_kb

    root = tmp_path_factory.mktemp("zh")
    generate(root / "corpus", total_bytes=3_000_000, seed=12, secret_mode="placeholder", shape=SHAPES["zh-mixed"])
    kb = root / "kb"
    kb.mkdir()
    result = run_kb(
        "ingest",
        "--root",
        str(kb),
        "--write",
        "--skip-hindsight",
        "--output-dir",
        str(root / "out"),
        *ingest_flags(root / "corpus"),
    )
    assert result.code == 0, result.err
    return root, json.loads(result.out.strip().splitlines()[-1])


def _ledger(root: Path, name: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in (root / "out" / name).read_text("utf-8").splitlines()]


def _kept_messages(root: Path) -> list[tuple[str, str, str]]:
    """(session, role, text) of every distinct message the candidates keep."""
    from kbtools.ingest.candidates import split_messages

    seen: dict[tuple[str, str, str], None] = {}
    for row in _ledger(root, "candidates.jsonl"):
        for role, text in split_messages(str(row["text"])):
            seen[(str(row["source_key"]), role, text)] = None
    return list(seen)


def _share(texts: list[str], chars: str) -> float:
    return sum(any(c in t for c in chars) for t in texts) / len(texts)


def test_zh_mixed_store_is_ingested_with_every_session_processed(zh_run: tuple[Path, dict[str, object]]) -> None:
    root, summary = zh_run
    assert summary["failed"] == 0 and summary["errors"] == 0 and summary["unknown_records"] == 0
    sessions = [row for row in _ledger(root, "manifest.jsonl") if row["record_type"] == "session"]
    assert len(sessions) >= 40
    # A session left out is one without a prompt (a budget's tail too small for a turn), as in every shape.
    left_out = [row for row in sessions if row["parse_status"] != "processed"]
    assert all(not row["records"].get("user_prose") for row in left_out)  # type: ignore[attr-defined]
    assert len(left_out) <= 2


def test_zh_mixed_kept_prose_has_chinese_and_typographic_punctuation(zh_run: tuple[Path, dict[str, object]]) -> None:
    root, _summary = zh_run
    messages = _kept_messages(root)
    by_session: dict[str, list[str]] = {}
    for session, role, text in messages:
        if role == "user":
            by_session.setdefault(session, []).append(text)
    # About 60 % of the users write Chinese, the whole session long.
    chinese = [s for s, prompts in by_session.items() if any(CJK.search(p) for p in prompts)]
    assert 0.45 <= len(chinese) / len(by_session) <= 0.75
    assert all(all(CJK.search(p) for p in by_session[s]) for s in chinese)
    zh_prompts = [t for _s, role, t in messages if role == "user" and CJK.search(t) and len(t) > 30]
    assert len(set(zh_prompts)) >= 0.95 * len(zh_prompts)  # not a handful of repeated sentences
    assert sum(bool(re.search(r"`[^`]*[a-z_]+\.(py|ts|tsx|rs)`", t)) for t in zh_prompts) >= 0.2 * len(zh_prompts)
    replies = [t for _s, role, t in messages if role == "assistant"]
    zh_replies = [t for t in replies if CJK.search(t)]
    assert 0.4 <= len(zh_replies) / len(replies) <= 0.85
    assert _share(zh_replies, "，。：") > 0.9 and _share(zh_replies, "`") > 0.5  # English terms inline
    # English paragraphs as models write them (closing answers and longer notes).
    english = [t for t in replies if not CJK.search(t) and len(t) > 200]
    assert len(english) >= 20
    assert 0.35 <= _share(english, "—") <= 0.85
    assert 0.15 <= _share(english, "→") <= 0.6
    assert 0.1 <= _share(english, "’") <= 0.5
    assert 0.15 <= _share(english, "✅❌✓") <= 0.6
    assert 0 < _share(replies, "…") <= 0.15


def test_zh_mixed_thinking_is_mostly_english_with_some_chinese(zh_run: tuple[Path, dict[str, object]]) -> None:
    root, _summary = zh_run
    thinking = [
        part["thinking"]
        for path in (root / "corpus" / "omp").rglob("*.jsonl")
        for entry in map(json.loads, path.read_bytes().splitlines())
        if entry.get("type") == "message" and entry["message"].get("role") == "assistant"
        for part in entry["message"]["content"]
        if part["type"] == "thinking"
    ]
    text = "".join(thinking)
    with_chinese = [t for t in thinking if CJK.search(t)]
    assert 0.3 <= len(with_chinese) / len(thinking) <= 0.8
    assert len(CJK.findall(text)) < 0.1 * len(text)


def test_zh_mixed_same_seed_gives_identical_bytes(tmp_path: Path) -> None:
    from corpus import SHAPES

    for name in ("a", "b"):
        generate(tmp_path / name, total_bytes=500_000, seed=5, shape=SHAPES["zh-mixed"])
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert CJK.search(_all_text(tmp_path / "a"))
