"""The engine's shortcuts give what the long way gives.

The long way: every rule run over the whole text (its regex's ``finditer`` or its finder),
whatever the keywords say. The shortcuts: the keyword prefilter (with the keywords a
configuration adds, and the account check), the cached rule plans, anchored matching with
its separator check. Texts are generated at test time from pieces: assignments in many
syntaxes, prose words that hold a keyword, home paths, names, domains, random values.
"""

from __future__ import annotations

import random
import string

from hypothesis import given, settings
from hypothesis import strategies as st

from kbtools.config import RedactionConfig
from kbtools.redact import Redactor
from kbtools.redact.engine import Span

CONFIG = RedactionConfig(private_names=("Kowalski", "zofia"), private_domains=("acme-corp.example", ".corp.test"))

_NAMES = ["token", "api_key", "PASSWORD", "db_pass", "secret", "AUTH", "signing_key", "sonar.login", "BUNDLE_X__COM"]
_NAMES += ["x-api-key", "-Dsonar.token", "github_token", "datadog_api_key", "key", "pwd", "Cookie", "seed", "login"]
_BINDINGS = [
    "=",
    " = ",
    ": ",
    ":=",
    " += ",
    ".=",
    " |= ",
    " ?= ",
    " => ",
    " == ",
    " != ",
    ", ",
    "]=",
    " string = ",
    '" value="',
    "\n",
    ".",
    "!",
    "?",
    ",",
    " ",
]
_PIECES = st.sampled_from(
    _NAMES
    + _BINDINGS
    + list("\"'`<>/\\()[]{}:;=,.!?-_ \n\tabcXYZ019")
    + ["\\n", '\\"', "<token>", "</token>", "the ", "tests pass. ", "keys.py", "passed, ", "token!"]
    + ["/home/", "/Users/", "C:\\Users\\", "zofia", "Kowalski", "alice", "build.acme-corp.example", "x.corp.test"]
    + ["https://", "://", "@", "localhost", "::1", "10.0.0.", "203.0.114.", "eyJ", "sk-", "gh" + "p_", "AKIA"]
    + ["http://", "redis://", "ftp://bot@", "jenkins", "cache:6379/", "C:/", "d:\\", ":/", ":\\", "x.y"]
)


def _value(seed: int) -> str:
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits
    return "".join(rng.choice(alphabet) for _ in range(rng.choice((4, 12, 24, 40))))


_VALUES = st.integers(0, 10**6).map(_value)
_QUOTES = st.sampled_from(["", "", '"', "'", '\\"'])
# name, binding, value, each maybe quoted: most texts hold a few assignments, some of them real.
_ASSIGNMENTS = st.tuples(_QUOTES, st.sampled_from(_NAMES), _QUOTES, st.sampled_from(_BINDINGS), _QUOTES, _VALUES).map(
    lambda t: t[0] + t[1] + t[0] + t[3] + t[4] + t[5] + t[4]
)
# An XML element whose name holds a keyword: no binding after the name, only `<name>value</`.
_ELEMENTS = st.tuples(st.sampled_from(_NAMES), st.sampled_from(["", " ", "\n  ", ' id="1"']), _VALUES).map(
    lambda t: f"<{t[0]}{t[1]}>{t[1].strip()}{t[2]}</{t[0]}>"
)
texts = st.lists(st.one_of(_PIECES, _VALUES, _ASSIGNMENTS, _ELEMENTS), max_size=40).map("".join)


def _long_way(redactor: Redactor, text: str, secrets_only: bool = False) -> list[Span]:
    found = [
        span
        for index, rule in enumerate(redactor.rules)
        if not secrets_only or rule.is_secret
        for span in redactor._rule_spans(text, None, index, rule)
    ]
    return redactor._merge(found) if found else []


def _short_way(redactor: Redactor, text: str, secrets_only: bool = False) -> list[Span]:
    found = redactor._raw_spans(text, secrets_only)
    return redactor._merge(found) if found else []


@settings(max_examples=200, deadline=None)
@given(texts)
def test_prefilter_and_anchors_find_what_every_rule_over_the_whole_text_finds(text):
    for redactor in (Redactor(), Redactor(CONFIG)):
        assert _short_way(redactor, text) == _long_way(redactor, text)
        assert _short_way(redactor, text, True) == _long_way(redactor, text, True)


