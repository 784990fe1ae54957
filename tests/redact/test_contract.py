"""The reference contract test, and each reference false positive and false negative by name.

Sensitive values are assembled from pieces (as the reference test does) so no line of
this file is a secret-shaped literal.
"""

from __future__ import annotations

import json
import os
import random

import pytest

from kbtools.config import RedactionConfig
from kbtools.redact import PLACEHOLDERS, Redactor, redact
from tests.testing.secrets import make_secret

join = "".join


def test_redacts_credentials_identity_hosts_paths_and_private_repositories():
    alice = os.path.join("/home", "alice")
    openai_key = join(["sk-", "a" * 16])
    github_token = join(["gh", "p_", "b" * 16])
    sensitive = [
        openai_key,
        github_token,
        "opaque-value",
        "hunter2",
        "dsn-password",
        "redis-password",
        "json-password",
        "json-cookie",
        "json-api-key",
        "api-escaped",
        "token-escaped",
        "password-escaped",
        "alice",
        "db.internal",
        "192.168.1.2",
        "::1",
        "fe80::1",
        "fd00::42",
        "localhost",
        "buildbox",
        "architecture-review-output",
        "private-repo",
        "corp-fs",
        ".config/app",
        ".omp/store",
        "user:pass",
        "private/repo",
        "db.example",
    ]
    text = "\n".join(
        [
            "OPENAI_API_KEY=" + openai_key,
            "APP_TOKEN=" + github_token,
            "NPM_TOKEN=opaque-value",
            "NACOS_PASSWORD=hunter2",
            "postgres://dbuser:" + "dsn-password@db.example/app",
            "redis://:" + "redis-password@localhost:6379/0",
            json.dumps({"password": "json-password", "cookie": "json-cookie", "api_key": "json-api-key"}),
            json.dumps({"api_key": 'api-"escaped', "token": 'token-"escaped', "password": 'password-"escaped'}),
            "tokens_saved=42 token_count=10",
            "contact alice" + "@example.com",
            "db.internal",
            "192.168.1.2",
            "::1",
            "fe80::1",
            "fd00::42",
            "中文" + alice + "/app",
            ">" + alice + "/redirect",
            "file:" + alice + "/source",
            "C:\\Users\\alice\\secret",
            "D:\\work\\private-repo",
            "\\\\corp-fs\\private\\file",
            "~/.config/app",
            "path:~/.omp/store",
            "/tmp/architecture-review-output.html",
            "user" + "@buildbox",
            "git" + "@github.com:private/repo.git",
            "https://user:" + "pass@github.com/private/repo.git",
        ]
    )
    result = redact(text)
    for placeholder in PLACEHOLDERS:
        assert placeholder in result.text
    assert set(result.labels) == set(PLACEHOLDERS)
    for value in sensitive:
        assert value not in result.text, value
    assert "tokens_saved=42 token_count=10" in result.text


def test_reference_output_is_idempotent():
    once = redact("APP_TOKEN=" + join(["gh", "p_", "c" * 20]) + " at /home/bob/x and bob" + "@example.com")
    twice = redact(once.text)
    assert twice.text == once.text and twice.labels == ()


# --- reference false positives (anchor §4.1 "False positives", §8 item 19) -------------------


@pytest.mark.parametrize(
    "spec", ["astro@latest", "vitest@3", "react@18.2.0", "@types/node@20.11.5", "actions/checkout@v4", "eslint@next"]
)
def test_package_at_version_is_not_an_email(spec):
    assert redact(f"npm i {spec}").text == f"npm i {spec}"


@pytest.mark.parametrize("path", ["/usr/bin/env", "/etc/hosts", "/opt/homebrew/bin/python3", "/proc/self/status"])
def test_well_known_system_path_is_not_private(path):
    assert redact(f"#!{path} python3 and {path}").text == f"#!{path} python3 and {path}"


def test_fcab_colon_number_is_not_a_private_host():
    assert redact("offset fcab:12 in the dump").text == "offset fcab:12 in the dump"


def test_key_colon_slash_value_is_not_a_path():
    assert redact("key:/value").text == "key:/value"


def test_json_keeps_its_structure_and_key_names():
    record = {
        "password": "p4ss-" + "word",
        "cookie": "sid=" + "x9" * 8,
        "api_key": "k3y-" + "z" * 12,
        "service": "wiki",
        "retries": 3,
    }
    redacted = json.loads(redact(json.dumps(record)).text)
    assert redacted == {
        "password": "<REDACTED_PASSWORD>",
        "cookie": "<REDACTED_TOKEN>",
        "api_key": "<REDACTED_API_KEY>",
        "service": "wiki",
        "retries": 3,
    }


def test_variable_names_are_kept_not_replaced_by_generic_ones():
    assert redact("GITHUB_TOKEN=opaque-value").text == "GITHUB_TOKEN=<REDACTED_TOKEN>"
    assert redact("NACOS_PASSWORD=hunter2").text == "NACOS_PASSWORD=<REDACTED_PASSWORD>"


def test_bearer_header_is_not_swallowed_into_a_generic_assignment():
    token = make_secret("high-entropy-secret", 1).replace("/", "_").replace("+", "-")
    assert redact(f"Authorization: Bearer {token}").text == "Authorization: Bearer <REDACTED_TOKEN>"


