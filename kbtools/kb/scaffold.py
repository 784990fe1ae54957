"""`kb init`: the files of a new knowledge base, rendered from the Config's paths.

A scaffolded KB lints clean at once and after its first commit: an empty raw
manifest, an index with nothing to list, a log whose only entry is the `init`
one. ``KB.md`` is the contract an agent follows; this repository's own
``KB.md`` starts with the same text (a test keeps the two identical).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from kbtools.config import Config, PathsConfig
from kbtools.errors import KbError
from kbtools.kb.layout import DEFAULT_LOCALE

PRECOMMIT_CONFIG = ".pre-commit-config.yaml"
GITIGNORE = ".gitignore"
GITIGNORE_ENTRY = ".agent/"


@dataclass(frozen=True)
class HookDef:
    """One hook of `.pre-commit-hooks.yaml` (a test keeps the file and this list equal)."""

    id: str
    name: str
    description: str
    entry: str
    stages: tuple[str, ...] = ("pre-commit", "pre-push", "manual")
    # The files tell a commit (the staged ones) from `pre-commit run --all-files` (all of them);
    # every hook checks the whole KB either way (kbtools/lint/hookmode.py).
    pass_filenames: bool = True
    # pre-commit shows a passing hook's output only when the hook is verbose.
    verbose: bool = False

    def manifest_fields(self) -> dict[str, object]:
        """The hook as `.pre-commit-hooks.yaml` states it."""
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "entry": self.entry,
            "language": "python",
            "pass_filenames": self.pass_filenames,
            "always_run": True,
            "require_serial": True,
            "stages": list(self.stages),
            **({"verbose": True} if self.verbose else {}),
        }


# The hooks of `.pre-commit-hooks.yaml`, in its order.
FRAMEWORK_HOOKS: tuple[HookDef, ...] = (
    HookDef(
        "kb-lint",
        "kb lint (every check)",
        "Every kb lint check: the staged changes, the whole KB under --all-files, each pushed commit.",
        "kb hooks lint",
    ),
    HookDef(
        "kb-raw-immutable",
        "kb raw evidence is immutable",
        "Raw manifest, checksums, append-only manifest, no edited or deleted raw file.",
        "kb hooks lint --only raw",
    ),
    HookDef(
        "kb-note-metadata",
        "kb note metadata and links",
        "Note frontmatter (kind, status, sources), source slugs, related and Markdown links.",
        "kb hooks lint --only notes",
    ),
    HookDef(
        "kb-index-log",
        "kb canonical index and log",
        "Every active note and raw source listed in the index; the log dated, ordered, append-only.",
        "kb hooks lint --only index-log",
    ),
    HookDef(
        "kb-no-secrets",
        "kb no secrets in evidence or notes",
        "No credential in the raw or note content being committed.",
        "kb hooks lint --only secrets",
    ),
    # Verbose: a rewrite that loses one or two identifiers passes with a warning, and
    # pre-commit hides the output of a passing hook unless the hook is verbose.
    HookDef(
        "kb-identifier-retention",
        "kb identifier retention",
        "A rewrite of a note may not silently drop the identifiers that anchor it.",
        "kb hooks retention",
        verbose=True,
    ),
    # Commit time only: it records what the commit holds, nothing to record on a push.
    HookDef(
        "kb-record-artifacts",
        "kb record emitted artifacts",
        "Record the committed wiki pages in the artifact manifest so ingest never learns from them.",
        "kb artifacts record --staged",
        stages=("pre-commit",),
        pass_filenames=False,
    ),
)
# kb-lint already runs the four `--only` families; a config enables it plus the two
# hooks it does not cover, and lists the finer-grained ids as alternatives.
ENABLED_HOOK_IDS = ("kb-lint", "kb-identifier-retention", "kb-record-artifacts")


@dataclass(frozen=True)
class HooksSource:
    """Where a `.pre-commit-config.yaml` takes kbtools' hooks from.

    ``repo`` None: `repo: local` hooks running the `kb` installed in the environment.
    Otherwise pre-commit clones ``repo`` at ``rev`` (a full commit sha until releases are
    tagged: a tag or branch that does not exist fails the first `pre-commit run`).
    """

    repo: str | None = None
    rev: str | None = None

    @property
    def local(self) -> bool:
        return self.repo is None


LOCAL_HOOKS = HooksSource()


def installed_hooks_source(direct_url: dict[str, object] | None) -> HooksSource:
    """The hooks repository matching the running kbtools, from its PEP 610 ``direct_url.json``.

    Installed from a git repository (``pip install git+URL@REV``): that repository at the
    exact commit installed, so the hooks run the code the user already runs. Anything else
    (a wheel, a local folder, an editable checkout): local hooks, which run this installation.
    """
    vcs = direct_url.get("vcs_info") if direct_url else None
    if not isinstance(vcs, dict) or vcs.get("vcs") != "git" or vcs.get("subdirectory"):
        return LOCAL_HOOKS
    url, commit = direct_url.get("url") if direct_url else None, vcs.get("commit_id")
    if isinstance(url, str) and url and isinstance(commit, str) and len(commit) == 40:
        return HooksSource(url, commit)
    return LOCAL_HOOKS


def read_direct_url(distribution: str = "kbtools") -> dict[str, object] | None:
    """The installed distribution's ``direct_url.json`` (PEP 610), or None."""
    import json
    from importlib import metadata

    try:
        text = metadata.distribution(distribution).read_text("direct_url.json")
        data = json.loads(text) if text else None
    except (metadata.PackageNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@dataclass(frozen=True)
class ScaffoldFile:
    rel: str  # POSIX, relative to the KB root
    text: str


@dataclass(frozen=True)
class ScaffoldResult:
    root: Path
    created: tuple[str, ...]
    kept: tuple[str, ...]  # existing files left alone (only with force)
    directories: tuple[str, ...]
    gitignore_updated: bool


def locale_paths(paths: PathsConfig, locale: str) -> dict[str, str]:
    """The KB's paths with ``{locale}`` filled in, for templates and messages."""
    return {
        "raw": paths.raw.rstrip("/"),
        "manifest": paths.raw_manifest,
        "notes": paths.notes.rstrip("/"),
        "index": paths.index.replace("{locale}", locale),
        "log": paths.log.replace("{locale}", locale),
        "artifacts": paths.artifact_manifest,
        "ingest": paths.ingest_output,
        "locale": locale,
    }


def render_kb_md(paths: PathsConfig, locale: str = DEFAULT_LOCALE) -> str:
    return _KB_MD.format(**locale_paths(paths, locale))


def render_index() -> str:
    return _INDEX


def render_log(today: dt.date) -> str:
    return _LOG.format(today=today.isoformat())


def render_precommit_config(source: HooksSource = LOCAL_HOOKS) -> str:
    """A `.pre-commit-config.yaml` using kbtools' hooks, valid as written.

    Local: `repo: local` hooks that run the `kb` of the active environment
    (`language: system`); nothing to fetch, works offline. Otherwise pre-commit
    fetches ``source.repo`` at ``source.rev``. Either way `pre-commit install`
    also installs the pre-push hook (``default_install_hook_types``), which checks
    every pushed commit.
    """
    enabled = [h for h in FRAMEWORK_HOOKS if h.id in ENABLED_HOOK_IDS]
    alternatives = [h for h in FRAMEWORK_HOOKS if h.id not in ENABLED_HOOK_IDS]
    if source.local:
        lines = [
            "# kbtools hooks (https://pre-commit.com), run with the `kb` installed in the",
            "# active environment (`pip install kbtools`); enable with `pre-commit install`.",
            "default_install_hook_types: [pre-commit, pre-push]",
            "repos:",
            "  - repo: local",
            "    hooks:",
        ]
        for hook in enabled:
            lines += _local_hook(hook, indent="      ")
        lines.append("      # kb-lint runs every lint check; to run some of them instead, use:")
        for hook in alternatives:
            lines += _local_hook(hook, indent="      # ")
    else:
        lines = [
            "# kbtools hooks (https://pre-commit.com); enable with `pre-commit install`.",
            "# `rev` is a full commit sha of the hooks repository (`git ls-remote <repo> HEAD`",
            "# names the newest); `kb init --local-hooks` writes hooks that need no repository.",
            "default_install_hook_types: [pre-commit, pre-push]",
            "repos:",
            f"  - repo: {source.repo}",
            f"    rev: {source.rev}",
            "    hooks:",
        ]
        lines += [f"      - id: {h.id}" for h in enabled]
        lines.append("      # kb-lint runs every lint check; to run some of them instead, use:")
        lines += [f"      # - id: {h.id}" for h in alternatives]
    return "\n".join(lines) + "\n"


def _local_hook(hook: HookDef, *, indent: str) -> list[str]:
    lines = [
        f"{indent}- id: {hook.id}",
        f"{indent}  name: {hook.name}",
        f"{indent}  entry: {hook.entry}",
        f"{indent}  language: system",
        f"{indent}  pass_filenames: {'true' if hook.pass_filenames else 'false'}",
        f"{indent}  always_run: true",
        f"{indent}  require_serial: true",
        f"{indent}  stages: [{', '.join(hook.stages)}]",
    ]
    if hook.verbose:
        lines.append(f"{indent}  verbose: true")
    return lines


def plan(
    config: Config,
    *,
    locale: str,
    today: dt.date,
    hooks: HooksSource = LOCAL_HOOKS,
) -> list[ScaffoldFile]:
    """Every file `kb init` writes, in the order it reports them."""
    where = locale_paths(config.paths, locale)
    return [
        ScaffoldFile(config.paths.kb_md, render_kb_md(config.paths, locale)),
        ScaffoldFile(where["manifest"], ""),
        ScaffoldFile(where["index"], render_index()),
        ScaffoldFile(where["log"], render_log(today)),
        ScaffoldFile(PRECOMMIT_CONFIG, render_precommit_config(hooks)),
    ]


def scaffold(
    config: Config,
    *,
    locale: str,
    today: dt.date,
    force: bool = False,
    hooks: HooksSource = LOCAL_HOOKS,
) -> ScaffoldResult:
    """Write a new KB under ``config.root``.

    Existing files are never overwritten: without ``force`` any of them is a
    KbError listing them all (nothing is written); with ``force`` only the
    missing pieces are created. `.gitignore` is merged, not replaced: the
    `.agent/` line (ingest output, local and private) is appended if absent.
    """
    root = config.root
    _check_locale(locale)
    files = plan(config, locale=locale, today=today, hooks=hooks)
    existing = [f.rel for f in files if (root / f.rel).exists()]
    if existing and not force:
        raise KbError(
            f"refusing to overwrite existing files: {', '.join(existing)} (--force creates only the missing ones)",
            str(root),
        )
    where = locale_paths(config.paths, locale)
    directories = (f"{where['raw']}/{locale}", f"{where['notes']}/{locale}")
    root.mkdir(parents=True, exist_ok=True)
    for rel in directories:
        (root / rel).mkdir(parents=True, exist_ok=True)
    created = []
    for file in files:
        path = root / file.rel
        if file.rel in existing:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("x", encoding="utf-8", newline="\n") as fh:  # "x": never clobber a racing writer
            fh.write(file.text)
        created.append(file.rel)
    return ScaffoldResult(
        root=root,
        created=tuple(created),
        kept=tuple(existing),
        directories=directories,
        gitignore_updated=_ensure_gitignore(root / GITIGNORE),
    )


def _ensure_gitignore(path: Path) -> bool:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    entries = {line.strip() for line in text.splitlines()}
    if GITIGNORE_ENTRY in entries or GITIGNORE_ENTRY.rstrip("/") in entries or "/" + GITIGNORE_ENTRY in entries:
        return False
    sep = "" if not text or text.endswith("\n") else "\n"
    with path.open("a", encoding="utf-8", newline="\n") as fh:
        fh.write(f"{sep}# kb ingest output and checkpoints: local and private\n{GITIGNORE_ENTRY}\n")
    return True


def _check_locale(locale: str) -> None:
    from kbtools.kb.raw_add import LOCALE_PATTERN

    if not LOCALE_PATTERN.fullmatch(locale):
        raise KbError(f"invalid locale '{locale}' (expected e.g. en, zh-cn, pt-br)", "--locale")


_KB_MD = """\
# KB.md — the contract of this knowledge base

This repository is a knowledge base that people write together with coding agents. An agent
working here follows this contract. Each promise below is enforced by a `kb` command or hook
(kbtools), so a commit that breaks one is refused, not merely frowned upon.

## Three layers

| layer | where | who writes it | rule |
| --- | --- | --- | --- |
| raw (evidence) | `{raw}/<locale>/<slug>.md` | a person, or an agent on request, with `kb raw add` / `kb promote` | immutable: never edited, renamed or deleted once committed |
| wiki (notes) | `{notes}/<locale>/<slug>.md` | the agent, reviewed by a person | every page names its kind, status and raw sources |
| schema | `KB.md` (this file) and `.kb.yaml` | people | changed only on an explicit request |

The canonical locale is `{locale}`. Its index `{index}` is the content-oriented catalogue; its
log `{log}` is the time-oriented, append-only record of operations. Other locales are
produced only by explicit translation tasks.

### Raw evidence

- One Markdown file per source, slug = file name, lowercase kebab-case, unique across locales.
- Frontmatter: `title`, `capturedAt`, `sourceType`, `sourceUrl`, and `immutable: true`.
- Locked by `{manifest}`: one line `<sha256 of the file bytes> <path relative to {raw}>`
  per file, appended in order. Existing lines are never changed or removed.
- A correction is a new raw source; the wiki records the conflict between the two.

### Wiki notes

- Frontmatter: `title`, `kind` (concept, entity or synthesis), `status` (active, provisional
  or deprecated), `sources` (raw slugs, at least one), `related` (note slugs).
- Every `sources` slug is a raw slug; every `related` slug and every relative or `/note/<slug>`
  link resolves.
- A rewrite keeps the identifiers that anchor the page (paths, commit shas, dates, versions,
  URLs…); dropping several at once is refused.
- Every active or provisional note of the canonical locale, and every raw slug, is listed in
  the index: a note as a link `[Title](/note/<slug>)`, a raw source as a backticked slug.

## Operations

- **ingest <source>**: add the evidence with `kb raw add FILE` (or `kb promote CANDIDATE_ID`
  for a candidate from `kb ingest`), read it in full, confirm the facts with the person,
  create or update notes citing it in `sources`, add cross-links both ways, list the new raw
  slug and notes in the index, append `## [YYYY-MM-DD] ingest | <title>` to the log.
- **query <question>**: read the index first, then the notes, then their raw sources. Keep raw
  fact, wiki synthesis and inference apart in the answer. A reusable answer becomes a
  `kind: synthesis` note and gets a `query` log entry.
- **lint**: `kb lint` runs every check; fix what it reports, then append a `lint` log entry
  if the fix changed the wiki.
- Session transcripts are read only through `kb ingest`, which writes redacted candidate
  ledgers under `{ingest}/` (git-ignored) and filters out text that came from this wiki,
  so the knowledge base never learns from its own output.

## Never

- Edit, rename or delete a raw file, or change or remove a manifest line.
- Edit or remove a past log entry; a correction is a new entry.
- Write a credential, a private path or a person's private data into raw or wiki content.
- Change this file or `.kb.yaml` unless a person asks for it.

## How each promise is enforced

| promise | enforced by |
| --- | --- |
| raw files match their manifest lines; no raw file modified, deleted, renamed or copied over; manifest append-only (also per commit in CI) | `kb lint`, `kb raw verify`, hooks `kb-lint` / `kb-raw-immutable`; CI runs `kb lint --since <base>` |
| raw frontmatter complete | `kb lint`, hook `kb-raw-immutable` |
| notes have kind, status, sources; sources and links resolve | `kb lint`, hook `kb-note-metadata` |
| index lists every active note and raw source; log dated, ordered, append-only | `kb lint`, hook `kb-index-log` |
| no credential in added evidence or notes | `kb lint`, hook `kb-no-secrets` |
| a rewrite keeps its identifiers | `kb retention check --staged`, hook `kb-identifier-retention` |
| emitted pages are recorded so ingest can exclude them | `kb artifacts record`, hook `kb-record-artifacts`; `kb verify --derived-filter` |
"""

_INDEX = """\
# Knowledge-base index

The content-oriented catalogue of this knowledge base. Every active or provisional note is
listed as a link `[Title](/note/<slug>)` with a one-sentence summary; every raw source is listed
by its backticked slug in the table below. `kb lint` checks both.

## Concepts

## Entities

## Syntheses

## Raw sources

| slug | type | source | summary |
| --- | --- | --- | --- |
"""

_LOG = """\
# Knowledge-base log

The time-oriented record of operations on this knowledge base. Entries are appended in date
order and never edited; each has a heading `## [YYYY-MM-DD] <op> | <title>` (op: init, ingest,
query, lint, rewrite) and a short paragraph.

## [{today}] init | Knowledge base created

Scaffolded with `kb init`: empty raw layer and manifest, this log and the index.
"""
