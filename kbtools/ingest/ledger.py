"""The ingest ledgers on disk: their files, paths and lines (read by ledger_read, written by ledger_write).

Files in the output directory (directories 0700, files 0600):

- ``<ledger>.jsonl``   the ledgers: manifest, candidates, rejected, events (see :mod:`kbtools.ingest.rows`)
- ``*.partial.jsonl``  the journal of an unfinished ``--write`` run
- ``run-summary.md``   the last run's counts
- ``.lock``            held (``flock``) by the running ``--write``

Final ledgers are streamed to temp files and renamed into place at the end
(candidates, rejected, events, then the manifest), so a reader sees the old or
the new ledger, never a mix. Progress is journalled by *appending* each batch
to the partial files (candidates, rejected, events first, the manifest rows
last, each fsynced), so a run over N sources writes O(N) rows in total and a
``kill -9`` loses at most the batch in flight: its manifest rows are missing,
so those sources are simply processed again. Partial rows carry the ``_run``
that wrote them; for one source the rows of the latest run win.

A prior ledger row that does not parse or lacks a required field is skipped
and counted (``malformed_prior_rows``), never a crash.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from kbtools.errors import KbError
from kbtools.ingest.rows import LEDGERS, REQUIRED, RUN_TAG, decode
from kbtools.ingest.rows import Row as Row  # as extract imports it

LOCK_FILE = ".lock"
SUMMARY_FILE = "run-summary.md"


def stat_json(stat_key: object) -> str:
    """A source version as compact JSON ("" for none): equal strings, equal versions."""
    if not isinstance(stat_key, (list, tuple)):
        return ""
    if len(stat_key) == 3 and type(stat_key[0]) is type(stat_key[1]) is type(stat_key[2]) is int:
        return f"[{stat_key[0]:d},{stat_key[1]:d},{stat_key[2]:d}]"  # a file's (size, mtime_ns, inode): as json.dumps has it
    return json.dumps(list(stat_key), separators=(",", ":"))


def ledger_path(output_dir: Path, ledger: str, *, partial: bool = False) -> Path:
    return output_dir / (f"{ledger}.partial.jsonl" if partial else f"{ledger}.jsonl")


def open_ledger(path: Path) -> IO[bytes] | None:
    """The ledger file opened for reading, or None when it does not exist."""
    try:
        return open(path, "rb")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise KbError(f"cannot read ledger: {exc.strerror}", str(path)) from None


def lines_of(fh: IO[bytes]) -> Iterator[tuple[bytes, int]]:
    """``(line, byte offset)`` per non-blank line of an open file."""
    offset = 0
    for line in fh:
        start, offset = offset, offset + len(line)
        if line.strip():
            yield line, start


def iter_ledger(path: Path, ledger: str) -> Iterator[Row | None]:
    """Each non-blank line's row (None if malformed); nothing if the file is absent."""
    fh = open_ledger(path)
    if fh is None:
        return
    with fh:
        for line, _ in lines_of(fh):
            yield decode(line, ledger)


_SOURCE_KEY = b'"source_key":"'
_RUN_KEY = b'"' + RUN_TAG.encode() + b'":"'
_CANDIDATE_KEYS = tuple(f'"{name}":"'.encode() for name in REQUIRED["candidates"])


def candidate_keys(line: bytes) -> tuple[str | None, str | None]:
    """(source_key, run tag) of a whole candidate line as written here, or
    (None, None) when it must be parsed. A key with its quotes occurs unescaped
    only as a key: inside a string value every quote is escaped."""
    if not (line.startswith(b'{"') and line.endswith(b"}\n")) or not all(k in line for k in _CANDIDATE_KEYS):
        return None, None
    values: list[str | None] = []
    for name in (_SOURCE_KEY, _RUN_KEY):
        at = line.find(name)
        if at < 0:
            values.append(None)
            continue
        end = line.find(b'"', at + len(name))
        value = line[at + len(name) : end]
        if end < 0 or b"\\" in value or not value.isascii():
            return None, None
        values.append(value.decode("ascii"))
    return (values[0], values[1]) if values[0] else (None, None)


CRASH_ENV = "KB_TEST_CRASH_AT"


def crash_point(name: str) -> None:
    """``kill -9`` of this process at a named moment when ``$KB_TEST_CRASH_AT`` names
    it (bench/crash_drill.py and the crash tests; unset, it costs a dict lookup).
    Points: ``journal-<ledger>`` after that partial file is appended and fsynced,
    ``rename-<ledger>`` after that final ledger is renamed into place,
    ``unlink-<ledger>`` after that partial file is deleted, ``draft-stamped`` after a first
    run's search-index draft is stamped and before it is renamed into place
    (:func:`kbtools.review.index.adopt_draft`)."""
    if os.environ.get(CRASH_ENV) == name:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


def remove_stale_files(output_dir: Path) -> None:
    """What a killed run leaves that no run reads: its temp files
    (``.<ledger>.jsonl.<pid>.<hex>.tmp``), and journal files without the journal's
    manifest part (see PriorState.load), which a new journal would be appended to;
    and the extraction memos of earlier versions."""
    litter = [*output_dir.glob(".*.tmp"), *(output_dir / f"extraction-memo.{end}" for end in ("bin", "index"))]
    if not ledger_path(output_dir, "manifest", partial=True).exists():
        litter += [ledger_path(output_dir, name, partial=True) for name in LEDGERS]
    for path in litter:
        with contextlib.suppress(OSError):
            path.unlink()
