"""find_secrets: credentials only, full spans, placeholders and the allow pragma respected."""

from __future__ import annotations

import random

from kbtools.redact import ALLOW_PRAGMA, find_secrets
from tests.testing.secrets import make_secret


def test_identity_host_and_path_are_not_secrets():
    text = "bob" + "@example.com on db.internal at 10.0.0.2 in /home/bob/x, git" + "@github.com:org/repo.git"
    assert find_secrets(text) == []


def test_credentials_are_reported_with_their_kind_and_full_span():
    token = make_secret("github-classic", 1)
    text = f"export GH_CLI_VALUE={token}\npassword: hunter2"
    hits = find_secrets(text)
    assert [(text[h.start : h.end], h.kind) for h in hits] == [
        (token, "github-token"),
        ("hunter2", "password-assignment"),
    ]


def test_placeholders_are_not_secrets():
    text = "token: <YOUR_TOKEN>\nAPI_KEY=<REDACTED_API_KEY>\npassword=<REDACTED_PASSWORD>\nBearer <REDACTED_TOKEN>"
    assert find_secrets(text) == []


def test_redacted_text_has_no_secrets_left():
    from kbtools.redact import redact

    rng = random.Random(9)
    text = " ".join(make_secret(f, rng) for f in ("jwt", "npm", "aws-access-key-id", "private-key"))
    assert find_secrets(text)
    assert find_secrets(redact(text).text) == []


def test_allow_pragma_marks_a_deliberate_example_on_its_line_only():
    token = make_secret("gitlab", 2)
    text = f"example: {token}  <!-- {ALLOW_PRAGMA} -->\nreal: {token}\n"
    hits = find_secrets(text)
    assert len(hits) == 1 and hits[0].start > text.index("\n")


def test_allow_pragma_does_not_stop_redaction():
    from kbtools.redact import redact

    token = make_secret("gitlab", 3)
    assert token not in redact(f"{token} # {ALLOW_PRAGMA}").text
