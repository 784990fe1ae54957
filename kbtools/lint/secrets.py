"""Check 16: no credential in raw or note content being added or changed.

Only added or changed lines are scanned (committed evidence is immutable, so it is
not re-flagged). Consecutive lines are scanned together, so a PEM block spread over
lines is one hit on its first line. The message names the file, line and rule —
never the secret. A line holding ``kb:allow-secret`` marks a deliberate example.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
from collections.abc import Iterable, Iterator

from kbtools.lint.problem import Problem

CHECK = "secrets"


def secret_problems(changes: Iterable[tuple[str, Iterable[tuple[int, str]]]]) -> list[Problem]:
    """One problem per (file, line, kind) with a credential, in file and line order. The
    redaction engine is imported only when there is a line to scan (a lint of an unchanged
    KB has none)."""
    blocks = ((rel, first_line, block) for rel, lines in changes for first_line, block in _blocks(lines))
    first = next(blocks, None)  # streamed: a 12 MB staged file is never held whole
    if first is None:
        return []
    from kbtools.redact import find_secrets

    seen: set[tuple[str, int, str]] = set()
    problems: list[Problem] = []
    for rel, first_line, block in itertools.chain((first,), blocks):
        hits = find_secrets(block)
        if not hits:
            continue
        starts = _line_starts(block)
        for hit in hits:
            line = first_line + bisect.bisect_right(starts, hit.start) - 1
            key = (rel, line, hit.kind)
            if key in seen:
                continue
            seen.add(key)
            message = f"secret in {rel}:{line} ({hit.kind})"  # never the secret itself
            # The baseline knows the finding by a hash of the value, so it outlives moved lines.
            identity = f"{hit.kind}:{hashlib.sha256(block[hit.start : hit.end].encode()).hexdigest()}"
            problems.append(Problem(check=CHECK, message=message, path=rel, line=line, identity=identity))
    problems.sort(key=lambda p: (p.path or "", p.line or 0, p.message))
    return problems


def _blocks(lines: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """Runs of consecutive line numbers, joined with newlines: (first line number, text)."""
    first = prev = None
    texts: list[str] = []
    for number, text in sorted(lines, key=lambda item: item[0]):
        if prev is not None and number != prev + 1:
            assert first is not None
            yield first, "\n".join(texts)
            texts = []
            first = None
        if first is None:
            first = number
        texts.append(text)
        prev = number
    if first is not None:
        yield first, "\n".join(texts)


def _line_starts(block: str) -> list[int]:
    starts = [0]
    pos = block.find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = block.find("\n", pos + 1)
    return starts
