"""A line shape (kbtools.ingest.sources._shapes) changes the cost of reading, never the outcome."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbtools.ingest.model import SourceSettings
from kbtools.ingest.sources import _shapes as shapes_module
from kbtools.ingest.sources import omp
from kbtools.ingest.sources._jsonl import JsonlScan

HEADER = '{"type":"session","version":3,"id":"s-1","cwd":"/home/alice/p","timestamp":"2026-03-01T09:00:00Z"}'


def _message(role: str, content: object, **extra: object) -> str:
    entry: dict[str, object] = {"type": "message"}  # no ids: every entry is on the active path
    entry["message"] = {"role": role, "content": content, "timestamp": 1772355600000, **extra}
    return json.dumps(entry, ensure_ascii=False)


# Lines a shape fits, lines it does not (decoded whole), and lines no decoder takes.
AWKWARD = [
    _message("user", "a prompt as a plain string"),
    _message("assistant", [{"type": "thinking", "thinking": "x" * 300}, {"type": "text", "text": "the answer"}]),
    _message("assistant", [{"type": "toolCall", "arguments": {"path": "/a", "edits": [1, 2.5, None]}}]),
    _message("assistant", ["a bare string part", {"type": "text", "text": "kept?"}]),
    _message("assistant", {"type": "text", "text": "content as an object"}),
    _message("user", [{"type": "text", "text": "from the harness"}], synthetic=True),
    _message("user", [{"type": "text", "text": "an advisor's"}], attribution="agent"),
    _message("assistant", [{"type": "text", "text": None}, {"type": "text", "text": 12}]),
    '{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"t"}],"x":NaN}}',
    '{"type":"message","message":{"role":"user","content":[{"type":"text","text":"lone \\ud800 half"}]}}',
    '{"type":"message","message":{"role":"assistant","content":[{"type":"thinking","thinking":"\\ud83d"}'
    ',{"type":"text","text":"after a lone half in a dropped field"}]}}',
    '{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"big"}]},"n":1e999}',
    '{"type":"message","timestamp":1,"timestamp":2,"message":{"role":"user","content":"duplicate keys"}}',
    '{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"trailing"}]}} junk',
    '["not", "an", "object"]',
    '{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"deep"}],"d":'
    + "[" * 3000
    + "]" * 3000
    + "}}",
]


def _write(tmp_path: Path, lines: list[str], invalid_utf8_in_dropped_field: bool = True) -> Path:
    path = tmp_path / "--home-alice-p--" / "2026-03-01_s-1.jsonl"
    path.parent.mkdir(parents=True)
    data = "\n".join([HEADER, *lines]).encode() + b"\n"
    if invalid_utf8_in_dropped_field:  # msgspec skips a dropped field's bytes unchecked
        data += b'{"type":"message","message":{"role":"user","content":"ok","junk":"\xc3\x28"}}\n'
    path.write_bytes(data)
    return path


def _outcome(root: Path) -> tuple[object, ...]:
    settings = SourceSettings(omp_sessions=root)
    (unit,) = [omp.load(ref, settings) for ref in omp.discover(settings)]
    records = [(r.role, r.text, r.created_at, r.index) for r in unit.records]
    return records, unit.error, unit.decisions, unit.session_identity, unit.project_identity, unit.created_at


def test_omp_reader_reads_the_same_with_and_without_its_shape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, AWKWARD)
    shaped = _outcome(tmp_path)
    monkeypatch.setattr(omp, "_shape", lambda: None)
    whole = _outcome(tmp_path)
    assert shaped == whole
    records = shaped[0]
    assert isinstance(records, list) and ("assistant", "the answer") in [r[:2] for r in records]


def _projection(obj: object) -> object:
    """What the OMP shape keeps of a whole-decoded line: its named fields, none null."""
    if not isinstance(obj, dict):
        return obj
    fields = ("type", "id", "parentId", "timestamp", "cwd", "parentSession")
    kept = {k: obj[k] for k in fields if obj.get(k) is not None}
    message = obj.get("message")
    if isinstance(message, dict):
        inner = {k: message[k] for k in ("role", "timestamp", "synthetic", "attribution") if message.get(k) is not None}
        content = message.get("content")
        if isinstance(content, list):
            content = [{k: p[k] for k in ("type", "text") if p.get(k) is not None} for p in content]
        if content is not None:
            inner["content"] = content
        kept["message"] = inner
    return kept


@pytest.mark.parametrize("line", AWKWARD)
def test_a_shaped_line_holds_what_the_whole_line_holds(tmp_path: Path, line: str) -> None:
    scan = JsonlScan(tmp_path / "unused")
    shaped = scan.parse(1, line.encode(), shapes_module.omp_line())
    whole = scan.parse(1, line.encode())
    assert shaped == whole or shaped == _projection(whole)
    assert scan.issues.counts.get("malformed_json", 0) % 2 == 0  # noted twice or never
