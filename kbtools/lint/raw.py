"""Checks 1–8: the raw evidence layer is registered, intact and immutable."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator, Sequence

from kbtools.config import CONFIG_FILE
from kbtools.kb.frontmatter import FrontmatterError, frontmatter_fields
from kbtools.kb.manifest import appended_rels, changed_entries, manifest_entries, removed_entries
from kbtools.lint.context import LintContext
from kbtools.lint.history import Step
from kbtools.lint.problem import Problem

RAW_REQUIRED_FIELDS = ("title", "capturedAt", "sourceType", "sourceUrl")


def check_raw(ctx: LintContext) -> list[Problem]:
    problems = list(_manifest_and_files(ctx))
    problems += _history(ctx)
    return problems


def _manifest_and_files(ctx: LintContext) -> Iterator[Problem]:
    layout = ctx.layout
    manifest_rel = ctx.rel(layout.raw_manifest)
    raw_prefix = ctx.raw_prefix + "/"
    if ctx.raw_root_problem is not None:
        yield Problem(
            "raw-root-moved",
            f"raw root is not a folder of this repository: {ctx.raw_root_problem}",
            ctx.raw_prefix,
        )
        return  # evidence is never read from outside the repository
    manifest = ctx.manifest
    if manifest is None:
        yield Problem("raw-manifest-missing", f"missing raw manifest: {manifest_rel}", manifest_rel)
        registered: dict[str, str] = {}
        named: set[str] = set()
    else:
        for issue in manifest.issues:
            yield Problem(
                "raw-manifest-entry",
                f"invalid raw manifest entry: {issue.line} ({issue.reason})",
                manifest_rel,
                issue.line_no,
            )
        registered = manifest.sha_by_rel()
        named = manifest.named_rels()

    # Every entry of the raw root counts, whatever its name (a `_draft.md`, a `.txt`, a
    # symlink): nothing in it escapes the checks by its name. Only the manifest is not evidence.
    entries = ctx.raw_entries
    own = manifest_rel[len(raw_prefix) :] if manifest_rel.startswith(raw_prefix) else None
    for rel in sorted(entries):
        if rel not in named and rel != own:
            yield Problem("raw-unregistered", f"raw file missing from manifest: {rel}", raw_prefix + rel)

    # Files behind a symlink that leaves the raw root are never read.
    escaping = {i.rel for i in manifest.issues if i.rel} if manifest is not None else set()
    in_index = ctx.files.index is not None
    for rel in registered:
        if rel not in entries:
            staged_out = in_index and os.path.isfile(os.path.join(layout.raw_root, rel))
            suffix = " (not staged)" if staged_out else ""
            yield Problem("raw-missing-file", f"manifest points to missing raw file: {rel}{suffix}", raw_prefix + rel)

    hash_scope = _hash_scope(ctx, registered, _new_entries(ctx))
    md = {f.rel for f in ctx.raw.files}
    for rel in sorted(hash_scope | {r for r in md if ctx.raw_in_scope(r)}):
        if rel in escaping or rel not in entries:
            continue
        check_hash = rel in hash_scope
        check_fields = rel in md and ctx.raw_in_scope(rel)
        if entries[rel] != "file":
            if check_hash:
                yield Problem(
                    "raw-checksum",
                    f"raw checksum mismatch: {rel} (not a regular file: {entries[rel]})",
                    raw_prefix + rel,
                )
            continue
        try:
            sha, head = ctx.files.hash_and_head(raw_prefix + rel)
        except OSError as exc:
            yield Problem(
                "raw-checksum", f"raw checksum mismatch: {rel} (unreadable: {exc.strerror})", raw_prefix + rel
            )
            continue
        if check_hash and sha != registered[rel]:
            yield Problem("raw-checksum", f"raw checksum mismatch: {rel}", raw_prefix + rel)
        if check_fields:
            yield from _raw_fields(rel, raw_prefix + rel, head)


def _new_entries(ctx: LintContext) -> set[str] | None:
    """``--staged``: paths whose manifest entry (path → hash) HEAD's manifest does not have."""
    if ctx.scope is None or ctx.history is None or ctx.manifest is None:
        return None
    manifest_rel = ctx.rel(ctx.layout.raw_manifest)
    (step,) = ctx.history.steps
    if step.status_of(manifest_rel) is None:
        return set()
    old_text = step.text("old", manifest_rel) or ""
    appended = appended_rels(ctx.manifest, old_text)
    if appended is not None:
        return appended
    old = manifest_entries(old_text)
    return {e.rel for e in ctx.manifest.entries if old.get(e.rel) != e.sha}


def _hash_scope(ctx: LintContext, registered: dict[str, str], new: set[str] | None) -> set[str]:
    """Registered paths whose bytes are hashed: all of them, or (``--staged``) the files the
    commit touches plus every path a newly appended manifest line names."""
    if ctx.scope is None:
        return set(registered)
    return (set(ctx.scope.raw) | (new or set())) & set(registered)


def _raw_fields(rel: str, path: str, data: bytes) -> Iterator[Problem]:
    try:
        fields = frontmatter_fields(data)
    except FrontmatterError as exc:
        yield Problem("raw-frontmatter", f"raw source invalid frontmatter: {rel} ({exc.reason})", path, 1)
        return
    for name in RAW_REQUIRED_FIELDS:
        if _blank(fields.get(name)):
            yield Problem("raw-frontmatter", f"raw source missing {name}: {rel}", path, 1)
    if "immutable" in fields and fields["immutable"] is not True:
        yield Problem("raw-frontmatter", f"raw source invalid immutable '{fields['immutable']}': {rel}", path, 1)


