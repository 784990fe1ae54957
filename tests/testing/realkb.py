"""A knowledge base in the shape of the one the contract comes from, with a history.

Shape taken from DavidHLP/DavidHLP.github.io (read, not copied: the text here is our own):

- `src/content/information/{en,ja,zh-cn}/kb-index.md` and `kb-log.md`: three locales with an
  index; `zh-cn` is canonical and its index lists every note as a `/note/<slug>` site link and
  every raw source as a backticked slug in a table inside `<details>`; the `en` and `ja` indexes
  only link to translated pages (`/en/note/<slug>`) and to site pages (`/en/kb`);
- `src/content/raw/zh-cn/*.md` only, registered in `src/content/raw/.manifest.sha256` in
  `sha256sum` format (two spaces), and later re-sorted in one commit;
- `src/content/note/{en,ja,zh-cn}/<slug>.md`: translations cite the `zh-cn` raw slugs, some are
  `draft: true`; frontmatter lists in quoted flow style (`sources: ["a", "b"]`);
- log entries `## [YYYY-MM-DD] ingest | <title>`; `timestamp` in every note's frontmatter.

:func:`restructuring_history` then replays the kinds of rewrites that history shows: small
edits, a page split into three with the original kept as a deprecated stub, content moved
into another page, identifiers dropped for real, translations updated.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from tests.testing.gitrepo import commit_all, git, init_repo, write
from tests.testing.kbfactory import sha256_bytes

RAW = "src/content/raw"
NOTE = "src/content/note"
INFO = "src/content/information"
LOCALES = ("en", "ja", "zh-cn")

# (raw slug, note slug, title, identifiers the note anchors on)
TOPICS = (
    ("legacy-java-null-value", "java-null-value", "缓存 null 的占位对象", ("NullValue.java", "v5.3.39", "2026-08-07")),
    ("ingest-docker-fundamentals", "docker-fundamentals", "镜像分层与 Compose 网络", ("compose.yaml", "v27.1.1")),
    ("legacy-containerd-tls", "containerd-tls", "containerd 证书信任链", ("/etc/containerd/config.toml", "v1.7.20")),
    ("headroom-0-34-contract", "headroom-contract", "压缩与检索契约", ("/v1/compress", "v0.34.0", "127.0.0.1:8787")),
    (
        "hindsight-local-deployment",
        "hindsight-local",
        "本地记忆系统部署",
        ("v0.9.1", "bge-m3.gguf", "HINDSIGHT_API_URL"),
    ),
    ("mcp-codebase-memory", "mcp-codebase-memory", "图工作流", ("v0.10.2", "2026-07-28", "codebase-memory.json")),
)


def raw_text(slug: str, title: str, anchors: tuple[str, ...]) -> str:
    return (
        f'---\ntitle: "{title}"\ncapturedAt: 2026-08-07 00:00:00+00:00\nsourceType: repository\n'
        f'sourceUrl: "https://example.com/{slug}"\nimmutable: true\n---\n\n# {title}\n\n'
        + "".join(f"- 记录 {a}\n" for a in anchors)
    )


def note_text(
    slug: str,
    title: str,
    sources: tuple[str, ...],
    anchors: tuple[str, ...] | list[str],
    *,
    locale: str = "zh-cn",
    status: str = "active",
    related: tuple[str, ...] = (),
    draft: bool = False,
    extra: str = "",
) -> str:
    quoted = ", ".join(f'"{s}"' for s in sources)
    rel = ", ".join(f'"{s}"' for s in related)
    prefix = "" if locale == "zh-cn" else f"/{locale}"
    links = "".join(f"- 另见 [{r}]({prefix}/note/{r})\n" for r in related)
    return (
        f'---\ntitle: "{title}"\ntimestamp: 2026-08-{10 + len(anchors):02d} 00:00:00+00:00\nseries: "Java 与工程"\n'
        f"kind: concept\nstatus: {status}\nsources: [{quoted}]\nrelated: [{rel}]\n"
        + ("draft: true\n" if draft else "")
        + f"---\n\n# {title}\n\n"
        + "".join(f"- 证据 {a}\n" for a in anchors)
        + "\n```bash\n# 代码块里的 [链接](./not-a-page.md) 不是链接\n```\n\n"
        + links
        + extra
    )


@dataclass
class RealShapeKb:
    root: Path
    notes: dict[str, list[str]] = field(default_factory=dict)  # zh-cn slug -> anchors

    def path(self, rel: str) -> Path:
        return self.root / rel

    def note(self, slug: str, locale: str = "zh-cn") -> Path:
        return self.root / NOTE / locale / f"{slug}.md"

    def git(self, *args: str) -> str:
        return git(self.root, *args)

    def commit(self, message: str) -> str:
        return commit_all(self.root, message)

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").strip()

    def manifest_lines(self) -> list[str]:
        return self.path(f"{RAW}/.manifest.sha256").read_text(encoding="utf-8").splitlines()

    def write_zh_index(self) -> None:
        rows = [f"- [{slug}](/note/{slug}) — 摘要。" for slug in sorted(self.notes)]
        raw_rows = [f"| `{r}` | repository | [原始](https://example.com/{r}) | 摘要 |" for r, *_ in TOPICS]
        write(
            self.path(f"{INFO}/zh-cn/kb-index.md"),
            "# 知识库目录\n\n正典维护语言：`zh-cn`。\n\n## A. 知识页\n\n"
            + "\n".join(rows)
            + "\n\n## 原始来源（raw）\n\n<details>\n<summary>展开</summary>\n\n"
            + "| slug | 类型 | 来源 | 摘要 |\n|---|---|---|---|\n"
            + "\n".join(raw_rows)
            + "\n\n</details>\n",
        )


def build(path: Path) -> RealShapeKb:
    """The KB above, committed in two commits: the content, then the manifest re-sorted
    (reverse order) with its separators normalised from one space to two."""
    init_repo(path)
    kb = RealShapeKb(path)
    lines = []
    for raw, _, title, anchors in TOPICS:
        data = raw_text(raw, title, anchors).encode("utf-8")
        write(kb.path(f"{RAW}/zh-cn/{raw}.md"), data.decode("utf-8"))
        lines.append(f"{sha256_bytes(data)} zh-cn/{raw}.md")
    write(kb.path(f"{RAW}/.manifest.sha256"), "\n".join(lines) + "\n")
    slugs = [t[1] for t in TOPICS]
    for i, (raw, slug, title, anchors) in enumerate(TOPICS):
        related = (slugs[(i + 1) % len(slugs)],)
        kb.notes[slug] = list(anchors)
        write(kb.note(slug), note_text(slug, title, (raw,), anchors, related=related))
        if i < 2:  # translated and published
            for locale in ("en", "ja"):
                write(kb.note(slug, locale), note_text(slug, title, (raw,), anchors, locale=locale, related=()))
        else:  # translated copies kept as drafts, as the reference KB did in 2026-08
            write(kb.note(slug, "en"), note_text(slug, title, (raw,), anchors, locale="en", draft=True))
    kb.write_zh_index()
    for locale in ("en", "ja"):
        write(
            kb.path(f"{INFO}/{locale}/kb-index.md"),
            f"# Knowledge Base Index\n\nThe canonical pages are kept in `zh-cn`: open the [index](/{locale}/kb).\n\n"
            + "".join(f"- [{s}](/{locale}/note/{s})\n" for s in slugs[:2]),
        )
        write(kb.path(f"{INFO}/{locale}/kb-log.md"), "# Log\n\n## [2026-08-07] init | translated entry points\n")
    write(
        kb.path(f"{INFO}/zh-cn/kb-log.md"),
        "# 知识库操作日志\n\n## [2026-08-07] init | 建立知识库\n\n三层结构。\n\n## [2026-08-21] ingest | 批量摄入\n\n六个来源。\n",
    )
    kb.commit("knowledge base")
    resorted = sorted(lines, key=lambda ln: ln.split(" ", 1)[1], reverse=True)
    write(kb.path(f"{RAW}/.manifest.sha256"), "".join(ln.replace(" ", "  ", 1) + "\n" for ln in resorted))
    kb.commit("manifest: sort by path, sha256sum separators")
    return kb


def restructuring_history(kb: RealShapeKb, rng: random.Random, commits: int = 60) -> None:
    """Commits of the kinds the reference KB's history shows, in a fixed random order:
    edits that add or reorder identifiers, edits that drop one or two, translations
    updated, a page split into three (the original becomes a deprecated stub), a section
    moved into another page, a page rewritten dropping several anchors."""
    counter = 0

    def fresh() -> str:
        nonlocal counter
        counter += 1
        return f"v{counter // 10}.{counter % 10}.{rng.randrange(10)}"

    def rewrite(slug: str, anchors: list[str], *, status: str = "active") -> None:
        kb.notes[slug] = anchors
        raw = next((t[0] for t in TOPICS if t[1] == slug), TOPICS[0][0])
        write(kb.note(slug), note_text(slug, slug, (raw,), anchors, status=status))

    kinds = ["edit"] * 10 + ["drop"] * 3 + ["translate"] * 3 + ["split", "move"] * 2 + ["rewrite"]
    for n in range(commits):
        kind = rng.choice(kinds)
        slug = rng.choice(sorted(kb.notes))
        anchors = list(kb.notes[slug])
        if kind == "edit":
            anchors.append(fresh())
            rng.shuffle(anchors)
            rewrite(slug, anchors)
        elif kind == "drop" and anchors:
            rewrite(slug, anchors[rng.randrange(1, 3) :] + [fresh()])
        elif kind == "translate":
            path = kb.note(slug, "en")
            if path.exists():
                write(path, path.read_text(encoding="utf-8") + f"\nUpdated {fresh()}.\n")
            else:
                rewrite(slug, anchors + [fresh()])
        elif kind == "split" and len(anchors) >= 3:
            third = len(anchors) // 3 or 1
            parts = [anchors[:third], anchors[third : 2 * third], anchors[2 * third :]]
            for i, part in enumerate(parts[1:], start=1):
                write(kb.note(f"{slug}-part-{n}-{i}"), note_text(f"{slug}-{i}", slug, (TOPICS[0][0],), part))
                kb.notes[f"{slug}-part-{n}-{i}"] = part
            rewrite(slug, parts[0] + [fresh()], status="deprecated")
        elif kind == "move" and len(anchors) >= 2:
            other = rng.choice([s for s in sorted(kb.notes) if s != slug])
            moved = anchors[-2:]
            rewrite(slug, anchors[:-2] + [fresh()])
            rewrite(other, kb.notes[other] + moved)
        else:  # a rewrite that drops most anchors and adds a few
            rewrite(slug, anchors[-1:] + [fresh(), fresh()])
        kb.commit(f"{kind} {slug} ({n})")
