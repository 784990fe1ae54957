"""Check 16 (`kb lint --only secrets`, hook `kb-no-secrets`): credentials in added or changed
raw and note lines, in a real git repository; the secret itself is never printed."""

from __future__ import annotations

import random

import pytest

from kbtools.lint.problem import Problem
from kbtools.lint.secrets import secret_problems
from kbtools.redact import ALLOW_PRAGMA
from tests.testing.cli import run_kb
from tests.testing.kbfactory import make_kb
from tests.testing.secrets import make_secret


@pytest.fixture
def kb(tmp_path):
    return make_kb(tmp_path / "kb")


def _note_with(kb, slug, line):
    path = kb.add_note(slug, body=f"# {slug}\n\nIntro.\n\n{line}\n")
    number = path.read_text(encoding="utf-8").splitlines().index(line) + 1
    return path, f"{path.relative_to(kb.root).as_posix()}:{number}"


def test_secret_in_an_uncommitted_note_is_reported_by_file_line_and_kind(kb):
    token = make_secret("github-classic", 1)
    _, where = _note_with(kb, "leaky", f"use GH_CLI_VALUE={token}")
    result = run_kb("lint", "--only", "secrets", cwd=kb.root)
    assert result.code == 1
    assert result.err == f"KB lint failed (1 issue)\n- secret in {where} (github-token)\n"
    assert token not in result.out + result.err


def test_staged_raw_evidence_with_a_secret_fails_the_hook(kb):
    password = make_secret("password", 2)
    path = kb.add_raw("session-dump", body=f"# dump\n\nDB_PASSWORD={password}\n")
    kb.stage(path, kb.manifest)
    result = run_kb("lint", "--staged", "--only", "secrets", "--format", "json", cwd=kb.root)
    assert result.code == 1
    assert "password-assignment" in result.out and password not in result.out


def test_committed_evidence_is_not_flagged_again(kb):
    token = make_secret("slack-bot", 3)
    kb.add_raw("old-session", body=f"# old\n\n{token}\n")
    kb.commit("evidence committed before the hook existed")
    assert run_kb("lint", "--only", "secrets", cwd=kb.root).code == 0
    assert run_kb("lint", "--staged", "--only", "secrets", cwd=kb.root).code == 0


def test_since_flags_every_commit_of_the_range(kb):
    base = kb.head()
    token = make_secret("npm", 4)
    _, where = _note_with(kb, "later", f"registry token {token}")
    kb.commit("a note with a token")
    result = run_kb("lint", "--since", base, "--only", "secrets", cwd=kb.root)
    assert result.code == 1 and f"secret in {where} (npm-token)" in result.err


def test_allow_pragma_and_placeholders_pass(kb):
    token = make_secret("gitlab", 5)
    _note_with(kb, "howto", f"an example token looks like `{token}` <!-- {ALLOW_PRAGMA} -->")
    _note_with(kb, "setup", "export GITHUB_TOKEN=<YOUR_TOKEN> and API_KEY=${API_KEY}")
    assert run_kb("lint", "--only", "secrets", cwd=kb.root).code == 0


def test_identity_hosts_and_paths_are_not_check_16(kb):
    _note_with(kb, "people", "ask bob" + "@example.com about db.internal and /home/bob/project")
    assert run_kb("lint", "--only", "secrets", cwd=kb.root).code == 0


# --- secret_problems directly -------------------------------------------------------------


def test_a_pem_block_over_several_lines_is_one_problem_on_its_first_line():
    pem = make_secret("private-key", random.Random(6)).splitlines()
    lines = list(enumerate(["intro", *pem, "outro"], start=10))
    assert secret_problems([("raw/a.md", lines)]) == [
        Problem(check="secrets", message="secret in raw/a.md:11 (private-key)", path="raw/a.md", line=11)
    ]


def test_problems_are_in_file_and_line_order_and_never_repeat():
    token = make_secret("github-classic", 7)
    changes = [
        ("note/b.md", [(5, f"x {token}"), (2, f"y {token}")]),
        ("note/a.md", [(9, f"z {token}"), (9, f"z {token}")]),
    ]
    assert [(p.path, p.line) for p in secret_problems(changes)] == [
        ("note/a.md", 9),
        ("note/b.md", 2),
        ("note/b.md", 5),
    ]


def test_line_numbers_follow_gaps_between_changed_lines():
    token = make_secret("npm", 8)
    changes = [("n.md", [(1, "intro"), (2, "more"), (40, f"later {token}"), (41, "end")])]
    assert [p.line for p in secret_problems(changes)] == [40]


def test_course_notes_with_secret_look_alikes_lint_clean_and_a_real_password_does_not(kb):
    """Issue 14 item 3: a language constant, a regex, a `${DB_PASSWORD:123456}`-style placeholder
    with a default, a placeholder token and `--user 1000:1000` are not secrets; a password on a
    command line is."""
    look_alikes = [
        'public static final String PASSWORD = "password";',
        'PASSWORD_REGEX = "^(?=.*[A-Z])(?=.*\\d).{8,}$"',
        "spring.datasource.password=${DB_PASSWORD:123456}",
        "GITHUB_TOKEN=" + "gh" + "p_" + "x" * 36,
        "docker run --user 1000:1000 -v data:/data app",
    ]
    for i, line in enumerate(look_alikes):
        _note_with(kb, f"course-{i}", line)
    assert run_kb("lint", "--only", "secrets", cwd=kb.root).code == 0
    password = make_secret("password", 9)
    _, where = _note_with(kb, "mysql-notes", f"mysql -h db -u app -p{password} shop")
    result = run_kb("lint", "--only", "secrets", cwd=kb.root)
    assert result.code == 1 and f"secret in {where} (command-line-password)" in result.err
    assert password not in result.out + result.err
