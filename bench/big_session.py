"""One very long session read by its reader alone: CPU seconds and peak RSS.

Writes a session of ``--messages`` messages for ``--store`` (omp or claude; the shape of
``tests/ingest/sources/test_hostile_stores.py``'s memory test, which holds the reader under
200 MB at 10^6) and reads it with ``reader.load`` in a fresh process per round, for this tree
and, side by side in alternation, for each ``--tree`` checkout (its ``kbtools`` first on
``PYTHONPATH``). Prints one JSON line per round and a summary per tree (min / median).

    python bench/big_session.py OUT --store claude --rounds 3 --tree base=/tmp/base
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.ingest.sources.test_hostile_stores import write_big_session  # noqa: E402

_READ = """\
import json, resource, sys, time
from pathlib import Path
from kbtools.ingest.model import SourceSettings
from importlib import import_module
reader = import_module("kbtools.ingest.sources." + sys.argv[1])
cfg = SourceSettings(**{sys.argv[2]: Path(sys.argv[3])})
(ref,) = list(reader.discover(cfg))
started = time.process_time()
unit = reader.load(ref, cfg)
print(json.dumps({"cpu_s": round(time.process_time() - started, 2), "records": len(unit.records),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="big_session.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("work", type=Path, help="work dir (replaced)")
    parser.add_argument("--store", choices=("omp", "claude"), default="claude")
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tree", action="append", default=[], help="LABEL=CHECKOUT of another commit")
    args = parser.parse_args(argv)
    trees = {"this": ROOT}
    for spec in args.tree:
        label, _, path = spec.partition("=")
        if not label or not (Path(path) / "kbtools" / "__init__.py").is_file():
            parser.error(f"--tree {spec}: want LABEL=CHECKOUT of kbtools")
        trees[label] = Path(path).resolve()
    shutil.rmtree(args.work, ignore_errors=True)
    folder, field = write_big_session(args.work, args.store, args.messages)
    size = sum(f.stat().st_size for f in folder.rglob("*.jsonl"))
    print(json.dumps({"store": args.store, "messages": args.messages, "bytes": size}), flush=True)
    rounds: dict[str, list[dict[str, float]]] = {label: [] for label in trees}
    for _ in range(args.rounds):
        for label, tree in trees.items():
            env = {**os.environ, "PYTHONPATH": str(tree)}
            cmd = [sys.executable, "-c", _READ, args.store, field, str(folder)]
            # From the work dir: with the current dir first on sys.path, a checkout would win over PYTHONPATH.
            done = subprocess.run(cmd, cwd=args.work, env=env, capture_output=True, text=True, check=True)
            row = json.loads(done.stdout)
            rounds[label].append(row)
            print(json.dumps({"tree": label, **row}), flush=True)
    for label, rows in rounds.items():
        summary: dict[str, object] = {"tree": label, "path": str(trees[label]), "records": rows[0]["records"]}
        for key in ("cpu_s", "peak_rss_mb"):
            values = [float(r[key]) for r in rows]
            summary[key] = {"min": min(values), "median": statistics.median(values)}
        print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
