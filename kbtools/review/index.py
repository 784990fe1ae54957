"""The search index: an embedded SQLite FTS5 database beside the ledgers.

``<output dir>/search-index.sqlite`` holds one FTS5 row per candidate (its
topic, goal, text and conclusions) and one per wiki note and raw source. The
ledgers and the KB stay the truth; the index is derived from them and kept in
step incrementally:

- candidates: each ledger line is known by a hash of its bytes. An update
  reads the ledger, indexes the lines it has not seen (a new candidate, or one
  whose row changed) and drops the rows whose line is gone; a ledger whose
  size, mtime and inode are those last indexed is not read at all. So an
  unchanged ingest rerun rebuilds nothing, and one that appended a session
  indexes that session's candidates only.
- notes and raw evidence: each file is known by its size and mtime; a search
  over them re-indexes the files that changed and drops the ones that went.

A damaged index is never trusted. After every write the database file's own
size, mtime and inode are recorded in ``search-index.stamp``; a database that
does not match its stamp was changed by something else (a crash mid-write, a
disk error, a hand edit), and one with another schema version or that raises a
database error during use is damaged: each is deleted and rebuilt from the
ledgers, never repaired in place. One kb process at a time uses the index
(:data:`LOCK_FILE`), and a lock held by another is not damage: an update waits for it
(:data:`BUSY_TIMEOUT`), then fails with a one-line error, the file left alone; and what an
update writes is worked out inside its write transaction. A rebuild forgets which run first
saw a candidate: all of them count as new in the run that rebuilt it.

Words are indexed as the derived filter normalises them
(:func:`kbtools.derived.normalise.tokens`: NFKC, lower case, Markdown layout
stripped, one token per Han/kana/Hangul character), then Porter-stemmed, so a
query matches across case, punctuation, inflection and scripts without spaces.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import itertools
import json
import os
import re
import sqlite3
import time
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

from kbtools.errors import KbError
from kbtools.fsio import PRIVATE_FILE_MODE, atomic_write_text, ensure_private_dir, open_private, stat_key
from kbtools.ingest.ledger import SUMMARY_FILE, crash_point, ledger_path
from kbtools.review.rows import Row

if TYPE_CHECKING:
    from kbtools.review.cluster_index import Departed
    from kbtools.review.source_sync import LedgerSource

INDEX_FILE = "search-index.sqlite"
STAMP_FILE = "search-index.stamp"
LOCK_FILE = "search-index.lock"  # held (flock) by the one kb process using the index
SCHEMA_VERSION = 5
TOKENIZER = "porter unicode61 remove_diacritics 2"
# bm25 column weights: a word in the topic or goal says more than one in a long reply.
CANDIDATE_WEIGHTS = (4.0, 2.0, 1.0, 2.0)  # topic, goal, body, conclusions
DOC_WEIGHTS = (4.0, 1.0)  # title, body
SNIPPET_TOKENS = 14
_INSERT_BATCH = 256  # candidate rows inserted with one executemany per table
BUSY_TIMEOUT = 10.0  # seconds an update waits for another process's write lock
LAYERS = ("note", "raw")

_SCHEMA = f"""
CREATE TABLE meta(key TEXT PRIMARY KEY, value NOT NULL);
CREATE TABLE candidate(
    id INTEGER PRIMARY KEY,
    candidate_id TEXT NOT NULL UNIQUE,
    line_hash TEXT NOT NULL,
    tool TEXT NOT NULL,
    decision TEXT NOT NULL,
    project_key TEXT NOT NULL,
    session_key TEXT NOT NULL,
    created_at TEXT NOT NULL,
    position INTEGER NOT NULL,
    cluster_id TEXT NOT NULL DEFAULT '',
    cluster_size INTEGER NOT NULL DEFAULT 1,
    title TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    role INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX candidate_line ON candidate(line_hash);
CREATE TABLE candidate_features(id INTEGER PRIMARY KEY, features BLOB NOT NULL);
CREATE TABLE ledger_source(
    source_key TEXT PRIMARY KEY,
    rows_digest TEXT NOT NULL,
    first INTEGER NOT NULL,
    last INTEGER NOT NULL,
    ids BLOB NOT NULL
);  -- see kbtools.review.source_sync
CREATE TABLE cluster_posting(hash INTEGER NOT NULL, lead INTEGER NOT NULL);  -- indexed by the first clustering
CREATE VIRTUAL TABLE candidate_fts USING fts5(topic, goal, body, conclusions, tokenize='{TOKENIZER}');
CREATE TABLE doc(
    id INTEGER PRIMARY KEY,
    layer TEXT NOT NULL,
    rel TEXT NOT NULL,
    slug TEXT NOT NULL,
    title TEXT NOT NULL,
    stamp TEXT NOT NULL,
    UNIQUE(layer, rel)
);
CREATE VIRTUAL TABLE doc_fts USING fts5(title, body, tokenize='{TOKENIZER}');
PRAGMA user_version = {SCHEMA_VERSION};
"""


@dataclass(frozen=True)
class IndexUpdate:
    """What an update did: ``rebuilt`` names why the index was made anew ("" if not)."""

    rebuilt: str
    added: int
    removed: int
    ledger_read: bool
    lines_read: int = 0  # ledger lines read (only those of the sources that changed, if ingest vouches for the rest)
    docs_changed: int = 0
    clusters: int = 0  # clusters of two or more candidates, after the update
    clustered: int = 0  # candidates in them


@dataclass(frozen=True)
class Hit:
    kind: str  # candidate | note | raw
    ref: str  # the candidate id, or the file's path under its layer root
    title: str
    snippet: str  # matched words in [brackets], from the normalised text
    score: float  # bm25: lower is better
    tool: str = ""
    decision: str = ""
    cluster_id: str = ""
    cluster_size: int = 1


def index_path(output_dir: Path) -> Path:
    return output_dir / INDEX_FILE


# --------------------------------------------------------------------------- words


def normalised(text: str) -> str:
    """The words FTS5 indexes: the derived filter's normal form, space-separated."""
    from kbtools.derived.normalise import tokens

    return _joined(tokens(text))


def _joined(words: list[bytes]) -> str:
    """Normalised words (:func:`kbtools.derived.normalise.tokens`) as :func:`normalised` gives them."""
    return b" ".join(words).decode("utf-8", "replace")


_QUERY_PIECE = re.compile(r'"([^"]*)"|(\S+)')


def fts_query(query: str) -> str:
    """A person's query as an FTS5 expression: every word or quoted phrase must occur.

    Each piece is normalised like the indexed text, so ``tsconfig.json`` is the
    phrase ``"tsconfig json"`` and ``路径`` the phrase ``"路 径"``; a trailing
    ``*`` keeps its prefix meaning; FTS5 operators typed by the user are words.
    """
    parts: list[str] = []
    for quoted, bare in _QUERY_PIECE.findall(unicodedata.normalize("NFKC", query)):
        piece = quoted or bare
        words = normalised(piece)
        if words:
            parts.append(f'"{words}"' + ("*" if bare.endswith("*") else ""))
    if not parts:
        raise KbError("the query has no words to search for", repr(query))
    return " ".join(parts)


# --------------------------------------------------------------------------- opening


_T = TypeVar("_T")


def with_index(output_dir: Path, work: Callable[[sqlite3.Connection], _T], *, rebuild_reason: list[str]) -> _T:
    """Run ``work`` on an open, trusted index; a database error during it means a
    damaged file: rebuild once and run again. ``rebuild_reason`` receives why a
    rebuild happened. An index another process holds locked past :data:`BUSY_TIMEOUT`
    is not damaged: that is a :class:`KbError`, and the file is left alone."""
    with _index_lock(output_dir):
        return _with_trusted(output_dir, work, rebuild_reason)


def _with_trusted(output_dir: Path, work: Callable[[sqlite3.Connection], _T], rebuild_reason: list[str]) -> _T:
    for attempt in (0, 1):
        con, reason = _open(output_dir, force_new=attempt == 1)
        if reason:
            rebuild_reason.append(reason)
        try:
            with closing(con):
                result = work(con)
                return result
        except sqlite3.DatabaseError as exc:
            _raise_if_busy(exc, output_dir)
            if attempt == 1:
                raise
            rebuild_reason.append("damaged")
    raise AssertionError("unreachable")  # pragma: no cover


@contextlib.contextmanager
def _index_lock(output_dir: Path) -> Iterator[None]:
    """One kb process at a time opens, checks, writes and stamps the index: between another's
    commit and its stamp the file does not match the stamp, and must not be taken for one
    changed behind kb's back. ``flock`` on :data:`LOCK_FILE`, waited for up to
    :data:`BUSY_TIMEOUT`; the kernel releases it when the holder dies."""
    import fcntl

    path = output_dir / LOCK_FILE
    try:
        ensure_private_dir(output_dir)
        fd = open_private(path, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        raise KbError(f"cannot open the search index's lock: {exc.strerror or exc}", str(path)) from None
    try:
        deadline = time.monotonic() + BUSY_TIMEOUT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise _busy(output_dir) from None
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)


def _busy(output_dir: Path) -> KbError:
    return KbError(
        f"the search index is busy: another kb process held it for more than {BUSY_TIMEOUT:g} s; try again",
        str(index_path(output_dir)),
    )


def _raise_if_busy(exc: sqlite3.DatabaseError, output_dir: Path) -> None:
    """A KbError for a lock another connection holds (SQLITE_BUSY, SQLITE_LOCKED), else nothing."""
    if getattr(exc, "sqlite_errorcode", 0) & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        raise _busy(output_dir) from exc


def _connect(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None)
    con.execute("PRAGMA journal_mode = DELETE")
    con.execute("PRAGMA synchronous = NORMAL")
    return con


def _open(output_dir: Path, *, force_new: bool = False) -> tuple[sqlite3.Connection, str]:
    """The index opened and trusted, and "" — or made anew and why ("missing", "damaged", "schema")."""
    path = index_path(output_dir)
    reason = "damaged" if force_new else "missing"
    if path.exists() and not force_new:
        con = None
        try:
            con = _connect(path)
            verdict = _trust(con, path, output_dir)
            if not verdict:
                return con, ""
            reason = verdict
        except sqlite3.DatabaseError as exc:
            if con is not None:
                con.close()
            _raise_if_busy(exc, output_dir)
            reason = "damaged"
        else:
            con.close()
    con = _create(path)
    _stamp(path, output_dir)
    return con, reason


def _create(path: Path) -> sqlite3.Connection:
    """A new, empty index at ``path`` (whatever was there removed), opened."""
    _remove(path)
    ensure_private_dir(path.parent)
    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, PRIVATE_FILE_MODE))
    con = _connect(path)
    con.executescript(_SCHEMA)
    return con


