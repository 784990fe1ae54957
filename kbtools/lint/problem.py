"""The one record every check produces."""

from __future__ import annotations

from dataclasses import dataclass


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
