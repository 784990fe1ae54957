"""bench/first_run.py: the CPU of a whole process tree is counted, and a first run is reported per shape."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def test_cpu_of_an_orphaned_grandchild_is_counted(tmp_path: Path) -> None:
    # The command exits at once and leaves a grandchild spinning for 0.4 s: a wait4 of the
    # command alone would count none of it. Run in a fresh interpreter, which becomes the subreaper.
    script = textwrap.dedent(
        f"""
        import json, sys
        from pathlib import Path
        sys.path.insert(0, {str(BENCH)!r})
        from first_run import become_subreaper, run_tree
        become_subreaper()
        spin = "import time; t = time.process_time(); exec('while time.process_time() - t < 0.4: pass')"
        cmd = ["sh", "-c", f'{{sys.executable}} -c "{{spin}}" & exit 3']
        run = run_tree(cmd, Path.cwd(), {{"PATH": "/usr/bin:/bin"}}, Path("out"), Path("err"))
        print(json.dumps({{"exit": run.exit, "cpu": run.cpu, "wall": run.wall}}))
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)
    assert run["exit"] == 3
    assert run["cpu"] >= 0.35
    assert run["wall"] < run["cpu"]  # the command's own exit, not the grandchild's, ends the wall time


@pytest.mark.slow
def test_first_run_reports_each_shape_and_jobs(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH / "first_run.py"), str(tmp_path), "--mb", "0.6", "--repeat", "1", "--jobs", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    runs = [line for line in lines if "round" in line]
    assert [(r["shape"], r["jobs"]) for r in runs] == [("default", "1"), ("prose-heavy", "1")]
    for r in runs:
        assert r["exit"] == 0 and r["cpu_s"] > 0 and r["processed"] > 0 and r["candidates"] > 0
        assert r["cpu_s_per_mb"] == pytest.approx(r["cpu_s"] / r["mb"], rel=0.05)
    summaries = [line for line in lines if "runs" in line]
    assert [s["shape"] for s in summaries] == ["default", "prose-heavy"]


def test_unknown_shape_is_refused(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH / "first_run.py"), str(tmp_path), "--shapes", "default,huge"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "unknown shape(s) huge" in proc.stderr
