"""`kb lint --fix`: index rows and one dated log entry for new raw sources and notes; raw untouched.

The log entry follows the reference KB's log (DavidHLP/DavidHLP.github.io,
`src/content/information/zh-cn/kb-log.md`: `## [YYYY-MM-DD] ingest | <title>` then prose).
"""

from __future__ import annotations

import datetime as dt
import hashlib

from tests.testing.cli import run_kb
from tests.testing.kbfactory import make_kb


def _digest(root) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((root / "src/content/raw").rglob("*"))
        if p.is_file()
    }


def test_fix_adds_index_rows_and_one_dated_log_entry_then_lints_clean(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.add_raw("new-source", title="Captured article")
    kb.add_note("new-note", sources=["new-source"], title="A new page")
    kb.add_note("draft-note", status="deprecated")  # not listed: only live notes must be
    raw_before = _digest(kb.root)
    log_before = kb.log.read_text(encoding="utf-8")
    index_before = kb.index.read_text(encoding="utf-8")
    assert run_kb("lint", "--root", str(kb.root)).code == 1

    result = run_kb("lint", "--fix", "--root", str(kb.root))
    assert result.code == 0, result.err
    today = dt.date.today().isoformat()
    heading = f"## [{today}] ingest | 1 raw source(s), 1 wiki page(s)"
    assert result.err == (
        "kb lint --fix: src/content/information/zh-cn/kb-index.md: added 1 raw source row(s) and 1 wiki page row(s); "
        f"src/content/information/zh-cn/kb-log.md: added {heading}\n"
    )
    assert result.out.startswith("KB lint passed: 3 raw source(s), 4 wiki page(s)")
    assert _digest(kb.root) == raw_before, "raw evidence is never written"
    index = kb.index.read_text(encoding="utf-8")
    assert index.startswith(index_before), "existing index lines are kept as they were"
    assert index[len(index_before) :] == (
        "\n## Added by kb lint --fix\n\n"
        "- `new-source` — raw source: Captured article\n"
        "- [A new page](/note/new-note) — wiki page `zh-cn/new-note.md`\n"
    )
    log = kb.log.read_text(encoding="utf-8")
    assert log.startswith(log_before.rstrip("\n"))
    assert log.endswith(
        f"{heading}\n\n- raw source `new-source`: Captured article\n- wiki page `new-note`: A new page\n"
    )

    again = run_kb("lint", "--fix", "--root", str(kb.root))
    assert again.code == 0
    assert again.err == "kb lint --fix: the index and the log already list every raw source and note\n"
    assert kb.log.read_text(encoding="utf-8") == log, "a second run adds nothing"


def test_second_fix_extends_the_same_section_and_keeps_the_log_in_order(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.append_log("2999-01-01", "ingest", "from the future")  # the log must stay non-decreasing
    kb.add_raw("first")
    run_kb("lint", "--fix", "--root", str(kb.root))
    kb.add_raw("second", title="Second one")
    result = run_kb("lint", "--fix", "--root", str(kb.root))
    assert result.code == 0, result.err
    index = kb.index.read_text(encoding="utf-8")
    assert index.count("## Added by kb lint --fix") == 1
    assert index.endswith("- `first` — raw source: First\n- `second` — raw source: Second one\n")
    assert kb.log.read_text(encoding="utf-8").count("## [2999-01-01] ingest | ") == 3


def test_fix_creates_a_missing_index_and_log(tmp_path):
    kb = make_kb(tmp_path / "kb", git=False)  # in git, deleting a committed log is itself a finding
    kb.index.unlink()
    kb.log.unlink()
    result = run_kb("lint", "--fix", "--root", str(kb.root))
    assert result.code == 0, result.err
    assert kb.index.read_text(encoding="utf-8").startswith("# Knowledge Base Index\n\n## Added by kb lint --fix\n")


def test_fix_cannot_be_combined_with_history_modes_or_without_index_log(tmp_path):
    kb = make_kb(tmp_path / "kb")
    for args in (["--staged"], ["--since", "HEAD"], ["--only", "raw"]):
        result = run_kb("lint", "--fix", *args, "--root", str(kb.root))
        assert result.code == 2 and result.err.startswith("kb: error: "), args


def test_only_raw_does_not_claim_the_index_and_log_are_present(tmp_path):
    kb = make_kb(tmp_path / "kb")
    kb.index.unlink()
    result = run_kb("lint", "--only", "raw", "--root", str(kb.root))
    assert result.code == 0
    assert result.out == "KB lint passed (only raw): 2 raw source(s).\n"
    both = run_kb("lint", "--only", "notes,index-log", "--root", str(kb.root))
    assert both.code == 1 and "missing canonical index" in both.err
