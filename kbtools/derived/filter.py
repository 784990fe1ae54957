"""The derived filter: is this record the knowledge base's own output?

The cycle it breaks: a wiki page or skill is loaded into a session, appears in
that session's transcript, the transcript is ingested as evidence, and the
evidence reinforces the page. A record whose normalised text overlaps an
emitted artifact above the threshold is derived: ingest excludes it and logs
what it matched.

Not a whole-record hash: one character of whitespace defeats a hash, and the
cycle would run while the filter reported itself working. Shingles of the
normalised words survive re-indenting, re-fencing and re-wrapping; the overlap
measure is explained in :mod:`kbtools.derived.index`.

Artifacts are the manifest's rows (every recorded version) plus the notes and
skills in the working tree (so a stale manifest cannot reopen the cycle).
"""

from __future__ import annotations

import hashlib
import marshal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from blake3 import blake3

from kbtools.config import check_bound
from kbtools.derived.artifacts import current_artifact_files
from kbtools.derived.index import INDEX_PARAMS, Artifact, ArtifactIndex
from kbtools.derived.normalise import tokens
from kbtools.derived.shingles import SHINGLE_PARAMS
from kbtools.errors import KbError
from kbtools.fsio import atomic_write_bytes
from kbtools.kb.layout import Layout


class DerivedMatch(NamedTuple):
    name: str
    path: str
    sha256: str
    overlap: float


@dataclass(frozen=True)
class DerivedFilter:
    index: ArtifactIndex
    threshold: float
    settings: dict[str, Any] = field(default_factory=dict)
    # Manifest rows that could not be compared (shingled under other
    # parameters, file gone or changed): for the caller to print.
    warnings: tuple[str, ...] = ()

    @property
    def artifact_count(self) -> int:
        return len(self.index)

    def match(self, text: str) -> DerivedMatch | None:
        """The artifact this text is derived from, if their overlap exceeds the threshold.

        Full containment (overlap 1.0, including an exact match of a tiny
        artifact's body) always counts, so threshold 1.0 means "whole copies only".
        """
        if not len(self.index):  # nothing to be derived from (a knowledge base without notes yet)
            return None
        found = self.index.best(tokens(text), above=self.threshold)
        if found is None or not (found.overlap > self.threshold or found.overlap >= 1.0):
            return None
        a = found.artifact
        return DerivedMatch(a.name, a.path, a.sha256, round(found.overlap, 4))

    @classmethod
    def load(
        cls, layout: Layout, *, threshold: float, manifest_path: Path | None = None, cache_dir: Path | None = None
    ) -> DerivedFilter:
        """Manifest rows + current notes and skills → a filter.

        No manifest and no notes: a filter that matches nothing (never an error).
        ``cache_dir`` (an existing private folder, e.g. the ingest output dir on
        ``--write``): reuse the index built by an earlier run when the manifest
        and every artifact file are unchanged (size, mtime, inode — as git's
        index does), and store a rebuilt one there.
        """
        check_bound("derived.threshold", threshold)
        manifest = manifest_path or layout.artifact_manifest
        files = list(current_artifact_files(layout))
        key = _cache_key(layout, manifest, files)
        cached = _read_cache(cache_dir, key) if cache_dir is not None else None
        if cached is not None:
            index, counts, warnings = cached
            cache = "reused"
        else:
            index, counts, warnings = _build(layout, manifest, files)
            if cache_dir is None:
                cache = "off"
            else:
                cache = "stored" if _write_cache(cache_dir, key, index, counts, warnings) else "not stored"
        settings = {
            "enabled": True,
            "threshold": threshold,
            "manifest": layout.rel(manifest),
            "manifest_present": manifest.is_file(),
            **counts,
            "artifact_count": len(index),
            "shingle_params": dict(SHINGLE_PARAMS),
            "index_cache": cache,
        }
        return cls(index=index, threshold=threshold, settings=settings, warnings=tuple(warnings))


def _build(layout: Layout, manifest: Path, files: list[Path]) -> tuple[ArtifactIndex, dict[str, int], list[str]]:
    # Imported here: a run whose index is cached never reads the manifest.
    from kbtools.derived.manifest import read_manifest, row_for

    rows = read_manifest(manifest)
    warnings: list[str] = []
    artifacts: dict[str, Artifact] = {}
    stale = 0
    for row in rows:
        if row.sha256 in artifacts:
            continue
        if row.current:
            artifacts[row.sha256] = row.artifact()
            continue
        stale += 1
        refreshed = _reshingle(layout, row.path, row.sha256)
        if refreshed is not None:
            artifacts[row.sha256] = refreshed
        else:
            how = "was shingled with other parameters" if row.shingles_read else "is in an earlier format"
            warnings.append(
                f"artifact manifest row {layout.rel(manifest)}:{row.line} for {row.path} ({row.sha256[:12]}) "
                f"{how} and the file no longer has that content; it is skipped"
            )
    from_manifest = len(artifacts)
    for path in files:
        rel = layout.rel(path)
        try:
            content = path.read_bytes()
        except OSError as exc:
            raise KbError(f"cannot read artifact: {exc.strerror}", rel) from None
        if hashlib.sha256(content).hexdigest() not in artifacts:  # recorded already: no need to shingle again
            row = row_for(rel, content, emitted_at="")
            artifacts[row.sha256] = row.artifact()
    counts = {
        "manifest_rows": len(rows),
        "manifest_rows_stale": stale,
        "current_artifacts": len(files),
        "from_manifest": from_manifest,
    }
    return ArtifactIndex(artifacts.values()), counts, warnings


# --- index cache -----------------------------------------------------------------
# marshal, not pickle: the file holds only ints, strings, tuples, lists and dicts,
# and loading it can never run code.

CACHE_FILE = "derived-index.marshal"
_CACHE_FORMAT = 4


def _cache_key(layout: Layout, manifest: Path, files: list[Path]) -> str:
    def stamp(path: Path) -> tuple[str, int, int, int] | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return (layout.rel(path), st.st_size, st.st_mtime_ns, st.st_ino)

    parts = (_CACHE_FORMAT, sorted(SHINGLE_PARAMS.items()), INDEX_PARAMS, stamp(manifest), [stamp(f) for f in files])
    return blake3(repr(parts).encode("utf-8", "surrogatepass")).hexdigest()


def _read_cache(cache_dir: Path, key: str) -> tuple[ArtifactIndex, dict[str, int], list[str]] | None:
    try:
        data = marshal.loads((cache_dir / CACHE_FILE).read_bytes())
        if data[0] != key:
            return None
        return ArtifactIndex.from_state(data[1]), dict(data[2]), list(data[3])
    except (OSError, EOFError, ValueError, TypeError, IndexError, KeyError):
        return None  # absent, stale or damaged: rebuild


def _write_cache(cache_dir: Path, key: str, index: ArtifactIndex, counts: dict[str, int], warnings: list[str]) -> bool:
    if not cache_dir.is_dir():
        return False
    try:
        atomic_write_bytes(cache_dir / CACHE_FILE, [marshal.dumps((key, index.to_state(), counts, warnings))])
    except OSError:
        return False
    return True


def _reshingle(layout: Layout, rel_path: str, sha256: str) -> Artifact | None:
    """A stale row's artifact, shingled again from its file if the file still has that content."""
    from kbtools.derived.manifest import row_for

    try:
        content = (layout.root / rel_path).read_bytes()
    except OSError:
        return None
    row = row_for(rel_path, content, emitted_at="")
    return row.artifact() if row.sha256 == sha256 else None
