"""The assignment grammar, the name model and the benign model (issue 13 families 1, 3, 4, 5;
issue 14 item 3).

The syntaxes are those gitleaks' semi-generic rules accept between identifier and secret
(gitleaks/gitleaks cmd/generate/config/utils/generate.go, `=`, `:`, `:=`, `::=`, `?=`, `=>`,
`,`) plus what its rule samples plant secrets in (Go `var … string =`, PHP `.=`, XML
`<add key=… value=…/>` from nuget-config-password, `System.setProperty`). Secrets are
generated at test time; no literal secret is committed.
"""

from __future__ import annotations

import json
import random

import pytest

from kbtools.redact import find_secrets, redact
from kbtools.redact.checks import is_benign, name_holds_key_material, name_is_metadata, name_words
from kbtools.redact.grammar import (
    CSHARP_VERBATIM_EXAMPLE,
    SYNTAXES,
    XML_ELEMENT_EXAMPLE,
    YAML_TAG_EXAMPLE,
)
from tests.testing.secrets import ALNUM, rand, surviving_fragments

NAMES = ("apiToken", "X_TOKEN", "api_key", "Password", "client_secret", "credentials", "SIGNING_KEY")


def _value(seed: object) -> str:
    return rand(random.Random(str(seed)), ALNUM, 28)


@pytest.mark.parametrize("syntax", SYNTAXES, ids=[s.id for s in SYNTAXES])
@pytest.mark.parametrize("name", NAMES)
def test_every_syntax_of_the_grammar_binds_a_secret_to_its_name(syntax, name):
    value = _value((syntax.id, name))
    text = syntax.example.format(name=name, value=value)
    out = redact(text).text
    assert value not in out, f"{syntax.id}: {out!r}"
    assert name in out, "the key stays"
    hits = find_secrets(text)
    assert hits and text[hits[0].start : hits[0].end] == value, "the span is the whole value, nothing else"


@pytest.mark.parametrize(
    "example", [XML_ELEMENT_EXAMPLE, YAML_TAG_EXAMPLE, CSHARP_VERBATIM_EXAMPLE], ids=["xml", "yaml-tag", "csharp"]
)
def test_element_tag_and_verbatim_forms(example):
    value = _value(example)
    text = example.format(name="apiToken", value=value)
    out = redact(text).text
    assert value not in out and "apiToken" in out
    if example is YAML_TAG_EXAMPLE:
        assert out == "apiToken: !!binary <REDACTED_TOKEN>", "the tag stays, the value goes"
    if example is CSHARP_VERBATIM_EXAMPLE:
        assert out == 'var apiToken = @"<REDACTED_TOKEN>";'


def test_a_comparison_with_a_bare_word_is_code_and_with_a_literal_a_secret():
    value = _value("cmp")
    assert redact("if token == expected_token:").text == "if token == expected_token:"
    assert value not in redact(f'if (api_key == "{value}") {{').text


@pytest.mark.parametrize(
    "name", ["credentials", "creds", "login", "passphrase", "private_key", "signing_key", "master_key", "STRIPE_KEY"]
)
def test_secret_names(name):
    value = _value(name)
    assert value not in redact(f"{name}: {value}").text


def test_bundler_and_sonar_credentials():
    rng = random.Random(3)
    pair = rand(rng, "0123456789abcdef", 8) + ":" + rand(rng, "0123456789abcdef", 8)
    assert redact(f"BUNDLE_GEMS__CONTRIBSYS__COM={pair}").text == "BUNDLE_GEMS__CONTRIBSYS__COM=<REDACTED_PASSWORD>"
    sonar = rand(rng, "0123456789abcdef", 40)
    assert sonar not in redact(f"sonar.login={sonar}").text


def test_the_name_decides_whether_a_hex_value_is_a_secret():
    digest = rand(random.Random(5), "0123456789abcdef", 64)
    for name in ("ENCRYPTION_KEY", "signing_key", "MASTER_KEY", "api_token", "AES_KEY"):
        assert digest not in redact(f"{name}={digest}").text, name
    for name in ("sha256", "digest", "checksum", "commit", "etag", "cache_key", "content_hash", "integrity"):
        assert redact(f"{name}={digest}").text == f"{name}={digest}", name


def test_name_model():
    assert name_words("maxPasswordAgeDays") == ("max", "password", "age", "days")
    assert name_words("X25519.secret_length") == ("x", "25519", "secret", "length")
    assert name_is_metadata("password_min_length") and name_is_metadata("TOKEN_FILE")
    assert not name_is_metadata("DB_PASSWORD")
    assert name_holds_key_material("ENCRYPTION_KEY") and not name_holds_key_material("cache_key")


