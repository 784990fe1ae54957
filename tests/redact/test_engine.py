"""What the engine keeps, what it replaces, and how: full spans, once, JSON intact, idempotent."""

from __future__ import annotations

import json
import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbtools.config import RedactionConfig
from kbtools.redact import Redactor, redact
from tests.testing.secrets import SECRET_FAMILIES, SURROUNDINGS, make_secret, plant, surviving_fragments

SURVIVORS = [
    "npm create astro@latest",
    "pnpm add -D vitest@3",
    "react@18.2.0",
    "see https://docs.python.org/3/library/re.html and https://github.com/org/repo/blob/main/x.py",
    "/usr/bin/env python3",
    "/etc/ssl/certs/ca.pem",
    "/opt/venv/bin/pip",
    "/proc/cpuinfo",
    "tokens_saved=42 token_count=10",
    "max_tokens=4096",
    "prompt_tokens: 1200",
    "export API_KEY=${API_KEY}",
    "API_KEY=$API_KEY",
    'key = os.environ["API_KEY"]',
    "const k = process.env.API_KEY",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "password: {{ vault_db_password }}",
    "api_key: <YOUR_TOKEN>",
    "commit 3f2a9c1d4e5b6a7f8091a2b3c4d5e6f708192a3b",
    "id 123e4567-e89b-12d3-a456-426614174000",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "version 1.2.3-beta.4",
    "cache_key: 3f2a9c1d4e5b6a7f8091a2b3c4d5e6f708192a3b",
    "idempotency_key=123e4567-e89b-12d3-a456-426614174000",
    "./relative/path and ../up/one",
    "std::vector<int> and fcab:12",
    "public IP 8.8.8.8",
    "and/or 2024/01/02",
    "logo@2x.png",
    "the token is valid",
    "Basic authentication works",
    "a password is required",
    "see /note/<slug> and <data>/storage/",
]

# Source code that handles secrets without containing one.
CODE_SURVIVORS = [
    "client = Client(api_key=api_key, token=token)",
    "self.token = token",
    "const token = await getToken()",
    'headers = {"Authorization": f"Bearer {token}"}',
    'headers["Authorization"] = "Bearer " + token',
    "password: z.string().min(8)",
    "api_key: SecretStr = Field(default=None)",
    "token: Optional[str] = None",
    'def login(password: str = "") -> None:',
    "secret = get_secret()",
    "TOKEN=$(gh auth token)",
    "if token == expected_token:",
    "def validate(token: CachedLedger, *, strict: bool = False) -> None:",
    "export async function parse(token: MergedSession, opts: Options) {",
    "def f(secret: Secret = None): ...",
]


@pytest.mark.parametrize("text", SURVIVORS)
def test_text_that_is_not_sensitive_survives(text):
    assert redact(text).text == text
    assert redact(text).labels == ()


@pytest.mark.parametrize("code", CODE_SURVIVORS)
def test_code_that_only_handles_a_secret_survives(code):
    assert redact(code).text == code


def test_quoted_authorization_header_keeps_its_scheme_word():
    jwt = make_secret("jwt", 12)
    assert redact(json.dumps({"Authorization": f"Bearer {jwt}"})).text == '{"Authorization": "Bearer <REDACTED_TOKEN>"}'


def test_configured_public_prefix_and_allow_list_are_honoured():
    text = "logs in /data/shared/logs and /home/bob/x, host build.corp and db.corp"
    config = RedactionConfig(public_path_prefixes=("/data/",), allow=("build.corp",))
    assert (
        Redactor(config).redact(text).text
        == "logs in /data/shared/logs and <PRIVATE_PATH>, host build.corp and <PRIVATE_HOST>"
    )


def test_json_number_value_under_a_secret_key_stays_valid_json():
    for text in ['{"password": 12345678, "n": 1}', '{"api_key":987654321}']:
        out = redact(text).text
        assert json.loads(out) != json.loads(text)
        assert "<REDACTED" in out


def test_json_escaped_json_inside_a_json_string_stays_valid():
    inner = {"password": 'p"w\\' + "x7" * 6, "token": "t0k-" + "Q" * 12, "note": "keep me"}
    outer = json.dumps({"content": json.dumps(inner)})
    result = json.loads(json.loads(redact(outer).text)["content"])
    assert result == {"password": "<REDACTED_PASSWORD>", "token": "<REDACTED_TOKEN>", "note": "keep me"}


def test_the_whole_token_is_replaced_never_just_its_prefix():
    token = make_secret("github-classic", 11)
    out = redact(f"use {token} now").text
    assert out == "use <REDACTED_TOKEN> now"


