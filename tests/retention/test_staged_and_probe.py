"""`kb retention check --staged` and `kb retention probe` against real git in tmp KB repos."""

from __future__ import annotations

import json
import random
from pathlib import Path

from tests.testing.cli import run_kb, run_kb_process
from tests.testing.gitrepo import commit_all, git, init_repo, write
from tests.testing.kbfactory import Kb, make_kb, note_text

ANCHORS = ("2026-07-27", "TRIAL-CLOSE-RUNBOOK.md", "5ef5a70", "v2.14.1", "KB_IDENTIFIER_LOSS_REFUSE")


def body(*anchors: str) -> str:
    return "# Close\n\n" + "".join(f"- anchor {a}\n" for a in anchors)


def page(slug: str, *anchors: str) -> str:
    return note_text(slug, sources=["source-1"], body=body(*anchors))


def kb_with_note(tmp_path: Path) -> tuple[Kb, Path]:
    kb = make_kb(tmp_path / "kb")
    note = write(kb.note_path("close"), page("close", *ANCHORS))
    kb.commit("add close note")
    return kb, note


def staged(kb: Kb, *args: str):
    return run_kb("retention", "check", "--staged", *args, cwd=kb.root)


def test_staged_rewrite_dropping_three_identifiers_is_refused(tmp_path):
    kb, note = kb_with_note(tmp_path)
    write(note, page("close", *ANCHORS[3:]) + "\nA longer page that lost its anchors.\n" * 3)
    kb.stage(note)
    result = staged(kb)
    assert result.code == 1
    assert "src/content/note/zh-cn/close.md dropped 3 identifier(s)" in result.err
    assert "2026-07-27, 5ef5a70, TRIAL-CLOSE-RUNBOOK.md" in result.err


def test_staged_rewrite_moving_identifiers_passes_silently(tmp_path):
    kb, note = kb_with_note(tmp_path)
    write(note, page("close", *reversed(ANCHORS)))
    kb.stage(note)
    result = staged(kb)
    assert (result.code, result.err) == (0, "")


def test_only_the_staged_version_counts(tmp_path):
    kb, note = kb_with_note(tmp_path)
    write(note, page("close", *ANCHORS, "v9.9.9"))
    kb.stage(note)
    write(note, page("close"))  # unstaged: the commit would not contain it
    assert staged(kb).code == 0


def test_a_single_staged_loss_warns_and_passes(tmp_path):
    kb, note = kb_with_note(tmp_path)
    write(note, page("close", *ANCHORS[1:]))
    kb.stage(note)
    result = staged(kb)
    assert result.code == 0 and "2026-07-27 (warning: refuses at 3)" in result.err


def test_a_renamed_note_is_checked_against_its_old_path(tmp_path):
    kb, note = kb_with_note(tmp_path)
    kb.git("mv", str(note), str(kb.note_path("closing")))
    write(kb.note_path("closing"), page("close", *ANCHORS[:2]))
    kb.stage(kb.note_path("closing"))
    result = staged(kb, "--format", "json")
    doc = json.loads(result.out)
    assert result.code == 1 and doc["refused"] is True
    assert doc["pages"][0]["old_path"] == "src/content/note/zh-cn/close.md"
    assert doc["pages"][0]["path"] == "src/content/note/zh-cn/closing.md"
    assert doc["lost"] == ["5ef5a70", "KB_IDENTIFIER_LOSS_REFUSE", "v2.14.1"]


def test_a_deleted_note_warns_with_its_identifier_count(tmp_path):
    kb, note = kb_with_note(tmp_path)
    kb.git("rm", "-q", str(note))
    result = staged(kb)
    assert result.code == 0
    assert "close.md is deleted with 5 identifier(s)" in result.err


def test_a_new_note_is_never_refused(tmp_path):
    kb, _ = kb_with_note(tmp_path)
    fresh = write(kb.note_path("fresh"), page("fresh", *ANCHORS))
    kb.stage(fresh)
    result = staged(kb, "--threshold", "1", "--format", "json")
    assert result.code == 0 and json.loads(result.out)["new_pages"] == ["src/content/note/zh-cn/fresh.md"]


