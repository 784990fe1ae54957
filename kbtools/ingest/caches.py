"""The one door to every ingest cache, and the caches kept next to the ledgers.

Everything ingest keeps or skips only for speed asks :func:`enabled`; with
``KB_INGEST_NO_CACHE=1`` every one of them is off and the run reads and writes
the ledgers the long way. The ledgers are the same either way (timestamps aside):
the test suite runs ingest both ways and compares them.

- the ledger index (:data:`LEDGER_INDEX_FILE`): where each row lies, so a rerun
  neither scans nor parses the prior ledgers; with it go the byte-range copy of
  a source's trusted candidate lines and the re-emission of a manifest line as
  it was but for ``run_at``;
- the dedup keys (:data:`KEY_CACHE_FILE`);
- the stat cache: a source whose recorded version is unchanged is reused unread
  (see reuse.may_reuse);
- the derived filter's artifact index kept next to the ledgers.

Each is a pure cache: a damaged, missing or foreign file is a miss, and the run
does without it (see docs/performance.md).
"""

from __future__ import annotations

import marshal
import os
from pathlib import Path
from typing import Any

from kbtools.fsio import atomic_write_bytes, stat_key
from kbtools.ingest.rows import SCHEMA_KEY

NO_CACHE_ENV = "KB_INGEST_NO_CACHE"


def enabled() -> bool:
    """Whether ingest may use its caches (``KB_INGEST_NO_CACHE=1`` turns them all off)."""
    return os.environ.get(NO_CACHE_ENV, "") != "1"


# What the duplicate marking needs of each stored candidate, by the rows_digest of
# its source's lines: a pure cache (same digest, same bytes, same keys), so an
# unchanged rerun need not decode code blocks and error messages again. Any
# damage is a cache miss.
KEY_CACHE_FILE = "dedup-keys.marshal"


_KEY_CACHE_FORMAT = 4


def read_key_cache(output_dir: Path) -> dict[str, bytes]:
    """rows_digest → the marshalled keys of those lines (unmarshalled when used)."""
    cache = read_cache(output_dir / KEY_CACHE_FILE, _KEY_CACHE_FORMAT)
    return cache if isinstance(cache, dict) else {}


def write_key_cache(output_dir: Path, cache: dict[str, bytes]) -> None:
    write_cache(output_dir / KEY_CACHE_FILE, _KEY_CACHE_FORMAT, cache)


# Where every row of the final ledgers lies, so a rerun need not scan or parse
# them: each manifest row's entry (see PriorSource) with its offset and length,
# each source's candidate line starts (and where the last one ends) with the
# rows_digest they were written with, and each source's rejected and event
# rows. A pure cache: each part is valid only for the ledger file it was
# written with (size, mtime, inode); a mismatch, a damaged file or another
# format is a miss, and that ledger is scanned as before.
LEDGER_INDEX_FILE = "ledger-index.marshal"


# The rows' fields are part of the format: a row written with other fields is
# never taken as canonical (see PriorState.restamped_manifest_line).
_LEDGER_INDEX_FORMAT = (4, SCHEMA_KEY)


def checksum(payload: bytes) -> int:
    """Against a damaged cache file, not a forged one (whoever can write it can write the ledgers)."""
    import zlib

    return zlib.crc32(payload)


def read_cache(path: Path, fmt: int | tuple[object, ...]) -> object:
    """What :func:`write_cache` stored in ``path`` in format ``fmt``; None when the file is
    absent, damaged or of another format (a cache miss)."""
    if not enabled():
        return None
    try:
        found, stored, payload = marshal.loads(path.read_bytes())
        if found != fmt or stored != checksum(payload):
            return None
        return marshal.loads(payload)
    except (OSError, ValueError, EOFError, TypeError):
        return None


def write_cache(path: Path, fmt: int | tuple[Any, ...], data: Any) -> None:  # what marshal takes
    """``data`` (marshallable) into ``path`` with its format and checksum; a failure is ignored."""
    if not enabled():
        return
    payload = marshal.dumps(data)
    try:
        atomic_write_bytes(path, [marshal.dumps((fmt, checksum(payload), payload))], durable=False)
    except OSError:
        pass  # only a cache: the next run does without


class LedgerIndex:
    """The parts of a read :data:`LEDGER_INDEX_FILE`, each handed out only for its own file."""

    def __init__(self, parts: dict[str, object]) -> None:
        self._parts = parts

    def _part(self, ledger: str, stat: os.stat_result) -> object:
        part = self._parts.get(ledger)
        if not isinstance(part, tuple) or len(part) != 2 or part[0] != stat_key(stat):
            return None
        return part[1]

    def manifest(self, stat: os.stat_result) -> list[tuple[tuple[object, ...], int, int]] | None:
        """``(entry, offset, length)`` of every manifest row, in file order."""
        rows = self._part("manifest", stat)
        return rows if isinstance(rows, list) else None

    def candidates(self, stat: os.stat_result) -> tuple[str, dict[str, str], dict[str, list[int]]] | None:
        """(digest context, rows_digest by source, line starts + end by source)."""
        part = self._part("candidates", stat)
        if not (isinstance(part, tuple) and len(part) == 3):
            return None
        context, digests, spans = part
        if not (isinstance(context, str) and isinstance(digests, dict) and isinstance(spans, dict)):
            return None
        return context, digests, spans

    def offsets(self, ledger: str, stat: os.stat_result) -> dict[str, list[int]] | None:
        """Line starts by source of the rejected or events ledger."""
        part = self._part(ledger, stat)
        return part if isinstance(part, dict) else None


def read_ledger_index(output_dir: Path) -> LedgerIndex | None:
    parts = read_cache(output_dir / LEDGER_INDEX_FILE, _LEDGER_INDEX_FORMAT)
    return LedgerIndex(parts) if isinstance(parts, dict) else None


def write_ledger_index(output_dir: Path, parts: dict[str, tuple[os.stat_result, object]]) -> None:
    """``parts``: per ledger, the stat of the file as written and what to keep of it."""
    data = {name: (stat_key(stat), kept) for name, (stat, kept) in parts.items()}
    write_cache(output_dir / LEDGER_INDEX_FILE, _LEDGER_INDEX_FORMAT, data)
