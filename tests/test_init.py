from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from kbtools.config import PathsConfig
from kbtools.kb import scaffold
from tests.testing.cli import run_kb
from tests.testing.gitrepo import commit_all, git, init_repo

REPO_ROOT = Path(__file__).resolve().parents[1]
SCAFFOLD_FILES = (
    "KB.md",
    "src/content/raw/.manifest.sha256",
    "src/content/information/en/kb-index.md",
    "src/content/information/en/kb-log.md",
    ".pre-commit-config.yaml",
)


def _utc_today() -> str:
    return dt.datetime.now(dt.UTC).date().isoformat()


def _hooks_repo(kb: Path) -> dict:
    """The first (only) repo entry of the KB's `.pre-commit-config.yaml`."""
    return YAML(typ="safe").load((kb / ".pre-commit-config.yaml").read_text())["repos"][0]


def test_init_writes_layout_contract_empty_manifest_index_log_and_hook_config(tmp_path):
    kb = tmp_path / "kb"
    result = run_kb("init", str(kb))
    assert result.code == 0, result.err
    for rel in SCAFFOLD_FILES:
        assert (kb / rel).is_file(), rel
        assert f"created {rel}" in result.out
    assert (kb / "src/content/raw/en").is_dir() and (kb / "src/content/note/en").is_dir()
    assert (kb / "src/content/raw/.manifest.sha256").read_bytes() == b""
    log = (kb / "src/content/information/en/kb-log.md").read_text()
    assert f"## [{_utc_today()}] init | " in log
    assert ".agent/" in (kb / ".gitignore").read_text().splitlines()
    hooks = _hooks_repo(kb)
    assert [h["id"] for h in hooks["hooks"]] == list(scaffold.ENABLED_HOOK_IDS)
    # Where this kb was installed from decides (an editable checkout, as in development: local hooks).
    source = scaffold.installed_hooks_source(scaffold.read_direct_url())
    assert hooks["repo"] == (source.repo or "local") and hooks.get("rev") == source.rev
    assert "hooks in .pre-commit-config.yaml run " in result.out


def test_scaffolded_kb_lints_clean_before_and_after_its_first_commit(tmp_path):
    kb = tmp_path / "kb"
    assert run_kb("init", str(kb)).code == 0
    before = run_kb("lint", "--root", str(kb))
    assert before.code == 0, before.err
    init_repo(kb)
    commit_all(kb, "Create knowledge base")
    for args in (("lint",), ("lint", "--staged"), ("raw", "verify")):
        after = run_kb(*args, cwd=kb)
        assert after.code == 0, (args, after.err)
    assert "KB lint passed: 0 raw source(s), 0 wiki page(s)" in run_kb("lint", cwd=kb).out


def test_init_refuses_to_clobber_and_names_every_existing_file(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "KB.md").write_text("my own contract\n")
    (kb / ".pre-commit-config.yaml").write_text("repos: []\n")
    result = run_kb("init", str(kb))
    assert result.code == 2
    assert result.err.startswith("kb: error: refusing to overwrite existing files: KB.md, .pre-commit-config.yaml")
    assert (kb / "KB.md").read_text() == "my own contract\n"
    assert not (kb / "src").exists() and not (kb / ".gitignore").exists()


def test_init_force_creates_only_the_missing_pieces(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "KB.md").write_text("my own contract\n")
    result = run_kb("init", str(kb), "--force")
    assert result.code == 0, result.err
    assert (kb / "KB.md").read_text() == "my own contract\n"
    assert "kept    KB.md (exists)" in result.out
    assert all((kb / rel).is_file() for rel in SCAFFOLD_FILES)


def test_init_appends_agent_folder_to_an_existing_gitignore_once(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / ".gitignore").write_text("node_modules/")  # no final newline
    assert run_kb("init", str(kb)).code == 0
    assert (kb / ".gitignore").read_text().splitlines()[0] == "node_modules/"
    assert (kb / ".gitignore").read_text().splitlines().count(".agent/") == 1
    assert run_kb("init", str(kb), "--force").code == 0
    assert (kb / ".gitignore").read_text().splitlines().count(".agent/") == 1


def test_init_in_current_folder_with_other_locale(tmp_path):
    kb = init_repo(tmp_path / "kb")
    result = run_kb("init", "--locale", "zh-cn", cwd=kb)
    assert result.code == 0, result.err
    assert (kb / "src/content/information/zh-cn/kb-index.md").is_file()
    assert "`src/content/raw/<locale>/<slug>.md`" in (kb / "KB.md").read_text()
    assert "The canonical locale is `zh-cn`" in (kb / "KB.md").read_text()
    assert run_kb("lint", cwd=kb).code == 0


