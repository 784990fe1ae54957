"""Benchmark the identifier-retention gate.

    .venv/bin/python bench/retention_bench.py [--repeat N] [--rewrites N]

Measures, on generated notes dense with identifiers (about one per 60 bytes):
- the work of one `kb retention check` per page pair (extract old + new, set
  difference, grade), in-process, by page size — the SPEC budget is 50 ms;
- `kb retention check OLD NEW` as a subprocess (interpreter start included);
- `kb retention check --staged` with five rewritten notes in a tmp git repo;
- `kb retention probe` over a generated history.
Prints a Markdown block for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from benchenv import bench_git, timed_run  # noqa: E402

from kbtools.config import RetentionConfig  # noqa: E402
from kbtools.retention.gate import grade  # noqa: E402
from kbtools.retention.taxonomy import taxonomy  # noqa: E402

WORDS = (
    "the gate keeps every anchor a note was written around while prose around it is rewritten by an agent "
    "which often grows the page and reorders sections so only identifiers tell what was lost"
).split()


def identifier(rng: random.Random) -> str:
    n = rng.randrange(10_000)
    return rng.choice(
        [
            f"2026-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}",
            f"src/content/note/en/page-{n}.md",
            f"{rng.getrandbits(40):010x}"[:9] + "a1",
            f"v{n % 9}.{n % 13}.{n % 7}",
            f"KB_SETTING_{n}",
            f"https://example.com/docs/{n}/",
            f"host-{n}.example.com:{1024 + n}",
            f"/srv/data/run-{n}/out.json",
            f"CVE-2026-{n}",
            f"report-{n}.html",
        ]
    )


def make_page(rng: random.Random, size: int) -> str:
    parts: list[str] = ["# Generated note\n"]
    length = 0
    while length < size:
        sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(6, 14)))
        sentence += f" {identifier(rng)}." if rng.random() < 0.8 else "."
        parts.append(sentence + ("\n\n" if rng.random() < 0.2 else " "))
        length += len(parts[-1])
    return "".join(parts)


def rewrite(rng: random.Random, page: str, drop: int) -> str:
    paragraphs = page.split("\n\n")
    rng.shuffle(paragraphs)  # moved anchors are kept
    text = "\n\n".join(paragraphs)
    ids = sorted({i.text for i in taxonomy().extract(page)})
    for gone in rng.sample(ids, min(drop, len(ids))):
        text = text.replace(gone, "it")
    return text + "\nAdded a closing paragraph.\n"


def per_pair(repeat: int) -> list[tuple[int, int, float, float]]:
    rng = random.Random(5)
    extractor = taxonomy(RetentionConfig().registry_prefixes)
    rows = []
    warm = make_page(rng, 1_000)
    grade(warm, "", threshold=3, extractor=extractor)  # regex compile, lazy imports
    for size in (2_000, 10_000, 50_000, 200_000):
        # A fresh pair each time (half of them lose two identifiers): nothing is served from a cache.
        pairs = [(old, rewrite(rng, old, 2 * (n % 2))) for n in range(repeat) for old in [make_page(rng, size)]]
        times = []
        for old, new in pairs:
            start = time.perf_counter()
            grade(old, new, threshold=3, extractor=extractor)
            times.append(time.perf_counter() - start)
        ids = statistics.median(len(extractor.extract(old)) for old, _ in pairs)
        rows.append((size, int(ids), statistics.median(times) * 1e3, max(times) * 1e3))
    return rows


def kb(cwd: Path, *args: str) -> float:
    # The inherited environment, as these figures were first measured.
    return timed_run([sys.executable, "-m", "kbtools", *args], cwd, env=None)[0] * 1e3


def in_repo(rewrites: int, repeat: int) -> tuple[float, float, float, float]:
    rng = random.Random(9)
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        bench_git(repo, "init", "-q", "-b", "main")
        notes = repo / "src/content/note/en"
        notes.mkdir(parents=True)
        pages = {f"note-{n}.md": make_page(rng, 8_000) for n in range(20)}
        for name, text in pages.items():
            (notes / name).write_text(text)
        bench_git(repo, "add", "-A")
        bench_git(repo, "commit", "-q", "-m", "notes")
        (repo / "old.md").write_text(pages["note-0.md"])
        (repo / "new.md").write_text(rewrite(rng, pages["note-0.md"], 1))
        pair = statistics.median(kb(repo, "retention", "check", "old.md", "new.md") for _ in range(repeat))
        for name in list(pages)[:5]:
            (notes / name).write_text(rewrite(rng, pages[name], 1))
        bench_git(repo, "add", "-A")
        staged = statistics.median(kb(repo, "retention", "check", "--staged") for _ in range(repeat))
        bench_git(repo, "commit", "-q", "-m", "five rewrites")
        for n in range(rewrites):
            name = rng.choice(list(pages))
            pages[name] = rewrite(rng, pages[name], rng.choice([0, 0, 1, 3]))
            (notes / name).write_text(pages[name])
            bench_git(repo, "commit", "-q", "-am", f"rewrite {n}")
        probe = kb(repo, "retention", "probe")
        noop = statistics.median(kb(repo, "--version") for _ in range(repeat))
    return pair, staged, probe, noop


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--rewrites", type=int, default=200)
    args = parser.parse_args()
    rows = per_pair(args.repeat)
    pair, staged, probe, noop = in_repo(args.rewrites, max(3, args.repeat // 3))
    print("| page size | identifiers in old | work per pair, median | max |")
    print("| --- | --- | --- | --- |")
    for size, ids, median, worst in rows:
        print(f"| {size // 1000} KB | {ids} | {median:.1f} ms | {worst:.1f} ms |")
    print()
    print(
        f"- `kb retention check OLD NEW` (8 KB pages), subprocess wall: {pair:.0f} ms "
        f"(`kb --version` alone: {noop:.0f} ms)"
    )
    print(f"- `kb retention check --staged`, 5 rewritten 8 KB notes of 20: {staged:.0f} ms wall")
    print(f"- `kb retention probe` over {args.rewrites} rewrites (+1 commit of 5): {probe:.0f} ms wall")


if __name__ == "__main__":
    main()
