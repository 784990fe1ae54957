"""Overlap of each graded record with its artifact, per grade (the table in docs/derived-filter.md).

Run from the repository root:  .venv/bin/python bench/derived_grades.py
Fixtures: tests/derived/grades.py (each artifact with records of every grade).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kbtools.config import Config  # noqa: E402
from kbtools.derived.filter import DerivedFilter  # noqa: E402
from kbtools.derived.index import ArtifactIndex  # noqa: E402
from kbtools.derived.manifest import row_for  # noqa: E402
from kbtools.derived.normalise import tokens  # noqa: E402
from kbtools.kb.layout import Layout  # noqa: E402
from tests.derived.grades import ARTIFACTS, GRADES  # noqa: E402


def overlaps() -> dict[str, list[float]]:
    """Grade → overlap of each record with its own artifact (0.0 when nothing is shared)."""
    table: dict[str, list[float]] = {grade: [] for grade, _ in GRADES}
    for artifact in ARTIFACTS:
        index = ArtifactIndex([row_for(artifact.path, artifact.text.encode()).artifact()])
        for grade, records in artifact.records.items():
            for record in records:
                found = index.best(tokens(record))
                table[grade].append(found.overlap if found else 0.0)
    return table


def main() -> int:
    threshold = Config(root=Path(".")).derived.threshold
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for artifact in ARTIFACTS:
            path = root / artifact.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(artifact.text, encoding="utf-8")
        derived = DerivedFilter.load(Layout(Config(root=root)), threshold=threshold)
        excluded = {grade: 0 for grade, _ in GRADES}
        for artifact in ARTIFACTS:
            for grade, records in artifact.records.items():
                excluded[grade] += sum(derived.match(r) is not None for r in records)
    table = overlaps()
    print(
        f"| grade | records | overlap with its artifact | excluded at {threshold} ({len(ARTIFACTS)} artifacts loaded) |"
    )
    print("| --- | ---: | --- | ---: |")
    for grade, _ in GRADES:
        values = sorted(table[grade])
        shown = " ".join(f"{v:.2f}" for v in values)
        print(f"| {grade} | {len(values)} | {shown} | {excluded[grade]}/{len(values)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
