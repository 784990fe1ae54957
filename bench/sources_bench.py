"""Throughput of the ingest source readers alone (discover + load, one process).

    python bench/sources_bench.py CORPUS_DIR [--repeat N]

CORPUS_DIR is a tree written by bench/gen_corpus.py. Prints one row per source:
units, bytes read (session files; the OpenCode DB file), wall seconds, MB/s,
records kept, and the process's peak RSS at the end. 1 MB = 10^6 bytes.
"""

from __future__ import annotations

import argparse
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchenv import best_time  # noqa: E402

from kbtools.ingest.model import SourceSettings  # noqa: E402
from kbtools.ingest.sources import SOURCES  # noqa: E402


def settings_for(corpus: Path) -> SourceSettings:
    return SourceSettings(
        omp_sessions=corpus / "omp/agent/sessions",
        codex_dir=corpus / "codex",
        opencode_db=corpus / "opencode/opencode*.db",
        opencode_storage=corpus / "opencode/storage",
        prompt_history=corpus / "opencode-state/prompt-history.jsonl",
        claude_dir=corpus / "claude",
    )


def source_bytes(name: str, corpus: Path) -> int:
    roots = {
        "omp": [corpus / "omp"],
        "codex": [corpus / "codex"],
        "claude": [corpus / "claude/projects"],
        "opencode": [corpus / "opencode"],
        "prompt_history": [corpus / "opencode-state"],
    }.get(name, [])
    total = 0
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and not path.name.endswith(("-wal", "-shm")):
                total += path.stat().st_size
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    settings = settings_for(args.corpus)
    print("| source | units | MB | wall s | MB/s | records | errors |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    total_mb = total_s = 0.0
    for source in SOURCES:
        if source.name == "hindsight":
            continue
        best, units = best_time(lambda: [source.load(ref, settings) for ref in source.discover(settings)], args.repeat)
        mb = source_bytes(source.name, args.corpus) / 1e6
        total_mb += mb
        total_s += best
        records = sum(len(u.records) for u in units)
        errors = sum(1 for u in units if u.error)
        print(f"| {source.name} | {len(units)} | {mb:.1f} | {best:.2f} | {mb / best:.0f} | {records} | {errors} |")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"| all | | {total_mb:.1f} | {total_s:.2f} | {total_mb / total_s:.0f} | | |")
    print(f"peak RSS {peak:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