def test_overlapping_hits_become_one_placeholder():
    url = "https://bot:" + "s3cr3t-" + "pw@db.internal:5432/app"
    assert redact(f"DATABASE_PASSWORD={url}").text == "DATABASE_PASSWORD=<REDACTED_PASSWORD>"
    assert redact("see /home/bob/mail/bob" + "@example.com/x").text == "see <PRIVATE_PATH>"


def test_labels_are_in_first_hit_order_without_repeats():
    text = "a@example.com then /home/u/x then b@example.com then password=hunter2"
    assert redact(text).labels == ("<PRIVATE_EMAIL>", "<PRIVATE_PATH>", "<REDACTED_PASSWORD>")


def test_a_pem_block_is_one_span_and_a_truncated_one_is_still_redacted():
    pem = make_secret("private-key", 2)
    body = pem.splitlines()[1]
    assert redact(f"key:\n{pem}\nafter").text == "key:\n<REDACTED_TOKEN>\nafter"
    truncated = "\n".join(pem.splitlines()[:-1])
    assert body not in redact(truncated).text


def test_path_keeps_sentence_punctuation():
    assert redact("It is in /home/bob/notes.").text == "It is in <PRIVATE_PATH>."


def test_non_ascii_lowercase_expansion_falls_back_to_a_full_scan():
    text = "İstanbul APP_TOKEN=opaque-value x"  # "İ".lower() is two characters
    assert redact(text).text == "İstanbul APP_TOKEN=<REDACTED_TOKEN> x"


# --- properties -------------------------------------------------------------------------

_ALPHABET = st.sampled_from(
    list("abcXYZ019 _-=:/@.\\\"'{}\n\t~<>İ中")
    + [
        "token",
        "password",
        "api_key",
        "gh" + "p_",
        "/home/",
        "localhost",
        "::1",
        "@",
        "Bearer ",
        "eyJ",
        "sk-",
        "AKIA",
        "C:\\",
        "\\n",
        "file:",
    ]
)
texts = st.lists(_ALPHABET, max_size=60).map("".join)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_redaction_is_idempotent(text):
    once = redact(text)
    twice = redact(once.text)
    assert twice.text == once.text


@pytest.mark.parametrize("family", sorted(SECRET_FAMILIES))
def test_every_generated_secret_of_a_family_is_redacted_in_every_surrounding(family):
    """A fixed sweep (the property test below samples 40 cases a run): 300 seeds of the
    family in each surrounding. It found a URL-encoded private key and a base64 secret
    starting with `/` that the sampling had missed."""
    missed = []
    for surrounding in sorted(SURROUNDINGS):
        for seed in range(300):
            secret = make_secret(family, random.Random(seed))
            out = redact(plant(secret, surrounding, name=SECRET_FAMILIES[family].name)).text
            if surviving_fragments(secret, out):
                missed.append((surrounding, seed))
    assert not missed


@settings(max_examples=40, deadline=None)
@given(
    family=st.sampled_from(sorted(SECRET_FAMILIES)),
    surrounding=st.sampled_from(sorted(SURROUNDINGS)),
    seed=st.integers(0, 2**32),
)
def test_a_generated_secret_survives_in_no_surrounding(family, surrounding, seed):
    secret = make_secret(family, random.Random(seed))
    text = plant(secret, surrounding, name=SECRET_FAMILIES[family].name)
    out = redact(text).text
    assert not surviving_fragments(secret, out), f"{family} in {surrounding}: {out!r}"
    if surrounding in ("json", "json-in-json"):
        json.loads(out)


@pytest.mark.parametrize("surrounding", sorted(SURROUNDINGS))
@pytest.mark.parametrize("family", sorted(SECRET_FAMILIES))
def test_every_family_in_every_surrounding(family, surrounding):
    """The exhaustive grid, one fixed seed (the property test above varies the secrets)."""
    secret = make_secret(family, random.Random(f"{family}/{surrounding}"))
    out = redact(plant(secret, surrounding, name=SECRET_FAMILIES[family].name)).text
    assert not surviving_fragments(secret, out), out


