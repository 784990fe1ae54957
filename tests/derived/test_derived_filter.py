"""The seed's eight assertions and the grade behaviour, at the DerivedFilter level and through `kb verify`.

Ingest end to end (the `derived_excluded` event, the run summary) is in test_derived_ingest.py.
"""

from __future__ import annotations

import json
import pickle
import random
from pathlib import Path

import pytest

from kbtools.config import load_config
from kbtools.derived.filter import DerivedFilter, DerivedMatch
from kbtools.derived.manifest import read_manifest
from kbtools.derived.normalise import strip_frontmatter, tokens
from kbtools.errors import KbError
from kbtools.kb.layout import Layout
from tests.derived.grades import ARTIFACTS, GRADES, INFRA, JA, WAL, WAL_PAGE_V1, GradedArtifact, page_body
from tests.testing.cli import run_kb
from tests.testing.gitrepo import write

NOTE = "src/content/note"


def make_kb(root: Path, artifacts: tuple[GradedArtifact, ...] = ARTIFACTS, config: str | None = None) -> Path:
    for artifact in artifacts:
        write(root / artifact.path, artifact.text)
    if config is not None:
        write(root / ".kb.yaml", config)
    return root


def load(root: Path, threshold: float | None = None) -> DerivedFilter:
    layout = Layout(load_config(root))
    return DerivedFilter.load(layout, threshold=layout.config.derived.threshold if threshold is None else threshold)


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    return make_kb(tmp_path / "kb")


def records(artifact: GradedArtifact, grade: str) -> tuple[str, ...]:
    return artifact.records.get(grade, ())


# --- the seed's eight assertions ---------------------------------------------------


def test_derived_filter_a1_verbatim_excluded(kb: Path) -> None:
    derived = load(kb)
    for artifact in ARTIFACTS:
        for record in records(artifact, "verbatim"):
            found = derived.match(record)
            assert found is not None and found.path == artifact.path and found.overlap == 1.0


def test_derived_filter_a2_reformatted_excluded(kb: Path) -> None:
    """Re-indented, re-fenced, re-wrapped, renumbered, emphasis dropped: still excluded."""
    derived = load(kb)
    for artifact in ARTIFACTS:
        for record in records(artifact, "reformatted"):
            found = derived.match(record)
            assert found is not None, record[:60]
            assert found.name == artifact.slug.removesuffix("-ja") or found.path == artifact.path
            assert found.overlap > 0.8
    # A whole-record hash would miss every one of these: they differ from the body byte-wise.
    body = WAL.records["verbatim"][0]
    assert all(r != body for r in WAL.records["reformatted"])


def test_derived_filter_a2_reformatted_variants_excluded(kb: Path) -> None:
    """Each kind of reformatting on its own, applied to the page body."""
    derived = load(kb)
    body = WAL.records["verbatim"][0]
    variants = {
        "indented": "\n".join("        " + line for line in body.splitlines()),
        "fenced": "```markdown\n" + body + "\n```\n",
        "re-fenced as tildes": "~~~text\n" + body + "~~~\n",
        "rewrapped": " ".join(body.split()),
        "crlf and tabs": body.replace("\n", "\r\n").replace(" ", "\t"),
        "bullets to numbers": body.replace("- ", "1. "),
        "no markdown": body.replace("**", "").replace("`", "").replace("*", "").replace("# ", ""),
        "quoted with >": "\n".join("> " + line for line in body.splitlines()),
        "fullwidth and case": body.upper().replace("WAL", "ＷＡＬ"),
    }
    for kind, text in variants.items():
        found = derived.match(text)
        assert found is not None and found.path == WAL.path, kind


def test_derived_filter_a3_mention_not_excluded(kb: Path) -> None:
    derived = load(kb)
    for artifact in ARTIFACTS:
        for record in records(artifact, "mention"):
            assert derived.match(record) is None, record
    assert derived.match("I used the infra-root-causes skill") is None


def test_derived_filter_a4_unrelated_not_excluded(kb: Path) -> None:
    derived = load(kb)
    for artifact in ARTIFACTS:
        for record in records(artifact, "unrelated"):
            assert derived.match(record) is None, record


def test_derived_filter_a5_exclusion_names_the_artifact(kb: Path) -> None:
    """What a `derived_excluded` event logs: the matched artifact's name, path, sha256 and the overlap."""
    derived = load(kb)
    found = derived.match(records(INFRA, "quoted inside a longer message")[0])
    assert found == DerivedMatch(
        name="infra-root-causes",
        path=INFRA.path,
        sha256=read_sha256(kb / INFRA.path),
        overlap=1.0,
    )