def _trust(con: sqlite3.Connection, path: Path, output_dir: Path) -> str:
    """ "" if the open database can be used, else why not. Only kb writes the index, and
    it stamps every write; a file that does not match its stamp was changed by something
    else (a crash mid-write, a disk error, an edit) and is rebuilt, not repaired."""
    (version,) = con.execute("PRAGMA user_version").fetchone()
    if version != SCHEMA_VERSION:
        return "schema"
    if _stamp_text(path) != _read_stamp(output_dir):
        return "changed"
    return ""


def _remove(path: Path) -> None:
    for victim in (path, path.with_name(path.name + "-journal"), path.with_name(path.name + "-wal")):
        try:
            victim.unlink()
        except FileNotFoundError:
            pass


def _stamp_text(path: Path) -> str:
    try:
        st = path.stat()
    except FileNotFoundError:
        return ""
    return json.dumps(list(stat_key(st)))


def _read_stamp(output_dir: Path) -> str:
    try:
        return (output_dir / STAMP_FILE).read_text(encoding="utf-8").strip()
    except (FileNotFoundError, UnicodeDecodeError):
        return ""


def _stamp(path: Path, output_dir: Path) -> None:
    atomic_write_text(output_dir / STAMP_FILE, _stamp_text(path) + "\n")