def test_an_unborn_head_has_only_new_pages(tmp_path):
    repo = init_repo(tmp_path / "kb")
    write(repo / "src/content/note/en/a.md", page("a", *ANCHORS))
    git(repo, "add", "-A")
    result = run_kb("retention", "check", "--staged", "--threshold", "1", cwd=repo)
    assert (result.code, result.err) == (0, "")


def test_files_outside_the_notes_and_non_pages_are_ignored(tmp_path):
    kb, _ = kb_with_note(tmp_path)
    manifest = write(kb.note_root / ".manifest.jsonl", '{"name": "5ef5a70 a1b2c3d 2026-01-01"}\n')
    kb.commit("manifest")
    write(manifest, "\n")
    write(kb.root / "README.md", "")
    kb.git("add", "-A")
    assert staged(kb, "--threshold", "1").code == 0


def test_the_note_root_comes_from_the_layout(tmp_path):
    repo = init_repo(tmp_path / "kb")
    write(repo / ".kb.yaml", "paths:\n  notes: wiki\n")
    note = write(repo / "wiki/en/a.md", page("a", *ANCHORS))
    write(repo / "src/content/note/en/b.md", page("b", *ANCHORS))
    commit_all(repo)
    write(note, "gone")
    write(repo / "src/content/note/en/b.md", "gone")
    git(repo, "add", "-A")
    result = run_kb("retention", "check", "--staged", "--format", "json", cwd=repo)
    assert [p["path"] for p in json.loads(result.out)["pages"]] == ["wiki/en/a.md"]


def test_outside_a_git_repository_is_a_one_line_error(tmp_path):
    result = run_kb_process("retention", "check", "--staged", cwd=tmp_path)
    assert result.code == 2 and result.err.startswith("kb: error: not a git repository")


# -- the probe -------------------------------------------------------------------------


def generated_history(kb: Kb, rng: random.Random, rewrites: int) -> dict[int, int]:
    """Rewrite notes at random, dropping a known number of identifiers each time.

    Returns the histogram the probe must report, counted from what was removed.
    """
    pool = [f"2026-01-{d:02d}" for d in range(1, 29)] + [f"file-{n}.md" for n in range(30)]
    pool += [f"{rng.getrandbits(28):07x}a1"[-9:] for _ in range(30)] + [f"v3.{n}.1" for n in range(30)]
    pool += [f"KB_VAR_{n}" for n in range(30)] + [f"https://example.com/p/{n}" for n in range(30)]
    rng.shuffle(pool)
    live: dict[str, list[str]] = {}
    for slug in ("alpha", "beta", "gamma"):
        live[slug] = [pool.pop() for _ in range(12)]
        write(kb.note_path(slug), page(slug, *live[slug]))
    kb.commit("notes")
    expected: dict[int, int] = {}
    for n in range(rewrites):
        slug = rng.choice(sorted(live))
        anchors = live[slug]
        drop = min(rng.choice([0, 0, 0, 1, 1, 2, 3, 5]), len(anchors))
        anchors = anchors[drop:] + [pool.pop() for _ in range(rng.randrange(3))]
        rng.shuffle(anchors)  # moving is not losing
        live[slug] = anchors
        write(kb.note_path(slug), page(slug, *anchors) + f"\nrevision {n}\n")
        if n % 4 == 0:  # also touch something that is not a note
            write(kb.root / "scratch.txt", f"{n} 5ef5a70\n")
        kb.commit(f"rewrite {n}")
        expected[drop] = expected.get(drop, 0) + 1
    return expected


def test_probe_reports_the_histogram_of_a_generated_history(tmp_path):
    kb = make_kb(tmp_path / "kb")
    expected = generated_history(kb, random.Random(11), rewrites=24)
    result = run_kb("retention", "probe", "--format", "json", cwd=kb.root)
    doc = json.loads(result.out)
    assert result.code == 0
    assert doc["histogram"] == {str(k): v for k, v in sorted(expected.items())}
    assert doc["rewrites"] == 24
    for t in range(1, 6):
        refusals = sum(v for k, v in expected.items() if k >= t)
        assert doc["refusals"][str(t)] == refusals
        assert doc["refusal_rate"][str(t)] == round(refusals / 24, 4)


