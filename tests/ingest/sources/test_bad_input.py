"""Bad input gives an error unit with a clear reason and the records that
could be kept; errors never quote the input."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from types import ModuleType

import pytest

from kbtools.ingest.hashing import sha256_hex
from kbtools.ingest.model import SourceRef, SourceSettings
from kbtools.ingest.sources import claude, codex, omp
from kbtools.ingest.sources._jsonl import JsonlScan
from kbtools.ingest.sources.common import (
    CHANGED_DURING_READ,
)
from tests.testing.sessions import ClaudeSession, CodexSession, OmpSession, assistant, user

SECRETISH = "needle-" + "q7" * 6


def _writer(session_cls: type, store_setting: str):  # type: ignore[no-untyped-def]
    """A session of ``session_cls`` with two good turns, then ``extra_lines`` appended."""

    def build(tmp_path: Path, extra_lines: list[bytes], *, newline: bool = True) -> tuple[Path, SourceSettings]:
        path = session_cls(session_id="s").add([user("kept question"), assistant("kept answer")]).write(tmp_path)
        with path.open("ab") as fh:
            fh.write(b"\n".join(extra_lines) + (b"\n" if newline else b""))
        return path, SourceSettings(**{store_setting: tmp_path})

    return build


BUILDERS = {
    "omp": (_writer(OmpSession, "omp_sessions"), omp),
    "codex": (_writer(CodexSession, "codex_dir"), codex),
    "claude": (_writer(ClaudeSession, "claude_dir"), claude),
}


def _ref_of(module: ModuleType, cfg: SourceSettings, path: Path) -> SourceRef:
    """The one ref discovery gives for the session file ``path``."""
    refs: list[SourceRef] = [r for r in module.discover(cfg) if r.locator == str(path)]
    (ref,) = refs
    return ref


def _load(name: str, tmp_path: Path, extra: list[bytes], *, newline: bool = True):  # type: ignore[no-untyped-def]
    build, module = BUILDERS[name]
    path, cfg = build(tmp_path, extra, newline=newline)
    return module.load(_ref_of(module, cfg, path), cfg)


@pytest.mark.parametrize("name", BUILDERS)
def test_truncated_last_line_of_a_live_writer_keeps_earlier_records(tmp_path: Path, name: str) -> None:
    half = b'{"type":"message","message":{"role":"user","content":"' + SECRETISH.encode()
    unit = _load(name, tmp_path, [half], newline=False)
    assert [r.text for r in unit.records] == ["kept question", "kept answer"]
    assert unit.error.startswith("truncated_last_line: 1 line (first at line ")
    assert SECRETISH not in unit.error


@pytest.mark.parametrize("name", BUILDERS)
def test_malformed_line_in_the_middle_is_counted_without_quoting_it(tmp_path: Path, name: str) -> None:
    unit = _load(name, tmp_path, [b'{"type":"message", ' + SECRETISH.encode(), b"{}"])
    assert unit.error.startswith("malformed_json: 1 line (first at line ")
    assert SECRETISH not in unit.error
    assert len(unit.records) == 2


@pytest.mark.parametrize("name", BUILDERS)
def test_absurdly_nested_line_is_malformed_not_a_crash(tmp_path: Path, name: str) -> None:
    deep = b'{"type":"message","message":{"role":"user","content":' + b"[" * 200_000 + b"]" * 200_000 + b"}}"
    unit = _load(name, tmp_path, [deep])
    assert unit.error.startswith("malformed_json: 1 line")
    assert [r.text for r in unit.records] == ["kept question", "kept answer"]


@pytest.mark.parametrize("name", BUILDERS)
def test_invalid_utf8_line_is_an_error_and_other_lines_survive(tmp_path: Path, name: str) -> None:
    bad = '{"type":"message","message":{"role":"user","content":"caf\xe9"}}'.encode("latin-1")
    unit = _load(name, tmp_path, [bad])
    assert unit.error.startswith("invalid_utf8: 1 line")
    assert [r.text for r in unit.records] == ["kept question", "kept answer"]


@pytest.mark.parametrize("name", BUILDERS)
def test_binary_file_named_jsonl_is_an_error_unit(tmp_path: Path, name: str) -> None:
    build, module = BUILDERS[name]
    path, cfg = build(tmp_path, [])
    path.write_bytes(bytes(range(256)) * 64 + b"\x00\x01\n\x89PNG\r\n\x1a\n" * 8)
    unit = module.load(_ref_of(module, cfg, path), cfg)
    assert unit.records == []
    assert "binary_content" in unit.error or "invalid_utf8" in unit.error


@pytest.mark.parametrize("name", BUILDERS)
def test_100_mb_single_line_is_discarded_with_bounded_memory(tmp_path: Path, name: str) -> None:
    build, module = BUILDERS[name]
    path, cfg = build(tmp_path, [])
    with path.open("ab") as fh:
        fh.write(b'{"type":"message","message":{"role":"user","content":"')
        block = b"word " * (1 << 18)  # prose-shaped: not base64 that could be cut out
        for _ in range(80):
            fh.write(block)
        fh.write(b'"}}\n')
        fh.write(b'{"type":"message","message":{"role":"user","content":"after the long line"}}\n')
    ref = _ref_of(module, cfg, path)
    tracemalloc.start()
    try:
        unit = module.load(ref, cfg)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 40 * 1024 * 1024, peak
    assert unit.error.startswith("overlong: 1 line")
    if name == "omp":  # codex rollouts use the envelope; the bare line is not a response item
        assert [r.text for r in unit.records][-1] == "after the long line"
    assert unit.records[0].text == "kept question"


@pytest.mark.parametrize("name", BUILDERS)
def test_session_removed_before_its_load_is_a_read_error_unit(tmp_path: Path, name: str) -> None:
    build, module = BUILDERS[name]
    path, cfg = build(tmp_path, [])
    ref = _ref_of(module, cfg, path)
    path.unlink()
    unit = module.load(ref, cfg)
    assert unit.error == "read_error: No such file or directory"
    assert (unit.records, unit.stat_key, unit.updated_at) == ([], None, "")
    assert unit.content_hash == sha256_hex(unit.error)
    assert (unit.tool, unit.record_type, unit.source_identity) == (name, "session", str(path))


def test_file_changed_during_the_read_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps({"n": i}) + "\n" for i in range(10)))
    scan = JsonlScan(path)
    lines = scan.lines()
    next(lines)
    with path.open("a") as fh:
        fh.write('{"n": 99}\n')
    for _ in lines:
        pass
    assert scan.error() == CHANGED_DURING_READ
    assert scan.read_stat_key() is None  # a stat cache must not remember this read


def test_unchanged_file_is_not_reported_changed(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"a":1}\n{"b":2}\n')
    scan = JsonlScan(path)
    assert [scan.parse(n, line) for n, line, _ in scan.lines()] == [{"a": 1}, {"b": 2}]
    assert scan.error() == ""
    st = path.stat()
    assert scan.read_stat_key() == (st.st_size, st.st_mtime_ns, st.st_ino)


def test_prose_beyond_the_cap_is_not_retained_and_marked_truncated(tmp_path: Path) -> None:
    session = OmpSession(session_id="s").add([user("q" * 300), assistant("a" * 300), user("tail")])
    session.write(tmp_path)
    cfg = SourceSettings(omp_sessions=tmp_path, max_text=100)
    (unit,) = [omp.load(r, cfg) for r in omp.discover(cfg)]
    assert unit.truncated
    assert sum(len(r.text) for r in unit.records) <= 400


def test_session_appended_to_while_loading_yields_no_records(tmp_path: Path) -> None:
    import threading

    session = OmpSession(session_id="s")
    for i in range(200):
        session.user(f"question {i}")
        session.assistant("answer", tool=("cat log", "L" * 20_000))
    path = session.write(tmp_path)
    settings = SourceSettings(omp_sessions=tmp_path)
    (ref,) = omp.discover(settings)
    stop = threading.Event()
    started = threading.Event()

    def live_writer() -> None:
        with path.open("ab", buffering=0) as fh:
            while not stop.is_set():
                fh.write(b'{"type":"message","message":{"role":"user","content":"more"}}\n')
                started.set()
                stop.wait(0.0005)

    writer = threading.Thread(target=live_writer)
    writer.start()
    started.wait(5)
    try:
        unit = omp.load(ref, settings)
    finally:
        stop.set()
        writer.join()
    assert unit.error == CHANGED_DURING_READ
    assert unit.records == []
    assert unit.stat_key is None
