"""CI: `kb lint --format sarif` (code scanning), the GitHub Action (`action.yml`), and how a
framework hook reads the mode pre-commit runs it in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from kbtools.lint.history import LintMode
from kbtools.lint.hookmode import framework_mode
from kbtools.lint.problem import CHECKS
from tests.testing.cli import run_kb
from tests.testing.gitrepo import git
from tests.testing.kbfactory import MANIFEST, Kb, make_kb, rebless_raw_edit

REPO_ROOT = Path(__file__).resolve().parents[1]


def _reblessed_raw_edit(kb: Kb) -> str:
    rebless_raw_edit(kb)
    return kb.commit("touch up the evidence")


# --- SARIF -------------------------------------------------------------------------------


def _check_sarif_shape(log: dict) -> None:
    """The properties SARIF 2.1.0 requires and GitHub code scanning reads (docs.github.com,
    "SARIF support for code scanning"; OASIS sarif-v2.1.0 §3.13 sarifLog, §3.14 run, §3.19 tool,
    §3.27 result, §3.28 location, §3.30 region: startLine >= 1)."""
    assert log["version"] == "2.1.0" and isinstance(log["$schema"], str)
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "kb" and driver["version"]
    rule_ids = [rule["id"] for rule in driver["rules"]]
    assert len(rule_ids) == len(set(rule_ids)) and set(rule_ids) == set(CHECKS)
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"] and rule["defaultConfiguration"]["level"] == "error"
    for result in run["results"]:
        assert result["ruleId"] in rule_ids and rule_ids[result["ruleIndex"]] == result["ruleId"]
        assert result["message"]["text"] and result["level"] in ("none", "note", "warning", "error")
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"] and not physical["artifactLocation"]["uri"].startswith("/")
        assert physical["region"]["startLine"] >= 1
        (print_,) = result["partialFingerprints"].values()
        assert len(print_) == 64


def test_sarif_report_names_each_problem_with_its_rule_file_and_line(tmp_path):
    kb = make_kb(tmp_path / "kb", locale="en")
    base = kb.head()
    edit = _reblessed_raw_edit(kb)
    result = run_kb("lint", "--since", base, "--format", "sarif", cwd=kb.root)
    assert result.code == 1
    log = json.loads(result.out)
    _check_sarif_shape(log)
    results = {r["ruleId"]: r for r in log["runs"][0]["results"]}
    assert set(results) == {"raw-snapshot-changed", "raw-manifest-rewritten"}  # the edit, and the re-blessing
    found = results["raw-snapshot-changed"]
    assert found["message"]["text"] == (
        f"raw snapshot changed or deleted: M\tsrc/content/raw/en/source-1.md (commit {edit[:12]})"
    )
    assert found["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/content/raw/en/source-1.md"
    rewritten = results["raw-manifest-rewritten"]["locations"][0]["physicalLocation"]
    assert rewritten["artifactLocation"]["uri"] == MANIFEST


def test_sarif_report_of_a_clean_kb_has_every_rule_and_no_result(tmp_path):
    kb = make_kb(tmp_path / "kb", locale="en")
    result = run_kb("lint", "--format", "sarif", cwd=kb.root)
    assert result.code == 0, result.err
    log = json.loads(result.out)
    _check_sarif_shape(log)
    assert log["runs"][0]["results"] == []


# --- the GitHub Action ----------------------------------------------------------------------


def _action() -> dict:
    return YAML(typ="safe").load((REPO_ROOT / "action.yml").read_text())


def test_action_is_a_composite_action_whose_steps_name_their_shell():
    """GitHub's metadata syntax for composite actions: `runs.using: composite`, and every `run` step
    states its `shell` (docs.github.com, "Metadata syntax for GitHub Actions")."""
    action = _action()
    assert action["name"] and action["description"]
    assert action["runs"]["using"] == "composite"
    for step in action["runs"]["steps"]:
        assert "uses" in step or step.get("shell") == "bash"
    assert {"since", "root", "sarif-file"} <= set(action["inputs"])


def _run_lint_step(kb: Kb, tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """The action's `kb lint` step, run as GitHub runs it: bash with the step's env (no pip, no setup-python)."""
    (step,) = [s for s in _action()["runs"]["steps"] if s.get("id") == "lint"]
    output = tmp_path / "github-output"
    output.write_text("")
    step_env = {"KB_SINCE": "", "KB_ROOT": ".", "KB_SARIF": "", "PR_BASE": "", "PUSH_BEFORE": "", **env}
    proc = subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        cwd=kb.root,
        env={
            **os.environ,
            **step_env,
            "GITHUB_OUTPUT": str(output),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        },
        text=True,
        capture_output=True,
        timeout=300,
    )
    return proc, output.read_text()


def test_action_lints_every_commit_of_the_pushed_range_with_annotations(tmp_path):
    kb = make_kb(tmp_path / "kb", locale="en")
    before = kb.head()
    edit = _reblessed_raw_edit(kb)
    sarif = tmp_path / "kb.sarif"
    proc, output = _run_lint_step(kb, tmp_path, PUSH_BEFORE=before, KB_SARIF=str(sarif))
    assert proc.returncode == 1, proc.stderr
    annotations = proc.stdout.splitlines()
    assert annotations[0] == (
        f"::error file=src/content/raw/en/source-1.md::raw snapshot changed or deleted: M\tsrc/content/raw/en/"
        f"source-1.md (commit {edit[:12]})"
    )
    assert annotations[1].startswith(f"::error file={MANIFEST}::raw manifest rewritten: ") and len(annotations) == 2
    assert output == f"since={before}\n"
    _check_sarif_shape(json.loads(sarif.read_text()))


def test_action_checks_the_whole_history_when_the_base_is_not_in_the_clone(tmp_path):
    """A new branch's push event has an all-zero `before`; a shallow clone lacks the base."""
    kb = make_kb(tmp_path / "kb", locale="en")
    _reblessed_raw_edit(kb)
    for before in ("0" * 40, "1234567" * 5 + "12345"):
        proc, output = _run_lint_step(kb, tmp_path, PUSH_BEFORE=before)
        assert proc.returncode == 1 and "raw snapshot changed or deleted" in proc.stdout, proc.stderr
        assert output == "since=\n"