def test_probe_counts_a_rename_with_loss_and_skips_merges_and_additions(tmp_path):
    kb, note = kb_with_note(tmp_path)
    base = kb.head()
    kb.git("mv", str(note), str(kb.note_path("closing")))
    write(kb.note_path("closing"), page("close", *ANCHORS[2:]))
    kb.commit("rename and trim")
    write(kb.note_path("other"), page("other", *ANCHORS))
    kb.commit("new note")
    result = run_kb("retention", "probe", f"{base}..HEAD", "--format", "json", cwd=kb.root)
    doc = json.loads(result.out)
    assert doc["histogram"] == {"2": 1}
    assert doc["lossy"][0]["old_path"].endswith("close.md") and doc["lossy"][0]["path"].endswith("closing.md")
    assert doc["lossy"][0]["lost"] == ["2026-07-27", "TRIAL-CLOSE-RUNBOOK.md"]


def test_probe_text_output_shows_histogram_and_rates(tmp_path):
    kb, note = kb_with_note(tmp_path)
    write(note, page("close", *ANCHORS[1:]))
    kb.commit("drop one")
    write(note, page("close", *ANCHORS[4:]))
    kb.commit("drop three")
    result = run_kb("retention", "probe", cwd=kb.root)
    assert result.code == 0
    lines = result.out.splitlines()
    assert lines[0] == "identifier-retention probe over HEAD: 2 note rewrite(s)"
    assert "     1         1   50.0%" in lines and "     3         1   50.0%" in lines
    assert "        3        1   50.0%  (current)" in lines
    assert any("TRIAL-CLOSE-RUNBOOK.md" in line for line in lines[lines.index("largest losses:") :])


def test_probe_of_an_empty_repository_and_a_bad_range(tmp_path):
    repo = init_repo(tmp_path / "kb")
    empty = run_kb("retention", "probe", "--format", "json", cwd=repo)
    assert empty.code == 0 and json.loads(empty.out)["rewrites"] == 0
    bad = run_kb_process("retention", "probe", "no-such-rev..HEAD", cwd=repo)
    assert bad.code == 2 and bad.err.startswith("kb: error: cannot read history")


def test_bumping_the_frontmatter_timestamp_is_not_a_loss(tmp_path):
    kb, note = kb_with_note(tmp_path)
    bumped = page("close", *ANCHORS).replace("timestamp: 2026-08-08", "timestamp: 2026-09-01")
    write(note, bumped.replace("# Close", "# Close, revised"))
    kb.stage(note)
    assert (staged(kb, "--threshold", "1").code, staged(kb).err) == (0, "")
    write(kb.root / ".kb.yaml", "retention:\n  ignore_frontmatter_keys: []\n")
    result = staged(kb, "--threshold", "1")
    assert result.code == 1 and ": 2026-08-08 (refused" in result.err


# -- restructurings: identifiers that move to another note of the same change set ----------
# The shapes come from the reference KB's log (DavidHLP/DavidHLP.github.io,
# src/content/information/zh-cn/kb-log.md, 2026-08-23): a 445-line page split into three
# pages (deployment, integration, troubleshooting), the original kept as a deprecated stub.

SPLIT = ("2026-08-17", "v0.9.1", "docker-compose.yml", "bge-m3.gguf", "HINDSIGHT_API_URL", "127.0.0.1:8888")


def test_staged_split_into_new_notes_keeps_the_moved_identifiers(tmp_path):
    kb = make_kb(tmp_path / "kb")
    big = write(kb.note_path("hindsight"), page("hindsight", *SPLIT))
    kb.commit("monolith")
    write(big, page("hindsight", "v0.9.1") + "\nSplit into three pages.\n")
    write(kb.note_path("hindsight-deploy"), page("hindsight-deploy", "2026-08-17", "docker-compose.yml", "bge-m3.gguf"))
    write(kb.note_path("hindsight-integration"), page("hindsight-integration", "HINDSIGHT_API_URL", "127.0.0.1:8888"))
    kb.git("add", "-A")
    result = staged(kb, "--format", "json")
    assert result.code == 0, result.err
    (checked,) = json.loads(result.out)["pages"]
    assert checked["lost"] == [] and checked["moved"] == 5
    assert [p.rsplit("/", 1)[1] for p in checked["moved_to"]] == ["hindsight-deploy.md", "hindsight-integration.md"]
    assert staged(kb).err == "", "a restructuring is silent, like a move inside one page"