def _meta(con: sqlite3.Connection, key: str) -> str:
    row = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return str(row[0]) if row else ""


def _set_meta(con: sqlite3.Connection, **values: str) -> None:
    con.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", values.items())


# --------------------------------------------------------------------------- candidates


def _line_hash(line: bytes) -> str:
    return hashlib.blake2b(line.rstrip(b"\r\n"), digest_size=16).hexdigest()


@contextlib.contextmanager
def _open_ledger(path: Path) -> Iterator[IO[bytes]]:
    """The ledger file opened for reading; an empty one when there is none yet."""
    try:
        fh: IO[bytes] = open(path, "rb")
    except FileNotFoundError:
        fh = io.BytesIO()
    with fh:
        yield fh


def _ledger_lines(ledger: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """The non-blank lines of ``ledger`` from its start, each with its offset."""
    ledger.seek(0)
    yield from _lines_of(ledger)


def _lines_of(stream: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """The non-blank lines of ``stream`` (a file, or a pipe the ledger's bytes are fed
    through), each with its offset from where it was when read."""
    offset = 0
    for line in stream:
        if line and not line.isspace():  # what line.strip() keeps, without copying the line
            yield offset, line
        offset += len(line)


def _as_text(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    return str(value or "")


def candidate_title(row: Row) -> str:
    """One line that says what a candidate is about: its prompt, else its topic."""
    goal = " ".join(str(row.get("user_goal") or "").split())
    return (goal or str(row.get("topic") or ""))[:120]


def _indexed(row: Row) -> tuple[tuple[str, str, str, str], bytes]:
    """A candidate's FTS columns (the normalised words of its topic, prompt, text and
    conclusions) and its clustering features: :func:`kbtools.review.clusters.packed_features`
    of the words of its prompt and conclusions, stored with it so that a re-clustering of the
    whole ledger reads them instead of shingling every candidate again. They are shingled from
    the words as normalised, not from the columns encoded and split again: the same words, as
    the normal form is UTF-8 (a lone surrogate is not a word character, so it went)."""
    from kbtools.derived.normalise import tokens
    from kbtools.review.clusters import packed_features

    conclusions = "\n".join(
        _as_text(row.get(name)) for name in ("root_cause", "final_solution", "error_messages", "symptoms")
    )
    goal_words, end_words = tokens(str(row.get("user_goal") or "")), tokens(conclusions)
    goal, end = _joined(goal_words), _joined(end_words)
    columns = (
        _joined(tokens(str(row.get("topic") or "").replace(" / ", " "))),
        goal,
        _joined(tokens(str(row.get("text") or ""))),
        end,
    )
    return columns, packed_features(goal_words + end_words)


def last_run_id(output_dir: Path) -> str:
    """The run that wrote the ledgers on disk, from its run summary (else a timestamp)."""
    try:
        text = (output_dir / SUMMARY_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        text = ""
    found = re.search(r"^- Run ID: (\S+)", text, re.M)
    return found.group(1) if found else datetime.now(UTC).strftime("kb-review-%Y%m%dT%H%M%S%fZ")


def _sync_candidates(con: sqlite3.Connection, output_dir: Path, run_id: str | None) -> tuple[int, int, int]:
    """Bring the candidate rows in step with the ledger: (added, removed, lines read, or -1 if
    the ledger was not read). Stamps the index when it wrote to it."""
    from kbtools.review import source_sync

    path = ledger_path(output_dir, "candidates")
    run = run_id or last_run_id(output_dir)
    with _open_ledger(path) as ledger:
        ledger_stamp = _ledger_stamp(ledger)
        if (
            ledger_stamp
            and ledger_stamp == _meta(con, "ledger_stamp")
            and not (run_id and run_id != _meta(con, "last_run"))
        ):
            return 0, 0, -1  # the very file indexed last: nothing to write
        # What to write is read inside the write transaction: another kb process may have
        # brought the index in step since the look above.
        con.execute("BEGIN IMMEDIATE")
        if ledger_stamp and ledger_stamp == _meta(con, "ledger_stamp"):
            if run_id and run_id != _meta(con, "last_run"):
                _set_meta(con, last_run=run_id)
            con.execute("COMMIT")
            _stamp(index_path(output_dir), output_dir)
            return 0, 0, -1
        sources = source_sync.vouched_sources(output_dir, ledger)
        plan = source_sync.plan(con, ledger, sources, _line_hash) if sources is not None else None
        if plan is not None:
            done = _write_candidates(con, plan.gone, plan.moved, plan.fresh, run)
            plan.inserted(done.ids)
            if done.replaced:  # a hand-made duplicate id: lines and rows no longer one to one
                source_sync.write_sources(con, [], replace_all=True)
            else:
                source_sync.forget(con, plan.gone_keys)
                source_sync.write_sources(con, plan.sources, replace_all=False)
            reordered = False
            read = sum(len(source.starts) - 1 for source, _, _ in plan.sources) if plan.sources else -1
        else:
            done, reordered, read = _sync_every_line(con, ledger, sources, run)
    if any(done.ids) or done.departed:
        _recluster(con, done.departed, reordered=reordered)
    _set_meta(con, ledger_stamp=ledger_stamp, last_run=run)
    con.execute("COMMIT")
    _stamp(index_path(output_dir), output_dir)
    return done.added, done.removed, read


def _ledger_stamp(ledger: IO[bytes]) -> str:
    """The open ledger's size, mtime and inode: one version of it, whatever is renamed over
    it meanwhile ("" when there is no ledger yet)."""
    try:
        return json.dumps(list(stat_key(os.fstat(ledger.fileno()))))
    except (OSError, ValueError, io.UnsupportedOperation):
        return ""


@dataclass
class _Written:
    """What :func:`_write_candidates` did."""

    added: int  # candidates new to the index (not a changed line of one it had)
    removed: int
    departed: list[Departed]  # the rows deleted, as the clusters knew them
    ids: list[int]  # the row id of each fresh line, 0 for a line not indexed (malformed)
    replaced: bool  # a fresh line took the place of a row with its candidate id


def _write_candidates(
    con: sqlite3.Connection,
    gone: Sequence[int],
    moved: Sequence[tuple[int, int]],
    fresh: Iterable[tuple[bytes, str, int]],
    run: str,
) -> _Written:
    """Inside the caller's transaction: the rows ``gone`` deleted, those ``moved`` given their
    new position, and each fresh line (line, its hash, its position) inserted."""
    from kbtools.review.cluster_index import select_in

    first_seen = dict(select_in(con, "SELECT candidate_id, first_seen FROM candidate WHERE id IN", gone))
    done = _Written(0, 0, _departing(con, gone), [], False)
    _delete(con, "candidate", gone)
    con.executemany("UPDATE candidate SET position = ? WHERE id = ?", moved)
    fresh_ids: list[str] = []
    held = {cid for (cid,) in con.execute("SELECT candidate_id FROM candidate")}  # looked up in SQL only if here
    inserts = _Inserts(con)
    for line, digest, position in fresh:
        row = _parse_candidate(line)
        if row is None:
            done.ids.append(0)
            continue
        cid = str(row["candidate_id"])
        fresh_ids.append(cid)
        prior = None
        if cid in held:
            inserts.flush()
            prior = con.execute("SELECT id, first_seen FROM candidate WHERE candidate_id = ?", (cid,)).fetchone()
        held.add(cid)
        if prior is not None:  # a duplicate id in a hand-edited ledger: the last line wins
            done.departed += _departing(con, [prior[0]])
            _delete(con, "candidate", [prior[0]])
            inserts.renumber()
            first_seen[cid] = prior[1]
            done.replaced = True
        done.ids.append(inserts.add(row, digest, position, first_seen.get(cid, run)))
        done.added += cid not in first_seen
    inserts.flush()
    done.removed = len(gone) - sum(1 for cid in fresh_ids if cid in first_seen)
    return done


def _sync_every_line(
    con: sqlite3.Connection, ledger: IO[bytes], sources: list[LedgerSource] | None, run: str
) -> tuple[_Written, bool, int]:
    """The whole-ledger path, inside the caller's transaction: every line read and hashed, the
    lines not indexed inserted, the rows whose line is gone deleted, every row numbered afresh;
    and, when ingest's ledger index vouches for the file (``sources``), what
    :mod:`kbtools.review.source_sync` needs next time. Returns what was written, whether
    the rows that stay changed order, and how many lines were read."""
    from kbtools.review import source_sync

    lines = _match_lines(con, ledger)
    fresh_at, position_at = lines.fresh_at, lines.position_at
    # New places of the rows that stay, in the old order.
    survivors = [lines.seen[d] for d in sorted(lines.seen, key=lines.stored_position.__getitem__)]
    # A second pass over the open file parses only the lines not indexed, so the rows are never
    # all held at once.
    fresh = ((line, fresh_at[p], p) for offset, line in _ledger_lines(ledger) if (p := position_at[offset]) in fresh_at)
    done = _write_candidates(con, lines.gone(), lines.moved(), fresh if fresh_at else (), run)
    source_sync.write_sources(con, lines.source_rows(sources, done), replace_all=True)
    return done, any(a > b for a, b in itertools.pairwise(survivors)), len(position_at)


@dataclass(frozen=True)
class _Lines:
    """The ledger's lines matched with the rows the index holds, by line hash."""

    known: dict[str, int]  # line hash of a row → its row id
    stored_position: dict[str, int]  # line hash of a row → its position
    seen: dict[str, int]  # hash of a line indexed → its position in the ledger
    fresh_at: dict[int, str]  # position of a line not indexed yet → its hash
    position_at: dict[int, int]  # offset of a line → its position

    def gone(self) -> list[int]:
        return [self.known[d] for d in self.known.keys() - self.seen.keys()]

    def moved(self) -> list[tuple[int, int]]:
        return [(p, self.known[d]) for d, p in self.seen.items() if self.stored_position[d] != p]

    def exact(self) -> bool:
        """Every line has its row at its position, every row its line, nothing twice."""
        return not self.fresh_at and len(self.seen) == len(self.known) == len(self.position_at) and not self.moved()

    def source_rows(
        self, sources: list[LedgerSource] | None, done: _Written
    ) -> list[tuple[LedgerSource, list[int], list[int]]]:
        """What :func:`kbtools.review.source_sync.write_sources` records of ``sources`` once
        ``done`` inserted the fresh lines: nothing unless every line is a row of its own (no
        line twice, no id replaced), the rows then mapping to the lines."""
        if sources is None or done.replaced or len(self.seen) + len(self.fresh_at) != len(self.position_at):
            return []
        id_at = dict(zip(self.fresh_at, done.ids, strict=True))
        id_at.update((p, self.known[d]) for d, p in self.seen.items())
        rows = []
        for source in sources:
            at = [self.position_at.get(offset, -1) for offset in source.starts[:-1]]
            if -1 in at:
                return []
            rows.append((source, at, [id_at[p] for p in at]))
        return rows


def _match_lines(con: sqlite3.Connection, ledger: IO[bytes]) -> _Lines:
    """Every line of the ledger hashed and matched with the rows (the lines not kept)."""
    from kbtools.review import source_sync

    known: dict[str, int] = {}
    stored_position: dict[str, int] = {}
    for line_hash, row_id, position in con.execute("SELECT line_hash, id, position FROM candidate"):
        known[line_hash] = row_id
        stored_position[line_hash] = position
    seen: dict[str, int] = {}
    fresh_at: dict[int, str] = {}
    position_at: dict[int, int] = {}
    for number, (offset, line) in enumerate(_ledger_lines(ledger)):
        position = number * source_sync.GAP
        position_at[offset] = position
        digest = _line_hash(line)
        if digest in known:
            seen[digest] = position
        else:
            fresh_at[position] = digest
    return _Lines(known, stored_position, seen, fresh_at, position_at)


def build_draft(path: Path, ledger: IO[bytes], run: str) -> None:
    """A new index at ``path`` holding the candidate rows of the ledger whose bytes ``ledger``
    streams (a pipe: read once, to its end), as :func:`_sync_every_line` writes them into an
    empty index: numbered afresh, first seen in ``run``. Nothing that needs the whole ledger
    on disk (the clusters, the source rows, the ledger's stamp): :func:`adopt_draft` adds it."""
    from kbtools.review import source_sync

    with closing(_create(path)) as con:
        con.execute("BEGIN IMMEDIATE")
        fresh = ((line, _line_hash(line), n * source_sync.GAP) for n, (_, line) in enumerate(_lines_of(ledger)))
        _write_candidates(con, [], [], fresh, run)
        con.execute("COMMIT")


def adopt_draft(output_dir: Path, draft: Path, run: str) -> IndexUpdate | None:
    """The index a run built while it wrote the ledger (:func:`build_draft`, ``draft``) made
    the search index: when there is none yet and the candidate ledger on disk holds exactly the
    lines it was built from, in their order, it is completed as :func:`update_index` would
    complete a fresh build (source rows, clusters, meta), stamped and renamed into place.
    None when it cannot be: the draft is then left for the caller to delete, and the index
    untouched."""
    from kbtools.review import source_sync

    live = index_path(output_dir)
    with _index_lock(output_dir):
        if live.exists():
            return None  # made meanwhile (a search in another process): brought in step as usual
        try:
            with closing(_connect(draft)) as con:
                (version,) = con.execute("PRAGMA user_version").fetchone()
                if version != SCHEMA_VERSION:
                    return None
                with _open_ledger(ledger_path(output_dir, "candidates")) as ledger:
                    ledger_stamp = _ledger_stamp(ledger)
                    con.execute("BEGIN IMMEDIATE")
                    lines = _match_lines(con, ledger)
                    if not lines.exact():
                        con.execute("ROLLBACK")
                        return None
                    sources = source_sync.vouched_sources(output_dir, ledger)
                    rows = lines.source_rows(sources, _Written(0, 0, [], [], False))
                    source_sync.write_sources(con, rows, replace_all=True)
                if lines.known:
                    _recluster(con, [], reordered=False)
                _set_meta(con, ledger_stamp=ledger_stamp, last_run=run)
                con.execute("COMMIT")
                counts = _cluster_counts(con)
            # The stamp first: a rename keeps size, mtime and inode, so the index is trusted
            # from the moment it is in place, and a crash before leaves no index.
            _stamp(draft, output_dir)
            crash_point("draft-stamped")
            _remove(live)  # a journal left beside an index deleted by hand
            os.replace(draft, live)
        except (sqlite3.DatabaseError, OSError):
            return None
    return IndexUpdate("missing", len(lines.known), 0, True, len(lines.position_at), 0, *counts)


class _Inserts:
    """Candidate rows on their way into the index (:meth:`add`), inserted :data:`_INSERT_BATCH`
    at a time: each its side-table row (with its clustering features, not placed in a cluster
    yet) and its FTS row. Each is given the row id SQLite gives a row inserted alone (the
    largest in the table, plus one): :meth:`renumber` after a delete, with none waiting."""

    def __init__(self, con: sqlite3.Connection) -> None:
        self.con = con
        self.next_id = 0
        self.rows: list[tuple[object, ...]] = []
        self.features: list[tuple[int, bytes]] = []
        self.texts: list[tuple[object, ...]] = []
        self.renumber()

    def renumber(self) -> None:
        (self.next_id,) = self.con.execute("SELECT IFNULL(MAX(id), 0) + 1 FROM candidate").fetchone()

    def add(self, row: Row, line_hash: str, position: int, first_seen: str) -> int:
        """Returns the row id the candidate will have."""
        row_id = self.next_id
        self.next_id += 1
        columns, features = _indexed(row)
        self.rows.append(
            (
                row_id,
                str(row["candidate_id"]),
                line_hash,
                str(row.get("tool", "")),
                str(row.get("decision", "")),
                str(row.get("project_key", "")),
                str(row.get("session_key", "")),
                str(row.get("created_at", "")),
                position,
                candidate_title(row),
                first_seen,
            )
        )
        # Apart from the row, so that moving a row (a session before it grew) does not rewrite them.
        self.features.append((row_id, features))
        self.texts.append((row_id, *columns))
        if len(self.rows) >= _INSERT_BATCH:
            self.flush()
        return row_id

    def flush(self) -> None:
        """The rows waiting inserted."""
        if not self.rows:
            return
        self.con.executemany(
            "INSERT INTO candidate(id, candidate_id, line_hash, tool, decision, project_key, session_key,"
            " created_at, position, title, first_seen) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            self.rows,
        )
        self.con.executemany("INSERT INTO candidate_features(id, features) VALUES(?, ?)", self.features)
        self.con.executemany(
            "INSERT INTO candidate_fts(rowid, topic, goal, body, conclusions) VALUES(?, ?, ?, ?, ?)", self.texts
        )
        self.rows, self.features, self.texts = [], [], []


def _departing(con: sqlite3.Connection, ids: Sequence[int]) -> list[Departed]:
    from kbtools.review.cluster_index import departing

    return departing(con, ids)


def _recluster(con: sqlite3.Connection, departed: Sequence[Departed], *, reordered: bool) -> None:
    """Near-duplicate clusters in step with the candidate rows (see
    :mod:`kbtools.review.cluster_index`): the rows added placed, those that left forgotten."""
    from kbtools.review.cluster_index import recluster

    recluster(con, departed, reordered=reordered)


def _cluster_counts(con: sqlite3.Connection) -> tuple[int, int]:
    row = con.execute("SELECT COUNT(DISTINCT cluster_id), COUNT(*) FROM candidate WHERE cluster_id != ''").fetchone()
    return int(row[0]), int(row[1])


def _parse_candidate(line: bytes) -> Row | None:
    """A candidate row's indexed fields, or None for a malformed line (skipped, as every
    ledger reader does)."""
    from kbtools.review.rows import indexed_fields

    return indexed_fields(line)


def _delete(con: sqlite3.Connection, table: str, ids: Sequence[int]) -> None:
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        marks = ",".join("?" * len(chunk))
        con.execute(f"DELETE FROM {table} WHERE id IN ({marks})", chunk)
        con.execute(f"DELETE FROM {table}_fts WHERE rowid IN ({marks})", chunk)
        if table == "candidate":
            con.execute(f"DELETE FROM candidate_features WHERE id IN ({marks})", chunk)


# --------------------------------------------------------------------------- notes and raw evidence


_TITLE = re.compile(r"^title:[ \t]*(.*?)[ \t]*$", re.M)


def _doc_columns(text: str, slug: str) -> tuple[str, str]:
    from kbtools.kb.frontmatter import FrontmatterError, split_frontmatter

    try:
        block, body, _ = split_frontmatter(text)
    except FrontmatterError:
        block, body = None, text
    found = _TITLE.search(block or "")
    title = found.group(1).strip("'\"") if found else ""
    if not title:
        heading = re.search(r"^#[ \t]+(.+?)[ \t#]*$", body, re.M)
        title = heading.group(1) if heading else slug.replace("-", " ")
    return title, body


def _sync_docs(con: sqlite3.Connection, roots: Sequence[tuple[str, Path]]) -> int:
    """Re-index the notes and raw files that changed; drop the ones that went. Returns the count."""
    from kbtools.kb.tree import read_regular, scan_layer

    known = {
        (layer, rel): (doc_id, stamp)
        for doc_id, layer, rel, stamp in con.execute("SELECT id, layer, rel, stamp FROM doc")
    }
    current: dict[tuple[str, str], tuple[str, str, str]] = {}
    for layer, root in roots:
        if not root.is_dir():
            continue
        for f in scan_layer(root).files:
            try:
                st = os.stat(f.abspath)
            except OSError:
                continue
            current[(layer, f.rel)] = (f"{st.st_size}:{st.st_mtime_ns}", f.slug, f.abspath)
    changed = [key for key, (stamp, _, _) in current.items() if known.get(key, (0, ""))[1] != stamp]
    gone = [known[key][0] for key in known.keys() - current.keys()]
    if not changed and not gone:
        return 0
    con.execute("BEGIN IMMEDIATE")
    _delete(con, "doc", gone + [known[key][0] for key in changed if key in known])
    for key in changed:
        stamp, slug, abspath = current[key]
        try:
            text = read_regular(Path(abspath)).decode("utf-8", "replace")
        except OSError:
            continue
        title, body = _doc_columns(text, slug)
        cur = con.execute(
            "INSERT INTO doc(layer, rel, slug, title, stamp) VALUES(?, ?, ?, ?, ?)", (*key, slug, title, stamp)
        )
        con.execute(
            "INSERT INTO doc_fts(rowid, title, body) VALUES(?, ?, ?)",
            (cur.lastrowid, normalised(title), normalised(body)),
        )
    con.execute("COMMIT")
    return len(changed) + len(gone)


# --------------------------------------------------------------------------- the public functions


def update_index(
    output_dir: Path, *, run_id: str | None = None, doc_roots: Sequence[tuple[str, Path]] = ()
) -> IndexUpdate:
    """Bring the index in step with the ledger (and the given note/raw roots).

    ``run_id`` is the ingest run that just wrote the ledger (default: the one its
    run summary names); candidates it added count as new in that run."""
    reasons: list[str] = []

    def work(con: sqlite3.Connection) -> IndexUpdate:
        added, removed, lines = _sync_candidates(con, output_dir, run_id)
        docs = _sync_docs(con, doc_roots) if doc_roots else 0
        if docs:
            _stamp(index_path(output_dir), output_dir)
        return IndexUpdate(
            reasons[-1] if reasons else "", added, removed, lines >= 0, max(lines, 0), docs, *_cluster_counts(con)
        )

    return with_index(output_dir, work, rebuild_reason=reasons)


def search_candidates(
    output_dir: Path,
    query: str,
    *,
    limit: int = 20,
    tool: str | None = None,
    decision: str | None = None,
) -> list[Hit]:
    """Candidates ranked by bm25 for ``query`` (the index brought up to date first)."""
    expression = fts_query(query)
    reasons: list[str] = []

    def work(con: sqlite3.Connection) -> list[Hit]:
        _sync_candidates(con, output_dir, None)
        where, args = ["candidate_fts MATCH ?"], [expression]
        for column, value in (("tool", tool), ("decision", decision)):
            if value:
                where.append(f"c.{column} = ?")
                args.append(value)
        sql = (
            "SELECT c.candidate_id, c.title, snippet(candidate_fts, -1, '[', ']', '…', ?),"
            f" bm25(candidate_fts, {', '.join(map(str, CANDIDATE_WEIGHTS))}) AS score, c.tool, c.decision, c.cluster_id, c.cluster_size"
            " FROM candidate_fts JOIN candidate c ON c.id = candidate_fts.rowid"
            f" WHERE {' AND '.join(where)} ORDER BY score LIMIT ?"
        )
        rows = con.execute(sql, (SNIPPET_TOKENS, *args, limit)).fetchall()
        return [Hit("candidate", *row) for row in rows]

    return with_index(output_dir, work, rebuild_reason=reasons)


def search_everything(
    output_dir: Path, query: str, *, doc_roots: Sequence[tuple[str, Path]], limit: int = 20
) -> list[Hit]:
    """Candidates, wiki notes and raw evidence ranked together for ``query``.

    bm25 scores of two tables are not on one scale, so the lists are merged by
    rank (round-robin by score order within each), notes first at equal rank."""
    expression = fts_query(query)
    reasons: list[str] = []

    def work(con: sqlite3.Connection) -> list[Hit]:
        if ledger_path(output_dir, "candidates").exists():
            _sync_candidates(con, output_dir, None)
        if _sync_docs(con, doc_roots):
            _stamp(index_path(output_dir), output_dir)
        docs = con.execute(
            "SELECT d.layer, d.rel, d.title, snippet(doc_fts, 1, '[', ']', '…', ?),"
            f" bm25(doc_fts, {', '.join(map(str, DOC_WEIGHTS))}) AS score"
            " FROM doc_fts JOIN doc d ON d.id = doc_fts.rowid WHERE doc_fts MATCH ? ORDER BY score LIMIT ?",
            (SNIPPET_TOKENS, expression, limit),
        ).fetchall()
        doc_hits = [Hit(layer, rel, title, snip, score) for layer, rel, title, snip, score in docs]
        cands = con.execute(
            "SELECT c.candidate_id, c.title, snippet(candidate_fts, -1, '[', ']', '…', ?),"
            f" bm25(candidate_fts, {', '.join(map(str, CANDIDATE_WEIGHTS))}) AS score, c.tool, c.decision, c.cluster_id, c.cluster_size"
            " FROM candidate_fts JOIN candidate c ON c.id = candidate_fts.rowid"
            " WHERE candidate_fts MATCH ? ORDER BY score LIMIT ?",
            (SNIPPET_TOKENS, expression, limit),
        ).fetchall()
        cand_hits = [Hit("candidate", *row) for row in cands]
        merged: list[Hit] = []
        for pair in zip_longest_hits(doc_hits, cand_hits):
            merged.extend(pair)
        return merged[:limit]

    return with_index(output_dir, work, rebuild_reason=reasons)


def zip_longest_hits(first: list[Hit], second: list[Hit]) -> Iterator[list[Hit]]:
    for i in range(max(len(first), len(second))):
        yield [h[i] for h in (first, second) if i < len(h)]


@dataclass(frozen=True)
class CandidateState:
    """What the index knows of each candidate beyond its ledger row."""

    last_run: str
    first_seen: dict[str, str]  # candidate id → the run that first saw it
    clusters: dict[str, tuple[str, int]]  # candidate id → (cluster id, cluster size), clustered ones only

    @property
    def new_ids(self) -> frozenset[str]:
        return frozenset(cid for cid, run in self.first_seen.items() if run == self.last_run)

    def annotated(self, row: Row) -> Row:
        """The row with its cluster, as the review commands show every candidate."""
        cluster_id, size = self.clusters.get(str(row["candidate_id"]), ("", 1))
        return {**row, "cluster_id": cluster_id, "cluster_size": size}


def candidate_state(output_dir: Path) -> CandidateState:
    """The index's knowledge of the candidates, the index brought up to date first."""
    reasons: list[str] = []

    def work(con: sqlite3.Connection) -> CandidateState:
        _sync_candidates(con, output_dir, None)
        seen: dict[str, str] = {}
        grouped: dict[str, tuple[str, int]] = {}
        for cid, run, cluster_id, size in con.execute(
            "SELECT candidate_id, first_seen, cluster_id, cluster_size FROM candidate"
        ):
            seen[cid] = run
            if cluster_id:
                grouped[cid] = (cluster_id, size)
        return CandidateState(_meta(con, "last_run"), seen, grouped)

    return with_index(output_dir, work, rebuild_reason=reasons)


def first_seen(output_dir: Path) -> tuple[str, dict[str, str]]:
    """(the last run, candidate id → the run that first saw it)."""
    state = candidate_state(output_dir)
    return state.last_run, state.first_seen
