"""Aider chat histories as aider writes them.

Aider-AI/aider ``aider/io.py``: ``InputOutput`` appends ``# aider chat started
at <time>`` at each launch, the user's input as ``#### `` lines
(``user_input``), its own output as ``> `` lines (``tool_output``), and the
model's answers as plain Markdown (``ai_output``), to
``.aider.chat.history.md`` in the repository root.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kbtools.ingest.model import SourceSettings
from kbtools.ingest.sources import aider

HISTORY = """
# aider chat started at 2026-03-02 10:15:04

> Aider v0.86.1
> Main model: anthropic/claude-sonnet-4-5 with diff edit format
> Git repo: .git with 42 files
> Repo-map: using 4096 tokens

#### /add uploader/retry.py

> Added uploader/retry.py to the chat

#### Why does the upload retry forever?
#### It never gives up after a 503.

The loop in `retry.py` never compares the attempt count with `max_attempts`.

uploader/retry.py
```python
<<<<<<< SEARCH
while True:
=======
while attempt < max_attempts:
>>>>>>> REPLACE
```

> Tokens: 2.1k sent, 180 received. Cost: $0.01 message, $0.01 session.
> Applied edit to uploader/retry.py
> Commit 1a2b3c4 fix: bound the upload retries

#### /ask should the backoff be capped?

Yes: cap it at 30 seconds so a long outage does not grow the wait without bound.

# aider chat started at 2026-03-03 09:00:00

#### /exit
"""


def load_all(roots: list[Path]) -> list[Any]:
    cfg = SourceSettings(locations=(("aider_roots", tuple(roots)),))
    return [aider.load(ref, cfg) for ref in aider.discover(cfg)]


def test_history_decisions(tmp_path: Path) -> None:
    repo = tmp_path / "src" / "uploader"
    (repo / ".git").mkdir(parents=True)
    (repo / ".aider.chat.history.md").write_text(HISTORY)
    (tmp_path / "src" / "node_modules" / "x").mkdir(parents=True)
    (tmp_path / "src" / "node_modules" / "x" / ".aider.chat.history.md").write_text("#### hidden\n")
    (unit,) = load_all([tmp_path / "src"])
    texts = [(r.role, r.text) for r in unit.records]
    assert texts[0] == ("user", "Why does the upload retry forever?\nIt never gives up after a 503.")
    assert texts[1][0] == "assistant" and texts[1][1].startswith("The loop in `retry.py`")
    assert texts[2:] == [
        ("user", "should the backoff be capped?"),
        ("assistant", "Yes: cap it at 30 seconds so a long outage does not grow the wait without bound."),
    ]
    assert unit.project_identity == str(repo)
    assert unit.decisions == {"metadata": 2, "tool": 3, "injected": 2, "user_prose": 2, "assistant_prose": 2}
    assert not any("Tokens:" in r.text or "Applied edit" in r.text for r in unit.records)


def test_no_roots_is_one_unavailable_row(tmp_path: Path) -> None:
    (unit,) = load_all([tmp_path / "none"])
    assert (unit.format, unit.skip_reason) == ("unavailable", "source_store_unavailable")
