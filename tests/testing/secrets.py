"""Secret-shaped strings, generated at test time, and the surroundings they hide in.

Nothing here is a literal that looks like a real credential: every value is
assembled from pieces and random characters when a test asks for it, so the
repository's own secret hook never sees one in the source.

    rng = random.Random(7)
    token = make_secret("github-classic", rng)          # a fresh token of that family
    text = plant(token, "dotenv", name="GITHUB_TOKEN")  # hidden in a `.env` line

``SECRET_FAMILIES`` maps a family id to a :class:`SecretFamily`: how to build
one, the variable name it usually travels under, and the redaction rule id
expected to catch it (``kind`` in :func:`kbtools.redact.find_secrets`).
"""

from __future__ import annotations

import base64
import json
import random
import string
import textwrap
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
LOWER_DIGITS = string.ascii_lowercase + string.digits
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"


def rand(rng: random.Random, alphabet: str, n: int) -> str:
    """``n`` random characters of ``alphabet`` — with a digit, a capital and a small letter
    where the alphabet has them, so the value never degenerates into a word."""
    chars = [rng.choice(alphabet) for _ in range(n)]
    for pool in (string.digits, string.ascii_uppercase, string.ascii_lowercase):
        present = [c for c in alphabet if c in pool]
        if present and n >= 6 and not any(c in pool for c in chars):
            chars[rng.randrange(n)] = rng.choice(present)
    return "".join(chars)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _jwt(rng: random.Random) -> str:
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = _b64url(json.dumps({"sub": rand(rng, ALNUM, 10), "iat": rng.randrange(10**9, 2 * 10**9)}).encode())
    return f"{header}.{payload}.{rand(rng, B64URL, 43)}"


def _pem(rng: random.Random) -> str:
    kind = rng.choice(["RSA ", "EC ", "OPENSSH ", ""])
    body = textwrap.fill(rand(rng, B64, rng.randrange(120, 400)), 64)
    return f"-----BEGIN {kind}PRIVATE KEY-----\n{body}\n-----END {kind}PRIVATE KEY-----"


@dataclass(frozen=True)
class SecretFamily:
    make: Callable[[random.Random], str]
    name: str  # the variable it usually travels under in env dumps and config files
    kind: str  # the redaction rule id expected to catch it
    placeholder: str


