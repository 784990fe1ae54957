"""Checks 1–8: the raw evidence layer is registered, intact and immutable."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator, Sequence

from kbtools.kb.frontmatter import FrontmatterError, parse_frontmatter
from kbtools.kb.manifest import sha256_bytes
from kbtools.kb.tree import read_regular
from kbtools.lint.context import LintContext
from kbtools.lint.problem import Problem

RAW_REQUIRED_FIELDS = ("title", "capturedAt", "sourceType", "sourceUrl")


def check_raw(ctx: LintContext) -> list[Problem]:
    problems = list(_manifest_and_files(ctx))
    problems += _history(ctx)
    return problems


def _manifest_and_files(ctx: LintContext) -> Iterator[Problem]:
    layout = ctx.layout
    manifest_rel = ctx.rel(layout.raw_manifest)
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

    on_disk = {f.rel: f for f in ctx.raw.files}
    raw_prefix = ctx.raw_prefix + "/"
    for f in ctx.raw.files:
        if f.rel not in named:
            yield Problem("raw-unregistered", f"raw file missing from manifest: {f.rel}", raw_prefix + f.rel)

    # Files behind a symlink that leaves the raw root are never read.
    escaping = {i.rel for i in manifest.issues if i.rel} if manifest is not None else set()
    escaping |= {f.rel for f in ctx.raw.files if f.rel in ctx.raw.symlinks and f.rel not in named}

    raw_root = str(layout.raw_root)
    for rel in registered:
        if rel not in on_disk and not os.path.isfile(os.path.join(raw_root, rel)):
            yield Problem("raw-missing-file", f"manifest points to missing raw file: {rel}", raw_prefix + rel)

    new_entries = _new_entries(ctx)
    yield from _unstaged_registrations(ctx, new_entries)
    hash_scope = _hash_scope(ctx, registered, new_entries)
    for f in ctx.raw.files:
        if f.rel in escaping:
            continue
        check_hash = f.rel in registered and f.rel in hash_scope
        check_fields = ctx.raw_in_scope(f.rel)
        if not (check_hash or check_fields):
            continue
        try:
            data = read_regular(f.abspath)
        except OSError as exc:
            yield Problem(
                "raw-checksum", f"raw checksum mismatch: {f.rel} (unreadable: {exc.strerror})", raw_prefix + f.rel
            )
            continue
        if check_hash and sha256_bytes(data) != registered[f.rel]:
            yield Problem("raw-checksum", f"raw checksum mismatch: {f.rel}", raw_prefix + f.rel)
        if check_fields:
            yield from _raw_fields(f.rel, raw_prefix + f.rel, data)
    # Registered files the scan does not list (drafts, non-Markdown evidence) are hashed too.
    for rel in sorted(hash_scope):
        if rel in on_disk or rel not in registered:
            continue
        try:
            data = read_regular(os.path.join(raw_root, rel))
        except OSError:
            continue  # missing: reported above
        if sha256_bytes(data) != registered[rel]:
            yield Problem("raw-checksum", f"raw checksum mismatch: {rel}", raw_prefix + rel)


def _new_entries(ctx: LintContext) -> set[str] | None:
    """``--staged``: paths named by manifest lines that HEAD's manifest does not have."""
    if ctx.scope is None or ctx.history is None or ctx.manifest is None:
        return None
    manifest_rel = ctx.rel(ctx.layout.raw_manifest)
    (step,) = ctx.history.steps
    if step.status_of(manifest_rel) is None:
        return set()
    old_lines = {ln.rstrip() for ln in (step.text("old", manifest_rel) or "").split("\n")}
    return {e.rel for e in ctx.manifest.entries if e.line not in old_lines}


def _unstaged_registrations(ctx: LintContext, new: set[str] | None) -> Iterator[Problem]:
    """``--staged``: a manifest line being committed must come with its file in the commit."""
    if not new:
        return
    from kbtools.gitio import indexed_files

    raw_prefix = ctx.raw_prefix + "/"
    present = [rel for rel in sorted(new) if os.path.exists(os.path.join(ctx.layout.raw_root, rel))]
    in_index = indexed_files(ctx.layout.root, [raw_prefix + rel for rel in present])
    for rel in present:
        if raw_prefix + rel not in in_index:
            yield Problem(
                "raw-missing-file", f"manifest points to missing raw file: {rel} (not staged)", raw_prefix + rel
            )


def _hash_scope(ctx: LintContext, registered: dict[str, str], new: set[str] | None) -> set[str]:
    """Registered paths whose bytes are hashed: all of them, or (``--staged``) the files the
    commit touches plus every path a newly appended manifest line names."""
    if ctx.scope is None:
        return set(registered)
    return (set(ctx.scope.raw) | (new or set())) & set(registered)


def _raw_fields(rel: str, path: str, data: bytes) -> Iterator[Problem]:
    try:
        fields = parse_frontmatter(data).fields
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
    """Checks 6 and 7 for every step of the mode."""
    if ctx.history is None:
        return []
    problems: list[Problem] = []
    raw_prefix = ctx.raw_prefix + "/"
    manifest_rel = ctx.rel(ctx.layout.raw_manifest)
    for step in ctx.history.steps:
        label = ctx.step_label(step)
        for f in step.files:
            if f.path == manifest_rel and f.old_path is None:
                changed = f.status[0] in "DT"  # a modified manifest is judged line by line (check 7)
            else:
                touches_raw = f.path.startswith(raw_prefix) or (f.old_path or "").startswith(raw_prefix)
                changed = touches_raw and f.status[0] in "MDRCT"
            if changed:
                problems.append(
                    Problem("raw-snapshot-changed", f"raw snapshot changed or deleted: {f.describe()}{label}", f.path)
                )
        status = step.status_of(manifest_rel)
        if status is None or status.status[0] != "M":
            continue
        old, new = step.text("old", manifest_rel), step.text("new", manifest_rel)
        if old is None or new is None:
            continue
        for line in append_only_violations(_lines(old), _lines(new)):
            problems.append(Problem("raw-manifest-rewritten", f"raw manifest rewritten: {line}{label}", manifest_rel))
    return problems


def _lines(text: str) -> list[str]:
    return [ln.rstrip() for ln in text.split("\n") if ln.strip()]


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