# --- full spans --------------------------------------------------------------------------


def test_scheme_words_stay_and_the_whole_credential_goes():
    credential = "fm2_" + rand(random.Random(1), ALNUM + "+/", 120) + "=="
    for scheme in ("FlyV1", "Api-Token", "Bearer", "Token"):
        out = redact(f"Authorization: {scheme} {credential}").text
        assert out == f"Authorization: {scheme} <REDACTED_TOKEN>", out


@pytest.mark.parametrize("inner", ["\\", "=", "{", "}"])
def test_a_value_span_does_not_stop_at_backslash_equals_or_brace(inner):
    left, right = _value(("l", inner))[:10], _value(("r", inner))[:10]
    out = redact(f"password={left}{inner}{right} next").text
    assert left not in out and right not in out and out.endswith(" next")


def test_every_occurrence_of_a_known_secret_goes():
    value = _value("echo")
    text = f"export DB_PASSWORD={value}\n$ echo $DB_PASSWORD\n{value}\nlog: connecting with {value}."
    out = redact(text).text
    assert value not in out and out.count("<REDACTED_PASSWORD>") == 3
    assert [text[h.start : h.end] for h in find_secrets(text)] == [value] * 3


def test_an_echoed_number_is_not_chased_into_json():
    text = json.dumps({"password": -1000002, "n": -1000002})
    assert json.loads(redact(text).text)["n"] == -1000002


# --- the benign model -----------------------------------------------------------------------

BENIGN = [
    # placeholders
    "token: XXXX",
    "GITHUB_TOKEN=" + "gh" + "p_" + "x" * 36,
    "api_key: <your-token>",
    "password: ${VAR}",
    "password: {{ secret }}",
    "password: changeme",
    "password=${DB_PASSWORD:123456}",
    'url: "jdbc:mysql://root:${DB_PASSWORD:123456}@db.example.com:3306/app"',
    "spring.datasource.password=${DB_PASSWORD:123456}",
    "aws_access_key_id = AK" + "IAIOSFODNN7" + "EXAMPLE",
    # code references and language constants
    "password = var.db_password",
    "secret_len = X25519.secret_length",
    "key_size = PdfEncryptionKeySize.Key128Bit",
    "token = access_token",
    'public static final String PASSWORD = "password";',
    "tokenType = TokenType.IDENTIFIER",
    'label = t("password", "Your password")',
    # password policy and metadata
    "password_min_length=12",
    "max_password_age_days = 90",
    "PASSWORD_HISTORY: 5",
    "token_expires_in: 3600",
    "secret_name: db-credentials",
    # regular expressions
    'PASSWORD_REGEX = "^(?=.*[A-Z])(?=.*\\d).{8,}$"',
    "password_pattern: '^[a-zA-Z0-9]{8,32}$'",
    # command lines
    "docker run --user 1000:1000 img",
    "docker run -u 1000:1000 img",
    "curl -u username:token https://api.example.com/x",
    "curl -u user:password https://api.example.com/x",
    # package specs
    "npm i pkg@npm:^2.0.0",
    '"lodash": "npm:lodash@4.17.21", "alias": "x@npm:^1.0.0"',
    # fetch options
    "fetch(url, { credentials: 'include' })",
]


@pytest.mark.parametrize("text", BENIGN)
def test_benign_text_is_left_alone(text):
    assert redact(text).text == text
    assert find_secrets(text) == []


REAL = [
    ("mysql -u root -p{v} shop", "mysql"),
    ("sshpass -p '{v}' ssh deploy", "sshpass"),
    ("curl -u admin:{v} https://api.example.com", "curl"),
    ("psql --password {v}", "psql"),
    ("DB_PASSWORD={v}", "dotenv"),
]


@pytest.mark.parametrize(("template", "label"), REAL, ids=[r[1] for r in REAL])
def test_a_password_on_a_command_line_is_real(template, label):
    value = _value(label)
    out = redact(template.format(v=value)).text
    assert not surviving_fragments(value, out, width=8), out


def test_benign_model_directly():
    assert is_benign("${DB_PASSWORD:123456}", "password")
    assert is_benign("12", "password_min_length")
    assert not is_benign(_value("x"), "password")
    assert not is_benign("12345678", "password"), "a weak password is still a password"
