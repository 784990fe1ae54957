"""A labelled evaluation corpus for redaction, generated from documented formats.

    samples = corpus(seed=0)                  # [Sample(kind, family, surrounding, text, secret), …]
    report = evaluate(samples, redact)         # recall and benign-kept, overall and per family

Secrets: every provider shape of ``kbtools.redact.providers`` (random bodies), the
hand-written families of ``tests.testing.secrets``, and generic credentials that only their
name gives away (passwords, hex keys, UUID api keys, base64 secrets), each planted in the
syntaxes of many languages and config formats (:data:`SURROUNDINGS`). Benign look-alikes:
placeholders, references, password-policy settings, digests under hash names, package specs,
uid:gid pairs, regexes, language constants, code that handles secrets, prose (:data:`BENIGN`).

Nothing here is a literal secret: values are assembled from random characters when a
test or the bench asks for them. The shapes of real-world material follow the public
detectors' own samples (gitleaks ``cmd/generate/config/rules/*.go`` true/false positives,
detect-secrets ``tests/plugins``, CredSweeper ``tests/samples`` labelling rules:
placeholders, env references and calls are false; test and example values are true).
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tests.testing.secrets import ALNUM, B64, SECRET_FAMILIES, make_secret, rand, surviving_fragments

HEX = "0123456789abcdef"
PUNCT_PW = ALNUM + "!@#%^*_+-=.?"


@dataclass(frozen=True)
class Sample:
    kind: str  # "secret" or "benign"
    family: str  # what it is: a rule family or a benign family
    surrounding: str  # the syntax around it
    text: str
    secret: str = ""  # for a secret: the value that must disappear


# --- surroundings: where a secret stands, in one language or format each ----------------------
# Each takes (value, name) and returns the text; `name` is the variable it is assigned to.

Surrounding = Callable[[str, str], str]


def _q(value: str) -> str:
    return json.dumps(value)


SURROUNDINGS: dict[str, Surrounding] = {
    "env-dump": lambda v, n: f"HOME=/root\nLANG=C.UTF-8\n{n}={v}\nSHLVL=1\n",
    "dotenv": lambda v, n: f'# local\nDEBUG=true\n{n}="{v}"\nPORT=8080\n',
    "shell-export": lambda v, n: f"$ export {n}='{v}'\n$ make deploy\n",
    "yaml": lambda v, n: f"service: wiki\nenv:\n  {n}: {_q(v)}\n  LOG_LEVEL: info\n",
    "yaml-bare": lambda v, n: f"app:\n  {n.lower()}: {v}\n  retries: 3\n",
    "yaml-tag": lambda v, n: f"{n.lower()}: !!str {v}\n",
    "docker-compose": lambda v, n: f"services:\n  app:\n    environment:\n      - {n}={v}\n",
    "k8s-secret": lambda v, n: f"kind: Secret\nstringData:\n  {n.lower()}: {_q(v)}\n",
    "json": lambda v, n: json.dumps({"service": "wiki", n: v, "retries": 3}),
    "json-in-json": lambda v, n: json.dumps({"type": "tool_result", "content": json.dumps({"env": {n: v}})}),
    "toml": lambda v, n: f'[service]\nname = "wiki"\n{n.lower()} = {_q(v)}\n',
    "ini": lambda v, n: f"[database]\nhost = db\n{n.lower()} = {v}\n",
    "java-properties": lambda v, n: f"app.name=wiki\n{n.lower().replace('_', '.')}={v}\n",
    "python": lambda v, n: f"import os\n\n{n} = {v!r}\nclient = Client(timeout=30)\n",
    "python-environ": lambda v, n: f'os.environ["{n}"] = "{v}"\n',
    "python-getenv-default": lambda v, n: f'value = os.getenv("{n}", "{v}")\n',
    "js-const": lambda v, n: f'const {_camel(n)} = "{v}";\n',
    "ts-object": lambda v, n: f"export const config = {{\n  {_camel(n)}: '{v}',\n  retries: 3,\n}};\n",
    "go-var": lambda v, n: f'var {_camel(n)} string = "{v}"\n',
    "go-short": lambda v, n: f"{_camel(n)} := `{v}`\n",
    "php": lambda v, n: f"<?php\n${_camel(n)} = '';\n${_camel(n)} .= \"{v}\";\n",
    "ruby": lambda v, n: f"ENV['{n}'] ||= '{v}'\n",
    "makefile": lambda v, n: f"{n} ::= {v}\nall:\n\t@echo ok\n",
    "makefile-conditional": lambda v, n: f"{n} ?= {v}\n",
    "java-setproperty": lambda v, n: f'System.setProperty("{n}", "{v}");\n',
    "java-map-put": lambda v, n: f'settings.put("{n.lower()}", "{v}");\n',
    "csharp-verbatim": lambda v, n: f'var {_camel(n)} = @"{v}";\n',
    "xml-element": lambda v, n: f"<config>\n  <{_camel(n)}>\n    {v}\n  </{_camel(n)}>\n</config>\n",
    "xml-attribute-pair": lambda v, n: f'<appSettings>\n  <add key="{n}" value="{v}" />\n</appSettings>\n',
    "terraform": lambda v, n: f'variable "x" {{}}\nresource "a" "b" {{\n  {n.lower()} = "{v}"\n}}\n',
    "comparison": lambda v, n: f'if ({_camel(n)} == "{v}") {{\n  allow();\n}}\n',
    "markdown-fence": lambda v, n: f"Set it up:\n\n```sh\nexport {n}={v}\n```\n\nThen rerun.\n",
}
# Where a self-identifying token also stands without any name.
NAMELESS: dict[str, Callable[[str], str]] = {
    "prose": lambda v: f"The build used {v} yesterday, which was wrong.",
    "curl-bearer": lambda v: f"$ curl -s -H 'Authorization: Bearer {v}' https://api.example.com/v1/x\n",
    "log-line": lambda v: f"2026-01-02T03:04:05Z INFO request ok credential={v} status=200\n",
    "jsonl-message": lambda v: json.dumps({"role": "user", "content": f"here it is:\n{v}\nthanks"}),
}


def _camel(name: str) -> str:
    parts = name.lower().split("_")
    return parts[0] + "".join(p.title() for p in parts[1:])


# --- secret families ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Family:
    id: str
    group: str  # "provider token", "provider-named value", "generic name", "structural"
    make: Callable[[random.Random], str]
    names: tuple[str, ...]  # names it travels under (assignment surroundings)
    nameless: bool = False  # self-identifying: also planted with no name around it


def _generic_families() -> list[Family]:
    return [
        Family(
            "password",
            "generic name",
            lambda r: rand(r, PUNCT_PW, r.randrange(10, 24)),
            ("DB_PASSWORD", "password", "ADMIN_PASSWD", "smtp_pass", "mysql_root_pwd"),
        ),
        Family(
            "passphrase",
            "generic name",
            lambda r: "-".join(rand(r, string.ascii_lowercase, 5) for _ in range(4)) + str(r.randrange(10, 99)),
            ("GPG_PASSPHRASE", "key_passphrase"),
        ),
        Family(
            "hex-key-material",
            "generic name",
            lambda r: rand(r, HEX, 64),
            ("ENCRYPTION_KEY", "signing_key", "MASTER_KEY", "hmac_secret", "SECRET_KEY_BASE", "AES_KEY"),
        ),
        Family(
            "uuid-credential",
            "generic name",
            lambda r: "-".join(rand(r, HEX, n) for n in (8, 4, 4, 4, 12)),
            ("API_KEY", "client_secret", "auth_token", "access_token"),
        ),
        Family(
            "base64-secret",
            "generic name",
            lambda r: rand(r, B64, 40),
            ("AWS_SECRET_ACCESS_KEY", "secret", "JWT_SECRET", "session_secret", "credentials", "creds"),
        ),
        Family(
            "opaque-token",
            "generic name",
            lambda r: rand(r, ALNUM + "._-", r.randrange(20, 60)),
            ("API_TOKEN", "github_token", "X_AUTH_TOKEN", "bot_token", "login", "private_key"),
        ),
    ]


def _provider_families() -> list[Family]:
    from kbtools.redact import RULES, providers

    out = []
    for rule in RULES:
        if not rule.shape or rule.shape == "discord":
            continue
        shape = rule.shape
        if rule.context:
            ctx = rule.context.upper()
            names = (f"{ctx}_API_KEY", f"{ctx}_TOKEN", f"{ctx}_SECRET")
            out.append(Family(rule.id, "provider-named value", lambda r, s=shape: providers.generate(s, r), names))
        else:
            names = ("SERVICE_TOKEN", "INTEGRATION_KEY", "deploy_credential")
            out.append(
                Family(rule.id, "provider token", lambda r, s=shape: providers.generate(s, r), names, nameless=True)
            )
    out.append(Family("discord-bot-token", "provider token", providers.discord_bot_token, ("BOT_TOKEN",), True))
    return out


def _hand_families() -> list[Family]:
    out = []
    for fid, spec in SECRET_FAMILIES.items():
        nameless = fid not in ("high-entropy-secret", "password")
        group = "structural" if fid in ("private-key", "jwt", "slack-webhook") else "provider token"
        out.append(Family(f"family:{fid}", group, lambda r, f=fid: make_secret(f, r), (spec.name,), nameless))
    return out


def families() -> list[Family]:
    return _hand_families() + _provider_families() + _generic_families()


# --- benign look-alikes --------------------------------------------------------------------------


def _masked_provider(r: random.Random) -> str:
    from kbtools.redact import RULES, providers

    rule = r.choice([x for x in RULES if x.shape and x.shape != "discord"])
    return providers.masked(rule.shape)


def _hexdigest(r: random.Random, n: int = 64) -> str:
    return rand(r, HEX, n)


BENIGN: dict[str, Callable[[random.Random], str]] = {
    "placeholder-token": lambda r: r.choice(["API_KEY", "TOKEN", "SECRET"]) + "=" + _masked_provider(r),
    "placeholder-word": lambda r: r.choice(
        [
            "password: changeme",
            "token: XXXX",
            "api_key: <your-token>",
            "secret: '***'",
            "password = 'CHANGE_ME'",
            "client_secret: <CLIENT_SECRET>",
            "token: '...'",
            "password: null",
            "api_key: ''",
            "PASSWORD=******",
        ]
    ),
    "template": lambda r: r.choice(
        [
            "password: ${DB_PASSWORD}",
            "password=${DB_PASSWORD:" + str(r.randrange(100000, 999999)) + "}",
            "token: {{ secrets.DEPLOY_TOKEN }}",
            "api_key: {{ api_key }}",
            "secret: %SECRET%",
            "TOKEN=$(vault read x)",
            "password: '{{ vault_pw }}'",
            "key: ${{ env.KEY }}",
            'password: "${env:DB_PASS}"',
            "auth: @AUTH_TOKEN@",
        ]
    ),
    "reference": lambda r: r.choice(
        [
            'api_key = os.environ["API_KEY"]',
            "token = process.env.GITHUB_TOKEN",
            "password = var.db_password",
            "secret = get_secret('db')",
            "token: settings.API_TOKEN",
            "auth_token = self.auth_token",
            "password = access_password",
            "key = config.signing_key",
            "SECRET = env('SECRET')",
            "secret_len = X25519.secret_length",
            "key_size = PdfEncryptionKeySize.Key128Bit",
            "tokenType = TokenType.IDENTIFIER",
            "credentials = Credentials.from_service_account_file(path)",
        ]
    ),
    "policy-setting": lambda r: r.choice(
        [
            f"password_min_length={r.randrange(8, 16)}",
            f"max_password_age_days = {r.randrange(30, 365)}",
            f"PASSWORD_HISTORY: {r.randrange(3, 24)}",
            f"token_expires_in: {r.randrange(60, 86400)}",
            f"password_max_attempts = {r.randrange(3, 10)}",
            "password_require_uppercase: true",
            "secret_name: db-credentials",
            "TOKEN_FILE=/run/secrets/token",
            f"api_key_length: {r.randrange(16, 64)}",
            "password_hash_algorithm = 'argon2id'",
            "token_type: bearer",
            "auth_header: Authorization",
        ]
    ),
    "digest-under-hash-name": lambda r: (
        r.choice(
            [
                "sha256",
                "digest",
                "checksum",
                "commit",
                "etag",
                "content_hash",
                "integrity_sha",
                "revision",
                "cache_key",
                "idempotency_key",
            ]
        )
        + ": "
        + _hexdigest(r, r.choice([40, 64]))
    ),
    "uuid-identifier": lambda r: (
        r.choice(["request_id", "trace_id", "user_id", "idempotency_key", "session_id"])
        + "="
        + "-".join(rand(r, HEX, n) for n in (8, 4, 4, 4, 12))
    ),
    "package-spec": lambda r: r.choice(
        [
            "npm i pkg@npm:^2.0.0",
            "pnpm add -D vitest@3",
            "npm create astro@latest",
            "react@18.2.0",
            "@types/node@20.11.5",
            "uses: actions/checkout@v4",
            '"lodash": "npm:lodash@^4.17.21"',
            "yarn add x@workspace:*",
        ]
    ),
    "command-line": lambda r: r.choice(
        [
            "docker run --user 1000:1000 img",
            "docker run -u 1000:1000 img",
            "curl -u username:token https://x.example.com",
            "git push -u origin main",
            "curl -u user:password https://api.example.com",
            'curl -u "$USER:$PASS" x',
            "mysql -u root -p mydb",
            "ssh -p 2222 deploy",
        ]
    ),
    "regex": lambda r: r.choice(
        [
            'PASSWORD_REGEX = "^(?=.*[A-Z])(?=.*\\d).{8,}$"',
            "password_pattern: '^[a-zA-Z0-9]{8,32}$'",
            'TOKEN_RE = r"gh[pousr]_[A-Za-z0-9]{36}"',
            'api_key_regex: "[A-Za-z0-9]{32}"',
        ]
    ),
    "language-constant": lambda r: r.choice(
        [
            'public static final String PASSWORD = "password";',
            "KEY_UP = 38",
            "const TOKEN = 'token';",
            'PASSWORD_FIELD = "password"',
            "SECRET_KEY_SIZE = 32",
            "token = Token.EOF",
            'LOGIN = "login"',
        ]
    ),
    "code-handling-secrets": lambda r: r.choice(
        [
            "client = Client(api_key=api_key, token=token)",
            "self.token = token",
            "const token = await getToken()",
            'headers = {"Authorization": f"Bearer {token}"}',
            "password: z.string().min(8)",
            "api_key: SecretStr = Field(default=None)",
            "token: Optional[str] = None",
            "if token == expected_token:",
            "fetch(url, { credentials: 'include' })",
            "def login(password: str = '') -> None:",
        ]
    ),
    "prose": lambda r: r.choice(
        [
            "The token is valid for an hour.",
            "Rotate your API key every 90 days.",
            "Basic authentication works.",
            "a password is required",
            "Set the secret in the vault, not in the repository.",
            "tokens_saved=42 token_count=10",
            "max_tokens=4096",
            "the key insight is caching",
        ]
    ),
    "public-key-and-data": lambda r: r.choice(
        [
            "public_key: " + rand(r, B64, 44),
            "pub_key = '" + rand(r, B64, 60) + "'",
            '"icon": "data:image/png;base64,' + rand(r, B64, 80) + '"',
            "publishable_key: pk_" + "live_" + rand(r, ALNUM, 24),
        ]
    ),
}


def _benign_samples(rng: random.Random, per_family: int) -> list[Sample]:
    out = []
    for fid, make in BENIGN.items():
        for _ in range(per_family):
            out.append(Sample("benign", fid, "as-written", make(rng)))
    return out


def corpus(
    seed: int = 0, *, benign_per_family: int = 60, names_per_family: int = 1, surroundings_per_family: int = 0
) -> list[Sample]:
    """Every secret family in every surrounding (or in ``surroundings_per_family`` of them, drawn at
    random), a fresh value each, and the benign look-alikes."""
    rng = random.Random(seed)
    samples: list[Sample] = []
    everywhere = sorted(SURROUNDINGS)
    for fam in families():
        chosen = rng.sample(everywhere, surroundings_per_family) if surroundings_per_family else everywhere
        for surrounding in chosen:
            plant = SURROUNDINGS[surrounding]
            for name in rng.sample(fam.names, min(names_per_family, len(fam.names))):
                value = fam.make(rng)
                if fam.id == "family:private-key" and surrounding not in ("json", "json-in-json", "yaml"):
                    continue  # a multi-line PEM block sits in a file or a JSON string, not on one line
                samples.append(Sample("secret", fam.id, surrounding, plant(value, name), value))
        if fam.nameless:
            for surrounding, plant1 in NAMELESS.items():
                value = fam.make(rng)
                samples.append(Sample("secret", fam.id, surrounding, plant1(value), value))
    return samples + _benign_samples(rng, benign_per_family)


@dataclass
class Tally:
    hit: int = 0
    total: int = 0

    @property
    def rate(self) -> float:
        return self.hit / self.total if self.total else 1.0


@dataclass
class Report:
    secrets: Tally = field(default_factory=Tally)
    benign: Tally = field(default_factory=Tally)
    by_family: dict[str, Tally] = field(default_factory=dict)
    by_group: dict[str, Tally] = field(default_factory=dict)
    by_surrounding: dict[str, Tally] = field(default_factory=dict)
    by_benign: dict[str, Tally] = field(default_factory=dict)
    misses: list[Sample] = field(default_factory=list)


def removed(secret: str, out: str) -> bool:
    """No run of 12 characters of the secret (all of it, when shorter) is left."""
    width = min(12, len(secret))
    return not surviving_fragments(secret, out, width=width)


def evaluate(samples: Iterable[Sample], redact: Callable[[str], str]) -> Report:
    groups = {f.id: f.group for f in families()}
    report = Report()
    for sample in samples:
        out = redact(sample.text)
        if sample.kind == "secret":
            ok = removed(sample.secret, out)
            for tally in (
                report.secrets,
                report.by_family.setdefault(sample.family, Tally()),
                report.by_group.setdefault(groups.get(sample.family, "other"), Tally()),
                report.by_surrounding.setdefault(sample.surrounding, Tally()),
            ):
                tally.total += 1
                tally.hit += ok
        else:
            ok = out == sample.text
            for tally in (report.benign, report.by_benign.setdefault(sample.family, Tally())):
                tally.total += 1
                tally.hit += ok
        if not ok:
            report.misses.append(sample)
    return report