@pytest.mark.parametrize("family", sorted(SECRET_FAMILIES))
def test_each_family_is_reported_as_its_own_kind(family):
    spec = SECRET_FAMILIES[family]
    secret = make_secret(family, random.Random(family))
    hits = Redactor().find_secrets(f"{spec.name}={secret}")
    assert [h.kind for h in hits] == [spec.kind]
    assert redact(f"{spec.name}={secret}").labels == (spec.placeholder,)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_anchored_rules_find_what_a_full_scan_finds(text):
    """The keyword prefilter and anchored matching find the spans that every rule run over
    the whole text finds. Compared before what ``spans`` adds afterwards for both alike (the
    allow-list, echoes of a value found: ``token=token=token`` echoes ``token=token``)."""
    redactor = Redactor()
    scanned = [
        span for index, rule in enumerate(redactor.rules) for span in redactor._rule_spans(text, None, index, rule)
    ]
    found = redactor._raw_spans(text)
    assert (redactor._merge(found) if found else []) == (redactor._merge(scanned) if scanned else [])


def test_a_value_found_is_redacted_where_it_is_echoed_too():
    """The case the property above met: the assignment's value ``token=token`` stands
    again at the start of the text, and that echo is redacted with it."""
    assert [(s.start, s.end) for s in Redactor().spans("token=token=token")] == [(0, 17)]


# --- hostile input ------------------------------------------------------------------------

ADVERSARIAL = {
    "at-runs": "a@" * 50_000,
    "slashes": "/" * 100_000,
    "quoted-backslashes": '"' + "\\" * 100_000,
    "base64-run": "QUJD" * 25_000,
    "assignment-runs": "token=" * 16_000,
    "pem-headers": "-----BEGIN RSA PRIVATE KEY-----\n" * 3_000,
    "colons": "fd00:" * 20_000,
    "dotted-names": "a.local." * 12_000,
    "xml-element-runs": "<token>" * 14_000,
    "call-argument-runs": '"token", ' * 11_000,
    "yaml-colon-runs": "password: " * 10_000,
    "equals-runs": "=" * 100_000,
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_hostile_input_of_100_kb_is_redacted_in_well_under_a_second(name):
    text = ADVERSARIAL[name]
    started = time.process_time()
    redact(text)
    # Linear work is ~10 ms here; a backtracking blow-up would take minutes. The bench
    # (bench/redact_bench.py) measures the growth from 10 KB to 1 MB.
    assert time.process_time() - started < 2.0


def test_short_bearer_credential_inside_shell_quotes_is_redacted():
    credential = "Ab3" + "xY9kQ2z"  # shorter than the 12 characters the bare Bearer rule needs
    out = redact(f"curl -H 'Authorization: Bearer {credential}' https://api.example.com")
    assert credential not in out.text and "Bearer <REDACTED_TOKEN>'" in out.text


@settings(max_examples=200, deadline=None)
@given(texts)
def test_keyword_index_finds_what_one_by_one_search_finds(text):
    from kbtools.redact.engine import KeywordIndex

    index = Redactor()._keywords
    lower = text.lower()
    assert index._automaton is not None, "ahocorasick-rs is a dependency"
    assert index.present(lower) == {k for k in index.single + index.multi if k in lower}
    fallback = KeywordIndex(index.single + index.multi)
    fallback._automaton = None
    assert fallback.present(lower) == index.present(lower)


_KEYS = st.sampled_from(
    [
        "password",
        "token",
        "api_key",
        "apiKey",
        "cookie",
        "secret",
        "AWS_SECRET_ACCESS_KEY",
        "path",
        "note",
        "user",
        "url",
        "host",
        "Authorization",
    ]
)
_VALUES = st.one_of(
    st.text(alphabet=st.sampled_from(list("ab1Z/\\\\\"' :@.~-_<>{}[],\n\t") + ["中", "\u2028"]), max_size=30),
    st.sampled_from(
        [
            "/home/bob/x",
            "bob@example.com",
            "10.0.0.2",
            "Bearer abcDEF123456789",
            "::1",
            "C:\\Users\\bob",
            "https://u:p@h.example/x",
            "~/.ssh/id_rsa",
            "${TOKEN}",
        ]
    ),
    st.integers(),
    st.booleans(),
    st.none(),
)
_JSON = st.recursive(
    st.dictionaries(_KEYS, _VALUES, max_size=4), lambda inner: st.dictionaries(_KEYS, inner, max_size=3), max_leaves=8
)


@settings(max_examples=300, deadline=None)
@given(_JSON)
def test_valid_json_stays_valid_json_and_keeps_its_keys(document):
    for encoded in (
        json.dumps(document),
        json.dumps(document, ensure_ascii=False),
        json.dumps({"content": json.dumps(document)}),
    ):
        out = redact(encoded).text
        decoded = json.loads(out)
        if encoded.startswith('{"content"'):
            decoded = json.loads(decoded["content"])
        assert _keys(decoded) == _keys(document)


def _keys(node):
    if isinstance(node, dict):
        return {k: _keys(v) for k, v in node.items()}
    return None
