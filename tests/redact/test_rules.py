"""Every rule is data with samples; one walk checks each rule against its own samples."""

from __future__ import annotations

import pickle
import random

import pytest

from kbtools.config import RedactionConfig
from kbtools.redact import PLACEHOLDERS, REDACTION_VERSION, RULES, Redactor
from kbtools.redact.rules import CREDENTIAL, rules_fingerprint
from tests.testing.secrets import rule_samples

# Any edit of kbtools/redact/rules.py or engine.py changes the fingerprint. When the edit can
# change redacted output, bump REDACTION_VERSION (ingest reuses a ledger only when its
# redaction_status ends with the current version); then record the new pair here.
PINNED = ("kb6", "a94a614386edcd78")


def _ids(rules):
    return [rule.id for rule in rules]


def test_rule_ids_are_unique_and_placeholders_are_the_contracts():
    assert len(set(_ids(RULES))) == len(RULES)
    assert {rule.placeholder for rule in RULES} == set(PLACEHOLDERS)


def test_contract_categories_come_first_in_the_contracts_order():
    contract_order = [
        "private-key",
        "url-password",
        "ssh-remote",
        "api-key-assignment",
        "openai-api-key",
        "aws-access-key-id",
        "http-auth",
        "github-token",
        "slack-token",
        "secret-assignment",
    ]
    assert _ids(RULES)[: len(contract_order)] == contract_order
    assert (
        _ids(RULES).index("password-assignment")
        < _ids(RULES).index("email")
        < _ids(RULES).index("private-ipv4")
        < _ids(RULES).index("posix-path")
        < _ids(RULES).index("jwt")
    )


@pytest.mark.parametrize("rule", RULES, ids=_ids(RULES))
def test_every_rule_has_true_and_false_positive_samples(rule):
    tps, fps = rule_samples(rule, random.Random(rule.id))
    assert tps and fps
    assert rule.keywords or rule.finder or rule.id == "posix-path", "a regex rule without keywords runs on every text"
    assert all(k == k.lower() for k in rule.keywords)


@pytest.mark.parametrize("rule", RULES, ids=_ids(RULES))
def test_rule_catches_its_true_positives_and_only_them(rule):
    """One walk over every rule; a provider rule's samples are generated from its documented shape."""
    config = RedactionConfig(**dict(rule.sample_config))
    alone = Redactor(config, rules=[rule])
    tps, fps = [], []
    for seed in range(3):  # fixed seeds: the same samples on every run and machine
        more_tps, more_fps = rule_samples(rule, random.Random(f"{rule.id}/{seed}"))
        tps += more_tps
        fps += more_fps
    for text, secret in tps:
        assert secret in text
        result = alone.redact(text)
        assert secret not in result.text, f"{rule.id} left {secret!r} in {result.text!r}"
        assert result.labels == (rule.placeholder,)
        assert secret not in Redactor(config).redact(text).text, "the full rule set must redact it too"
    for text in fps:
        assert alone.redact(text).text == text, f"{rule.id} fired on {text!r}"


@pytest.mark.parametrize("rule", [r for r in RULES if r.is_secret], ids=_ids([r for r in RULES if r.is_secret]))
def test_credential_samples_are_what_find_secrets_reports(rule):
    alone = Redactor(rules=[rule])
    for text, secret in rule_samples(rule, random.Random(rule.id))[0]:
        hits = alone.find_secrets(text)
        assert [h.kind for h in hits] == [rule.id]
        start = text.index(secret)
        assert hits[0].start <= start and start + len(secret) <= hits[0].end, "the full span of the secret"


def test_there_are_rules_for_every_documented_provider_format():
    assert len(RULES) >= 250
    assert sum(1 for r in RULES if r.shape) >= 200


@pytest.mark.parametrize("rule", [r for r in RULES if r.shape], ids=_ids([r for r in RULES if r.shape]))
def test_a_masked_provider_sample_survives_the_whole_rule_set(rule):
    """`ghp_xxxx…`-style placeholders of every provider shape are not secrets."""
    from kbtools.redact import providers

    if rule.shape == "discord":
        return
    body = providers.masked(rule.shape)
    text = f"{rule.context.upper()}_VALUE={body}" if rule.context else f"example: {body}"
    assert Redactor().find_secrets(text) == [], text


def test_only_credential_rules_are_secrets():
    secret_ids = {r.id for r in RULES if r.is_secret}
    assert {"email", "login-at-host", "private-ipv4", "posix-path", "ssh-remote"}.isdisjoint(secret_ids)
    assert all(r.category == CREDENTIAL for r in RULES if r.id in secret_ids)


def test_redaction_version_is_bumped_with_every_rule_change():
    assert (REDACTION_VERSION, rules_fingerprint()) == PINNED, (
        "the rules changed: bump REDACTION_VERSION in kbtools/redact/rules.py and record the pair in PINNED"
    )


def test_redactor_pickles_and_behaves_the_same_in_a_worker():
    text = "mail bob@example.com, token=" + "ab12" * 5
    redactor = Redactor()
    clone = pickle.loads(pickle.dumps(redactor))
    assert clone.redact(text) == redactor.redact(text)
    only_email = Redactor(rules=[r for r in RULES if r.id == "email"])
    assert pickle.loads(pickle.dumps(only_email)).redact(text) == only_email.redact(text)
