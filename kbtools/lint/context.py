"""Everything the checks read, gathered once: the two layers, the manifest, git history.

``--staged`` is the pre-commit hook and must stay fast on a large KB, so it checks
the content of the files the commit adds or changes (``Scope``), against the whole
KB's names (file listings, manifest, index). HEAD was checked when it was committed,
and check 6 proves the other raw files did not change. Anything that could break a
file outside the commit — a deleted or renamed note, a changed ``.kb.yaml``, the
first commit — makes the hook check everything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from kbtools.config import CONFIG_FILE
from kbtools.gitio import RepoState, repo_state
from kbtools.kb.frontmatter import Frontmatter, FrontmatterError, parse_frontmatter
from kbtools.kb.layout import Layout
from kbtools.kb.manifest import Manifest, read_manifest
from kbtools.kb.tree import KbFile, Layer, read_regular, scan_layer
from kbtools.lint.history import History, LintMode, Step, load_history


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
        return read_manifest(self.layout.raw_manifest, self.layout.raw_root, self.raw.symlinks)

    def note_doc(self, note: KbFile) -> Frontmatter | FrontmatterError:
        """Parsed frontmatter of a note (cached: several checks read it)."""
        doc = self._note_docs.get(note.rel)
        if doc is None:
            try:
                doc = parse_frontmatter(read_regular(note.abspath))
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
        return f" (commit {step.commit[:12]})" if step.commit else ""


GIT_FAMILIES = frozenset({"raw", "index-log", "secrets"})


def build_context(layout: Layout, mode: LintMode, families: frozenset[str]) -> LintContext:
    """Scan the KB and, when git is usable and a family needs it, load the mode's history."""
    canonical = layout.canonical_locale  # may raise ConfigError (ambiguous)
    ctx = LintContext(
        layout=layout,
        mode=mode,
        raw=scan_layer(layout.raw_root),
        notes=scan_layer(layout.note_root),
        canonical=canonical,
        repo=repo_state(layout.root),
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
    tracked = [ctx.rel(layout.raw_manifest), ctx.rel(layout.log), ctx.rel(layout.index)]
    ctx.history = load_history(layout.root, mode, ctx.repo, paths, tracked)
    if mode.staged and ctx.repo.head is not None:
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


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
