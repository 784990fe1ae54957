"""The artifact manifest a commit must hold: the kb-record-artifacts hook.

The manifest is append-only history, so a row for a version that is never committed
would stay there for good. A hook runs before the commit is final: another hook may
still refuse it, the user may abort the message, or change the page and try again.
So the hook does not simply append the staged versions; it states what the commit
must hold — HEAD's manifest byte for byte, then one row per artifact version the
commit adds — and makes the working-tree manifest say exactly that:

- a row appended since HEAD for a version the commit does not hold (a refused
  attempt's page, since edited) is dropped;
- a row appended since HEAD for a version the commit holds is kept as it is;
- each staged version not yet recorded gets a row.

A commit passes the hook only when its staged manifest is that text, so every
committed row describes a committed version. (A post-commit hook would record only
what was committed too, but it writes after the commit: its rows would trail one
commit behind, and pre-commit's stash of unstaged changes rolls such a write back
when the manifest itself has unstaged rows.)
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from kbtools.derived.manifest import ManifestRow, new_rows, staged_files
from kbtools.errors import ExitCode, KbError
from kbtools.gitio import read_blobs
from kbtools.kb.layout import Layout


@dataclass(frozen=True)
class StagedManifest:
    text: bytes  # what the commit's manifest must be
    staged: bytes  # what the index holds now
    on_disk: bytes  # what the working tree holds now
    recorded: tuple[ManifestRow, ...]  # rows added for staged versions
    dropped: tuple[str, ...]  # paths of rows removed: versions the commit does not hold
    already: tuple[str, ...]  # staged artifacts whose version is already recorded

    @property
    def changed(self) -> bool:
        """The commit would not hold ``text``: the manifest must be (written and) staged."""
        return self.text != self.staged


def staged_manifest(layout: Layout) -> StagedManifest:
    """The manifest the commit being made must hold (see the module docstring).

    The rows appended since HEAD are read from the working tree, which under pre-commit
    is the index (it stashes unstaged changes); a plain hook or a manual run also sees
    rows recorded but not staged yet.
    """
    rel = layout.rel(layout.artifact_manifest)
    listed = staged_files(layout)  # first: outside a repository it is the one clear error
    head_spec, index_spec = f"HEAD:./{rel}", f":./{rel}"
    blobs = read_blobs(layout.root, [head_spec, index_spec])
    head, staged = blobs.get(head_spec) or b"", blobs.get(index_spec) or b""
    try:
        on_disk = layout.artifact_manifest.read_bytes()
    except FileNotFoundError:
        on_disk = b""
    if not on_disk.startswith(head):
        raise KbError(
            "artifact manifest rewritten: a committed row was changed or removed", rel, code=ExitCode.FINDINGS
        )
    known = {_identity(line, rel)[1] for line in head.splitlines() if line.strip()}
    tail = [line for line in on_disk[len(head) :].splitlines() if line.strip()]
    held = _index_sha256(layout, sorted({_identity(line, rel)[0] for line in tail}))
    kept: list[bytes] = []
    dropped: list[str] = []
    for line in tail:
        path, sha256 = _identity(line, rel)
        if path in held and held[path] != sha256:
            dropped.append(path)  # that path is committed with other content: this version never is
        elif sha256 not in known:
            known.add(sha256)
            kept.append(line)
    new = new_rows(listed, known)
    base = head if not head or head.endswith(b"\n") else head + b"\n"
    rows = "".join(r.to_json() + "\n" for r in new.recorded).encode()
    text = base + b"".join(line + b"\n" for line in kept) + rows
    if text.strip() == on_disk.strip() and not new.recorded and not dropped:
        text = on_disk  # nothing to change: keep the bytes exactly
    return StagedManifest(text, staged, on_disk, new.recorded, tuple(dropped), new.already)


def _identity(line: bytes, where: str) -> tuple[str, str]:
    """A row's ``(path, sha256)``; a line that names no artifact is an error naming the file."""
    try:
        data = json.loads(line)
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("path"), str) or not isinstance(data.get("sha256"), str):
        raise KbError("invalid artifact manifest line (not a row naming path and sha256)", where)
    return data["path"], data["sha256"]


def _index_sha256(layout: Layout, paths: list[str]) -> dict[str, str]:
    """sha256 of each path's staged bytes; paths the index does not hold are left out."""
    specs = {path: f":./{path}" for path in paths}
    blobs = read_blobs(layout.root, list(specs.values()))
    return {
        path: hashlib.sha256(data).hexdigest() for path, spec in specs.items() if (data := blobs.get(spec)) is not None
    }
