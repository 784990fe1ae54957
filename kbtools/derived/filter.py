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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbtools.derived.index import Artifact, ArtifactIndex
from kbtools.derived.manifest import current_artifact_files, read_manifest, row_for
from kbtools.derived.normalise import tokens
from kbtools.derived.shingles import SHINGLE_PARAMS
from kbtools.errors import ConfigError, KbError
from kbtools.kb.layout import Layout


@dataclass(frozen=True)
class DerivedMatch:
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
        found = self.index.best(tokens(text))
        if found is None or not (found.overlap > self.threshold or found.overlap >= 1.0):
            return None
        a = found.artifact
        return DerivedMatch(a.name, a.path, a.sha256, round(found.overlap, 4))

    @classmethod
    def load(cls, layout: Layout, *, threshold: float, manifest_path: Path | None = None) -> DerivedFilter:
        """Manifest rows + current notes and skills → a filter.

        No manifest and no notes: a filter that matches nothing (never an error).
        """
        check_threshold(threshold)
        manifest = manifest_path or layout.artifact_manifest
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
                warnings.append(
                    f"artifact manifest row for {row.path} ({row.sha256[:12]}) was shingled with other "
                    "parameters and the file no longer has that content; it is not compared "
                    "(re-record it with `kb artifacts record`)"
                )
        from_manifest = len(artifacts)
        current = 0
        for path in current_artifact_files(layout):
            rel = layout.rel(path)
            try:
                content = path.read_bytes()
            except OSError as exc:
                raise KbError(f"cannot read artifact: {exc.strerror}", rel) from None
            row = row_for(rel, content, emitted_at="")
            current += 1
            artifacts.setdefault(row.sha256, row.artifact())
        index = ArtifactIndex(artifacts.values())
        settings = {
            "enabled": True,
            "threshold": threshold,
            "manifest": layout.rel(manifest),
            "manifest_present": manifest.is_file(),
            "manifest_rows": len(rows),
            "manifest_rows_stale": stale,
            "current_artifacts": current,
            "artifact_count": len(index),
            "from_manifest": from_manifest,
            "shingle_params": dict(SHINGLE_PARAMS),
        }
        return cls(index=index, threshold=threshold, settings=settings, warnings=tuple(warnings))


def check_threshold(threshold: float) -> None:
    if not 0.0 <= threshold <= 1.0:
        raise ConfigError(f"derived threshold must be between 0 and 1, got {threshold}", "derived.threshold")


def _reshingle(layout: Layout, rel_path: str, sha256: str) -> Artifact | None:
    """A stale row's artifact, shingled again from its file if the file still has that content."""
    try:
        content = (layout.root / rel_path).read_bytes()
    except OSError:
        return None
    row = row_for(rel_path, content, emitted_at="")
    return row.artifact() if row.sha256 == sha256 else None