def test_staged_move_into_an_existing_note_is_kept_but_a_real_loss_still_counts(tmp_path):
    kb = make_kb(tmp_path / "kb")
    source = write(kb.note_path("essays"), page("essays", *SPLIT))
    target = write(kb.note_path("docker"), page("docker", "v27.0.1"))
    kb.commit("two notes")
    write(source, page("essays", "v0.9.1"))  # five identifiers leave ...
    write(target, page("docker", "v27.0.1", "docker-compose.yml", "bge-m3.gguf"))  # ... two arrive here
    kb.git("add", "-A")
    result = staged(kb)
    assert result.code == 1, "three went nowhere: still refused at 3"
    assert "dropped 3 identifier(s) present in the previous version: 127.0.0.1:8888, 2026-08-17, HINDSIGHT_API_URL" in (
        result.err
    )


def test_identifiers_in_an_unchanged_note_do_not_excuse_a_loss(tmp_path):
    kb = make_kb(tmp_path / "kb")
    source = write(kb.note_path("essays"), page("essays", *SPLIT))
    write(kb.note_path("mirror"), page("mirror", *SPLIT))  # holds them all, but is not part of the change
    kb.commit("two notes")
    write(source, page("essays"))
    kb.stage(source)
    assert staged(kb).code == 1


def test_a_deleted_note_whose_content_moved_is_counted_by_what_went_nowhere(tmp_path):
    kb = make_kb(tmp_path / "kb")
    gone = write(kb.note_path("essays"), page("essays", *SPLIT))
    docker = write(kb.note_path("docker"), page("docker", "v27.0.1"))
    kb.commit("notes")
    gone.unlink()  # merged into an existing page (a new one would be paired as a rename by git -M)
    write(docker, page("docker", "v27.0.1", *SPLIT[:4]))
    kb.git("add", "-A")
    doc = json.loads(staged(kb, "--format", "json").out)
    assert doc["deleted"][0]["moved_to"][0].endswith("docker.md")
    # 2026-08-08 (the page's timestamp) is ignored; HINDSIGHT_API_URL and host:port went nowhere.
    assert doc["deleted"][0]["identifiers"] == 2


def test_probe_names_the_notes_of_each_restructuring_and_the_histogram_without_them(tmp_path):
    kb = make_kb(tmp_path / "kb")
    big = write(kb.note_path("hindsight"), page("hindsight", *SPLIT))
    kb.commit("monolith")
    base = kb.head()
    write(big, page("hindsight", "v0.9.1"))
    write(kb.note_path("hindsight-deploy"), page("hindsight-deploy", *SPLIT[:4]))
    kb.commit("split")
    write(big, page("hindsight"))  # v0.9.1 lost for real
    kb.commit("trim")
    doc = json.loads(run_kb("retention", "probe", f"{base}..HEAD", "--format", "json", cwd=kb.root).out)
    assert doc["rewrites"] == 2
    assert doc["histogram"] == {"1": 1, "2": 1}, "the split loses only what went nowhere (2 of 5)"
    assert doc["histogram_ignoring_moves"] == {"1": 1, "5": 1}
    (split,) = doc["restructured"]
    assert split["moved"] == 3 and split["moved_to"] == ["src/content/note/zh-cn/hindsight-deploy.md"]
    assert split["lost"] == ["127.0.0.1:8888", "HINDSIGHT_API_URL"]
    text = run_kb("retention", "probe", f"{base}..HEAD", cwd=kb.root).out
    assert "restructurings: 1 rewrite(s) moved identifiers to another note of the same commit" in text
    assert "src/content/note/zh-cn/hindsight.md -> src/content/note/zh-cn/hindsight-deploy.md" in text
