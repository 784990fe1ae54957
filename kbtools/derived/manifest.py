"""The artifact manifest: one JSON line per emitted artifact version.

A row is ``{name, path, sha256, body_hash, words, shingles, shingle_params,
emitted_at}``: ``sha256`` of the file bytes is the version's identity (a
version already present is never appended twice); ``body_hash``, ``words`` and
``shingles`` describe the normalised body (frontmatter excluded);
``shingle_params`` says how they were computed, so rows written under other
parameters are recognised instead of silently never matching. Old versions
stay: a session that quoted last month's page is still caught.

The manifest is append-only history, so it holds rows written by earlier
formats of ``kb artifacts record`` (shingles as a list of hex strings, no
``body_hash`` or ``words``). Such a row is read for its identity (``path``,
``sha256``) and marked not comparable; the filter re-shingles it from the file
when the file still has that content, else skips it with a warning.

Which files are artifacts: :mod:`kbtools.derived.artifacts`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from kbtools.derived.artifacts import is_artifact_path, markdown_files
from kbtools.derived.index import Artifact
from kbtools.derived.normalise import strip_frontmatter, tokens
from kbtools.derived.shingles import SHINGLE_PARAMS, body_hash, pack, shingle_hashes, unpack
from kbtools.errors import KbError
from kbtools.fsio import atomic_write_bytes
from kbtools.kb.layout import Layout

MANIFEST_MODE = 0o644  # a committed file, not a private ledger
_HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class ManifestRow:
    name: str
    path: str
    sha256: str
    body_hash: str
    words: int
    shingles: frozenset[int]
    shingle_params: dict[str, Any]
    emitted_at: str
    line: int = 0  # 1-based line in the manifest it was read from; 0 for a new row
    # False for a row in an earlier format: its shingles (if any) were not read.
    shingles_read: bool = True

    @property
    def current(self) -> bool:
        """Shingled with this version's parameters (comparable with records)."""
        return self.shingles_read and self.shingle_params == SHINGLE_PARAMS

    def artifact(self) -> Artifact:
        return Artifact(self.name, self.path, self.sha256, self.body_hash, self.shingles, self.words)

    def to_json(self) -> str:
        data = {
            "name": self.name,
            "path": self.path,
            "sha256": self.sha256,
            "body_hash": self.body_hash,
            "words": self.words,
            "shingles": pack(self.shingles),
            "shingle_params": self.shingle_params,
            "emitted_at": self.emitted_at,
        }
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def artifact_name(rel_path: str) -> str:
    """A skill is named by its folder (``skills/<name>/SKILL.md``), a page by its slug."""
    path = PurePosixPath(rel_path)
    if path.name == "SKILL.md" and path.parent.name:
        return path.parent.name
    return path.stem


def row_for(rel_path: str, content: bytes, emitted_at: str | None = None) -> ManifestRow:
    """Describe one artifact version from its file bytes."""
    text = content.decode("utf-8", "replace")
    words = tokens(strip_frontmatter(text))
    return ManifestRow(
        name=artifact_name(rel_path),
        path=rel_path,
        sha256=hashlib.sha256(content).hexdigest(),
        body_hash=body_hash(words),
        words=len(words),
        shingles=frozenset(shingle_hashes(words)),
        shingle_params=dict(SHINGLE_PARAMS),
        emitted_at=emitted_at or now_utc(),
    )


