"""The one record every check produces."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Problem:
    """One lint finding.

    ``message`` keeps the reference wording (SPEC §3) and never contains a
    secret. ``path`` is relative to the KB root (POSIX) and, with ``line``,
    places a GitHub annotation.
    """

    check: str  # family id, e.g. "raw-manifest", "note-metadata", "secrets"
    message: str
    path: str | None = None
    line: int | None = None
    # What identifies the finding in its file when the message does not (a secret: a hash of
    # the matched value, never the value); the baseline's fingerprint is built from it.
    # Not part of equality: two reports of one finding are one problem.
    identity: str | None = field(default=None, compare=False)


# Every check of SPEC §3: id → (number, family). The number orders the report; the
# family is what `kb lint --only` selects.
CHECKS: dict[str, tuple[int, str]] = {
    "raw-manifest-missing": (1, "raw"),
    "raw-manifest-entry": (2, "raw"),
    "raw-unregistered": (3, "raw"),
    "raw-checksum": (4, "raw"),
    "raw-missing-file": (5, "raw"),
    "raw-root-moved": (6, "raw"),
    "raw-snapshot-changed": (6, "raw"),
    "raw-manifest-rewritten": (7, "raw"),
    "raw-frontmatter": (8, "raw"),
    "note-metadata": (9, "notes"),
    "note-enum": (10, "notes"),
    "note-source": (11, "notes"),
    "note-link": (12, "notes"),
    "index-log-missing": (13, "index-log"),
    "index-membership": (14, "index-log"),
    "log-entries": (15, "index-log"),
    "secrets": (16, "secrets"),
}
FAMILIES: tuple[str, ...] = ("raw", "notes", "index-log", "secrets")


def sort_key(problem: Problem) -> tuple[int, str, int, str]:
    """Check number, then path, line and message: the same KB always reports in the same order."""
    return (CHECKS.get(problem.check, (99, ""))[0], problem.path or "", problem.line or 0, problem.message)
