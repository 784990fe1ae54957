"""`kb redact` as data in, data out: plain text, or JSON Lines of ``{"text": …}``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from kbtools.errors import KbError
from kbtools.redact.engine import Redactor


def redact_jsonl(redactor: Redactor, lines: Iterable[str]) -> Iterator[str]:
    """Each ``{"text": …}`` line → ``{"text": redacted, "redactions": [labels]}``; blank lines skipped.

    A line that is not a JSON object with a string ``text`` raises KbError naming its number
    (the lines before it have already been yielded: this is a filter).
    """
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            raise KbError("invalid JSON", f"stdin line {number}") from None
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            raise KbError('expected an object with a string "text"', f"stdin line {number}")
        result = redactor.redact(record["text"])
        yield json.dumps({"text": result.text, "redactions": list(result.labels)}, ensure_ascii=False) + "\n"
