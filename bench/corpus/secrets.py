"""Secret-shaped strings for the corpus.

``random`` mode builds values of the real shapes from the seeded generator
(so a redactor has something to find), now and then a whole PEM private key; ``placeholder`` mode emits obvious
fakes (``sk-EXAMPLE…``, the AWS documentation key) that are safe to commit and
still trip the redactor; ``none`` emits no secret at all.
"""

from __future__ import annotations

import base64
import json
import random
import string

SECRET_MODES = ("random", "placeholder", "none")

_ALNUM = string.ascii_letters + string.digits
_UPPER_DIGITS = string.ascii_uppercase + string.digits


def _chars(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choices(alphabet, k=n))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _random_value(kind: str, rng: random.Random) -> str:
    if kind == "openai":
        return "sk-proj-" + _chars(rng, _ALNUM, 48)
    if kind == "anthropic":
        return "sk-ant-api03-" + _chars(rng, _ALNUM + "-_", 93) + "AA"
    if kind == "github":
        return rng.choice(("ghp_", "gho_", "ghs_")) + _chars(rng, _ALNUM, 36)
    if kind == "github_pat":
        return "github_pat_" + _chars(rng, _ALNUM, 22) + "_" + _chars(rng, _ALNUM, 59)
    if kind == "aws":
        return "AKIA" + _chars(rng, _UPPER_DIGITS, 16)
    if kind == "aws_secret":
        return _chars(rng, _ALNUM + "/+", 40)
    if kind == "jwt":
        header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        claims = {"sub": str(rng.randrange(10**6)), "iat": 1_760_000_000 + rng.randrange(10**7), "scope": "deploy"}
        return f"{header}.{_b64url(json.dumps(claims).encode())}.{_b64url(rng.randbytes(32))}"
    if kind == "slack":
        return f"xoxb-{rng.randrange(10**11, 10**12)}-{rng.randrange(10**12, 10**13)}-{_chars(rng, _ALNUM, 24)}"
    if kind == "password":
        return _chars(rng, _ALNUM, 10) + rng.choice("!#%*") + _chars(rng, _ALNUM, 5)
    if kind == "bearer":
        return _chars(rng, _ALNUM + "-._", 40)
    raise ValueError(kind)


_PLACEHOLDERS = {
    "openai": "sk-EXAMPLE-not-a-real-key-00000000000000000000",
    "anthropic": "sk-ant-EXAMPLE-not-a-real-key-0000000000000000",
    "github": "ghp_EXAMPLEnotARealToken0000000000000000",
    "github_pat": "github_pat_EXAMPLE_not_a_real_token_000000000000",
    "aws": "AKIAIOSFODNN7EXAMPLE",  # the AWS documentation example id
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    # {"alg":"none"}.{"sub":"example"}. — unsigned, so not a credential anywhere.
    "jwt": "eyJhbGciOiJub25lIn0.eyJzdWIiOiJleGFtcGxlIn0.EXAMPLE",
    "slack": "xoxb-EXAMPLE-not-a-real-token",
    "password": "EXAMPLE-password",
    "bearer": "EXAMPLE-token-not-real",
}

_KINDS = tuple(_PLACEHOLDERS)


class SecretMaker:
    def __init__(self, mode: str) -> None:
        if mode not in SECRET_MODES:
            raise ValueError(f"unknown secret mode {mode!r}")
        self.mode = mode

    def value(self, kind: str, rng: random.Random) -> str:
        if self.mode == "placeholder":
            return _PLACEHOLDERS[kind]
        return _random_value(kind, rng)

    def line(self, rng: random.Random, host: str) -> str | None:
        """A config/env/log line carrying one secret, or None in ``none`` mode."""
        if self.mode == "none":
            return None
        if self.mode == "random" and rng.random() < 0.04:
            body = base64.b64encode(rng.randbytes(400)).decode()
            lines = "\n".join(body[i : i + 70] for i in range(0, len(body), 70))
            return f"-----BEGIN OPENSSH PRIVATE KEY-----\n{lines}\n-----END OPENSSH PRIVATE KEY-----"
        kind = rng.choice(_KINDS)
        v = self.value(kind, rng)
        if kind == "openai":
            return f"OPENAI_API_KEY={v}"
        if kind == "anthropic":
            return f'export ANTHROPIC_API_KEY="{v}"'
        if kind in ("github", "github_pat"):
            return rng.choice((f"GITHUB_TOKEN={v}", f"git remote set-url origin https://{v}@github.com/acme/infra.git"))
        if kind == "aws":
            return f"aws_access_key_id = {v}\naws_secret_access_key = {self.value('aws_secret', rng)}"
        if kind == "aws_secret":
            return f"AWS_SECRET_ACCESS_KEY={v}"
        if kind == "jwt":
            return rng.choice((f"Authorization: Bearer {v}", f"session_token: {v}"))
        if kind == "slack":
            return f"SLACK_BOT_TOKEN={v}"
        if kind == "password":
            return rng.choice(
                (
                    f"DATABASE_URL=postgres://app_rw:{v}@{host}:5432/ledger",
                    f"redis://default:{v}@{host}:6379/0",
                    f'db_password = "{v}"',
                    f"https://deploy:{v}@{host}/v2/",
                )
            )
        return f"curl -H 'Authorization: Bearer {v}' https://{host}/api/v1/jobs"