# --- reference false negatives (anchor §8 item 20) ---------------------------------------


@pytest.mark.parametrize(
    "family",
    [
        "jwt",
        "google-api-key",
        "npm",
        "stripe",
        "github-fine-grained",
        "gitlab",
        "slack-app",
        "anthropic",
        "openai-project",
    ],
)
def test_bare_token_outside_an_assignment_is_caught(family):
    secret = make_secret(family, random.Random(family))
    result = redact(f"the value was {secret} yesterday")
    assert secret not in result.text and result.labels


def test_bare_jwt_is_caught():
    secret = make_secret("jwt", 3)
    assert redact(f"copy {secret}").text == "copy <REDACTED_TOKEN>"


def test_bare_google_key_is_caught():
    secret = make_secret("google-api-key", 4)
    assert redact(f"maps key {secret}.").text == "maps key <REDACTED_API_KEY>."


def test_bare_npm_token_is_caught():
    secret = make_secret("npm", 5)
    assert redact(f"//registry.npmjs.org/:_authToken={secret}").text.endswith("=<REDACTED_TOKEN>")


def test_bare_stripe_key_is_caught():
    secret = make_secret("stripe", 6)
    assert redact(f"charge with {secret}").text == "charge with <REDACTED_API_KEY>"


def test_unrecognised_value_under_a_secret_looking_name_is_caught_by_entropy():
    secret = make_secret("high-entropy-secret", 7)
    assert secret not in redact(f"AWS_SECRET_ACCESS_KEY={secret}").text
    assert secret not in redact(f'"signing_key": "{secret}"').text


def test_login_at_host_outside_a_path_is_caught():
    assert redact("ssh deploy" + "@buildbox").text == "ssh <PRIVATE_EMAIL>"


def test_public_ip_is_caught():
    assert redact("ssh to 203.0.114.7 and 2a00:1450:4001:80b::200e").text == "ssh to <PRIVATE_HOST> and <PRIVATE_HOST>"
    assert redact("resolver 8.8.8.8, doc range 192.0.2.1").text == "resolver 8.8.8.8, doc range 192.0.2.1"


def test_internal_hostname_without_a_private_suffix_is_caught():
    assert redact("open http://jenkins:8080/job/x").text == "open http://<PRIVATE_HOST>:8080/job/x"
    config = RedactionConfig(private_domains=("acme-corp.example",))
    assert Redactor(config).redact("db1.eu.acme-corp.example:5432").text == "<PRIVATE_HOST>:5432"


def test_user_name_outside_a_path_is_caught():
    home = os.path.join("/home", "zofia")
    assert redact(f"ran in {home}/wiki; Zofia approved, zofia-laptop").text == (
        "ran in <PRIVATE_PATH>; <PRIVATE_EMAIL> approved, <PRIVATE_EMAIL>-laptop"
    )
    config = RedactionConfig(private_names=("Kowalski",))
    assert Redactor(config).redact("reviewed by B. Kowalski").text == "reviewed by B. <PRIVATE_EMAIL>"


def test_the_account_running_kb_is_a_private_name(monkeypatch):
    from kbtools.redact.checks import local_account

    for var in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.setenv(var, "marguerite")
    local_account.cache_clear()
    try:
        assert redact("marguerite ran the migration").text == "<PRIVATE_EMAIL> ran the migration"
    finally:
        local_account.cache_clear()


def test_generic_account_names_are_not_private_names():
    assert (
        redact("cd /home/runner/work; the runner and root user").text == "cd <PRIVATE_PATH>; the runner and root user"
    )


def test_redacted_output_does_not_depend_on_the_machine_account():
    """The suite pins the account to a generic one, so no test's output changes with whoever runs it."""
    from kbtools.redact.checks import _is_private_name, local_account

    assert local_account() == "runner" and not _is_private_name(local_account())
    for account in ("root", "runner", "ubuntu", "vscode", "agent", "codespace"):
        assert not _is_private_name(account), f"{account} is a generic account, never a person's name"


def test_container_default_account_in_a_home_path_is_not_a_name_everywhere():
    home = os.path.join("/home", "agent")
    assert redact(f"cd {home}/app; the agent ran the tests").text == "cd <PRIVATE_PATH>; the agent ran the tests"


def test_dotted_versions_survive_and_a_public_address_is_redacted():
    address = ".".join(["203", "0", "114", "7"])
    text = f"bump 1.2.3 to v1.2.3.4, then 1.2.3.4rc1, 1.2.3.4-beta.2 and 1.2.3.4+build.7; react@18.2.0; ssh {address}"
    assert redact(text).text == (
        "bump 1.2.3 to v1.2.3.4, then 1.2.3.4rc1, 1.2.3.4-beta.2 and 1.2.3.4+build.7; react@18.2.0; ssh <PRIVATE_HOST>"
    )
    # A bare four-part number is indistinguishable from an address: a public one is redacted (reference §8
    # item 20 counts public addresses as a false negative of the reference).
    assert redact("1.2.3.4").text == "<PRIVATE_HOST>"