# --- which mode a framework hook runs in ---------------------------------------------------------


@pytest.mark.parametrize(
    ("environ", "files", "staged", "expected"),
    [
        # git commit: pre-commit passes the staged files.
        ({}, ["a.md"], ["a.md", "b.md"], LintMode(staged=True)),
        ({}, [], ["gone.md"], LintMode(staged=True)),  # a deletion: no file passed
        # pre-commit run --all-files (pre-commit.ci): every tracked file, nothing or something else staged.
        ({}, ["a.md", "b.md"], [], LintMode(whole=True)),
        ({}, ["a.md", "b.md"], ["a.md"], LintMode(whole=True)),
        # pre-push: the pushed range (pre_commit/commands/run.py sets both variables).
        ({"PRE_COMMIT_FROM_REF": "abc", "PRE_COMMIT_TO_REF": "def"}, ["a.md"], [], LintMode(since="abc", until="def")),
        # pre-push of a branch with its root commit: pre-commit runs --all-files for that branch.
        ({"PRE_COMMIT_LOCAL_BRANCH": "refs/heads/new"}, ["a.md"], [], LintMode(whole=True, until="refs/heads/new")),
    ],
)
def test_a_framework_hook_reads_its_mode_from_what_pre_commit_passes(environ, files, staged, expected):
    assert framework_mode(environ, files, staged) == expected


def test_kb_lint_all_checks_every_commit_and_every_file(tmp_path):
    kb = make_kb(tmp_path / "kb", locale="en")
    _reblessed_raw_edit(kb)
    assert run_kb("lint", cwd=kb.root).code == 0  # the tip alone is consistent
    result = run_kb("lint", "--all", cwd=kb.root)
    assert result.code == 1 and "raw snapshot changed or deleted: M\tsrc/content/raw/en/source-1.md" in result.err
    assert git(kb.root, "status", "--porcelain") == ""