def test_derived_filter_a6_verify_catches_leak(kb: Path) -> None:
    out = kb / ".agent" / "kb-ingest"
    leaked = records(WAL, "quoted inside a longer message")[0]
    kept = records(WAL, "independent discussion")[0]
    write_ledger(out, [("c-kept", kept), ("c-leak", leaked)])
    result = run_kb("verify", "--derived-filter", "--root", str(kb))
    assert result.code == 1
    assert "c-leak matches sqlite-wal-mode" in result.err
    assert "c-kept" not in result.err + result.out

    write_ledger(out, [("c-kept", kept)])
    clean = run_kb("verify", "--derived-filter", "--root", str(kb))
    assert clean.code == 0 and "1 candidate(s)" in clean.out


def test_derived_filter_a6_verify_json_and_output_dir(kb: Path, tmp_path: Path) -> None:
    out = tmp_path / "elsewhere"
    write_ledger(out, [("c-1", records(INFRA, "reformatted")[0])])
    result = run_kb("verify", "--derived-filter", "--output-dir", str(out), "--format", "json", "--root", str(kb))
    assert result.code == 1
    report = json.loads(result.out)
    assert [d["candidate_id"] for d in report["derived"]] == ["c-1"]
    assert report["derived"][0]["path"] == INFRA.path and report["threshold"] == 0.8


def test_derived_filter_a6_verify_cannot_read_is_usage_error(kb: Path) -> None:
    missing = run_kb("verify", "--derived-filter", "--root", str(kb))
    assert missing.code == 2 and "no candidate ledger" in missing.err
    write(kb / ".agent/kb-ingest/candidates.jsonl", '{"candidate_id": "c-1", "text": "ok"}\n{not json\n')
    broken = run_kb("verify", "--derived-filter", "--root", str(kb))
    assert broken.code == 2 and "candidates.jsonl:2" in broken.err
    assert "Traceback" not in broken.err


def test_derived_filter_a7_threshold_configurable(tmp_path: Path) -> None:
    partial = records(INFRA, "partial quote")[0]
    default = make_kb(tmp_path / "default")
    assert load(default).match(partial) is None
    assert load(default).settings["threshold"] == 0.8
    low = make_kb(tmp_path / "low", config="derived:\n  threshold: 0.2\n")
    derived = load(low)
    assert derived.settings["threshold"] == 0.2
    assert derived.match(partial) is not None
    bad = make_kb(tmp_path / "bad", config="derived:\n  threshold: 1.5\n")
    with pytest.raises(KbError, match="between 0 and 1"):
        load(bad)


def test_derived_filter_a7_threshold_flag_in_verify(kb: Path) -> None:
    write_ledger(kb / ".agent/kb-ingest", [("c-partial", records(INFRA, "partial quote")[0])])
    assert run_kb("verify", "--root", str(kb)).code == 0
    assert run_kb("verify", "--root", str(kb), "--threshold", "0.2").code == 1
    out_of_range = run_kb("verify", "--root", str(kb), "--threshold", "1.5")
    assert out_of_range.code == 2
    assert (
        out_of_range.err
        == "kb: error: Invalid value for --threshold: must be between 0 and 1, got 1.5 (kb verify --help)\n"
    )
    write(manifest(kb), "{not a row\n")
    broken_manifest = run_kb("verify", "--root", str(kb))
    assert broken_manifest.code == 2 and ".manifest.jsonl:1" in broken_manifest.err


