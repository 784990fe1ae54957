"""The reuse decision: when a prior ledger entry stands for a source unchanged.

See :func:`may_reuse`.
"""

from __future__ import annotations

from collections.abc import Sequence

from kbtools.ingest.hashing import sha256_hex
from kbtools.ingest.ledger import stat_json
from kbtools.ingest.ledger_read import PriorSource
from kbtools.ingest.model import SourceRef, SourceUnit
from kbtools.redact import REDACTION_VERSION

# Files modified this close to the run's start are read again next time (see cacheable_version).
RACY_NS = 2_000_000_000

# How a redaction status written under the current rules ends.
CURRENT_RULES = f":{REDACTION_VERSION}"


def may_reuse(
    prior: PriorSource,
    *,
    source_key: str | None = None,
    error: str | None = None,
    version: Sequence[object] | None = None,
) -> bool:
    """Whether the prior entry ``prior`` stands for the source as it is now: the contract's
    four conditions (SPEC §4), after the source was read or, by the stat cache, before.

    After a read, ``source_key`` and ``error`` are what the read found. Before one,
    ``version`` is what discovery found (a file's size, mtime_ns and inode; a DB
    session's row versions): equal to the version recorded with ``prior``, the bytes
    are unchanged, so the source would read as the prior row says (its source key and
    error), and it is reused unread, as git's index skips unchanged files.

    1. the prior ``parse_status`` is not ``failed``: a failure may have been transient
       (a locked DB, a live writer), so a failed source is always processed again,
       even with an unchanged content hash;
    2. the content hash is unchanged (it is part of the source key);
    3. the prior ``redaction_status`` ends with the current ``:<REDACTION_VERSION>``:
       text redacted by older rules is never trusted;
    4. the prior ledger is complete: as many candidate rows as ``candidate_count``,
       and a source without candidates has a rejected row saying why.

    Unlike the reference, a source that keeps the same harmless error (one malformed
    line) is reusable: same bytes, same outcome; it is not re-extracted on every run.
    """
    if version is not None:
        if not prior.stat_key or prior.stat_key != stat_json(version):
            return False
        source_key, error = prior.source_key, prior.error
    return (
        prior.parse_status != "failed"
        and prior.source_key == source_key
        and prior.redaction_status.endswith(CURRENT_RULES)
        and prior.complete
        and prior.error == error
    )


def locator_key_of(ref: SourceRef) -> str:
    """What the stat cache keys a source by: where it was found, hashed (a locator is never persisted)."""
    return sha256_hex(f"{ref.tool}\0{ref.locator}")


def cacheable_version(unit: SourceUnit, racy_after_ns: int) -> list[object] | None:
    """The version to record for the stat cache, or None when the source must be read next
    time: it had an error, or it is a file modified after ``racy_after_ns`` (ns since the
    epoch), which may change again within its mtime granularity (git's "racy" entries)."""
    version = unit.stat_key
    if version is None or unit.error or unit.format == "unavailable":
        return None
    if unit.format in ("jsonl", "json") and len(version) == 3 and isinstance(version[1], int):
        return None if version[1] > racy_after_ns else list(version)  # too recent to trust its mtime
    return list(version)