# The prefixes are split ("gh" + "p_") so no source line holds a whole credential shape.
SECRET_FAMILIES: dict[str, SecretFamily] = {
    "private-key": SecretFamily(_pem, "TLS_KEY_PEM", "private-key", "<REDACTED_TOKEN>"),
    "openai-legacy": SecretFamily(
        lambda r: "sk" + "-" + rand(r, ALNUM, 48), "LLM_CLIENT_VALUE", "openai-api-key", "<REDACTED_API_KEY>"
    ),
    "aws-access-key-id": SecretFamily(
        lambda r: "AK" + "IA" + rand(r, UPPER_DIGITS, 16), "AWS_ID_VALUE", "aws-access-key-id", "<REDACTED_API_KEY>"
    ),
    "github-classic": SecretFamily(
        lambda r: "gh" + r.choice("pousr") + "_" + rand(r, ALNUM, 36),
        "GH_CLI_VALUE",
        "github-token",
        "<REDACTED_TOKEN>",
    ),
    "slack-bot": SecretFamily(
        lambda r: (
            "xo" + "xb-" + rand(r, string.digits, 12) + "-" + rand(r, string.digits, 13) + "-" + rand(r, ALNUM, 24)
        ),
        "SLACK_VALUE",
        "slack-token",
        "<REDACTED_TOKEN>",
    ),
    "jwt": SecretFamily(_jwt, "SESSION_VALUE", "jwt", "<REDACTED_TOKEN>"),
    "google-api-key": SecretFamily(
        lambda r: "AI" + "za" + rand(r, B64URL, 35), "MAPS_VALUE", "google-api-key", "<REDACTED_API_KEY>"
    ),
    "github-fine-grained": SecretFamily(
        lambda r: "github" + "_pat_" + rand(r, ALNUM, 22) + "_" + rand(r, ALNUM, 59),
        "GH_PAT_VALUE",
        "github-fine-grained-token",
        "<REDACTED_TOKEN>",
    ),
    "gitlab": SecretFamily(
        lambda r: "gl" + "pat-" + rand(r, ALNUM, 20), "GL_VALUE", "gitlab-token", "<REDACTED_TOKEN>"
    ),
    "npm": SecretFamily(
        lambda r: "np" + "m_" + rand(r, ALNUM, 36), "NPM_CONFIG_VALUE", "npm-token", "<REDACTED_TOKEN>"
    ),
    "stripe": SecretFamily(
        lambda r: r.choice(["sk", "rk"]) + "_" + "live_" + rand(r, ALNUM, 24),
        "STRIPE_VALUE",
        "stripe-key",
        "<REDACTED_API_KEY>",
    ),
    "slack-app": SecretFamily(
        lambda r: (
            "xa"
            + "pp-1-"
            + rand(r, UPPER_DIGITS, 11)
            + "-"
            + rand(r, string.digits, 13)
            + "-"
            + rand(r, LOWER_DIGITS, 64)
        ),
        "SLACK_APP_VALUE",
        "slack-app-token",
        "<REDACTED_TOKEN>",
    ),
    "anthropic": SecretFamily(
        lambda r: "sk" + "-ant-api03-" + rand(r, B64URL, 93) + "AA",
        "CLAUDE_VALUE",
        "anthropic-api-key",
        "<REDACTED_API_KEY>",
    ),
    "openai-project": SecretFamily(
        lambda r: "sk" + "-proj-" + rand(r, B64URL, 120),
        "OPENAI_PROJECT_VALUE",
        "openai-project-key",
        "<REDACTED_API_KEY>",
    ),
    "huggingface": SecretFamily(
        lambda r: "hf" + "_" + rand(r, ALNUM, 34), "HF_HUB_VALUE", "huggingface-token", "<REDACTED_TOKEN>"
    ),
    "pypi": SecretFamily(
        lambda r: "py" + "pi-AgEIcHlwaS5vcmc" + rand(r, B64URL, 70), "TWINE_VALUE", "pypi-token", "<REDACTED_TOKEN>"
    ),
    "sendgrid": SecretFamily(
        lambda r: "SG" + "." + rand(r, B64URL, 22) + "." + rand(r, B64URL, 43),
        "MAIL_VALUE",
        "sendgrid-api-key",
        "<REDACTED_API_KEY>",
    ),
    "slack-webhook": SecretFamily(
        lambda r: (
            "https://hooks.slack.com/services/T"
            + rand(r, UPPER_DIGITS, 10)
            + "/B"
            + rand(r, UPPER_DIGITS, 10)
            + "/"
            + rand(r, ALNUM, 24)
        ),
        "ALERTS_HOOK_URL",
        "webhook-url",
        "<REDACTED_TOKEN>",
    ),
    # No shape of its own: caught because of the name it is assigned to.
    "high-entropy-secret": SecretFamily(
        lambda r: rand(r, B64, 40), "AWS_SECRET_ACCESS_KEY", "secret-name-high-entropy", "<REDACTED_TOKEN>"
    ),
    "password": SecretFamily(
        lambda r: rand(r, ALNUM, r.randrange(10, 20)), "DB_PASSWORD", "password-assignment", "<REDACTED_PASSWORD>"
    ),
}


def surviving_fragments(secret: str, text: str, width: int = 12) -> list[str]:
    """Runs of ``width`` characters of ``secret`` (within one line) still present in ``text``:
    empty when the secret is gone — also when only part of it was redacted, none survives."""
    found = []
    for line in secret.splitlines():
        for i in range(len(line) - width + 1):
            if line[i : i + width] in text:
                found.append(line[i : i + width])
    return found


def make_secret(family: str, rng: random.Random | int | None = None) -> str:
    """A fresh secret of ``family`` (see ``SECRET_FAMILIES``)."""
    if not isinstance(rng, random.Random):
        rng = random.Random(rng)
    return SECRET_FAMILIES[family].make(rng)


def _env_dump(secret: str, name: str) -> str:
    return f"HOME=/root\nLANG=C.UTF-8\n{name}={secret}\nPATH=/usr/local/bin:/usr/bin\nSHLVL=1\n"