def test_init_takes_the_folder_as_root_option_like_every_command(tmp_path):
    result = run_kb("init", "--root", str(tmp_path / "kb"), "--local-hooks")
    assert result.code == 0, result.err
    assert (tmp_path / "kb" / "KB.md").is_file()
    assert run_kb("lint", "--root", str(tmp_path / "kb")).code == 0
    both = run_kb("init", str(tmp_path / "a"), "--root", str(tmp_path / "b"))
    assert both.code == 2 and both.err.startswith("kb: error: give the folder as DIR or --root")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.parametrize("locale", ["EN", "en/../x", "", "e"])
def test_init_rejects_a_malformed_locale(tmp_path, locale):
    result = run_kb("init", str(tmp_path / "kb"), "--locale", locale)
    assert result.code == 2 and "invalid locale" in result.err
    assert not (tmp_path / "kb" / "KB.md").exists()


def test_local_hooks_config_runs_kb_of_the_environment(tmp_path):
    kb = tmp_path / "kb"
    assert run_kb("init", str(kb), "--local-hooks").code == 0
    repo = _hooks_repo(kb)
    assert repo["repo"] == "local"
    entries = {h["id"]: h["entry"] for h in repo["hooks"]}
    assert entries == {h.id: h.entry for h in scaffold.FRAMEWORK_HOOKS if h.id in scaffold.ENABLED_HOOK_IDS}
    published = {h.id: h.pass_filenames for h in scaffold.FRAMEWORK_HOOKS}
    assert all(h["language"] == "system" and h["pass_filenames"] is published[h["id"]] for h in repo["hooks"])


def test_hooks_repo_and_rev_options_fill_the_remote_config(tmp_path):
    kb = tmp_path / "kb"
    sha = "0123456789abcdef0123456789abcdef01234567"
    result = run_kb("init", str(kb), "--hooks-repo", "https://example.org/kbtools", "--hooks-rev", sha)
    assert result.code == 0, result.err
    repo = _hooks_repo(kb)
    assert (repo["repo"], repo["rev"]) == ("https://example.org/kbtools", sha)
    assert f"run https://example.org/kbtools at {sha}" in result.out


def test_hooks_repo_without_a_rev_is_refused_before_anything_is_written(tmp_path):
    result = run_kb("init", str(tmp_path / "kb"), "--hooks-repo", "https://example.org/kbtools")
    assert result.code == 2 and "give --hooks-repo and --hooks-rev together" in result.err
    assert not (tmp_path / "kb").exists()


@pytest.mark.parametrize(
    ("direct_url", "expected"),
    [
        # PEP 610 (packaging.python.org, "Recording the Direct URL Origin of installed distributions"):
        # `pip install git+https://host/kbtools@<rev>` records the url without `git+` and the commit.
        (
            {"url": "https://host.example/kbtools", "vcs_info": {"vcs": "git", "commit_id": "ab" * 20}},
            scaffold.HooksSource("https://host.example/kbtools", "ab" * 20),
        ),
        ({"url": "file:///src/kbtools", "dir_info": {"editable": True}}, scaffold.LOCAL_HOOKS),
        ({"url": "https://host.example/kbtools-0.1.0.tar.gz", "archive_info": {}}, scaffold.LOCAL_HOOKS),
        # The hooks manifest is at the repository's top: a package in a sub-folder is not a hooks repository.
        (
            {
                "url": "https://host.example/mono",
                "vcs_info": {"vcs": "git", "commit_id": "ab" * 20, "subdirectory": "kb"},
            },
            scaffold.LOCAL_HOOKS,
        ),
        (
            {"url": "https://host.example/kbtools", "vcs_info": {"vcs": "hg", "commit_id": "ab" * 20}},
            scaffold.LOCAL_HOOKS,
        ),
        (None, scaffold.LOCAL_HOOKS),
    ],
)
def test_kb_init_pins_the_hooks_to_the_commit_kbtools_was_installed_from(direct_url, expected):
    assert scaffold.installed_hooks_source(direct_url) == expected


def test_scaffold_hook_list_matches_the_published_hooks_manifest():
    published = YAML(typ="safe").load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())
    assert published == [h.manifest_fields() for h in scaffold.FRAMEWORK_HOOKS]


def test_this_repository_states_the_same_contract_kb_init_writes():
    contract = scaffold.render_kb_md(PathsConfig(), "en")
    assert (REPO_ROOT / "KB.md").read_text(encoding="utf-8").startswith(contract)