def test_derived_filter_a8_no_manifest_is_safe(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    derived = load(empty)
    assert derived.artifact_count == 0
    assert derived.settings["manifest_present"] is False
    for artifact in ARTIFACTS:
        for grade_records in artifact.records.values():
            for record in grade_records:
                assert derived.match(record) is None
    assert derived.match("") is None
    # Notes but no manifest: the notes still count.
    notes_only = make_kb(tmp_path / "notes", (WAL,))
    assert not (notes_only / NOTE / ".manifest.jsonl").exists()
    assert load(notes_only).match(records(WAL, "verbatim")[0]) is not None


# --- beyond the seed -------------------------------------------------------------


@pytest.mark.parametrize("grade,excluded", GRADES)
def test_derived_filter_grade_behaviour_at_default_threshold(kb: Path, grade: str, excluded: bool) -> None:
    derived = load(kb)
    seen = 0
    for artifact in ARTIFACTS:
        for record in records(artifact, grade):
            seen += 1
            assert (derived.match(record) is not None) is excluded, (artifact.slug, record[:80])
    assert seen > 0


def test_derived_filter_quote_inside_own_paragraphs_excluded(kb: Path) -> None:
    derived = load(kb)
    own_words = [
        records(WAL, "partial quote")[0],
        records(INFRA, "independent discussion")[0],
        records(INFRA, "unrelated")[1],
        records(WAL, "unrelated")[0],
    ]
    quote = "\n".join("    " + line for line in records(WAL, "verbatim")[0].splitlines())
    record = "\n\n".join(own_words[:2] + [quote] + own_words[2:])
    assert len(record) > 2 * len(quote)  # mostly the writer's own words
    found = derived.match(record)
    assert found is not None and found.path == WAL.path and found.overlap == 1.0


def test_derived_filter_independent_discussion_kept(kb: Path) -> None:
    derived = load(kb)
    for artifact in (INFRA, WAL):
        for record in records(artifact, "independent discussion"):
            assert derived.match(record) is None


def test_derived_filter_older_recorded_version_quote_excluded(kb: Path) -> None:
    page = kb / WAL.path
    page.write_text(WAL_PAGE_V1, encoding="utf-8")
    assert run_kb("artifacts", "record", str(page), "--root", str(kb)).code == 0
    page.write_text(WAL.text, encoding="utf-8")  # the page is rewritten; v1 lives only in the manifest
    old_body = page_body(WAL_PAGE_V1)
    quote = "Found this in an old note, is it still right?\n\n" + "\n".join(
        "  " + line for line in old_body.splitlines()
    )
    found = load(kb).match(quote)
    assert found is not None and found.path == WAL.path and found.sha256 == read_manifest(manifest(kb))[0].sha256


def test_derived_filter_japanese_verbatim_and_reformatted_excluded(kb: Path) -> None:
    derived = load(kb)
    for record in records(JA, "verbatim") + records(JA, "reformatted"):
        found = derived.match(record)
        assert found is not None and found.path == JA.path


def test_derived_filter_frontmatter_is_not_compared(tmp_path: Path) -> None:
    """Only the body counts: a record made of another page's frontmatter keys is no match."""
    kb = make_kb(tmp_path / "kb", (WAL,))
    assert load(kb).match("kind: concept\nstatus: active\nsources: [sqlite-docs-wal]\n") is None


def test_derived_filter_tiny_artifact_matches_by_body_only(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb / NOTE / "en/short.md", "---\nkind: concept\n---\nAlways pin the **timezone** to UTC in tests.\n")
    derived = load(kb)
    assert derived.match("always pin the timezone to utc in tests") is not None
    # Inside a longer record a tiny artifact is not matched: too few shingles to tell a quote from chance.
    longer = "We discussed this: always pin the timezone to UTC in tests. " + "Other words follow here. " * 5
    assert derived.match(longer) is None


def test_derived_filter_two_word_page_matches_nothing(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb / NOTE / "en/stub.md", "---\nkind: concept\n---\nTODO later\n")
    assert load(kb).match("todo later") is None


def test_derived_filter_pickles_for_workers(kb: Path) -> None:
    derived = load(kb)
    clone = pickle.loads(pickle.dumps(derived))
    record = records(INFRA, "reformatted")[0]
    assert clone.match(record) == derived.match(record) is not None
    assert clone.settings == derived.settings and clone.artifact_count == derived.artifact_count


def test_derived_filter_settings_for_the_run_summary(kb: Path) -> None:
    run_kb("artifacts", "record", str(kb / WAL.path), "--root", str(kb))
    settings = load(kb).settings
    assert settings["enabled"] is True and settings["threshold"] == 0.8
    assert settings["manifest"] == "src/content/note/.manifest.jsonl" and settings["manifest_present"] is True
    assert settings["manifest_rows"] == 1
    # The recorded page and the current copy of it are one artifact.
    assert settings["artifact_count"] == len(ARTIFACTS)
    assert settings["shingle_params"]["n"] == 5 and settings["shingle_params"]["normaliser_hash"]


# --- helpers ---------------------------------------------------------------------


def manifest(kb: Path) -> Path:
    return kb / NOTE / ".manifest.jsonl"


def read_sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_ledger(out: Path, rows: list[tuple[str, str]]) -> None:
    write(out / "candidates.jsonl", "".join(json.dumps({"candidate_id": c, "text": t}) + "\n" for c, t in rows))


def test_derived_filter_boilerplate_shared_by_many_pages_is_not_evidence_of_quoting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A paragraph every page carries (a template footer) is left out of the index; each page still matches."""
    from kbtools.derived import index
    from kbtools.derived.index import STOP_PATHS

    kb = tmp_path / "kb"
    footer = (
        "If this page is out of date, open an issue in the tracker and tag the owning team so that "
        "somebody reviews it within the week."
    )
    topics = [
        records(a, g)[i]
        for a in (INFRA, WAL)
        for g in ("independent discussion", "unrelated", "partial quote")
        for i in range(len(records(a, g)))
    ]
    pages = [
        f"Page {i} about topic {i}. {topics[i % len(topics)]} Variant number {i} of this text.\n\n{footer}\n"
        for i in range(STOP_PATHS + 4)
    ]
    for i, page in enumerate(pages):
        write(kb / NOTE / f"en/page-{i:02d}.md", "---\nkind: concept\n---\n" + page)
    reply = f"Thanks for the review!\n\n{footer}"  # mostly the footer
    derived = load(kb)
    assert derived.match(reply) is None
    found = derived.match(pages[3])
    assert found is not None and found.path.endswith("page-03.md")
    monkeypatch.setattr(index, "STOP_PATHS", 10**9)  # without the boilerplate rule the reply would be "derived"
    assert load(kb).match(reply) is not None


def test_derived_filter_many_versions_of_one_page_stay_matchable(tmp_path: Path) -> None:
    """Versions share a path, so their shared shingles are not boilerplate: each version still matches."""
    from kbtools.derived.index import STOP_PATHS

    kb = tmp_path / "kb"
    page = kb / WAL.path
    for version in range(STOP_PATHS + 4):
        write(page, WAL.text + f"\nRevision note {version}: checked against SQLite {version}.\n")
        assert run_kb("artifacts", "record", str(page), "--root", str(kb)).code == 0
    assert len(read_manifest(manifest(kb))) == STOP_PATHS + 4
    found = load(kb).match(records(WAL, "reformatted")[0])
    assert found is not None and found.path == WAL.path


def test_derived_filter_index_cache_reused_only_while_artifacts_are_unchanged(kb: Path, tmp_path: Path) -> None:
    cache = tmp_path / "out"
    cache.mkdir()
    layout = Layout(load_config(kb))
    first = DerivedFilter.load(layout, threshold=0.8, cache_dir=cache)
    assert first.settings["index_cache"] == "stored"
    again = DerivedFilter.load(layout, threshold=0.8, cache_dir=cache)
    assert again.settings["index_cache"] == "reused" and again.settings == {**first.settings, "index_cache": "reused"}
    quote = records(INFRA, "quoted inside a longer message")[0]
    assert again.match(quote) == first.match(quote) is not None

    (kb / INFRA.path).write_text("---\nname: infra-root-causes\n---\nRewritten to say something else entirely.\n")
    changed = DerivedFilter.load(layout, threshold=0.8, cache_dir=cache)
    assert changed.settings["index_cache"] == "stored" and changed.match(quote) is None

    (cache / "derived-index.marshal").write_bytes(b"\x00garbage")
    damaged = DerivedFilter.load(layout, threshold=0.8, cache_dir=cache)
    assert damaged.settings["index_cache"] == "stored" and damaged.match(records(WAL, "verbatim")[0]) is not None
    assert (
        DerivedFilter.load(layout, threshold=0.8, cache_dir=tmp_path / "missing").settings["index_cache"]
        == "not stored"
    )


def _unbounded_match(derived: DerivedFilter, text: str, threshold: float) -> DerivedMatch | None:
    """The decision as it was made before the early exit: score every artifact, then compare."""
    found = derived.index.best(tokens(text))
    if found is None or not (found.overlap > threshold or found.overlap >= 1.0):
        return None
    return DerivedMatch(found.artifact.name, found.artifact.path, found.artifact.sha256, round(found.overlap, 4))


def test_derived_filter_early_exit_excludes_the_same_records_with_the_same_overlaps(kb: Path) -> None:
    """The shared-shingle bound only skips records no artifact can reach: on every graded record,
    and on generated records that quote a growing part of each artifact inside unrelated words
    (so some land just below and just above each threshold), the excluded set and overlaps are
    those of scoring every record in full."""
    rng = random.Random(7)
    texts = [record for artifact in ARTIFACTS for grade, _ in GRADES for record in records(artifact, grade)]
    filler = [f"w{rng.randrange(10**6)}" for _ in range(400)]
    for artifact in ARTIFACTS:
        words = strip_frontmatter(artifact.text).split()
        for _ in range(40):
            start = rng.randrange(len(words))
            quote = words[start : start + rng.randint(5, len(words))]
            pad = rng.sample(filler, rng.randint(0, 120))
            texts.append(" ".join(pad[: len(pad) // 2] + quote + pad[len(pad) // 2 :]))
    for threshold in (0.0, 0.3, 0.5, 0.8, 0.9, 1.0):
        derived = load(kb, threshold)
        matched = [derived.match(text) for text in texts]
        assert matched == [_unbounded_match(derived, text, threshold) for text in texts], threshold
        if threshold == 0.8:
            excluded = sum(m is not None for m in matched)
            assert 0 < excluded < len(texts) - 10  # both sides of the threshold are exercised
