"""The probe over a history in the reference KB's shape (tests/testing/realkb.py): splits and
moved sections are restructurings, kept; what is left in the histogram is what went nowhere."""

from __future__ import annotations

import json
import random

from tests.testing.cli import run_kb
from tests.testing.realkb import build, restructuring_history


def test_probe_over_a_real_shaped_history_keeps_restructurings(tmp_path):
    kb = build(tmp_path / "kb")
    restructuring_history(kb, random.Random(7), commits=40)
    doc = json.loads(run_kb("retention", "probe", "--format", "json", cwd=kb.root).out)
    assert doc["rewrites"] == sum(doc["histogram"].values()) == sum(doc["histogram_ignoring_moves"].values())
    assert doc["restructured"], "the history splits pages and moves sections"
    for rewrite in doc["restructured"]:
        assert rewrite["moved"] > 0 and rewrite["moved_to"] and rewrite["path"] not in rewrite["moved_to"]

    def refused(histogram: dict[str, int], at: int) -> int:
        return sum(n for lost, n in histogram.items() if int(lost) >= at)

    for threshold in (1, 2, 3):
        assert refused(doc["histogram"], threshold) <= refused(doc["histogram_ignoring_moves"], threshold)
    assert refused(doc["histogram"], 1) < refused(doc["histogram_ignoring_moves"], 1)