def test_this_repository_runs_its_own_hooks_as_local_hooks():
    """The KB hooks are exactly what `kb init --local-hooks` writes; the project's own Python hooks follow them."""
    config = (REPO_ROOT / ".pre-commit-config.yaml").read_text()
    assert config.startswith(scaffold.render_precommit_config(scaffold.LOCAL_HOOKS))
    assert "id: ruff-check" in config[len(scaffold.render_precommit_config(scaffold.LOCAL_HOOKS)) :]


def test_init_of_a_kb_inside_an_existing_repository_keeps_its_history(tmp_path):
    repo = init_repo(tmp_path / "repo")
    (repo / "README.md").write_text("project\n")
    commit_all(repo, "first")
    assert run_kb("init", cwd=repo).code == 0
    assert git(repo, "log", "--oneline").count("\n") == 1
    assert "KB.md" in git(repo, "status", "--porcelain")


def test_this_repository_is_a_knowledge_base_that_lints_clean():
    result = run_kb("lint", "--root", str(REPO_ROOT))
    assert result.code == 0, result.err
    assert result.out.startswith("KB lint passed: ")
    verify = run_kb("raw", "verify", "--root", str(REPO_ROOT))
    assert verify.code == 0, verify.err


@pytest.mark.skipif(not (REPO_ROOT / ".git").exists(), reason="needs this project as a git checkout")
def test_this_repositorys_whole_history_lints_clean():
    """What CI should run: every commit since the first, so no raw edit hides behind a re-blessed manifest."""
    first = git(REPO_ROOT, "rev-list", "--max-parents=0", "HEAD").split()[0]
    result = run_kb("lint", "--since", first, "--root", str(REPO_ROOT))
    assert result.code == 0, result.err


def test_configuration_doc_lists_every_kb_yaml_key_with_its_default(tmp_path):
    """docs/configuration.md's `.kb.yaml` block, loaded as a config, equals the defaults (plus canonical_locale)."""

    from kbtools.config import Config, load_config

    section = (REPO_ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    block = section[section.index("```yaml\n") + 8 : section.index("```", section.index("```yaml\n") + 8)]
    (tmp_path / ".kb.yaml").write_text(block, encoding="utf-8")
    documented = load_config(tmp_path)
    defaults = Config(root=tmp_path)
    assert documented.canonical_locale == "en"
    for section in Config._fields:
        if section in ("root", "source", "canonical_locale"):
            continue
        assert getattr(documented, section) == getattr(defaults, section), section
        for key in getattr(defaults, section)._fields:
            if (section, key) == ("ingest", "locations"):
                continue  # the keys each reader declares (ingest.gemini_dir, ...): documented in their own table
            assert f"  {key}:" in block, f"{section}.{key} is not documented"


def test_init_below_the_top_of_a_repository_says_how_to_reach_the_kb(tmp_path):
    repo = init_repo(tmp_path / "repo")
    result = run_kb("init", "docs/kb", cwd=repo)
    assert result.code == 0, result.err
    assert "--root docs/kb" in result.out
    assert run_kb("lint", "--root", "docs/kb", cwd=repo).code == 0


def test_a_kb_below_the_top_of_a_repository_is_found_from_any_folder_inside_it(tmp_path):
    repo = init_repo(tmp_path / "repo")
    assert run_kb("init", "docs/kb", cwd=repo).code == 0
    kb = repo / "docs" / "kb"
    (kb / "scripts").mkdir()
    (kb / "scripts" / "KB.md").write_text("a KB.md without the layout beside it: not a root\n")
    (repo / "docs" / "other").mkdir()
    for folder in (kb, kb / "src" / "content" / "raw", kb / "scripts"):
        result = run_kb("lint", cwd=folder)
        assert result.code == 0 and "lint passed" in result.out + result.err, (folder, result.err)
    # Outside it the top of the repository is the root, as before: not a knowledge base.
    for folder in (repo, repo / "docs" / "other"):
        assert run_kb("lint", cwd=folder).code == 1, folder
    assert run_kb("lint", "--root", "docs/kb", cwd=repo).code == 0


def test_a_kb_yaml_marks_a_kb_root_and_the_walk_stops_at_the_top_of_the_repository(tmp_path):
    outer = tmp_path / "outer"
    assert run_kb("init", str(outer)).code == 0
    repo = init_repo(outer / "vendored")  # a repository of its own inside a KB folder
    assert run_kb("lint", cwd=repo).code == 1  # its top is not a KB; the KB above it is not taken
    kb = repo / "kb"
    assert run_kb("init", str(kb)).code == 0
    (kb / "KB.md").unlink()
    (kb / ".kb.yaml").write_text("ingest:\n  jobs: 1\n")
    (kb / "notes").mkdir()
    result = run_kb("lint", cwd=kb / "notes")
    assert result.code == 0, result.err
