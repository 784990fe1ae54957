"""The ingest and derived packages import downward only: no cycle among ingest's
modules (function-level imports included), and derived never imports ingest."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = sorted((ROOT / "kbtools" / "ingest").glob("*.py"))


def _imports(path: Path, package: str) -> set[str]:
    """The kbtools modules ``path`` imports anywhere (TYPE_CHECKING blocks aside)."""
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            skipped.update(id(child) for child in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("kbtools"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kbtools"):
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _module(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def test_ingest_core_modules_form_no_import_cycle() -> None:
    names = {_module(p) for p in CORE}
    graph = {_module(p): {m for m in _imports(p, "kbtools.ingest") if m in names} - {_module(p)} for p in CORE}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            assert state.get(nxt) != 1, f"import cycle: {' -> '.join([*trail, node, nxt])}"
            if nxt not in state:
                visit(nxt, [*trail, node])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])


def test_derived_does_not_import_ingest() -> None:
    for path in sorted((ROOT / "kbtools" / "derived").glob("*.py")):
        assert not any(m.startswith("kbtools.ingest") for m in _imports(path, "kbtools")), path


def test_no_ingest_core_module_is_over_500_lines() -> None:
    for path in CORE:
        assert len(path.read_text(encoding="utf-8").splitlines()) <= 500, path
