"""The fixed costs of every `kb ingest` run, apart from the sources it reads.

Usage: python bench/rerun_fixed_cost.py [CORPUS] [--runs N] [--python PYTHON]

Prints one JSON line per measurement, each the best (and median) of ``--runs``:

- ``imports``: a fresh interpreter importing what `kb ingest` imports before it
  reads a source (the CLI, the command, the pipeline, redaction, the source
  registry and readers, the derived filter), timed inside the interpreter, twice:
  with bytecode cached (``PYTHONPYCACHEPREFIX`` in a scratch folder) and with
  ``PYTHONDONTWRITEBYTECODE=1`` as inherited from the environment (a module whose
  ``.pyc`` is stale is compiled again on every run);
- ``discovery``: ``discover_all`` over CORPUS (a bench/gen_corpus.py output dir,
  read only), in one process, after one warm-up listing;
- ``derived_filter``: a fresh interpreter that has imported what `kb ingest`
  imports first (the command and the pipeline) importing ``kbtools.derived.filter``
  and running ``DerivedFilter.load`` on a new knowledge base (`kb init`, no notes)
  whose index cache is already in the output folder — the rerun case (bytecode
  cached).

``--python`` picks the interpreter (with another tree on ``PYTHONPATH`` to
compare two versions).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchenv import RUN_ENV  # noqa: E402
from corpus import ingest_flags  # noqa: E402

INGEST_MODULES = (
    "kbtools.cli",
    "kbtools.cli.ingest",
    "kbtools.ingest.pipeline",
    "kbtools.redact",
    "kbtools.ingest.sources",
    "kbtools.ingest.sources.omp",
    "kbtools.ingest.sources.opencode",
    "kbtools.ingest.sources.codex",
    "kbtools.ingest.sources.prompt_history",
    "kbtools.ingest.sources.claude",
    "kbtools.derived.filter",
)

_TIMED_IMPORT = """
import time
started = time.perf_counter()
import {modules}
print((time.perf_counter() - started) * 1000)
"""

_DISCOVERY = """
import json, sys, time
from pathlib import Path
from kbtools.config import Config
from kbtools.ingest.sources import discover_all, resolve_settings
flags = {{flag[2:].replace("-", "_"): Path(value) for flag, value in zip(sys.argv[1::2], sys.argv[2::2])}}
settings = resolve_settings(Config(root=Path.cwd()), {{**flags, "skip_hindsight": True}})
count = len(list(discover_all(settings)))
times = []
for _ in range({runs}):
    started = time.perf_counter()
    refs = list(discover_all(settings))
    times.append((time.perf_counter() - started) * 1000)
print(json.dumps({{"refs": len(refs), "times": times}}))
"""

_DERIVED = """
import sys, time
from pathlib import Path
import kbtools.cli.ingest, kbtools.ingest.pipeline  # imported by `kb ingest` before it loads the filter
from kbtools.config import load_config
from kbtools.kb.layout import Layout
layout = Layout(load_config(Path(sys.argv[1])))
started = time.perf_counter()
from kbtools.derived.filter import DerivedFilter
imported = time.perf_counter()
derived = DerivedFilter.load(layout, threshold=0.8, cache_dir=Path(sys.argv[2]))
done = time.perf_counter()
print((imported - started) * 1000, (done - imported) * 1000, derived.settings["index_cache"])
"""


def _best(values: list[float]) -> dict[str, float]:
    return {"best_ms": round(min(values), 2), "median_ms": round(statistics.median(values), 2)}


def _run(python: str, code: str, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [python, "-c", code, *args], capture_output=True, text=True, check=True, env=env, cwd=tempfile.gettempdir()
    )
    return done.stdout


def _cached_env(scratch: Path) -> dict[str, str]:
    return {**RUN_ENV, "PYTHONPYCACHEPREFIX": str(scratch / "pycache")}


def measure_imports(python: str, runs: int, scratch: Path) -> None:
    code = _TIMED_IMPORT.format(modules=", ".join(INGEST_MODULES))
    cached = _cached_env(scratch)
    _run(python, code, env=cached)  # fill the bytecode cache
    for label, env in (("bytecode cached", cached), ("environment as inherited", dict(os.environ))):
        times = [float(_run(python, code, env=env)) for _ in range(runs)]
        print(json.dumps({"measure": "imports", "bytecode": label, **_best(times)}), flush=True)


def measure_discovery(python: str, runs: int, corpus: Path) -> None:
    out = json.loads(_run(python, _DISCOVERY.format(runs=runs), *ingest_flags(corpus)))
    print(json.dumps({"measure": "discovery", "refs": out["refs"], **_best(out["times"])}), flush=True)


def measure_derived_filter(python: str, runs: int, scratch: Path) -> None:
    kb, out = scratch / "kb", scratch / "out"
    subprocess.run([python, "-m", "kbtools", "init", str(kb)], check=True, stdout=subprocess.DEVNULL)
    out.mkdir(mode=0o700)
    cached = _cached_env(scratch)
    first = _run(python, _DERIVED, str(kb), str(out), env=cached).split()
    assert first[2] == "stored", first
    imports, loads = [], []
    for _ in range(runs):
        imported, loaded, cache = _run(python, _DERIVED, str(kb), str(out), env=cached).split()
        assert cache == "reused", cache
        imports.append(float(imported))
        loads.append(float(loaded))
    totals = [a + b for a, b in zip(imports, loads)]
    print(
        json.dumps(
            {"measure": "derived_filter", "import": _best(imports), "load": _best(loads), "total": _best(totals)}
        ),
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rerun_fixed_cost.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, nargs="?", help="a gen_corpus.py output dir (skip discovery if absent)")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kb-fixed-cost-") as tmp:
        scratch = Path(tmp)
        measure_imports(args.python, args.runs, scratch)
        if args.corpus is not None:
            measure_discovery(args.python, args.runs, args.corpus.resolve())
        measure_derived_filter(args.python, args.runs, scratch)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
