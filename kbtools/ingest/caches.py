"""The one door to every ingest cache, and the caches kept next to the ledgers.

Everything ingest keeps or skips only for speed asks :func:`enabled`; with
``KB_INGEST_NO_CACHE=1`` every one of them is off and the run reads and writes
the ledgers the long way. The ledgers are the same either way (timestamps aside):
the test suite runs ingest both ways and compares them.

- the ledger index (:data:`LEDGER_INDEX_FILE`): where each row lies, so a rerun
  neither scans nor parses the prior ledgers (a source's candidate lines are
  read in one go);
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
import zlib
from pathlib import Path
from typing import Any

from kbtools.fsio import atomic_write_bytes, stat_key
from kbtools.ingest.rows import SCHEMA_KEY

NO_CACHE_ENV = "KB_INGEST_NO_CACHE"

# What the duplicate marking needs of each stored candidate, by the rows_digest of
# its source's lines (same digest, same bytes, same keys), so an unchanged rerun
# need not decode code blocks and error messages again.
KEY_CACHE_FILE = "dedup-keys.marshal"

# Where every row of the final ledgers lies, so a rerun need not scan or parse
# them: per ledger, the (size, mtime, inode) of the file it was written with, and
# each manifest row's entry (see PriorSource) with its offset, or each
# source's candidate line starts (and where the last one ends) with the
# rows_digest they were written with. A part is used only for its own file.
LEDGER_INDEX_FILE = "ledger-index.marshal"

# Each file's format; the rows' fields are part of the index's, so an entry of a
# row written with other fields is never read as one of these.
# (7: every manifest line it vouches for has all the fields prior_rows sets, see reemit._only_run_at.)
_FORMATS: dict[str, Any] = {KEY_CACHE_FILE: 4, LEDGER_INDEX_FILE: (7, SCHEMA_KEY)}


def enabled() -> bool:
    """Whether ingest may use its caches (``KB_INGEST_NO_CACHE=1`` turns them all off)."""
    return os.environ.get(NO_CACHE_ENV, "") != "1"


# What this process last wrote of each cache, by path, with the (size, mtime, inode) of the file
# it wrote: a reader that changes nothing of it (shared=True) is given it without reading the
# file again (kb review reads the ledger index ingest has just written).
_WRITTEN: dict[Path, tuple[tuple[int, int, int], Any]] = {}


def read(output_dir: Path, name: str, *, shared: bool = False) -> Any:  # what marshal gives
    """What :func:`write` stored as ``name``; None when it is absent, damaged (the
    checksum is against damage, not forgery: whoever can write it can write the
    ledgers) or of another format. ``shared``: the caller changes nothing of what it is
    given, which may then be what this process wrote, if the file is still the one it wrote."""
    if not enabled():
        return None
    if shared and (kept := _WRITTEN.get(output_dir / name)) is not None:
        try:
            if stat_key(os.stat(output_dir / name)) == kept[0]:
                return kept[1]
        except OSError:
            return None
    try:
        found, stored, payload = marshal.loads((output_dir / name).read_bytes())
        if found != _FORMATS[name] or stored != zlib.crc32(payload):
            return None
        return marshal.loads(payload)
    except (OSError, ValueError, EOFError, TypeError):
        return None


def write(output_dir: Path, name: str, data: Any) -> None:  # what marshal takes
    """``data`` stored as ``name`` with its format and checksum; a failure is ignored."""
    if not enabled():
        return
    payload = marshal.dumps(data)
    path = output_dir / name
    _WRITTEN.pop(path, None)
    try:
        atomic_write_bytes(path, [marshal.dumps((_FORMATS[name], zlib.crc32(payload), payload))], durable=False)
        _WRITTEN[path] = (stat_key(os.stat(path)), data)
    except OSError:
        pass  # only a cache: the next run does without


def index_part(index: Any, ledger: str, stat: os.stat_result) -> Any:
    """What a ledger index as :func:`read` gives it (checksummed: in the shape written) keeps
    of ``ledger``, when the file is still as it was written (``stat`` of it, open); else None."""
    if index is None or index[ledger][0] != stat_key(stat):
        return None
    return index[ledger][1]
