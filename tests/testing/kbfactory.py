"""Build a valid knowledge base in a temporary git repo, then break it on purpose.

The layout is the reference one (SPEC §1): ``src/content/raw/<locale>/<slug>.md`` with
``src/content/raw/.manifest.sha256``, notes in ``src/content/note/<locale>/``, the
canonical index and log in ``src/content/information/<locale>/``.

Typical use::

    kb = make_kb(tmp_path / "kb")            # 2 raw sources, 2 notes, index, log; committed
    kb.add_raw("new-source")                 # file + manifest line
    kb.add_note("new-note", sources=["new-source"])
    kb.write_index(); kb.append_log("2026-08-09", "ingest", "new source")
    kb.commit("ingest new source")

    expected = BREAKERS[4](kb)               # break check 4 (checksum); returns the message stem
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.testing.gitrepo import commit_all, git, init_repo, write

RAW_DIR = "src/content/raw"
MANIFEST = "src/content/raw/.manifest.sha256"
NOTE_DIR = "src/content/note"
INFO_DIR = "src/content/information"

# List styles a note's frontmatter may use; all are valid YAML and must lint the same.
LIST_STYLES = ("quoted", "unquoted", "block", "single-quoted")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def yaml_list(key: str, items: Sequence[str], style: str) -> str:
    """One frontmatter list in the given style (``quoted`` is the reference's)."""
    if style == "quoted":
        return key + ": [" + ", ".join('"' + i + '"' for i in items) + "]\n"
    if style == "single-quoted":
        return key + ": [" + ", ".join("'" + i + "'" for i in items) + "]\n"
    if style == "unquoted":
        return f"{key}: [{', '.join(items)}]\n"
    if style == "block":
        if not items:
            return f"{key}: []\n"
        return f"{key}:\n" + "".join(f"  - {i}\n" for i in items)
    raise ValueError(f"unknown list style {style!r}")


def default_title(slug: str) -> str:
    return slug.replace("-", " ").title()


def raw_text(
    slug: str,
    *,
    title: str | None = None,
    captured_at: str = "2026-08-07 00:00:00+00:00",
    source_type: str = "gist",
    source_url: str | None = None,
    immutable: str | None = "true",
    body: str | None = None,
    omit: Sequence[str] = (),
) -> str:
    """A raw evidence file in the reference shape; ``omit`` drops frontmatter fields."""
    fields = {
        "title": f'"{title or default_title(slug)}"',
        "capturedAt": captured_at,
        "sourceType": source_type,
        "sourceUrl": source_url or f"https://example.com/{slug}",
        "immutable": immutable,
    }
    lines = "".join(f"{k}: {v}\n" for k, v in fields.items() if v is not None and k not in omit)
    text = body if body is not None else f"# {slug}\n\nEvidence captured for {slug}.\n"
    return f"---\n{lines}---\n\n{text}"


def note_text(
    slug: str,
    *,
    title: str | None = None,
    kind: str | None = "concept",
    status: str | None = "active",
    sources: Sequence[str] = (),
    related: Sequence[str] = (),
    list_style: str = "quoted",
    body: str | None = None,
    extra: str = "",
) -> str:
    """A wiki note in the reference shape; ``None`` for kind/status omits the field."""
    head = f'title: "{title or default_title(slug)}"\ntimestamp: 2026-08-08 00:00:00+00:00\nseries: kb\n'
    if kind is not None:
        head += f"kind: {kind}\n"
    if status is not None:
        head += f"status: {status}\n"
    head += yaml_list("sources", list(sources), list_style)
    head += yaml_list("related", list(related), list_style)
    head += extra
    text = body if body is not None else f"# {slug}\n\nA note about {slug}.\n"
    return f"---\n{head}---\n\n{text}"


@dataclass
class Kb:
    """A knowledge base on disk (and in git unless ``git=False``)."""

    root: Path
    locale: str = "zh-cn"
    raw: dict[str, str] = field(default_factory=dict)  # slug -> locale
    notes: dict[str, dict] = field(default_factory=dict)  # slug -> {title, status, kind, locale}

    # -- paths ------------------------------------------------------------
    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST

    @property
    def raw_root(self) -> Path:
        return self.root / RAW_DIR

    @property
    def note_root(self) -> Path:
        return self.root / NOTE_DIR

    @property
    def index(self) -> Path:
        return self.root / INFO_DIR / self.locale / "kb-index.md"

    @property
    def log(self) -> Path:
        return self.root / INFO_DIR / self.locale / "kb-log.md"

    def raw_path(self, slug: str, locale: str | None = None) -> Path:
        return self.raw_root / (locale or self.raw.get(slug, self.locale)) / f"{slug}.md"

    def note_path(self, slug: str, locale: str | None = None) -> Path:
        return self.note_root / (locale or self.locale) / f"{slug}.md"

    # -- building ---------------------------------------------------------
    def add_raw(
        self,
        slug: str,
        *,
        locale: str | None = None,
        register: bool = True,
        text: str | bytes | None = None,
        **fields: object,
    ) -> Path:
        """Write a raw file (``raw_text`` fields as keywords) and, if ``register``, its manifest line."""
        locale = locale or self.locale
        path = self.raw_path(slug, locale)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = text if text is not None else raw_text(slug, **fields)  # type: ignore[arg-type]
        path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        self.raw[slug] = locale
        if register:
            self.register(f"{locale}/{slug}.md")
        return path

    def register(self, rel: str, sha: str | None = None) -> str:
        """Append ``<sha> <rel>`` to the manifest (sha of the file bytes unless given)."""
        digest = sha or sha256_bytes((self.raw_root / rel).read_bytes())
        line = f"{digest} {rel}"
        self.manifest.parent.mkdir(parents=True, exist_ok=True)
        with self.manifest.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
        return line

    def add_note(
        self,
        slug: str,
        *,
        locale: str | None = None,
        kind: str | None = "concept",
        status: str | None = "active",
        sources: Sequence[str] | None = None,
        related: Sequence[str] = (),
        list_style: str = "quoted",
        body: str | None = None,
        title: str | None = None,
        extra: str = "",
    ) -> Path:
        locale = locale or self.locale
        if sources is None:
            sources = [next(iter(self.raw))] if self.raw else []
        text = note_text(
            slug,
            title=title,
            kind=kind,
            status=status,
            sources=sources,
            related=related,
            list_style=list_style,
            body=body,
            extra=extra,
        )
        path = write(self.note_path(slug, locale), text)
        if locale == self.locale:
            plain_status = status.strip("\"'") if status else status  # a quoted YAML status is the same status
            self.notes[slug] = {"title": title or default_title(slug), "status": plain_status, "kind": kind}
        return path

    def write_index(self, *, skip_notes: Sequence[str] = (), skip_raw: Sequence[str] = ()) -> Path:
        """Regenerate the canonical index in the reference format (links + raw table)."""
        lines = ["# 知识库索引", "", "## 概念页（concept）", ""]
        for slug, meta in sorted(self.notes.items()):
            if slug in skip_notes or meta.get("status") not in ("active", "provisional"):
                continue
            mark = " **provisional**" if meta.get("status") == "provisional" else ""
            lines.append(f"- [{meta['title']}](/note/{slug}){mark} — 摘要 {slug}")
        lines += ["", "## 原始资料", "", "| slug | 类型 | 来源 | 摘要 |", "| --- | --- | --- | --- |"]
        for slug in sorted(self.raw):
            if slug not in skip_raw:
                lines.append(f"| `{slug}` | gist | https://example.com/{slug} | 摘要 |")
        return write(self.index, "\n".join(lines) + "\n")

    def append_log(self, date: str, op: str, title: str, *, text: str = "Entry text.") -> Path:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        if not self.log.exists():
            self.log.write_text("# 知识库日志\n\nAppend-only operation log.\n", encoding="utf-8")
        with self.log.open("a", encoding="utf-8") as fh:
            fh.write(f"\n## [{date}] {op} | {title}\n\n{text}\n")
        return self.log

    # -- git ----------------------------------------------------------------
    def git(self, *args: str) -> str:
        return git(self.root, *args)

    def commit(self, message: str = "kb change") -> str:
        """Stage everything and commit (hooks bypassed); returns the new HEAD sha."""
        return commit_all(self.root, message)

    def stage(self, *paths: Path) -> None:
        self.git("add", "--", *(str(p) for p in paths))

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").strip()


def make_kb(
    path: Path,
    *,
    locale: str = "zh-cn",
    raws: int = 2,
    notes: int = 2,
    list_style: str = "quoted",
    git: bool = True,
    commit: bool = True,
) -> Kb:
    """A clean KB: ``raws`` raw sources, ``notes`` linked notes, index and log; committed if asked.

    Raw slugs are ``source-1…``; notes ``note-1…``, each citing one source and related to
    the next note (so every note has a ``related`` entry and a body link).
    """
    path.mkdir(parents=True, exist_ok=True)
    if git:
        init_repo(path)
    kb = Kb(root=path, locale=locale)
    write(kb.manifest, "")
    raw_slugs = [f"source-{i}" for i in range(1, raws + 1)]
    for slug in raw_slugs:
        kb.add_raw(slug)
    note_slugs = [f"note-{i}" for i in range(1, notes + 1)]
    for i, slug in enumerate(note_slugs):
        other = note_slugs[(i + 1) % len(note_slugs)] if len(note_slugs) > 1 else None
        body = f"# {slug}\n\nSee [the next note](/note/{other}) and [its file](./{other}.md).\n" if other else None
        kb.add_note(
            slug,
            sources=[raw_slugs[i % len(raw_slugs)]] if raw_slugs else [],
            related=[other] if other else [],
            list_style=list_style,
            kind="synthesis" if i % 2 else "concept",
            status="provisional" if i % 2 else "active",
            body=body,
        )
    kb.write_index()
    kb.append_log("2026-08-07", "init", "knowledge base")
    if git and commit:
        kb.commit("init kb")
    return kb


# -- breakers: one per check of SPEC §3; each returns the expected message ------------


def _break_manifest_missing(kb: Kb) -> str:
    kb.manifest.unlink()
    return f"missing raw manifest: {MANIFEST}"


def _break_manifest_entry(kb: Kb) -> str:
    with kb.manifest.open("a", encoding="utf-8") as fh:
        fh.write("not-a-hash zh-cn/whatever.md\n")
    return "invalid raw manifest entry: not-a-hash zh-cn/whatever.md"


def _break_unregistered(kb: Kb) -> str:
    kb.add_raw("unregistered-source", register=False)
    kb.write_index()
    return f"raw file missing from manifest: {kb.locale}/unregistered-source.md"


def _break_checksum(kb: Kb) -> str:
    slug = next(iter(kb.raw))
    with kb.raw_path(slug).open("ab") as fh:
        fh.write(b"x")
    return f"raw checksum mismatch: {kb.raw[slug]}/{slug}.md"


def _break_missing_file(kb: Kb) -> str:
    kb.register(f"{kb.locale}/ghost-source.md", sha="0" * 64)
    return f"manifest points to missing raw file: {kb.locale}/ghost-source.md"


def _break_snapshot(kb: Kb) -> str:
    slug = next(iter(kb.raw))
    path = kb.raw_path(slug)
    path.write_bytes(path.read_bytes() + b"edited\n")
    rel = f"{kb.raw[slug]}/{slug}.md"
    # Re-bless the manifest line in place: checksum passes, history must still catch it.
    lines = kb.manifest.read_text(encoding="utf-8").splitlines()
    kb.manifest.write_text(
        "".join((f"{sha256_bytes(path.read_bytes())} {rel}" if ln.endswith(" " + rel) else ln) + "\n" for ln in lines),
        encoding="utf-8",
    )
    return f"raw snapshot changed or deleted: M\t{RAW_DIR}/{rel}"


def _break_manifest_rewritten(kb: Kb) -> str:
    # Drop the first entry (its file stays): an entry removed. Moving it to the end would
    # only re-sort the manifest, which removes nothing (issue 14, item 2).
    lines = kb.manifest.read_text(encoding="utf-8").splitlines()
    removed = lines[0]
    kb.manifest.write_text("".join(ln + "\n" for ln in lines[1:]), encoding="utf-8")
    return f"raw manifest rewritten: {removed}"


def _break_raw_field(kb: Kb) -> str:
    kb.add_raw("no-url-source", omit=("sourceUrl",))
    kb.write_index()
    return f"raw source missing sourceUrl: {kb.locale}/no-url-source.md"


def _break_note_kind(kb: Kb) -> str:
    kb.add_note("kindless-note", kind=None)
    kb.write_index()
    return f"wiki page missing kind: {kb.locale}/kindless-note.md"


def _break_note_enum(kb: Kb) -> str:
    kb.add_note("odd-note", status="finished")
    return f"wiki page invalid status 'finished': {kb.locale}/odd-note.md"


def _break_note_source(kb: Kb) -> str:
    kb.add_note("orphan-note", sources=["no-such-source"])
    kb.write_index()
    return f"wiki page {kb.locale}/orphan-note.md references missing raw source: no-such-source"


def _break_note_link(kb: Kb) -> str:
    kb.add_note("linking-note", body="# x\n\nSee [gone](/note/no-such-note).\n")
    kb.write_index()
    return f"wiki page {kb.locale}/linking-note.md has broken link: /note/no-such-note"


def _break_index_missing(kb: Kb) -> str:
    kb.index.unlink()
    return f"missing canonical index: {INFO_DIR}/{kb.locale}/kb-index.md"


def _break_index_membership(kb: Kb) -> str:
    slug = next(s for s, m in kb.notes.items() if m.get("status") == "active")
    kb.write_index(skip_notes=[slug])
    return f"active/provisional wiki page missing from index: {kb.locale}/{slug}.md"


def _break_log_order(kb: Kb) -> str:
    kb.append_log("2020-01-01", "ingest", "back in time")
    return "kb-log.md entry out of order: ## [2020-01-01] ingest | back in time"


BREAKERS: dict[int, Callable[[Kb], str]] = {
    1: _break_manifest_missing,
    2: _break_manifest_entry,
    3: _break_unregistered,
    4: _break_checksum,
    5: _break_missing_file,
    6: _break_snapshot,
    7: _break_manifest_rewritten,
    8: _break_raw_field,
    9: _break_note_kind,
    10: _break_note_enum,
    11: _break_note_source,
    12: _break_note_link,
    13: _break_index_missing,
    14: _break_index_membership,
    15: _break_log_order,
}
"""Check number (SPEC §3) → function that breaks a clean committed KB and returns the expected message.

Checks 6 and 7 need git (working tree vs HEAD); the others fire without it.
"""


def rebless_raw_edit(kb: Kb, slug: str = "source-1") -> None:
    """Edit a raw file and rewrite its manifest line to the new hash (not committed): the
    files agree with each other, only the history shows the edit."""
    raw = kb.raw_path(slug)
    old_sha = sha256_bytes(raw.read_bytes())
    raw.write_bytes(raw.read_bytes() + b"edited after the fact\n")
    manifest = kb.root / MANIFEST
    manifest.write_text(manifest.read_text().replace(old_sha, sha256_bytes(raw.read_bytes())))
