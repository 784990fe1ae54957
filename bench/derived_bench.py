"""Derived-filter cost: per record as the number of artifacts grows, per MB of prose, load and pickle.

    .venv/bin/python bench/derived_bench.py [--artifacts 10,1000,10000] [--records 3000] [--seed 0]
    .venv/bin/python bench/derived_bench.py --ingest bench/.corpus/50 [--ingest-artifacts 1000] [--notes corpus|prose] [--unrecorded]

Artifacts are generated notes (about 250-600 words of Zipf-distributed vocabulary,
Markdown structure, a few stock phrases shared between them so that records hit
postings the way real prose does) written to a temporary KB: half recorded in the
manifest, half present only as current notes. Records are session-like prose of
20-400 words from the same vocabulary and phrases; 2 % of them quote an artifact.
Every configuration matches the same record stream.

With --ingest CORPUS (a bench/gen_corpus.py output) it measures the filter's share
of a real `kb ingest --write` instead: one run with --no-derived-filter gives the
candidates; 1,000 notes are written from shuffled sentences of those candidates
(same vocabulary and stock phrases as the sessions, so records hit postings, a
pessimistic case) or, with --notes prose, from independent generated prose, and
recorded in the manifest as the pre-commit hook would (unless --unrecorded); then `kb ingest --write` runs
without the filter, with it (a first run: the index is built from the notes) and
with it starting from an output dir that holds only the index cache, alternating,
on fresh ledger dirs, and the child's CPU seconds (best of the rounds; every run
is listed, the machine may be shared) are compared. The in-process cost of
loading the filter and of DerivedFilter.match over every candidate text is
reported too.

Also measured: the shingle hash (this design vs one blake3 call per shingle) and
the pieces of a match (normalise, shingle, probe).
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchenv import best_time, kb_command, run_child  # noqa: E402
from blake3 import blake3  # noqa: E402
from corpus import agents_in, ingest_flags, store_size  # noqa: E402

from kbtools.config import Config  # noqa: E402
from kbtools.derived.filter import CACHE_FILE, DerivedFilter  # noqa: E402
from kbtools.derived.manifest import append_rows, row_for  # noqa: E402
from kbtools.derived.normalise import tokens  # noqa: E402
from kbtools.derived.shingles import shingle_hashes  # noqa: E402
from kbtools.kb.layout import Layout  # noqa: E402

PHRASES = (
    "if you want to",
    "one of the most",
    "at the end of the",
    "make sure that the",
    "in the same way as",
    "it turns out that",
    "the rest of the",
    "as far as i can tell",
    "for the time being",
    "on the other hand",
    "let me know if you",
    "can you take a look at",
    "i think the problem is",
    "the easiest way to do this",
)


class Prose:
    def __init__(self, seed: int, vocabulary: int = 6000) -> None:
        self.rng = random.Random(seed)
        letters = "etaoinshrdlcumwfgypbvkjxqz"
        words = set()
        while len(words) < vocabulary:
            n = min(12, max(2, int(self.rng.expovariate(1 / 5.5)) + 1))
            words.add("".join(self.rng.choice(letters[: 10 + n]) for _ in range(n)))
        self.words = sorted(words)
        self.weights = [1 / (rank + 1) for rank in range(len(self.words))]  # Zipf

    def sentence(self) -> str:
        n = self.rng.randint(6, 22)
        words = self.rng.choices(self.words, self.weights, k=n)
        if self.rng.random() < 0.3:
            words.insert(self.rng.randrange(len(words)), self.rng.choice(PHRASES))
        return " ".join(words).capitalize() + self.rng.choice((".", ".", ".", "?", ":"))

    def paragraph(self, words: int) -> str:
        out: list[str] = []
        while sum(len(s.split()) for s in out) < words:
            out.append(self.sentence())
        return " ".join(out)

    def note(self) -> str:
        body = [f"# {self.sentence()}", "", self.paragraph(self.rng.randint(80, 200)), ""]
        body += [f"{i}. {self.sentence()}" for i in range(1, self.rng.randint(3, 7))]
        body += ["", "```bash", f"kb {self.rng.choice(self.words)} --{self.rng.choice(self.words)}", "```", ""]
        body += [self.paragraph(self.rng.randint(80, 250))]
        return "---\nkind: concept\nstatus: active\nsources: [x]\n---\n" + "\n".join(body) + "\n"


def build_kb(root: Path, notes: Sequence[str]) -> None:
    """Even-numbered notes only in the manifest (old versions), odd ones only as current files."""
    rows = []
    for i, text in enumerate(notes):
        rel = f"src/content/note/en/note-{i:05d}.md"
        if i % 2:
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        else:
            rows.append(row_for(rel, text.encode(), "2026-01-01T00:00:00Z"))
    append_rows(root / "src/content/note/.manifest.jsonl", rows)


def make_records(prose: Prose, notes: Sequence[str], count: int) -> list[str]:
    records = []
    for _ in range(count):
        text = prose.paragraph(prose.rng.randint(20, 400))
        if prose.rng.random() < 0.02:
            quoted = prose.rng.choice(notes).split("---\n", 2)[2]
            text = text + "\n\n" + "\n".join("    " + line for line in quoted.splitlines())
        records.append(text)
    return records


def timed(fn: Callable[[], object], repeat: int = 3) -> float:
    return best_time(fn, repeat)[0]


def _ingest_cpu(cmd: list[str], cwd: Path) -> tuple[float, float, dict[str, object]]:
    """Wall and CPU seconds (user + system) of one `kb ingest` child, and its summary."""
    run = run_child(cmd, cwd)
    if run.exit != 0:
        raise SystemExit(f"kb ingest failed: {' '.join(cmd)}")
    return run.seconds, run.cpu_seconds, json.loads(run.stdout.decode().strip().splitlines()[-1])


def ingest_share(corpus: Path, artifacts: int, seed: int, rounds: int, notes: str, recorded: bool) -> int:
    agents = agents_in(corpus)
    session_bytes = sum(store_size(corpus, a)[0] for a in agents)
    work = Path(tempfile.mkdtemp(prefix="derived-share-"))
    try:
        kb = work / "kb"
        subprocess.run([*kb_command(), "init", str(kb)], check=True, stdout=subprocess.DEVNULL)
        base = [*kb_command(), "ingest", "--write", "--skip-hindsight", *ingest_flags(corpus.resolve(), agents)]
        _, _, summary = _ingest_cpu([*base, "--output-dir", str(work / "seed"), "--no-derived-filter"], kb)
        texts = [json.loads(line)["text"] for line in (work / "seed" / "candidates.jsonl").read_text().splitlines()]
        sentences = [s for t in texts for s in re.split(r"(?<=[.!?])\s+", t) if len(s.split()) >= 6]
        rng = random.Random(seed)
        prose = Prose(seed)
        for i in range(artifacts):
            if notes == "corpus":
                body = " ".join(rng.sample(sentences, min(len(sentences), rng.randint(15, 30))))
                text = f"---\nkind: concept\nstatus: active\nsources: []\n---\n# Note {i}\n\n{body}\n"
            else:
                text = prose.note()
            path = kb / "src/content/note/en" / f"bench-{i:05d}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        if recorded:  # as the kb-record-artifacts hook leaves a KB: every note version in the manifest
            subprocess.run(
                [*kb_command(), "artifacts", "record", "src/content/note"],
                cwd=kb,
                check=True,
                stdout=subprocess.DEVNULL,
            )
        layout = Layout(Config(root=kb))
        started = time.process_time()
        derived = DerivedFilter.load(layout, threshold=0.8, cache_dir=work)  # stores work/derived-index.marshal
        load_cpu = time.process_time() - started
        started = time.process_time()
        DerivedFilter.load(layout, threshold=0.8, cache_dir=work)
        cached_load_cpu = time.process_time() - started
        # "on" is a first run into a fresh output dir: the index is built from the
        # notes (the folder does not exist yet, so nothing is cached). "cached"
        # starts from an output dir holding only the index cache, as a later full
        # run with unchanged artifacts would.
        runs: dict[str, list[tuple[float, float]]] = {"off": [], "on": [], "cached": []}
        summaries: dict[str, dict[str, object]] = {}
        for r in range(rounds):
            for mode in runs:
                out = work / f"{mode}-{r}"
                if mode == "cached":
                    out.mkdir(mode=0o700)
                    shutil.copy(work / CACHE_FILE, out / CACHE_FILE)
                flag = ["--no-derived-filter"] if mode == "off" else []
                wall, cpu, summaries[mode] = _ingest_cpu([*base, "--output-dir", str(out), *flag], kb)
                runs[mode].append((wall, cpu))
                shutil.rmtree(out)
        started = time.process_time()
        matched = sum(derived.match(t) is not None for t in texts)
        match_cpu = time.process_time() - started
        off_cpu = min(c for _, c in runs["off"])
        on_cpu = min(c for _, c in runs["on"])
        cached_cpu = min(c for _, c in runs["cached"])
        print(
            json.dumps(
                {
                    "session_MB": round(session_bytes / 1e6, 1),
                    "notes": notes,
                    "recorded": recorded,
                    "artifacts": derived.artifact_count,
                    "candidates_without_filter": summary.get("candidates"),
                    "prose_MB_in_candidates": round(sum(len(t.encode()) for t in texts) / 1e6, 2),
                    "ingest_off_cpu_s": round(off_cpu, 2),
                    "ingest_on_cpu_s": round(on_cpu, 2),
                    "ingest_off_wall_s": round(min(w for w, _ in runs["off"]), 2),
                    "ingest_on_wall_s": round(min(w for w, _ in runs["on"]), 2),
                    "share_end_to_end_pct": round((on_cpu - off_cpu) / on_cpu * 100, 1),
                    "ingest_cached_cpu_s": round(cached_cpu, 2),
                    "share_cached_index_pct": round((cached_cpu - off_cpu) / cached_cpu * 100, 1),
                    "cpu_s_per_run": {mode: [round(c, 2) for _, c in values] for mode, values in runs.items()},
                    "index_cache_cached_run": (summaries["cached"].get("derived_filter") or {}).get("index_cache"),
                    "derived_excluded_on": summaries["on"].get("derived_excluded"),
                    "filter_load_cpu_s": round(load_cpu, 3),
                    "cached_load_cpu_s": round(cached_load_cpu, 3),
                    "match_all_candidates_cpu_s": round(match_cpu, 3),
                    "share_in_process_pct": round((load_cpu + match_cpu) / (off_cpu + load_cpu + match_cpu) * 100, 1),
                    "candidates_matched_in_process": matched,
                }
            )
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--artifacts", default="10,1000,10000")
    parser.add_argument("--records", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ingest", type=Path, help="measure the share of a real ingest of this generated corpus")
    parser.add_argument("--ingest-artifacts", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--notes",
        choices=("corpus", "prose"),
        default="corpus",
        help="notes from shuffled corpus sentences (pessimistic) or independent generated prose",
    )
    parser.add_argument(
        "--unrecorded",
        action="store_true",
        help="leave the notes out of the manifest (ingest shingles every one at load)",
    )
    args = parser.parse_args(argv)
    if args.ingest:
        return ingest_share(args.ingest, args.ingest_artifacts, args.seed, args.rounds, args.notes, not args.unrecorded)
    counts = [int(c) for c in args.artifacts.split(",")]

    prose = Prose(args.seed)
    # One record stream for every configuration (quotes come from the first notes, present in all).
    base_notes = [prose.note() for _ in range(10)]
    records = make_records(prose, base_notes, args.records)
    prose_bytes = sum(len(r.encode()) for r in records)
    words = sum(len(tokens(r)) for r in records)
    results = []
    for count in counts:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            notes = base_notes + [prose.note() for _ in range(count - len(base_notes))]
            build_kb(root, notes)
            layout = Layout(Config(root=root))
            started = time.perf_counter()
            derived = DerivedFilter.load(layout, threshold=0.8)
            load_s = time.perf_counter() - started
            excluded = sum(derived.match(r) is not None for r in records)
            match_s = timed(lambda: [derived.match(r) for r in records])
            blob = pickle.dumps(derived)
            unpickle_s = timed(lambda: pickle.loads(blob), repeat=1)
            results.append(
                {
                    "artifacts": derived.artifact_count,
                    "load_s": round(load_s, 3),
                    "us_per_record": round(match_s / len(records) * 1e6, 1),
                    "ns_per_word": round(match_s / words * 1e9, 1),
                    "prose_MB_per_s": round(prose_bytes / match_s / 1e6, 1),
                    "excluded": excluded,
                    "pickle_MB": round(len(blob) / 1e6, 2),
                    "unpickle_s": round(unpickle_s, 3),
                }
            )
            print(json.dumps(results[-1]), flush=True)

    # Pieces of one match, and the hash choice, on the same records.
    all_tokens = [tokens(r) for r in records]
    normalise_s = timed(lambda: [tokens(r) for r in records])
    shingle_s = timed(lambda: [shingle_hashes(t) for t in all_tokens])
    shingle_count = sum(max(0, len(t) - 4) for t in all_tokens)
    blake3_s = timed(
        lambda: [[blake3(b" ".join(t[i : i + 5])).digest(length=8) for i in range(len(t) - 4)] for t in all_tokens],
        repeat=1,
    )
    pieces = {
        "records": len(records),
        "prose_MB": round(prose_bytes / 1e6, 2),
        "words": words,
        "normalise_ns_per_word": round(normalise_s / words * 1e9, 1),
        "shingle_ns_per_shingle": round(shingle_s / shingle_count * 1e9, 1),
        "blake3_per_shingle_ns": round(blake3_s / shingle_count * 1e9, 1),
        "per_record_us_spread": round(
            (max(r["us_per_record"] for r in results) / min(r["us_per_record"] for r in results) - 1) * 100, 1
        )
        if results
        else None,
    }
    print(json.dumps(pieces))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