@settings(max_examples=100, deadline=None)
@given(st.lists(texts, min_size=2, max_size=6))
def test_a_cached_plan_gives_what_a_fresh_redactor_gives(batch):
    """One redactor over many texts (its plans cached) against a new one per text."""
    kept = Redactor(CONFIG)
    for text in batch + batch:
        assert kept.redact(text) == Redactor(CONFIG).redact(text)
        assert kept.find_secrets(text) == Redactor(CONFIG).find_secrets(text)


_GATED = [rule for rule in Redactor().rules if rule.gate is not None]


def test_gated_rules_are_the_ones_meant():
    assert sorted(rule.id for rule in _GATED) == ["internal-url-host", "windows-path"]


@settings(max_examples=300, deadline=None)
@given(texts)
def test_a_rule_finds_nothing_where_its_gate_finds_nothing(text):
    """A gate is a necessary condition: where it fails, the rule's pattern matches nowhere."""
    for rule in _GATED:
        assert rule.gate_regex is not None and rule.regex is not None
        if rule.gate_regex.search(text) is None:
            assert rule.regex.search(text) is None, (rule.id, text)


def test_a_gate_holds_in_every_sample_its_rule_redacts():
    for rule in _GATED:
        assert rule.gate_regex is not None
        for text, _ in rule.true_positives:
            assert rule.gate_regex.search(text) is not None, (rule.id, text)
    url = "see https://docs.example.com/a and C:\\Users\\x"
    assert Redactor().redact(url).text == "see https://docs.example.com/a and <PRIVATE_PATH>"
    assert Redactor().redact("open http://jenkins:8080/ now").text == "open http://<PRIVATE_HOST>:8080/ now"


def test_configured_names_and_domains_wake_their_rules_and_only_then():
    redactor = Redactor(CONFIG)
    assert redactor.redact("reviewed by B. KOWALSKI").text == "reviewed by B. <PRIVATE_EMAIL>"
    assert redactor.redact("deploy to ci-7.build.Acme-Corp.example now").text == "deploy to <PRIVATE_HOST> now"
    assert redactor.redact("see the acme corp example").labels == ()
    bare = Redactor()
    assert bare.redact("reviewed by B. KOWALSKI").labels == ()
    assert not any(rule.id == "private-domain" for _, rule, _, _ in bare._plan(frozenset(), (), False))


def test_the_account_is_looked_for_while_the_process_runs(monkeypatch):
    """The account check is asked of every text, not fixed when the redactor is built."""
    from kbtools.redact.checks import local_account

    redactor = Redactor()
    assert redactor.redact("marguerite ran the migration").labels == ()
    for var in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.setenv(var, "marguerite")
    local_account.cache_clear()
    try:
        assert redactor.redact("Marguerite ran the migration").text == "<PRIVATE_EMAIL> ran the migration"
    finally:
        local_account.cache_clear()


def test_a_dotted_name_and_prose_words_before_punctuation():
    value = _value(7) + "Q7"
    for text, secret in (
        (f"sonar.login={value}", value),
        (f"mvn -Dsonar.token={value}", value),
        (f'{{"db_pass": "{value}"}}', value),
        (f"api_key .= '{value}'", value),
        (f"<api_key>{value}</api_key>", value),
        (f"Result<Vec<Key>> and <secret_token>\n  {value}\n</secret_token>", value),
    ):
        assert secret not in Redactor().redact(text).text, text
    prose = "the tests pass. The key, the token! Is it a secret? keys.py holds the login."
    assert Redactor().redact(prose).text == prose


_NAME_PIECES = st.sampled_from(["al", "alice", "ALICE", "Alic", "e", "_", "-", ".", " ", "1", "x", "bob", "o.b", "/"])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_NAME_PIECES, max_size=30).map("".join),
    st.sets(st.sampled_from(["alice", "alic", "bob", "o.b", "lic", "ali"]), min_size=1),
)
def test_names_in_ascii_text_are_found_where_the_pattern_finds_them(text, names):
    from kbtools.redact.checks import _ascii_words, _names_pattern

    ordered = tuple(sorted(names, key=lambda n: (-len(n), n)))
    assert _ascii_words(text.lower(), ordered) == [(m.start(), m.end()) for m in _names_pattern(ordered).finditer(text)]
