"""`kb artifacts record`'s output, and `kb artifacts record --staged` (the commit hook's last
step), without typer (see :mod:`kbtools.cli.base`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbtools.cli.base import open_kb

if TYPE_CHECKING:
    from kbtools.derived.manifest import ManifestRow


def record_staged(fmt: str, root: Path | None) -> int:
    """The kb-record-artifacts hook: make the manifest hold what the commit holds (exit 1 if it changed)."""
    from kbtools.derived.manifest import MANIFEST_MODE
    from kbtools.derived.staged import staged_manifest
    from kbtools.fsio import atomic_write_bytes

    _, layout = open_kb(root)
    result = staged_manifest(layout)
    manifest = layout.rel(layout.artifact_manifest)
    if result.text != result.on_disk:
        layout.artifact_manifest.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(layout.artifact_manifest, [result.text], mode=MANIFEST_MODE)
    if fmt == "json":
        doc = {**summary(manifest, result.recorded, result.already), "dropped": list(result.dropped)}
        print(json.dumps({**doc, "restage": result.changed}))
        return 1 if result.changed else 0
    for row in result.recorded:
        print(f"recorded {row.path} ({row.name}, {row.sha256[:12]}) in {manifest}")
    for rel in result.dropped:
        print(f"dropped the row of an uncommitted version of {rel} from {manifest}")
    if result.changed:
        print(f"{manifest} changed: stage it (git add {manifest}) and commit again", file=sys.stderr)
        return 1
    return 0


def summary(manifest: str, recorded: Sequence[ManifestRow], already: Sequence[str]) -> dict[str, Any]:
    return {
        "manifest": manifest,
        "recorded": [{"name": r.name, "path": r.path, "sha256": r.sha256} for r in recorded],
        "already": list(already),
    }
