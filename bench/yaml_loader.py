"""Cost of parsing one note frontmatter with ruamel.yaml: pure-Python vs C-backed safe loader.

Usage: python bench/yaml_loader.py [N]   (default N = 12000, the lint budget's document count)

Each document is a typical note frontmatter (title, timestamp, kind, status, flow-style sources
and related lists, tags). One YAML instance per loader is reused across documents, as lint does.
"""

from __future__ import annotations

import sys
import time

from ruamel.yaml import YAML


def frontmatter(i: int) -> str:
    return (
        f'title: "Note number {i}"\n'
        "timestamp: 2026-08-07 00:00:00+00:00\n"
        "kind: concept\n"
        "status: active\n"
        f'sources: ["raw-source-{i}", "raw-source-{i + 1}"]\n'
        f'related: ["note-{i - 1}", "note-{i + 1}"]\n'
        "tags: [kb, lint]\n"
        f"description: A short summary of note {i}.\n"
    )


def per_document_ms(yaml: YAML, docs: list[str]) -> float:
    start = time.perf_counter()
    for doc in docs:
        yaml.load(doc)
    return (time.perf_counter() - start) * 1000 / len(docs)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 12_000
    docs = [frontmatter(i) for i in range(n)]
    pure = YAML(typ="safe", pure=True)
    c_backed = YAML(typ="safe")
    for name, yaml in (("pure-Python safe loader", pure), ("C-backed safe loader (ruamel.yaml.clib)", c_backed)):
        per_document_ms(yaml, docs[:200])  # warm-up
        ms = per_document_ms(yaml, docs)
        print(f"{name}: {ms:.3f} ms per frontmatter, {ms * n / 1000:.2f} s for {n} documents")


if __name__ == "__main__":
    main()
