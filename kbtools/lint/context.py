"""Everything the checks read, gathered once: the two layers, the manifest, git history.

Where file contents come from depends on the mode (:class:`FileSource`): the work
tree by default and for ``--since`` (whose history checks read commits), the
**index** for ``--staged`` — a commit holds what is staged, so the hook judges the
staged bytes (blobs by ``git cat-file``), whatever the work tree or a clean/smudge
filter shows. Evidence is read only from regular files inside the repository: the
raw root is listed without following a symlink, and every entry in it, whatever
its name, is listed (:attr:`LintContext.raw_entries`).

``--staged`` is the pre-commit hook and must stay fast on a large KB, so it checks
the content of the files the commit adds or changes (``Scope``), against the whole
KB's names (file listings, manifest, index). HEAD was checked when it was committed,
and check 6 proves the other raw files did not change. Anything that could break a
file outside the commit — a deleted or renamed note, a changed ``.kb.yaml``, the
first commit — makes the hook check everything.
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from kbtools.config import CONFIG_FILE
from kbtools.errors import shown_name, utf8_name
from kbtools.gitio import BlobReader, IndexEntry, RepoState, index_entries, repo_state
from kbtools.kb.frontmatter import Frontmatter, FrontmatterError, parse_frontmatter
from kbtools.kb.layout import Layout
from kbtools.kb.manifest import Manifest, parse_manifest
from kbtools.kb.tree import KbFile, Layer, layer_from_paths, open_regular, read_regular, scan_layer
from kbtools.lint.history import History, LintMode, Step, load_history
from kbtools.lint.problem import Problem

CHUNK = 1 << 20  # bytes read at a time: a 200 MB raw file is hashed with flat memory
HEAD_BYTES = 1 << 20  # how much of a raw file its frontmatter check reads


class FileSource:
    """File contents by path relative to the KB root: the work tree, or the index.

    :meth:`chunks` raises OSError for a path that is absent or not a regular file
    (a symlink, a FIFO, a submodule): such a thing is never read as evidence.
    """

    def __init__(self, root: Path, index: dict[str, IndexEntry] | None = None) -> None:
        self.root = root
        self._base = os.path.join(str(root), "")  # + a relative path (os.path.join: 4 ms per 10,000 raw files)
        self.index = index  # None: the work tree
        self._reader: BlobReader | None = None
        self._known: dict[str, bytes] = {}  # staged bytes already read (by the history), by path

    @property
    def reader(self) -> BlobReader:
        """The one ``git cat-file --batch`` of this lint (started on first use)."""
        if self._reader is None:
            self._reader = BlobReader(self.root)
        return self._reader

    def know(self, rel: str, data: bytes) -> None:
        """``data`` is what the index holds at ``rel``: :meth:`read` need not ask git again."""
        if self.index is not None:
            self._known[rel] = data

    def chunks(self, rel: str) -> Iterator[bytes]:
        if self.index is None:
            return _file_chunks(self._base + rel)
        entry = self.index.get(rel)
        if entry is None:
            raise OSError(errno.ENOENT, "not in the index", rel)
        if entry.kind != "file":
            raise OSError(errno.EINVAL, f"not a regular file ({entry.kind})", rel)
        pieces = self.reader.chunks(entry.oid)
        if pieces is None:
            raise OSError(errno.ENOENT, "blob missing", rel)
        return pieces

    def read(self, rel: str) -> bytes:
        if self.index is None:
            return read_regular(self._base + rel)
        known = self._known.get(rel)
        return known if known is not None else b"".join(self.chunks(rel))

    def hash_and_head(self, rel: str) -> tuple[str, bytes]:
        """sha256 of every byte and the first :data:`HEAD_BYTES`, reading in chunks."""
        if self.index is None:  # the usual raw file, smaller than a chunk: one read, no generator
            data = _read_small(self._base + rel)
            if data is not None:
                return hashlib.sha256(data).hexdigest(), data
        digest = hashlib.sha256()
        head = b""
        for piece in self.chunks(rel):
            digest.update(piece)
            if len(head) < HEAD_BYTES:
                head += piece[: HEAD_BYTES - len(head)]
        return digest.hexdigest(), head

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None


def _read_small(path: str) -> bytes | None:
    """The bytes of a regular file smaller than :data:`CHUNK` in one read; None for a larger
    one (or one that grew since its size was read); OSError like :func:`_file_chunks`."""
    fd, size = open_regular(path, follow=False)
    try:
        if size >= CHUNK:
            return None
        data = os.read(fd, size + 1)
        return data if len(data) <= size else None
    finally:
        os.close(fd)


def _file_chunks(path: str) -> Iterator[bytes]:
    """A regular file in pieces; OSError (at once, not on first iteration) for anything else."""
    return _drain(*open_regular(path, follow=False))


def _drain(fd: int, size: int) -> Iterator[bytes]:
    try:
        if size < CHUNK:  # the common case: one read of the right size (a larger buffer costs a copy)
            data = os.read(fd, size + 1)
            yield data
            if len(data) <= size:
                return  # at the end: no second read
        while True:
            piece = os.read(fd, CHUNK)
            if not piece:
                return
            yield piece
    finally:
        os.close(fd)


def list_tree(root: str) -> dict[str, str]:
    """Every entry under ``root`` (relative POSIX path → ``file``, ``symlink`` or ``other``),
    whatever its name; folders are entered, symlinks (to files or folders) never followed."""
    found: dict[str, str] = {}
    _list(root, "", found)
    return found


def _list(folder: str, prefix: str, found: dict[str, str]) -> None:
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return
    for entry in entries:
        rel = prefix + entry.name
        if entry.is_file(follow_symlinks=False):
            found[rel] = "file"
        elif entry.is_symlink():
            found[rel] = "symlink"
        elif entry.is_dir(follow_symlinks=False):
            _list(entry.path, rel + "/", found)
        else:
            found[rel] = "other"  # a FIFO, socket or device


@dataclass(frozen=True)
class Scope:
    """Files whose content the per-file checks read (``--staged`` only)."""

    raw: frozenset[str]  # relative to the raw root
    notes: frozenset[str]  # relative to the note root


@dataclass
class LintContext:
    layout: Layout
    mode: LintMode
    raw: Layer
    notes: Layer
    canonical: str
    repo: RepoState
    files: FileSource
    raw_entries: dict[str, str]  # every entry of the raw root, relative to it → file, symlink, submodule, other
    raw_root_problem: str | None = None  # why the raw root is not a folder of this repository
    name_problems: tuple[Problem, ...] = ()  # files whose name is not UTF-8 (left out of every other check)
    history: History | None = None  # None when git checks are skipped
    scope: Scope | None = None  # None: check every file
    _note_docs: dict[str, Frontmatter | FrontmatterError] = field(default_factory=dict)

    # -- names --------------------------------------------------------------
    def rel(self, path: Path) -> str:
        return self.layout.rel(path)

    # Cached: the notes check builds every note's problem path from it (a Path.relative_to per note otherwise).
    @cached_property
    def raw_prefix(self) -> str:
        return self.rel(self.layout.raw_root)

    @cached_property
    def note_prefix(self) -> str:
        return self.rel(self.layout.note_root)

    @property
    def notice(self) -> str | None:
        if self.repo.usable:
            return None
        return f"kb lint: git checks skipped ({self.repo.reason})"

    # -- shared reads -----------------------------------------------------------
    @cached_property
    def manifest(self) -> Manifest | None:
        if self.raw_root_problem is not None:
            return None
        try:
            data = self.files.read(self.rel(self.layout.raw_manifest))
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return None
            raise
        return parse_manifest(data.decode("utf-8", "surrogateescape"), self.layout.raw_root, self.raw.symlinks)

    def note_doc(self, note: KbFile) -> Frontmatter | FrontmatterError:
        """Parsed frontmatter of a note (cached: several checks read it)."""
        doc = self._note_docs.get(note.rel)
        if doc is None:
            try:
                doc = parse_frontmatter(self.files.read(self.note_prefix + "/" + note.rel))
            except FrontmatterError as exc:
                doc = exc
            except OSError as exc:
                doc = FrontmatterError(f"unreadable: {exc.strerror or exc}")
            self._note_docs[note.rel] = doc
        return doc

    def raw_in_scope(self, rel: str) -> bool:
        return self.scope is None or rel in self.scope.raw

    def note_in_scope(self, rel: str) -> bool:
        return self.scope is None or rel in self.scope.notes

    def raw_slugs_for(self, locale: str) -> list[dict[str, KbFile]]:
        """Raw slugs a note of ``locale`` may cite: its own locale, then the canonical one,
        then files with no locale (evidence is usually captured once, in the canonical locale)."""
        return self._visible_from(self.raw_by_locale, locale)

    def notes_for(self, locale: str) -> list[dict[str, KbFile]]:
        """Notes a note of ``locale`` may link to by slug, in the same order as raw slugs."""
        return self._visible_from(self.notes_by_locale, locale)

    def _visible_from(self, by_locale: dict[str, dict[str, KbFile]], locale: str) -> list[dict[str, KbFile]]:
        return [by_locale.get(loc, {}) for loc in dict.fromkeys((locale, self.canonical, ""))]

    @cached_property
    def raw_by_locale(self) -> dict[str, dict[str, KbFile]]:
        return self.raw.by_locale()

    @cached_property
    def notes_by_locale(self) -> dict[str, dict[str, KbFile]]:
        return self.notes.by_locale()

    def step_label(self, step: Step) -> str:
        return step.label or (f" (commit {step.commit[:12]})" if step.commit else "")


GIT_FAMILIES = frozenset({"raw", "index-log", "secrets"})


def build_context(layout: Layout, mode: LintMode, families: frozenset[str]) -> LintContext:
    """Scan the KB (the work tree, or the index for ``--staged``) and, when git is usable
    and a family needs it, load the mode's history."""
    canonical = layout.canonical_locale  # may raise ConfigError (ambiguous)
    repo = repo_state(layout.root)
    raw_prefix, note_prefix = layout.rel(layout.raw_root), layout.rel(layout.note_root)
    if mode.staged and repo.usable:
        wanted = [raw_prefix, note_prefix, layout.rel(layout.raw_manifest), layout.rel(layout.index)]
        wanted += [layout.rel(layout.log), CONFIG_FILE]
        index = {e.path: e for e in index_entries(layout.root, _unique(wanted))}
        raw_entries, problem = _index_listing(index, raw_prefix)
        note_paths = _under(index, note_prefix)
        notes = layer_from_paths(layout.note_root, note_paths, [p for p in note_paths if note_paths[p] == "symlink"])
        files = FileSource(layout.root, index)
    else:
        problem = _raw_root_problem(layout)
        raw_entries = {} if problem else list_tree(str(layout.raw_root))
        notes = scan_layer(layout.note_root)
        files = FileSource(layout.root)
    raw_entries, notes, name_problems = _undecodable_names(layout, raw_entries, notes)
    raw = layer_from_paths(layout.raw_root, raw_entries, [p for p, kind in raw_entries.items() if kind == "symlink"])
    ctx = LintContext(
        layout=layout,
        mode=mode,
        raw=raw,
        notes=notes,
        canonical=canonical,
        repo=repo,
        files=files,
        raw_entries=raw_entries,
        raw_root_problem=problem,
        name_problems=name_problems,
    )
    if not ctx.repo.usable:
        return ctx  # every content check still runs; history checks are skipped with a notice
    if not (families & GIT_FAMILIES) and not mode.staged:
        return ctx
    paths = _unique(
        [
            ctx.raw_prefix,
            ctx.rel(layout.raw_manifest),
            ctx.note_prefix,
            ctx.rel(layout.index),
            ctx.rel(layout.log),
            CONFIG_FILE,
        ]
    )
    tracked = [ctx.rel(layout.raw_manifest), ctx.rel(layout.log), ctx.rel(layout.index), CONFIG_FILE]
    ctx.history = load_history(layout.root, mode, ctx.repo, paths, tracked, lambda spec: files.reader.read(spec))
    if mode.staged:
        for (side, rel), data in ctx.history.steps[0].texts.items():
            if side == "new" and data is not None:
                files.know(rel, data)  # the staged manifest, index and log: read once
        if ctx.repo.head is not None:
            ctx.scope = _staged_scope(ctx)
    return ctx