def now_utc() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_manifest(path: Path) -> list[ManifestRow]:
    """Every row of the manifest; a missing file is an empty manifest.

    A line that is not a JSON object naming an artifact (``path`` and
    ``sha256``) is an error naming the line: the manifest is a committed file,
    and skipping such a row would quietly reopen the cycle for that artifact. A
    row that names its artifact but whose other fields are not in this
    version's shape (an earlier format) is returned with ``shingles_read``
    false, for the filter to re-shingle or report.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise KbError(f"cannot read artifact manifest: {exc.strerror}", str(path)) from None
    rows = []
    for number, line in enumerate(raw.decode("utf-8", "replace").splitlines(), start=1):
        if line.strip():
            rows.append(_parse_row(line, number, f"{path}:{number}"))
    return rows


def _parse_row(line: str, number: int, where: str) -> ManifestRow:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise KbError(f"invalid artifact manifest line: {exc.msg}", where) from None
    if not isinstance(data, dict):
        raise KbError("invalid artifact manifest line: not an object", where)
    missing = [f for f in ("path", "sha256") if not isinstance(data.get(f), str) or not data[f]]
    if missing:
        raise KbError(f"invalid artifact manifest line: missing {', '.join(missing)}", where)
    if _HEX64.fullmatch(data["sha256"]) is None:
        raise KbError("invalid artifact manifest line: sha256 is not 64 lowercase hex digits", where)
    rel_path: str = data["path"]
    name = data.get("name")
    emitted_at = data.get("emitted_at")
    params = data.get("shingle_params")
    identity = {
        "name": name if isinstance(name, str) else artifact_name(rel_path),
        "path": rel_path,
        "sha256": data["sha256"],
        "shingle_params": params if isinstance(params, dict) else {},
        "emitted_at": emitted_at if isinstance(emitted_at, str) else "",
        "line": number,
    }
    shingles = _read_shingles(data)
    if shingles is None:
        return ManifestRow(body_hash="", words=0, shingles=frozenset(), shingles_read=False, **identity)
    return ManifestRow(body_hash=data["body_hash"], words=data["words"], shingles=shingles, **identity)


def _read_shingles(data: dict[str, Any]) -> frozenset[int] | None:
    """The row's shingles when the row is in this version's shape, else None."""
    if not (
        isinstance(data.get("body_hash"), str)
        and isinstance(data.get("words"), int)
        and isinstance(data.get("shingles"), str)
    ):
        return None
    try:
        return frozenset(unpack(data["shingles"]))
    except ValueError:  # binascii.Error is a ValueError
        return None


def append_rows(path: Path, rows: Iterable[ManifestRow]) -> None:
    """Append rows; existing lines are kept byte for byte (atomic rewrite)."""
    try:
        old = path.read_bytes()
    except FileNotFoundError:
        old = b""
    if old and not old.endswith(b"\n"):
        old += b"\n"
    new = "".join(row.to_json() + "\n" for row in rows).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, [old, new], mode=MANIFEST_MODE)


# --- recording -------------------------------------------------------------------


@dataclass(frozen=True)
class RecordResult:
    recorded: tuple[ManifestRow, ...]  # appended now
    already: tuple[str, ...]  # paths whose content was already in the manifest


def record_artifacts(
    layout: Layout, files: Iterable[tuple[str, bytes]], manifest_path: Path | None = None
) -> RecordResult:
    """Append a row for each file version not yet in the manifest (idempotent by sha256)."""
    manifest = manifest_path or layout.artifact_manifest
    result = new_rows(files, {row.sha256 for row in read_manifest(manifest)})
    if result.recorded:
        append_rows(manifest, result.recorded)
    return result


def new_rows(files: Iterable[tuple[str, bytes]], known: set[str]) -> RecordResult:
    """A row for each file version whose sha256 is not in ``known`` (which grows with them)."""
    emitted_at = now_utc()
    recorded: list[ManifestRow] = []
    already: list[str] = []
    for rel_path, content in files:
        row = row_for(rel_path, content, emitted_at)
        if row.sha256 in known:
            already.append(rel_path)
            continue
        known.add(row.sha256)
        recorded.append(row)
    return RecordResult(tuple(recorded), tuple(already))


def files_at(layout: Layout, paths: Iterable[Path]) -> list[tuple[str, bytes]]:
    """Working-tree files to record: each path a file, or a folder of ``.md`` files, inside the KB."""
    out: list[tuple[str, bytes]] = []
    for given in paths:
        path = given.resolve()
        try:
            path.relative_to(layout.root)
        except ValueError:
            raise KbError("not inside the knowledge base", str(given)) from None
        if path.is_dir():
            members = sorted(markdown_files(path))
        elif path.is_file():
            members = [path]
        else:
            raise KbError("no such file", str(given))
        for member in members:
            try:
                out.append((layout.rel(member), member.read_bytes()))
            except OSError as exc:
                raise KbError(f"cannot read artifact: {exc.strerror}", str(member)) from None
    return out


def staged_files(layout: Layout) -> list[tuple[str, bytes]]:
    """Staged notes and skills (added, copied, modified or renamed), with their staged content."""
    from kbtools.gitio import GitFailed, git, git_bytes, repo_root

    # Outside a repository `git diff --cached` falls back to `--no-index` and prints its whole usage.
    if repo_root(layout.root) is None:
        raise KbError("cannot list staged files: not a git repository", str(layout.root))
    try:
        listing = git(["diff", "--cached", "--name-only", "-z", "--diff-filter=ACMR", "--relative"], layout.root)
    except GitFailed as exc:
        raise KbError(f"cannot list staged files: {_first_line(exc.stderr)}", str(layout.root)) from None
    out: list[tuple[str, bytes]] = []
    for rel_path in sorted(p for p in listing.split("\0") if p):
        if is_artifact_path(layout, rel_path):
            try:
                out.append((rel_path, git_bytes(["show", f":./{rel_path}"], layout.root)))
            except GitFailed as exc:
                raise KbError(f"cannot read staged file: {_first_line(exc.stderr)}", rel_path) from None
    return out


def _first_line(stderr: str) -> str:
    """git's first line of complaint: an error is one line."""
    lines = stderr.strip().splitlines()
    return lines[0] if lines else "git failed"
