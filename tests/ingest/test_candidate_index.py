"""The candidates offset index: a rerun reads unchanged sources' lines by their offsets;
the ledger it writes is the same as a full scan's, and a damaged or stale index is a miss."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from kbtools.ingest import caches
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


def test_a_source_whose_digest_the_index_does_not_vouch_for_is_read_and_hashed(env: IngestEnv) -> None:
    """The index vouches for the candidate lines, but the manifest row now names another
    rows_digest: the lines are read, hashed, found not to match and checked again, and the
    digest written is theirs (copying them as vouched would keep the wrong one)."""
    _sessions(env, 3)
    env.run()
    env.run()
    manifest = env.out / "manifest.jsonl"
    rows = [json.loads(line) for line in manifest.read_bytes().splitlines()]
    edited = next(row for row in rows if row["candidate_count"])
    edited["rows_digest"] = "0" * 64
    manifest.write_bytes(b"".join(json.dumps(row, separators=(",", ":")).encode() + b"\n" for row in rows))
    candidates = (env.out / "candidates.jsonl").read_bytes()
    summary, _ = env.run()
    assert summary["processed"] == 0 and (env.out / "candidates.jsonl").read_bytes() == candidates
    index = caches.read(env.out, caches.LEDGER_INDEX_FILE)
    context, digests, spans = index["candidates"][1]
    for row in env.rows("manifest", tool="omp"):
        key = row["source_key"]
        lines = candidates[spans[key][0] : spans[key][-1]]
        assert row["rows_digest"] == digests[key] == hashlib.sha256(context.encode() + lines).hexdigest()
    assert "0" * 64 not in (env.out / "manifest.jsonl").read_text()


def test_a_reemitted_manifest_line_is_the_one_its_row_encodes(env: IngestEnv) -> None:
    """Rows written again with only run_at changed keep their line but for run_at; a row
    whose status changes (processed, then unchanged) is encoded anew: every line is what
    the encoder writes for the row it holds."""
    from kbtools.ingest.rows import dumps

    _sessions(env, 3)
    env.run()
    for _ in range(2):  # processed -> unchanged (encoded anew), unchanged -> unchanged (the line kept)
        env.run()
        lines = (env.out / "manifest.jsonl").read_bytes().splitlines(keepends=True)
        omp = [json.loads(line)["parse_status"] for line in lines if json.loads(line)["tool"] == "omp"]
        assert omp == ["unchanged"] * 3
        assert all(dumps(json.loads(line)) == line for line in lines)
        assert len({json.loads(line)["run_at"] for line in lines}) == 1


def test_a_line_is_kept_only_when_nothing_but_run_at_changes(tmp_path: Path) -> None:
    """The predicate and the splice of a manifest row re-emitted unparsed; and a row kept so
    whose rows_digest the run then changes (its candidates marked again) is encoded anew."""
    from kbtools.ingest.ledger_read import ENTRY_FIELDS, PriorSource
    from kbtools.ingest.ledger_write import Reemitted, SourceRows, WriteSink
    from kbtools.ingest.reemit import _only_run_at, _with_run_at
    from kbtools.ingest.rows import dumps

    row = {
        **{name: "" for name in ENTRY_FIELDS},
        "source_key": "k",
        "tool": "omp",
        "parse_status": "unchanged",
        "redaction_status": "none:kb6",
        "candidate_count": 1,
        "article_slugs": [],
        "error": "",
        "run_at": "2026-01-01T00:00:00.000Z",
        "truncated": False,
        "internal_filtered": 0,
        "rows_digest": "d",
    }
    later = {**row, "run_at": "2026-01-02T00:00:00.000Z"}
    assert _with_run_at(dumps(row), str(later["run_at"])) == dumps(later)
    assert _with_run_at(dumps({**row, "note": {"run_at": "x"}}), "y") == b""  # two of them
    assert _with_run_at(dumps({k: v for k, v in row.items() if k != "run_at"}), "y") == b""
    values = {name: "" for name in ENTRY_FIELDS} | {"parse_status": "unchanged", "redaction_status": "none:kb6"}
    digest = PriorSource(**{**values, "candidate_count": 1, "internal_filtered": 0, "truncated": False})
    assert _only_run_at(digest, "unchanged", 1, "none:kb6")
    for other in [
        digest._replace(parse_status="processed"),
        digest._replace(candidate_count=2),
        digest._replace(candidate_count=True),
        digest._replace(internal_filtered=False),
        digest._replace(redaction_status="redacted:kb6"),
        digest._replace(from_journal=True),
    ]:
        assert not _only_run_at(other, "unchanged", 1, "none:kb6")
    assert not _only_run_at(digest, "skipped", 1, "none:kb6")

    sink = WriteSink(tmp_path, "run")
    rows = SourceRows({"source_key": "k", "rows_digest": "d2"})  # the run marked its candidates again
    rows.reemitted = Reemitted(dumps(later), "d", ("k",))
    sink.emit(rows, journal=False)
    kept = SourceRows({"source_key": "j", "rows_digest": "d"})
    kept.reemitted = Reemitted(dumps({**later, "source_key": "j"}), "d", ("j",))
    sink.emit(kept, journal=False)
    sink.commit()
    assert (tmp_path / "manifest.jsonl").read_bytes() == dumps({**later, "rows_digest": "d2"}) + dumps(
        {**later, "source_key": "j"}
    )