def _staged_scope(ctx: LintContext) -> Scope | None:
    assert ctx.history is not None
    (step,) = ctx.history.steps
    raw_prefix, note_prefix = ctx.raw_prefix + "/", ctx.note_prefix + "/"
    raw: set[str] = set()
    notes: set[str] = set()
    for f in step.files:
        if f.path == CONFIG_FILE:
            return None  # paths may have moved: check everything
        if f.path.startswith(note_prefix) and f.status[0] in "DR":
            return None  # a note went away: any other note may now link to nothing
        if f.status[0] == "D":
            continue
        if f.path.startswith(raw_prefix):
            raw.add(f.path[len(raw_prefix) :])
        elif f.path.startswith(note_prefix):
            notes.add(f.path[len(note_prefix) :])
    return Scope(frozenset(raw), frozenset(notes))


def _undecodable_names(
    layout: Layout, raw_entries: dict[str, str], notes: Layer
) -> tuple[dict[str, str], Layer, tuple[Problem, ...]]:
    """Raw entries and notes whose name is not valid UTF-8: each is one finding, and no
    other check sees it (a manifest, an index or a report cannot name it)."""
    raw_prefix, note_prefix = layout.rel(layout.raw_root) + "/", layout.rel(layout.note_root) + "/"
    found = [
        Problem(
            "raw-unregistered", f"raw file name is not valid UTF-8: {shown_name(rel)}", raw_prefix + shown_name(rel)
        )
        for rel in raw_entries
        if not utf8_name(rel)
    ]
    if found:
        raw_entries = {rel: kind for rel, kind in raw_entries.items() if utf8_name(rel)}
    bad_notes = [f for f in notes.files if not utf8_name(f.rel)]
    for f in bad_notes:
        shown = shown_name(f.rel)
        found.append(Problem("note-metadata", f"wiki page name is not valid UTF-8: {shown}", note_prefix + shown))
    if bad_notes:
        notes = Layer(notes.root, tuple(f for f in notes.files if utf8_name(f.rel)), notes.symlinks)
    return raw_entries, notes, tuple(found)


