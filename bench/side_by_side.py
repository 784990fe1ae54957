"""Every benchmark behind the performance table of docs/performance.md, one after another, in one run.

    python bench/gen_corpus.py bench/.corpus/100 --mb 100 --seed 1
    python bench/gen_corpus.py bench/.corpus/500 --mb 500 --seed 1
    python bench/gen_corpus.py bench/.corpus/20 --mb 20 --seed 1
    python bench/side_by_side.py OUT_DIR

Runs them sequentially (never two at once: they would disturb each other) and
keeps each one's output in OUT_DIR/<name>.txt; prints the machine first and one
line per benchmark with its wall time.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
PY = sys.executable


def benches(out: Path) -> list[tuple[str, list[str]]]:
    corpus = BENCH / ".corpus"
    repeat = ["--repeat", "9"]  # reruns take a few tenths of a second: one run is too noisy
    return [
        ("ingest-100", [PY, str(BENCH / "ingest_bench.py"), str(corpus / "100"), str(out / "work-100"), *repeat]),
        ("ingest-500", [PY, str(BENCH / "ingest_bench.py"), str(corpus / "500"), str(out / "work-500"), *repeat]),
        ("lint", [PY, str(BENCH / "lint_bench.py")]),
        ("redact", [PY, str(BENCH / "redact_bench.py"), "--mb", "20"]),
        ("derived", [PY, str(BENCH / "derived_bench.py"), "--ingest", str(corpus / "50")]),
        ("retention", [PY, str(BENCH / "retention_bench.py")]),
        ("crash-drill", [PY, str(BENCH / "crash_drill.py"), str(corpus / "20"), str(out / "work-drill")]),
    ]


def machine() -> dict[str, object]:
    model = ""
    try:
        model = next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            "",
        )
    except OSError:
        pass
    return {
        "cores": os.cpu_count(),
        "cpu": model,
        "python": platform.python_version(),
        "system": f"{platform.system()} {platform.release()}",
        "load_1m": os.getloadavg()[0],
    }


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(sys.argv[1]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    print(json.dumps({"machine": machine()}), flush=True)
    failed = False
    for name, cmd in benches(out):
        started = time.perf_counter()
        with (out / f"{name}.txt").open("wb") as log:
            code = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=BENCH.parent).returncode
        failed |= code != 0
        print(
            json.dumps(
                {
                    "bench": name,
                    "exit": code,
                    "seconds": round(time.perf_counter() - started, 1),
                    "output": str(out / f"{name}.txt"),
                }
            ),
            flush=True,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
