"""Discovery of the file stores lists exactly what ``os.walk`` + ``pathlib`` list.

The ledgers and the stat cache key sources by these refs, so their values and
order may not drift when discovery gets faster: the expectation here is built
the plain way (``os.walk``, ``Path``, sorted by ``str``, ``Path.stat``), next to
a literal order for the cases where a path sort and a string sort disagree.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kbtools.ingest.model import SourceRef, SourceSettings
from kbtools.ingest.sources import discover_all
from kbtools.ingest.sources.common import walk_files


def _touch(path: Path, text: str = "{}\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _tricky_tree(root: Path, outside: Path) -> None:
    """Names whose string order differs from their path order ('-' < '.' < '/'),
    a directory named like a session file, links of every kind, a pruned folder."""
    for rel in (
        "a.jsonl",
        "a-b.jsonl",
        "a/x.jsonl",
        "a/b/c/deep.jsonl",
        "Z.jsonl",
        "é.jsonl",
        "sp ace/s.jsonl",
        "__advisor-1.jsonl",
        "notes.txt",
        "a/x.json",
        ".hidden/h.jsonl",
        ".omp-backups/old.jsonl",
        "nested/.omp-backups/older.jsonl",
    ):
        _touch(root / rel, f'{{"n": "{rel}"}}\n')
    (root / "dir.jsonl").mkdir()
    _touch(root / "dir.jsonl/inner.jsonl")
    _touch(outside / "linked/behind-link.jsonl")
    _touch(outside / "target.jsonl")
    (root / "link-to-dir").symlink_to(outside / "linked", target_is_directory=True)
    (root / "link-to-dir.jsonl").symlink_to(outside / "linked", target_is_directory=True)
    (root / "link-to-file.jsonl").symlink_to(outside / "target.jsonl")
    (root / "dangling.jsonl").symlink_to(outside / "missing.jsonl")


def _expected(tool: str, root: Path, *, skip: frozenset[str] = frozenset()) -> list[SourceRef]:
    """The file refs as the plain walk finds them."""
    paths: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames if d not in skip]
        paths.extend(Path(dirpath, name) for name in filenames if name.endswith(".jsonl"))
    refs = []
    for path in sorted(paths, key=str):
        try:
            st = path.stat()
            key: tuple[int, int, int] | None = (st.st_size, st.st_mtime_ns, st.st_ino)
        except OSError:
            key = None
        record_type = "advisor" if tool == "omp" and path.name.startswith("__advisor") else "session"
        refs.append(SourceRef(tool, record_type, "jsonl", str(path), key, None))
    return refs


def test_file_store_refs_equal_a_plain_walk_in_value_and_order(tmp_path: Path) -> None:
    omp, codex, claude = tmp_path / "omp", tmp_path / "codex", tmp_path / ".claude"
    _tricky_tree(omp, tmp_path / "outside-omp")
    _tricky_tree(codex / "sessions", tmp_path / "outside-codex")
    _tricky_tree(codex / "archived_sessions", tmp_path / "outside-codex-archive")
    _touch(codex / "history.jsonl")
    _tricky_tree(claude / "projects", tmp_path / "outside-claude")
    settings = SourceSettings(omp_sessions=omp, codex_dir=codex, claude_dir=claude, opencode_db=tmp_path / "none.db")
    refs = [r for r in discover_all(settings) if r.tool in ("omp", "codex", "claude")]

    codex_sessions = sorted(
        _expected("codex", codex / "sessions") + _expected("codex", codex / "archived_sessions"),
        key=lambda r: r.locator,
    )
    history = codex / "history.jsonl"
    st = history.stat()
    expected = [
        *_expected("omp", omp, skip=frozenset({".omp-backups"})),
        *codex_sessions,
        SourceRef("codex", "prompt-history", "jsonl", str(history), (st.st_size, st.st_mtime_ns, st.st_ino), None),
        *_expected("claude", claude / "projects"),
    ]
    assert refs == expected
    assert [type(r.locator) for r in refs] == [str] * len(refs)
    # The literal order the ledgers have always seen (a sort of the string, not of path parts).
    omp_names = [os.path.relpath(r.locator, omp) for r in refs if r.tool == "omp"]
    assert omp_names == [
        ".hidden/h.jsonl",
        "Z.jsonl",
        "__advisor-1.jsonl",
        "a-b.jsonl",
        "a.jsonl",
        "a/b/c/deep.jsonl",
        "a/x.jsonl",
        "dangling.jsonl",
        "dir.jsonl/inner.jsonl",
        "link-to-file.jsonl",
        "sp ace/s.jsonl",
        "é.jsonl",
    ]
    dangling = next(r for r in refs if r.locator == str(omp / "dangling.jsonl"))
    assert dangling.stat_key is None
    assert [r.record_type for r in refs if r.tool == "omp"].count("advisor") == 1


def test_a_relative_root_gives_the_paths_pathlib_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tricky_tree(tmp_path / "store", tmp_path / "outside")
    monkeypatch.chdir(tmp_path / "store")
    for root in (Path("."), Path("a"), Path("./a/")):
        expected = [r.locator for r in _expected("omp", root)]
        assert walk_files(root, ".jsonl") == expected
        assert not any(p.startswith("./") for p in expected)


def test_a_root_that_cannot_be_listed_gives_nothing(tmp_path: Path) -> None:
    _touch(tmp_path / "file.jsonl")
    for root in (tmp_path / "missing", tmp_path / "file.jsonl"):
        assert walk_files(root, ".jsonl") == [str(p) for p in _expected("omp", root)] == []


def test_readers_are_imported_by_discovery_before_its_first_ref(tmp_path: Path) -> None:
    """Importing the registry imports none of the six built-in readers (the declared ones
    are imported for their declarations); discovery imports every reader the run
    may use before its first ref (workers forked later inherit them), but not Hindsight's
    (nor its HTTP client) while no Hindsight URL is configured."""
    _touch(tmp_path / "s.jsonl")
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from kbtools.ingest.model import SourceSettings\n"
        "from kbtools.ingest.sources import discover_all\n"
        "assert 'kbtools.ingest.sources.omp' not in sys.modules\n"
        f"first = next(discover_all(SourceSettings(omp_sessions=Path({str(tmp_path)!r}))))\n"
        "assert first.tool == 'omp', first\n"
        "print(sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('kbtools.ingest.sources.')))\n"
        "print('urllib.request' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[:2] == [
        "['_claude_tree', '_jsonl', 'aider', 'claude', 'codex', 'common', 'copilot', 'cursor', 'gemini', 'omp', "
        "'opencode', 'prompt_history']",  # not _shapes (msgspec): a reader imports it to read a line
        "False",
    ]