def _dotenv(secret: str, name: str) -> str:
    return f'# local settings\nDEBUG=true\n{name}="{secret}"\nPORT=8080\n'


def _curl(secret: str, name: str) -> str:
    return f"$ curl -s -H 'Authorization: Bearer {secret}' https://api.example.com/v1/models\n"


def _git_remote(secret: str, name: str) -> str:
    url = f"https://build-bot:{urllib.parse.quote(secret, safe='')}@git.example.com/team/wiki.git"
    return f"$ git remote -v\norigin\t{url} (fetch)\norigin\t{url} (push)\n"


def _json(secret: str, name: str) -> str:
    return json.dumps({"service": "wiki", name: secret, "retries": 3})


def _json_in_json(secret: str, name: str) -> str:
    return json.dumps({"type": "tool_result", "content": json.dumps({"env": {name: secret}, "ok": True})})


def _yaml(secret: str, name: str) -> str:
    return f"service: wiki\nenv:\n  {name}: {json.dumps(secret)}\n  LOG_LEVEL: info\n"


def _toml(secret: str, name: str) -> str:
    return f'[service]\nname = "wiki"\n{name.lower()} = {json.dumps(secret)}\nretries = 3\n'


def _python(secret: str, name: str) -> str:
    return f"import os\n\n{name} = {secret!r}\nclient = Client(timeout=30)\n"


def _markdown_fence(secret: str, name: str) -> str:
    return f"Set it up like this:\n\n```sh\nexport {name}={secret}\nkb ingest --write\n```\n\nThen rerun.\n"


SURROUNDINGS: dict[str, Callable[[str, str], str]] = {
    "env-dump": _env_dump,
    "dotenv": _dotenv,
    "curl-bearer": _curl,
    "git-remote": _git_remote,
    "json": _json,
    "json-in-json": _json_in_json,
    "yaml": _yaml,
    "toml": _toml,
    "python": _python,
    "markdown-fence": _markdown_fence,
}


def plant(secret: str, surrounding: str, *, name: str = "APP_SECRET_VALUE") -> str:
    """``secret`` inside one of ``SURROUNDINGS`` (assigned to ``name`` where the shape has a name)."""
    return SURROUNDINGS[surrounding](secret, name)


def rule_samples(rule: Any, rng: random.Random) -> tuple[list[tuple[str, str]], list[str]]:
    """A rule's true positives ``(text, secret)`` and false positives: its own literal samples,
    plus, for a provider rule, samples generated from its documented shape (a fresh random body;
    a masked body; one character short; the prefix in prose)."""
    from kbtools.redact import providers

    tps = list(rule.true_positives)
    fps = list(rule.false_positives)
    if rule.shape == "discord":
        token = providers.discord_bot_token(rng)
        tps += [(f"bot token {token} here", token), (f"DISCORD_BOT={token}", token)]
        fps += [
            "M" + "x" * 23 + ".xxxxxx." + "x" * 30,
            providers.generate("M{L23}.{k6}.{k30}", rng),  # the first part is not a numeric id
        ]
    elif rule.shape and not rule.context:
        value = providers.generate(rule.shape, rng)
        tps += [
            (f"found {value} in the log", value),
            (f"SAMPLE_VALUE={value}", value),
            (json.dumps({"v": value}), value),
        ]
        fps.append(f"a placeholder: {providers.masked(rule.shape)} here")
        short = providers.truncated(rule.shape, rng)
        if short is not None:
            fps.append(f"short {short} here")
        head = providers.prefix(rule.shape)
        if head:
            fps.append(f"the {head} prefix")
    elif rule.shape:
        value = providers.generate(rule.shape, rng)
        ctx = rule.context
        tps += [(f"export {ctx.upper()}_VALUE={value}", value), (json.dumps({f"{ctx}_value": value}), value)]
        fps.append(f"{ctx.upper()}_VALUE={providers.masked(rule.shape)}")
        short = providers.truncated(rule.shape, rng)
        if short is not None:
            fps.append(f"{ctx.upper()}_VALUE={short}")
        fps.append(f"{ctx}_url: https://example.com/{ctx}")
    return tps, fps