def _blank(value: object) -> bool:
    if isinstance(value, str):
        return not value.strip()
    return value is None or (isinstance(value, (list, dict)) and not value)


def _history(ctx: LintContext) -> list[Problem]:
    """Checks 6 and 7 for every step of the mode, and for the rewrite step of a range whose
    REV is not an ancestor of HEAD; a step that moves the raw root is a finding too."""
    if ctx.history is None:
        return []
    problems: list[Problem] = []
    raw_prefix = ctx.raw_prefix + "/"
    manifest_rel = ctx.rel(ctx.layout.raw_manifest)
    rewrite = ctx.history.rewrite
    for step in ctx.history.steps + ((rewrite,) if rewrite is not None else ()):
        label = ctx.step_label(step)
        for f in step.files:
            if step.partial and f.status[0] not in "MT":
                continue  # a common ancestor: what HEAD lacks may be newer than HEAD, not dropped
            if f.path == manifest_rel and f.old_path is None:
                changed = f.status[0] in "DT"  # a modified manifest is judged line by line (check 7)
            else:
                touches_raw = f.path.startswith(raw_prefix) or (f.old_path or "").startswith(raw_prefix)
                # Something other than a folder at the raw root itself (a submodule's gitlink,
                # a symlink, a file), added or changed: where evidence lives has changed.
                at_root = ctx.raw_prefix in (f.path, f.old_path)
                changed = (touches_raw and f.status[0] in "MDRCT") or at_root
            if changed:
                problems.append(
                    Problem("raw-snapshot-changed", f"raw snapshot changed or deleted: {f.describe()}{label}", f.path)
                )
        problems += _config_moves(ctx, step, label)
        status = step.status_of(manifest_rel)
        if status is None or status.status[0] != "M":
            continue
        old, new = step.text("old", manifest_rel), step.text("new", manifest_rel)
        if old is None or new is None:
            continue
        lost = changed_entries(old, new) if step.partial else removed_entries(old, new)
        for line in lost:
            problems.append(Problem("raw-manifest-rewritten", f"raw manifest rewritten: {line}{label}", manifest_rel))
    return problems


def _config_moves(ctx: LintContext, step: Step, label: str) -> list[Problem]:
    """A step whose ``.kb.yaml`` points the raw root or the manifest elsewhere, while
    evidence lived at the old place: where evidence lives has changed."""
    if step.status_of(CONFIG_FILE) is None or step.old_rev is None:
        return []
    before = evidence_paths(step.text("old", CONFIG_FILE))
    after = evidence_paths(step.text("new", CONFIG_FILE))
    if before == after:
        return []
    old_manifest = before.get("raw_manifest", "")
    if step.old_rev is not None and not _in_tree(ctx, step.old_rev, old_manifest):
        return []  # nothing was registered there: a KB being set up, not moved
    return [
        Problem(
            "raw-root-moved",
            f"raw root moved: paths.{key} '{before[key]}' -> '{after[key]}' in {CONFIG_FILE}{label}",
            CONFIG_FILE,
        )
        for key in before
        if before[key] != after[key]
    ]


def _in_tree(ctx: LintContext, rev: str, rel: str) -> bool:
    return bool(rel) and ctx.files.reader.read(f"{rev}:./{rel}") is not None


def evidence_paths(text: str | None) -> dict[str, str]:
    """``paths.raw`` and ``paths.raw_manifest`` of a ``.kb.yaml`` text (None: no file, the
    defaults); an unreadable file gives ``<unreadable>``."""
    from collections.abc import Mapping

    from kbtools.config import MAX_CONFIG_BYTES, PathsConfig

    defaults = {"raw": PathsConfig().raw, "raw_manifest": PathsConfig().raw_manifest}
    if text is None:
        return defaults
    try:
        from kbtools.safeyaml import load

        data = load(text, max_bytes=MAX_CONFIG_BYTES)
    except Exception:  # any YAML or bound error: the file does not say where evidence lives
        return dict.fromkeys(defaults, "<unreadable>")
    paths = data.get("paths") if isinstance(data, Mapping) else None
    result = dict(defaults)
    if isinstance(paths, Mapping):
        for key in result:
            value = paths.get(key)
            if isinstance(value, str):
                result[key] = _normal_path(value)
    return result


def _normal_path(value: str) -> str:
    value = value.strip().replace("\\\\", "/").rstrip("/")
    while value.startswith("./"):
        value = value[2:]
    return value


def append_only_violations(old: Sequence[str], new: Sequence[str]) -> list[str]:
    """Items of ``old`` that ``new`` changed or removed; ``new`` must be ``old`` + appended items.

    Every removed (or edited) item is named. If none was removed but ``new`` does not
    start with ``old`` (an item inserted in the middle, or a reordering), the first old
    item that moved is named.
    """
    remaining = Counter(new)
    removed = []
    for item in old:
        if remaining[item] > 0:
            remaining[item] -= 1
        else:
            removed.append(item)
    if removed:
        return removed
    for a, b in zip(old, new):
        if a != b:
            return [a]
    return []
