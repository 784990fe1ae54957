"""Crash drill: `kill -9` of `kb ingest --write` at random and at named moments, then a rerun.

    python bench/gen_corpus.py bench/.corpus/20 --mb 20 --seed 1
    python bench/crash_drill.py bench/.corpus/20 bench/.out/drill [--kills 24] [--seed 1] [--jobs 2]

Copies the corpus into WORK/corpus twice — as it is (A) and with one turn
appended to a third of the sessions (B) — with every file's mtime an hour in
the past (no "racy" file: the stat cache sees the same thing on every run).
Two reference ledgers come from uninterrupted runs on B: one from an empty
output dir ("fresh"), one from the complete ledger of A ("grown").

Each kill then starts from one of those two states, runs `kb ingest --write`
on B and SIGKILLs it — at a delay drawn uniformly over the measured run time
(kills landing in discovery, processing, journal appends, temp-file writes,
the final renames and the reports), or at a named point (``$KB_TEST_CRASH_AT``:
after a partial file is appended, after a final ledger is renamed, after the
journal's manifest part is deleted and before the rest is) — then
reruns to completion (the dead run's lock must not block it) and checks:

- the ledgers equal the reference's, apart from ``run_at``;
- no ``*.partial.jsonl``, no ``.*.tmp`` and no search-index draft is left behind;
- the search index is trusted and in step with the ledgers (nothing to rebuild, add or remove);
- no source and no candidate is written twice.

Prints one JSON line per kill and a summary line; exit status 1 on any failure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchenv import kb_command  # noqa: E402
from corpus import agents_in, ingest_flags  # noqa: E402
from corpus.append import append_turns  # noqa: E402

from kbtools.ingest.ledger import ledger_path  # noqa: E402
from kbtools.ingest.rows import LEDGERS  # noqa: E402
from kbtools.review.index import update_index  # noqa: E402
from kbtools.review.index_builder import DRAFT_FILE  # noqa: E402

NAMED_POINTS = (
    "journal-candidates",
    "journal-manifest",
    "rename-candidates",
    "rename-events",
    "rename-manifest",
    "unlink-manifest",
    "draft-stamped",  # a first run's search index: stamped, not yet renamed into place
)
AN_HOUR_NS = 3_600_000_000_000


@dataclass
class Drill:
    work: Path
    jobs: int
    corpus: Path = field(init=False)
    kb: Path = field(init=False)

    def __post_init__(self) -> None:
        self.corpus, self.kb = self.work / "corpus", self.work / "kb"

    def command(self, out: Path) -> list[str]:
        return [
            *kb_command(),
            "ingest",
            "--write",
            "--skip-hindsight",
            "--root",
            str(self.kb),
            "--output-dir",
            str(out),
            "--jobs",
            str(self.jobs),
            *ingest_flags(self.corpus, agents_in(self.corpus)),
        ]

    def run(self, out: Path, *, crash_at: str | None = None) -> int:
        env = {k: v for k, v in os.environ.items() if k != "KB_TEST_CRASH_AT"}
        if crash_at is not None:
            env["KB_TEST_CRASH_AT"] = crash_at
        done = subprocess.run(self.command(out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        if done.returncode not in (0, -signal.SIGKILL):
            raise RuntimeError(f"kb ingest exited {done.returncode}: {done.stderr.decode(errors='replace')[-400:]}")
        return done.returncode

    def kill_after(self, out: Path, delay: float) -> bool:
        """Start a run and SIGKILL it after ``delay`` seconds; False if it had finished by then."""
        proc = subprocess.Popen(
            self.command(out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        time.sleep(delay)
        finished = proc.poll() is not None
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the run and its worker processes, as a power cut would
        except ProcessLookupError:
            pass
        proc.wait()
        return not finished


def _age_tree(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns - AN_HOUR_NS, st.st_mtime_ns - AN_HOUR_NS))


def comparable(out: Path) -> dict[str, list[dict[str, object]]]:
    ledgers = {}
    for name in LEDGERS:
        path = ledger_path(out, name)
        rows = [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()] if path.exists() else []
        ledgers[name] = [{k: v for k, v in row.items() if k != "run_at"} for row in rows]
    return ledgers


def problems(out: Path, reference: dict[str, list[dict[str, object]]]) -> list[str]:
    found = []
    got = comparable(out)
    for name in LEDGERS:
        if got[name] != reference[name]:
            diff = next((i for i, (a, b) in enumerate(zip(got[name], reference[name])) if a != b), None)
            found.append(f"{name}: {len(got[name])} rows vs {len(reference[name])}, first difference at row {diff}")
    keys = [row["source_key"] for row in got["manifest"]]
    ids = [row["candidate_id"] for row in got["candidates"]]
    if len(set(keys)) != len(keys) or len(set(ids)) != len(ids):
        found.append("a source or candidate written twice")
    litter = sorted(p.name for p in [*out.glob("*.partial.jsonl"), *out.glob(".*.tmp"), *out.glob(DRAFT_FILE + "*")])
    if litter:
        found.append(f"left behind: {', '.join(litter)}")
    update = update_index(out)
    if update.rebuilt or update.added or update.removed:
        found.append(f"search index not in step after the rerun: {update}")
    return found


def drill(corpus: Path, work: Path, *, kills: int, seed: int, jobs: int, report: object = print) -> tuple[int, int]:
    """(kills run, kills that failed a check); one line per kill to ``report``."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    d = Drill(work, jobs)
    shutil.copytree(corpus, d.corpus)
    subprocess.run([*kb_command(), "init", str(d.kb)], check=True, stdout=subprocess.DEVNULL)
    _age_tree(d.corpus)
    states = {"fresh": work / "state-fresh", "grown": work / "state-grown"}
    states["fresh"].mkdir()
    d.run(states["grown"])  # the complete ledger of A
    append_turns(d.corpus, 1 / 3, seed)
    _age_tree(d.corpus)
    references, reruns = {}, {}
    started = time.perf_counter()
    for name, state in states.items():
        out = work / f"reference-{name}"
        shutil.copytree(state, out)
        d.run(out)
        references[name] = comparable(out)
    duration = (time.perf_counter() - started) / len(states)
    for name in states:
        # A kill that lands after the ledgers were committed: the rerun is a second run.
        out = work / f"reference-{name}-rerun"
        shutil.copytree(work / f"reference-{name}", out)
        d.run(out)
        reruns[name] = comparable(out)
    rng = random.Random(seed)
    moments: list[float | str] = [rng.uniform(0.0, duration * 1.1) for _ in range(max(kills - len(NAMED_POINTS), 0))]
    moments += list(NAMED_POINTS)[:kills]
    failures = 0
    for number, moment in enumerate(moments):
        # A search-index draft is made only by a first run.
        start = "fresh" if moment == "draft-stamped" or not number % 2 else "grown"
        out = work / "run"
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(states[start], out)
        if isinstance(moment, str):
            killed = d.run(out, crash_at=moment) != 0
        else:
            killed = d.kill_after(out, moment)
        left = sorted(p.name for p in out.glob("*.partial.jsonl"))
        # Committed: the final ledgers are in place and the journal's manifest part is
        # gone (what is left of the journal then counts for nothing): the rerun is a second run.
        committed = ledger_path(out, "manifest", partial=True).name not in left and comparable(out) == references[start]
        d.run(out)  # the rerun: must not be blocked by the dead run's lock
        found = problems(out, reruns[start] if committed else references[start])
        failures += bool(found)
        report(
            json.dumps(
                {
                    "kill": number + 1,
                    "from": start,
                    "at": moment if isinstance(moment, str) else round(moment, 3),
                    "killed": killed,
                    "committed_before_kill": committed,
                    "journal_left": left,
                    "ok": not found,
                    **({"problems": found} if found else {}),
                }
            )
        )
    return len(moments), failures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="crash_drill.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, help="a gen_corpus.py output dir (a small one: 5–50 MB)")
    parser.add_argument("work", type=Path, help="work dir (replaced)")
    parser.add_argument("--kills", type=int, default=24)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    kills, failures = drill(args.corpus, args.work.resolve(), kills=args.kills, seed=args.seed, jobs=args.jobs)
    print(json.dumps({"kills": kills, "failures": failures, "seconds": round(time.perf_counter() - started, 1)}))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