def _under(index: dict[str, IndexEntry], prefix: str) -> dict[str, str]:
    """Index entries under the folder ``prefix``, relative to it → their kind."""
    start = prefix + "/"
    return {path[len(start) :]: e.kind for path, e in index.items() if path.startswith(start)}


def _index_listing(index: dict[str, IndexEntry], raw_prefix: str) -> tuple[dict[str, str], str | None]:
    """The raw root as the index holds it, or why it is not a folder of this repository."""
    parts = raw_prefix.split("/")
    at_or_above = {"/".join(parts[: i + 1]) for i in range(len(parts))}  # the raw root and its folders
    for path, entry in index.items():
        if path in at_or_above:
            kind = "a git submodule" if entry.kind == "submodule" else f"a {entry.kind}"
            return {}, f"{raw_prefix} is {kind} in the index"
    return _under(index, raw_prefix), None


def _raw_root_problem(layout: Layout) -> str | None:
    """Why the raw root on disk is not a plain folder of this repository, or None."""
    root, raw_root = layout.root, layout.raw_root
    rel = layout.rel(raw_root)
    current = root
    for part in Path(rel).parts:
        current = current / part
        if current.is_symlink():
            inside = _inside(os.path.realpath(current), os.path.realpath(root))
            where = "inside" if inside else "outside"
            return f"{rel} is a symlink to a folder {where} the repository ({layout.rel(current)})"
    if (raw_root / ".git").exists():
        return f"{rel} is a git submodule or a repository of its own"
    return None


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
