"""Redaction rules as data: one :class:`Rule` per detector, with its samples next to it.

Order: the ingest contract's categories and placeholders in the contract's order
(PEM keys, URL passwords, SSH remotes, api-key assignments and ``sk-``/``AKIA``,
Bearer/Basic and GitHub/Slack tokens, token/secret assignments, password
assignments, e-mail and ``user@host``, private hosts, paths), then what the
contract missed (JWT, Google, GitHub fine-grained, GitLab, npm, Stripe, Slack app,
Anthropic and OpenAI project keys, Hugging Face, PyPI, SendGrid, webhook URLs, command-line
and .netrc passwords; public addresses, dotless URL hosts, people's names, private domains;
high-entropy values under secret-looking names).

Each rule marks the *whole* secret as its span — for an assignment the whole value
(the key and the quotes stay, so JSON stays JSON), for a token the whole token —
never a capture group that is only a part of it. A rule runs its regex only when
one of its ``keywords`` occurs in the lower-cased text.

Every regex is written for linear behaviour on hostile input: each quantifier is
bounded, a match can only start where a token starts (look-behind on the previous
character), and alternatives inside a repetition never overlap.

Samples are built from pieces at import time (``"gh" + "p_" + …``) so no line of
this file is itself a credential-shaped literal.

The checks a hit must pass (``accept``) and the finders live in ``checks.py``.
Changing any rule changes ``rules_fingerprint()``; ``REDACTION_VERSION`` must then
be bumped (a test pins the pair), which makes ``kb ingest`` re-redact every source.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property

from kbtools.config import RedactionConfig
from kbtools.redact.checks import (
    HOME_KEYWORDS,
    Candidate,
    command_line_password,
    configured_domains,
    configured_names,
    email_not_a_file,
    file_url_not_public,
    find_private_domains,
    find_private_ipv4,
    find_private_keys,
    find_private_names,
    find_public_ipv4,
    is_credential_value,
    is_placeholder_token,
    is_reference,
    login_at_host,
    names_the_account,
    not_a_word,
    not_public_path,
    private_ipv6,
    public_ipv6,
    secret_name_high_entropy,
    sk_key,
    token_not_placeholder,
    url_password,
)
from kbtools.redact.grammar import VALUE_GROUPS, assignment
from kbtools.redact.providers import NAMED, TOKENS, Named, Token, find_discord_bot_tokens, prefix

# `kb<N>`: this project's own sequence, distinct from the reference's `v<N>`, so a
# ledger written by the reference pipeline is never mistaken for one redacted here.
REDACTION_VERSION = "kb6"

API_KEY = "<REDACTED_API_KEY>"
TOKEN = "<REDACTED_TOKEN>"
PASSWORD = "<REDACTED_PASSWORD>"
REPOSITORY = "<PRIVATE_REPOSITORY>"
EMAIL = "<PRIVATE_EMAIL>"
HOST = "<PRIVATE_HOST>"
PATH = "<PRIVATE_PATH>"
PLACEHOLDERS = (TOKEN, PASSWORD, REPOSITORY, API_KEY, EMAIL, HOST, PATH)

# Categories; only CREDENTIAL rules are secrets (lint check 16, find_secrets).
CREDENTIAL = "credential"
REPOSITORY_CATEGORY = "repository"
IDENTITY = "identity"
HOST_CATEGORY = "host"
PATH_CATEGORY = "path"

# A token starts where no identifier character (or backslash: the escaped character of
# a JSON escape is not a token start) precedes it — or right after a JSON `\n`/`\r`/`\t`.
START = r"(?:(?<![A-Za-z0-9_\\])|(?<=\\[nrt]))"
END = r"(?![A-Za-z0-9_])"
_LOCAL_START = r"(?:(?<![A-Za-z0-9_.%+\\-])|(?<=\\[nrt]))"  # an e-mail's local part
_LOGIN_START = r"(?:(?<![A-Za-z0-9_.%+@\\-])|(?<=\\[nrt]))"

Accept = Callable[[Candidate, RedactionConfig], bool]
Finder = Callable[[str, RedactionConfig], Iterable[tuple[int, int]]]


@dataclass(frozen=True)
class Rule:
    id: str
    placeholder: str
    category: str
    description: str
    keywords: tuple[str, ...]  # lower-case; () = always run (unless config_keywords)
    requires: tuple[str, ...] = ()  # keywords (of the index) that must all occur too: literals of the pattern
    pattern: str | None = None  # named groups in `groups` mark the secret; else the whole match
    groups: tuple[str, ...] = ()
    accept: Accept | None = None  # (candidate, config) → keep this hit?
    finder: Finder | None = None  # instead of a pattern, for what a regex cannot do linearly
    # Keywords the configuration adds (configured names, domains), lower-case: a rule with these
    # runs only when one of them or of ``keywords`` occurs — never when there are none.
    config_keywords: Callable[[RedactionConfig], tuple[str, ...]] | None = None
    # (lower-cased text, config) → run the rule whatever its keywords say: what can change while a
    # process runs (the account running kb), asked of every text.
    woken_by: Callable[[str, RedactionConfig], bool] | None = None
    # Anchored rules try their regex only where a keyword occurs, backed up over these
    # characters (to the start of a name, a local part, an address): far cheaper than a
    # scan that must try every letter. None: scan the whole text.
    anchor: str | None = None
    # A regex every match of the pattern holds, looked for in a text the keywords let through:
    # where it finds nothing, the rule does not run. For a rule whose keywords most texts that
    # hold them hold for another reason (the `:/` of every URL for a Windows path).
    gate: str | None = None
    trim: str = ""  # trailing characters dropped from a hit (sentence punctuation after a path)
    json_quote: bool = False  # an unquoted value under a JSON key is replaced by a quoted placeholder
    dotted_name: bool = False  # an assignment's name goes on after a dot (`sonar.login`)
    true_positives: tuple[tuple[str, str], ...] = ()  # (text, the secret that must disappear)
    false_positives: tuple[str, ...] = ()
    sample_config: tuple[tuple[str, tuple[str, ...]], ...] = ()  # RedactionConfig fields the samples need
    # A provider rule's documented shape (kbtools.redact.providers notation): its samples are
    # generated from it at test time; `context` is the provider word a named value sits under.
    shape: str = ""
    context: str = ""

    # A provider token rule's pattern, built from the token's shape on first use (instead of
    # ``pattern``): building the 152 of them cost every import of the rules about 6 ms.
    token: Token | None = None

    # Compiled on first use: the commit hook imports every rule but runs only those whose
    # keywords occur, and compiling all of them would cost more than scanning a few lines.
    @cached_property
    def regex(self) -> re.Pattern[str] | None:
        pattern = self.token.pattern if self.token is not None else self.pattern
        return re.compile(pattern) if pattern is not None else None

    @cached_property
    def gate_regex(self) -> re.Pattern[str] | None:
        return re.compile(self.gate) if self.gate is not None else None

    @cached_property
    def anchor_set(self) -> frozenset[str]:
        return frozenset(self.anchor or "")

    @property
    def is_secret(self) -> bool:
        return self.category == CREDENTIAL


NAME_CHARS = string.ascii_letters + string.digits + "_-"
LOCAL_CHARS = string.ascii_letters + string.digits + "._%+-"
HEX_COLON = string.hexdigits + ":"
HOST_CHARS = string.ascii_letters + string.digits + ".-"

# ---------------------------------------------------------------------------
# Sample material: deterministic filler, assembled at import time.

_FILLER = "Q7mX2kR9vL4pT8wN3cJ6hB1dF5gZ0sYaEuIoKe"


def fill(n: int, offset: int = 0, alphabet: str = _FILLER) -> str:
    """``n`` characters of varied filler (deterministic; high enough entropy for any rule)."""
    return "".join(alphabet[(offset + i * 7) % len(alphabet)] for i in range(n))


def _upper(n: int, offset: int = 0) -> str:
    return fill(n, offset, "Q7MX2KR9VL4PT8WN3CJ6HB1DF5GZ0SYAE")


# ---------------------------------------------------------------------------
# Assignments: `name = value`, `name: value`, `"name": "value"`, `\"name\": \"value\"`.

_VALUE_GROUPS = VALUE_GROUPS


# An IPv6 candidate (validated by `ipaddress`); never inside a word, a version or a longer address.
IPV6 = r"(?<![A-Za-z0-9_.:\\])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?:%[A-Za-z0-9]{1,16})?(?![0-9A-Za-z_:])"


# A network URL's host without a dot, from the `://` on (maybe after a userinfo).
_URL_HOST = r"://(?:[^\s/@\"'<>\\]{1,256}@)?+(?P<host>[A-Za-z][A-Za-z0-9-]{0,62})(?=[:/?#\s\"'`<>\\)\]]|$)"


# ---------------------------------------------------------------------------
# Paths. A path starts after a delimiter: whitespace, a quote, `(=[{,:>|<`, or any
# non-ASCII character (CJK prose has no spaces) — never inside a word or a URL, and
# never right after a placeholder (`localhost/x` must not become a path once redacted).

_NOT_DELIM = r"A-Za-z0-9_.~%+\-/\\@#$&*!?^"
# One character of a path segment: not a separator (`/`, `\`), not `:` (a `PATH` list or
# `file.py:12`), not whitespace, quotes or closing brackets.
_SEG = r"[^\s\"'`)\]}>,;:<\\/]"


# ---------------------------------------------------------------------------
# The rules.

_gh = "gh" + "p_"

RULES: tuple[Rule, ...] = (
    Rule(
        id="private-key",
        placeholder=TOKEN,
        category=CREDENTIAL,
        description="PEM private key block (RSA, EC, OpenSSH, PGP, PKCS#8), BEGIN to END",
        keywords=("private key",),
        finder=find_private_keys,
        true_positives=(
            ("x -----BEGIN RSA " + "PRIVATE KEY-----\n" + fill(64) + "\n-----END RSA PRIVATE KEY----- y", fill(64)),
            (
                '{"key": "-----BEGIN ' + "PRIVATE KEY-----\\n" + fill(48, 3) + '\\n-----END PRIVATE KEY-----"}',
                fill(48, 3),
            ),
            ("truncated: -----BEGIN OPENSSH " + "PRIVATE KEY-----\n" + fill(70, 5) + "\n", fill(70, 5)),
        ),
        false_positives=("the file starts with a private key header", "-----BEGIN PUBLIC KEY-----\nMFkw\n"),
    ),
    Rule(
        id="url-password",
        placeholder=PASSWORD,
        category=CREDENTIAL,
        description="URL with a userinfo password (`scheme://user:pass@host/…`); the whole URL",
        keywords=("://",),
        requires=("@",),
        anchor=HOST_CHARS + "+",  # back from `://` over the scheme
        pattern=(
            r"(?<![A-Za-z0-9+.\\-])[A-Za-z][A-Za-z0-9+.-]{0,31}://"
            r"(?P<user>[^\s/@:\"'`<>\\]{0,256}):(?P<password>[^\s/@\"'`<>\\]{1,8192})@"
            r"[^\s\"'`<>\\)\]}]{1,2048}"
        ),
        accept=url_password,
        true_positives=(
            ("postgres://dbuser:" + "dsn-password@db.example/app", "dsn-password"),
            ("redis://:" + "redis-password@localhost:6379/0", "redis-password"),
            ("origin\thttps://bot:" + fill(20) + "@git.example.com/team/wiki.git (fetch)", fill(20)),
            # A URL-encoded private key is longer than any typed password.
            ("https://bot:-----BEGIN%20PRIVATE%20KEY-----%0A" + fill(900, 4) + "@git.example.com/x.git", fill(900, 4)),
        ),
        false_positives=(
            "https://example.com/docs",
            "http://localhost:8080/path",
            "https://user:${TOKEN}@example.com/x",
            "see https://example.com:443/a@b",
        ),
    ),
    Rule(
        id="ssh-remote",
        placeholder=REPOSITORY,
        category=REPOSITORY_CATEGORY,
        description="SSH git remote `git@host:path` (and `ssh://git@host/path`)",
        keywords=("git@",),
        pattern=(
            r"(?<![A-Za-z0-9._%+\\-])(?:ssh://)?git@[A-Za-z0-9.-]{1,253}(?::[0-9]{1,5}/|[:/])"
            r"[^\s\"'`<>\\)\]}]{1,1024}"
        ),
        true_positives=(
            ("git clone git@github.com:private/repo.git", "private/repo"),
            ("ssh://git@gitlab.example.com/team/x.git", "team/x"),
        ),
        false_positives=("git@ is the user", "digit@home"),
    ),
    Rule(
        id="api-key-assignment",
        placeholder=API_KEY,
        category=CREDENTIAL,
        description="a value assigned to `*api_key*` / `apiKey` / `x-api-key` (key and quotes kept)",
        keywords=("apikey", "api_key", "api-key"),
        anchor=NAME_CHARS,
        pattern=assignment(r"[A-Za-z0-9_-]{0,64}?api[_-]?key[A-Za-z0-9_-]{0,32}+"),
        groups=_VALUE_GROUPS,
        accept=is_credential_value,
        json_quote=True,
        true_positives=(
            ("OPENAI_API_KEY=sk-" + "a" * 16, "a" * 16),
            ('{"api_key": "z' + fill(12) + '"}', "z" + fill(12)),
            (json.dumps(json.dumps({"api_key": 'ab"' + fill(9)})), fill(9)),
            ("x-api-key: " + fill(24, 2), fill(24, 2)),
            ('{"apiKey": 12345678}', "12345678"),
        ),
        false_positives=(
            "API_KEY=${API_KEY}",
            'api_key = os.environ["API_KEY"]',
            "apiKey: process.env.API_KEY",
            "api_key=$API_KEY",
            "api_key: <YOUR_API_KEY>",
            "api_key = get_api_key()",
            "api_key: str",
            "OPENAI_API_KEY=<REDACTED_API_KEY>",
            "api_key=MY_API_KEY",
            "the api_key is required",
        ),
    ),
    Rule(
        id="openai-api-key",
        placeholder=API_KEY,
        category=CREDENTIAL,
        description="`sk-…` secret key, 16+ characters with a digit or capital (not `sk-ant-`/`sk-proj-`)",
        keywords=("sk-",),
        pattern=START + r"sk-(?!ant-|proj-)(?P<key>[A-Za-z0-9_-]{16,256}+)",
        accept=sk_key,
        true_positives=(("key sk-" + fill(48), fill(48)),),
        false_positives=("use sk-learn-compatible-estimators here", "task-" + fill(20)),
    ),
    Rule(
        id="aws-access-key-id",
        placeholder=API_KEY,
        category=CREDENTIAL,
        description="AWS access key id `AKIA…` (and `ASIA`/`ABIA`/`ACCA`)",
        keywords=("akia", "asia", "abia", "acca"),
        pattern=START + r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}" + END,
        accept=token_not_placeholder,
        true_positives=(("aws_access_key_id = AK" + "IA" + _upper(16), "IA" + _upper(16)),),
        false_positives=("ASIAN markets", "AKIA" + "short", "AK" + "IAIOSFODNN7" + "EXAMPLE"),
    ),
    Rule(
        id="http-auth",
        placeholder=TOKEN,
        category=CREDENTIAL,
        description="`Bearer`/`Basic` credential of 12+ characters (the scheme word stays)",
        keywords=("bearer", "basic"),
        anchor="",
        pattern=r"(?<![A-Za-z0-9_])(?:[Bb]earer|[Bb]asic)[ \t]{1,8}(?P<credential>[A-Za-z0-9._~+/=-]{12,8192}+)",
        groups=("credential",),
        accept=not_a_word,
        true_positives=(
            ("curl -H 'Authorization: Bearer " + fill(32) + "'", fill(32)),
            ("Authorization: Basic dXNlcjpwYXNz" + "d29yZA==", "dXNlcjpwYXNz"),
        ),
        false_positives=("Basic authentication works", "Bearer $TOKEN", "Bearer <YOUR_TOKEN>", "a basic understanding"),
    ),
    Rule(
        id="github-token",
        placeholder=TOKEN,
        category=CREDENTIAL,
        description="GitHub token `gh[pousr]_…` (incl. the long `ghs_` installation format)",
        keywords=("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        pattern=START + r"gh[pousr]_[A-Za-z0-9_]{16,1024}+(?:[.-][A-Za-z0-9_-]{1,2048}+){0,4}",
        accept=token_not_placeholder,
        true_positives=(
            (("APP_TOKEN=" + _gh + fill(36)), fill(36)),
            ('"\\n' + _gh + fill(36, 1) + '\\n"', fill(36, 1)),
        ),
        false_positives=("the ghp_ prefix", "ghp_short", _gh + "x" * 36, "GITHUB_TOKEN=" + _gh + "X" * 36),
    ),
    Rule(
        id="slack-token",
        placeholder=TOKEN,
        category=CREDENTIAL,
        description="Slack token `xox[baprse]-…`",
        keywords=("xox",),
        pattern=START + r"xox[baprse]-[A-Za-z0-9-]{16,512}+",
        accept=token_not_placeholder,
        true_positives=(("xo" + "xb-" + "394857102938-" + fill(24), fill(24)),),
        false_positives=("xoxb- tokens start like this",),
    ),
    Rule(
        id="secret-assignment",
        placeholder=TOKEN,
        category=CREDENTIAL,
        description="a value assigned to `*token`, `*authorization`, `*cookie`, `*secret`, `*secret_key`, "
        "`*credentials`, `*creds`, `*passphrase`, `*private_key`, `*signing_key`, `*master_key` "
        "(`tokens_saved=42`, `token_count=10`, `max_tokens=4096` survive: the name must end there)",
        keywords=(
            "token",
            "authorization",
            "cookie",
            "secret",
            "credential",
            "creds",
            "passphrase",
            *(f"{w}{sep}key" for w in ("private", "signing", "master", "encryption") for sep in ("_", "-", "")),
        ),
        anchor=NAME_CHARS,
        pattern=assignment(
            r"[A-Za-z0-9_-]{0,64}?(?:token|authorization|cookie|secret(?:[_-]?key)?|credentials?|creds|passphrase"
            r"|(?:private|signing|master|encryption|secret)[_-]?key(?:[_-]?base)?)(?![A-Za-z0-9_-])"
        ),
        groups=_VALUE_GROUPS,
        accept=is_credential_value,
        json_quote=True,
        true_positives=(
            ("NPM_TOKEN=opaque-value", "opaque-value"),
            ('{"cookie": "sid=' + fill(16) + '"}', fill(16)),
            ('{"token":"ab\\"' + fill(8) + '"}', fill(8)),
            ("Authorization: Bearer " + fill(20, 4), fill(20, 4)),
            ("client_secret: " + fill(30, 6), fill(30, 6)),
            ("accessToken = '" + fill(18, 2) + "'", fill(18, 2)),
        ),
        false_positives=(
            "tokens_saved=42 token_count=10",
            "max_tokens=4096",
            "token: ${{ secrets.GITHUB_TOKEN }}",
            "GITHUB_TOKEN=$GITHUB_TOKEN",
            "token = os.getenv('TOKEN')",
            "secret: <YOUR_SECRET>",
            "token_type: bearer",
            "Token: the smallest unit",
            "token=<REDACTED_TOKEN>",
            "token == expected",
            "const token = process.env.API_TOKEN",
            "token: str",
            "auth_token = None",
        ),
    ),
    Rule(
        id="cookie-header",
        placeholder=TOKEN,
        category=CREDENTIAL,
        description="a `Cookie:`/`Set-Cookie:` header line, every pair to the end of the line",
        keywords=("cookie",),
        anchor=NAME_CHARS,
        pattern=r"(?<![A-Za-z0-9_-])(?i:(?:set-)?cookie):[ \t]{0,8}(?P<cookie>[^\r\n\"'\\]{1,4096}+)",
        groups=("cookie",),
        accept=is_credential_value,
        true_positives=(("Cookie: theme=dark; session=" + fill(24), fill(24)),),
        false_positives=("Cookie: <REDACTED_TOKEN>",),
    ),
    Rule(
        id="password-assignment",
        placeholder=PASSWORD,
        category=CREDENTIAL,
        description="a value assigned to `*password*`, `*passwd*`, `*passphrase*`, `*_pass`, `*_pwd`",
        keywords=("password", "passwd", "passphrase", "pass", "pwd"),
        anchor=NAME_CHARS,
        pattern=assignment(
            r"[A-Za-z0-9_-]{0,64}?(?:(?:password|passwd|passphrase)[A-Za-z0-9_-]{0,32}+"
            r"|(?:(?<![A-Za-z0-9])|(?<=[_-])|(?<=[a-z])(?-i:(?=[A-Z])))(?:pass|pwd)(?![A-Za-z0-9_-]))"
        ),
        groups=_VALUE_GROUPS,
        accept=is_credential_value,
        json_quote=True,
        true_positives=(
            ("NACOS_PASSWORD=hunter2", "hunter2"),
            ('{"password": "x' + fill(6) + '"}', "x" + fill(6)),
            ("db:\n  password: 'p\\'w" + fill(5) + "'", fill(5)),
            ('\\"password\\":\\"q\\\\\\"' + fill(7) + '\\"', fill(7)),
        ),
        false_positives=(
            "password=${DB_PASSWORD}",
            "password: <YOUR_PASSWORD>",
            "password = input('pw: ')",
            "password: null",
            "the password is wrong",
            "password=<REDACTED_PASSWORD>",
        ),
    ),
    Rule(
        id="email",
        placeholder=EMAIL,
        category=IDENTITY,
        description="e-mail address",
        keywords=("@",),
        anchor=LOCAL_CHARS,
        pattern=(
            _LOCAL_START + r"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}"
            r"\.[A-Za-z]{2,24}" + END
        ),
        accept=email_not_a_file,
        true_positives=(("mail alice@example.com now", "alice@example.com"), ("中文me@x.org", "me@x.org")),
        false_positives=("logo@2x.png", "react@18.2.0", "astro@latest"),
    ),
    Rule(
        id="login-at-host",
        placeholder=EMAIL,
        category=IDENTITY,
        description="`user@host` (not `pkg@version`, `pkg@latest`, `action@v4`)",
        keywords=("@",),
        anchor=LOCAL_CHARS,
        pattern=(
            _LOGIN_START + r"[A-Za-z0-9._-]{1,64}@(?:\d{1,3}(?:\.\d{1,3}){3}|[A-Za-z0-9_-]{1,63})"
            r"(?![A-Za-z0-9_@-]|\.[A-Za-z0-9])"
        ),
        accept=login_at_host,
        true_positives=(("ssh user@buildbox", "user@buildbox"), ("root@10.0.0.7", "root")),
        false_positives=(
            "astro@latest",
            "vitest@3",
            "react@18.2.0",
            "actions/checkout@v4",
            "pkg@next",
            "img@sha256",
            "a@a@a@a",
        ),
    ),
    Rule(
        id="private-ipv4",
        placeholder=HOST,
        category=HOST_CATEGORY,
        description="loopback, RFC 1918, link-local and CGNAT IPv4 addresses",
        keywords=("10.", "127.", "172.", "192.168.", "169.254.", "100."),
        finder=find_private_ipv4,
        true_positives=(
            ("host 192.168.1.2 up", "192.168.1.2"),
            ("127.0.0.1:8080", "127.0.0.1"),
            ("10.1.2.3", "10.1.2.3"),
        ),
        false_positives=("8.8.8.8", "version 10.2.3", "172.32.0.1", "1.10.0.1.2"),
    ),
    Rule(
        id="private-ipv6",
        placeholder=HOST,
        category=HOST_CATEGORY,
        description="IPv6 loopback `::1`, unique-local `fc00::/7`, link-local `fe80::/10` (validated)",
        keywords=("::", "fc", "fd", "fe8", "fe9", "fea", "feb"),
        anchor=HEX_COLON,
        pattern=IPV6,
        accept=private_ipv6,
        true_positives=(("bind ::1 now", "::1"), ("fe80::1", "fe80::1"), ("fd00::42", "fd00::42")),
        false_positives=("fcab:12", "std::vector", "foo::1", "2001:db8::1", "12:30:45"),
    ),
    Rule(
        id="private-hostname",
        placeholder=HOST,
        category=HOST_CATEGORY,
        description="`localhost` and names under `.internal`, `.local`, `.lan`, `.corp`, `.home.arpa`",
        keywords=("localhost", ".internal", ".local", ".lan", ".corp", ".home.arpa"),
        anchor=HOST_CHARS,
        pattern=(
            r"(?<![A-Za-z0-9_.\\-])(?i:localhost|(?:[a-z0-9-]{1,63}\.){1,10}"
            r"(?:internal|localdomain|local|lan|corp|home\.arpa))(?![A-Za-z0-9_-]|\.[A-Za-z0-9])"
        ),
        true_positives=(
            ("db.internal:5432", "db.internal"),
            ("http://localhost:3000", "localhost"),
            ("printer.lan", "printer.lan"),
        ),
        false_positives=(".env.local", "settings.local.json", "example.com", "localhosts"),
    ),
    Rule(
        id="unc-path",
        placeholder=PATH,
        category=PATH_CATEGORY,
        description="UNC path `\\\\server\\share\\…` (also JSON-escaped)",
        keywords=("\\\\",),
        anchor="\\",
        pattern=(r"(?<![A-Za-z0-9_\\])\\{2,8}[A-Za-z0-9._$-]{2,255}(?:\\{1,4}" + _SEG + r"{1,255}){1,64}"),
        true_positives=(("open \\\\corp-fs\\private\\file now", "corp-fs"),),
        false_positives=("\\\\n", "a\\\\b"),
    ),
    Rule(
        id="windows-path",
        placeholder=PATH,
        category=PATH_CATEGORY,
        description="Windows drive path `C:\\…` or `C:/…` (also JSON-escaped)",
        keywords=(":\\", ":/"),
        gate=r":(?:\\|/(?!/))",  # the drive's `:\` or `:/`, not the `://` of a URL
        anchor=string.ascii_letters,
        pattern=START + r"[A-Za-z]:(?:\\{1,4}|/(?!/))" + _SEG + r"{1,255}(?:(?:\\{1,4}|/)" + _SEG + r"{1,255}){0,64}",
        true_positives=(
            ("C:\\Users\\alice\\secret", "alice"),
            ("D:\\work\\private-repo", "private-repo"),
            ('"C:\\\\Users\\\\bob"', "bob"),
        ),
        false_positives=("https://example.com", "note: see"),
    ),
    Rule(
        id="tilde-path",
        placeholder=PATH,
        category=PATH_CATEGORY,
        description="home-relative path `~/…`",
        keywords=("~/",),
        pattern=r"~/(?<![" + _NOT_DELIM + r"]~/)(?<![A-Z]>~/)" + _SEG + r"{1,255}(?:/" + _SEG + r"{1,255}){0,64}",
        trim=".:!?",
        true_positives=(("cat ~/.config/app", ".config/app"), ("path:~/.omp/store", ".omp/store")),
        false_positives=("a~/b", "~/"),
    ),
    Rule(
        id="file-url",
        placeholder=PATH,
        category=PATH_CATEGORY,
        description="`file:` URL path (not under a public system prefix)",
        keywords=("file:",),
        pattern=r"(?<![A-Za-z0-9_])file:(?P<path>(?:/{1,3}|~/)" + _SEG + r"{1,255}(?:/" + _SEG + r"{1,255}){0,64})",
        groups=("path",),
        accept=file_url_not_public,
        trim=".:!?",
        true_positives=(("file:/home/alice/source", "alice"), ("file:///Users/bob/x.txt", "bob")),
        false_positives=("file:///usr/share/doc/x", "profile:/x"),
    ),
    Rule(
        id="posix-path",
        placeholder=PATH,
        category=PATH_CATEGORY,
        description="absolute POSIX path after a delimiter, two segments or more (`/home/…`, `/Users/…`, "
        "`/tmp/…`); well-known system prefixes (`/usr/`, `/etc/`, `/opt/`, `/proc/`…) are public",
        keywords=("/",),
        pattern=r"/(?<![" + _NOT_DELIM + r"]/)(?<![A-Z]>/)" + _SEG + r"{1,255}(?:/" + _SEG + r"{1,255}){1,64}/?",
        accept=not_public_path,
        trim=".:!?",
        true_positives=(
            ("中文/home/alice/app", "alice"),
            (">/home/alice/redirect", "alice"),
            ("wrote /tmp/architecture-review-output.html.", "architecture-review-output"),
            ("PATH=/usr/bin:/Users/bob/bin", "bob"),
        ),
        false_positives=(
            "key:/value",
            "/usr/bin/env",
            "/etc/hosts",
            "/opt/homebrew/bin",
            "/proc/self/status",
            "https://example.com/home/about",
            "and/or",
            "2024/01/02",
            "./rel/x",
            "../up/y",
        ),
    ),
    # --- beyond the contract -------------------------------------------------
    Rule(
        id="jwt",
        placeholder=TOKEN,
        category=CREDENTIAL,
        description="JSON Web Token `eyJ….eyJ….…`",
        keywords=("eyj",),
        pattern=START + r"eyJ[A-Za-z0-9_-]{8,4096}+\.[A-Za-z0-9_-]{8,8192}+\.[A-Za-z0-9_-]{0,4096}+",
        accept=token_not_placeholder,
        true_positives=(("jwt eyJ" + fill(20) + ".eyJ" + fill(30, 3) + "." + fill(43, 5), fill(30, 3)),),
        false_positives=("eyJ alone", "eyJhbGciOi"),
    ),
    Rule(
        id="google-api-key",
        placeholder=API_KEY,
        category=CREDENTIAL,
        description="Google API key `AIza…`",
        keywords=("aiza",),
        pattern=START + r"AIza[0-9A-Za-z_-]{35}" + r"(?![A-Za-z0-9_-])",
        accept=token_not_placeholder,
        true_positives=(("maps AI" + "za" + fill(35), fill(35)),),
        false_positives=("AIzawhatever",),
    ),
    Rule(
        id="github-fine-grained-token",
        placeholder=TOKEN,
        category=CREDENTIAL,
        description="GitHub fine-grained personal access token `github_pat_…`",
        keywords=("github_pat_",),
        pattern=START + r"github_pat_[A-Za-z0-9_]{22,255}+",
        accept=token_not_placeholder,
        true_positives=(("github" + "_pat_" + fill(22) + "_" + fill(59, 2), fill(59, 2)),),
        false_positives=("github_pat_ prefix",),
    ),
    Rule(
        id="gitlab-token",
        placeholder=TOKEN,
        category=CREDENTIAL,
        description="GitLab token `glpat-…` (and `gldt-`, `glrt-`, `glptt-`, `glcbt-`)",
        keywords=("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-"),
        pattern=START + r"gl(?:pat|dt|rt|ptt|cbt)-[A-Za-z0-9_-]{20,300}+(?:\.[A-Za-z0-9_-]{1,64}+){0,3}",
        accept=token_not_placeholder,
        true_positives=(("gl" + "pat-" + fill(20), fill(20)),),
        false_positives=("glpat- prefix",),
    ),
    Rule(
        id="npm-token",
        placeholder=TOKEN,
        category=CREDENTIAL,
        description="npm access token `npm_…`",
        keywords=("npm_",),
        pattern=START + r"npm_[A-Za-z0-9]{36}" + END,
        accept=token_not_placeholder,
        true_positives=(("//registry.npmjs.org/:_authToken=np" + "m_" + fill(36), fill(36)),),
        false_positives=("npm_config_cache", "npm_package_version"),
    ),
    Rule(
        id="stripe-key",
        placeholder=API_KEY,
        category=CREDENTIAL,
        description="Stripe secret or restricted key `sk_live_…`/`rk_live_…` (and `_test_`)",
        keywords=("sk_live_", "rk_live_", "sk_test_", "rk_test_"),
        pattern=START + r"[sr]k_(?:live|test)_[A-Za-z0-9]{10,247}" + END,
        accept=token_not_placeholder,
        true_positives=(("sk" + "_live_" + fill(24), fill(24)), ("rk" + "_live_" + fill(24, 1), fill(24, 1))),
        false_positives=("sk_live_ prefix",),
    ),
    Rule(
        id="slack-app-token",
        placeholder=TOKEN,
        category=CREDENTIAL,
        description="Slack app-level token `xapp-…`",
        keywords=("xapp-",),
        pattern=START + r"xapp-[A-Za-z0-9-]{16,512}+",
        accept=token_not_placeholder,
        true_positives=(("xa" + "pp-1-A" + fill(10) + "-1234-" + fill(40), fill(40)),),
        false_positives=("xapp- prefix",),
    ),
    Rule(
        id="anthropic-api-key",
        placeholder=API_KEY,
        category=CREDENTIAL,
        description="Anthropic key `sk-ant-…` (api and admin)",
        keywords=("sk-ant-",),
        pattern=START + r"sk-ant-[A-Za-z0-9_-]{20,512}+",
        accept=token_not_placeholder,
        true_positives=(("sk" + "-ant-api03-" + fill(93) + "AA", fill(93)),),
        false_positives=("sk-ant- prefix",),
    ),
    Rule(
        id="openai-project-key",
        placeholder=API_KEY,
        category=CREDENTIAL,
        description="OpenAI project/service key `sk-proj-…`, `sk-svcacct-…`, `sk-admin-…`",
        keywords=("sk-proj-", "sk-svcacct-", "sk-admin-"),
        pattern=START + r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,512}+",
        accept=token_not_placeholder,
        true_positives=(("sk" + "-proj-" + fill(100), fill(100)),),
        false_positives=("sk-proj- prefix",),
    ),
    Rule(
        id="huggingface-token",
        placeholder=TOKEN,
        category=CREDENTIAL,
        description="Hugging Face access token `hf_…`",
        keywords=("hf_",),
        pattern=START + r"hf_[A-Za-z0-9]{34,40}" + END,
        accept=token_not_placeholder,
        true_positives=(("HF_TOKEN=hf" + "_" + fill(34, 2), fill(34, 2)),),
        false_positives=("hf_hub_download(repo_id)", "the hf_ prefix"),
    ),
    Rule(
        id="pypi-token",
        placeholder=TOKEN,
        category=CREDENTIAL,
        description="PyPI upload token `pypi-AgEIcHlwaS5vcmc…` (a macaroon for pypi.org)",
        keywords=("pypi-ageichlwas5vcmc",),
        pattern=START + r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,1024}+",
        accept=token_not_placeholder,
        true_positives=(("password = py" + "pi-AgEIcHlwaS5vcmc" + fill(60, 3), fill(60, 3)),),
        false_positives=("pypi-AgEIcHlwaS5vcmc short",),
    ),
    Rule(
        id="sendgrid-api-key",
        placeholder=API_KEY,
        category=CREDENTIAL,
        description="SendGrid API key `SG.<22>.<43>`",
        keywords=("sg.",),
        pattern=START + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}" + r"(?![A-Za-z0-9_-])",
        accept=token_not_placeholder,
        true_positives=(("SG" + "." + fill(22, 1) + "." + fill(43, 4), fill(43, 4)),),
        false_positives=("SG.short.value", "config.SG.x"),
    ),
    Rule(
        id="webhook-url",
        placeholder=TOKEN,
        category=CREDENTIAL,
        description="a webhook URL whose path is the credential (Slack `hooks.slack.com/services/…`, "
        "Discord `discord.com/api/webhooks/…`); the whole URL",
        keywords=("hooks.slack.com/", "/api/webhooks/"),
        pattern=(
            r"(?:https?://)?(?:hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{20,256}+"
            r"|(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d{5,30}/[A-Za-z0-9_-]{20,256}+)"
        ),
        true_positives=(
            (
                "post to https://hooks.slack.com/services/T0" + fill(8) + "/B0" + fill(8, 2) + "/" + fill(24, 5),
                fill(24, 5),
            ),
            ("https://discord.com/api/webhooks/123456789012345678/" + fill(60, 6), fill(60, 6)),
        ),
        false_positives=("see https://api.slack.com/messaging/webhooks", "hooks.slack.com/services/ docs"),
    ),
    Rule(
        id="command-line-password",
        placeholder=PASSWORD,
        category=CREDENTIAL,
        description="a password on a command line: `curl -u user:pass`, `--user user:pass`, `sshpass -p pass`",
        keywords=("-u", "--user", "sshpass", "--pass", "--token", "--api-key", "--secret", "mysql", "mariadb"),
        pattern=(
            r"(?<![A-Za-z0-9_-])(?:(?:-u|--user)[ \t=]{1,4}['\"]?[A-Za-z0-9._@+-]{1,128}:"
            r"|sshpass[ \t]{1,4}-p[ \t]{0,4}['\"]?"
            r"|--(?:password|passwd|pass|token|api-key|secret)[ \t]{1,4}['\"]?"
            r"|(?:mysql|mysqldump|mariadb)[ \t][^\r\n|;&]{0,256}?[ \t]-p['\"]?(?=[^\s'\"]))"
            r"(?P<password>[^\s'\"]{1,256}+)"
        ),
        groups=("password",),
        accept=command_line_password,
        true_positives=(
            ("curl -u admin:" + "s3cr3t-" + fill(6) + " https://x.example", "s3cr3t-"),
            ("sshpass -p '" + fill(10, 3) + "' ssh host", fill(10, 3)),
            ("mysql -h db -u app -p" + fill(12, 4) + " shop", fill(12, 4)),
            ("vault login --token " + fill(26, 5), fill(26, 5)),
            ("psql --password " + fill(14, 6) + " -h db", fill(14, 6)),
        ),
        false_positives=(
            "docker run -u 1000:1000 img",
            "docker run --user 1000:1000 img",
            "git push -u origin main",
            'curl -u "$USER:$PASS" x',
            "curl -u username:token https://api.example.com",
            "curl -u user:<password> https://x.example",
            "mysql -u root -p mydb",
            "deploy --token $DEPLOY_TOKEN",
        ),
    ),
    Rule(
        id="netrc-password",
        placeholder=PASSWORD,
        category=CREDENTIAL,
        description="the password of a `.netrc` entry (`machine h login u password p`)",
        keywords=("machine",),
        pattern=(
            r"(?<![A-Za-z0-9_-])machine[ \t]+\S{1,253}[ \t]+login[ \t]+\S{1,128}[ \t]+password[ \t]+"
            r"(?P<password>\S{1,256})"
        ),
        groups=("password",),
        accept=is_credential_value,
        true_positives=(("machine api.example.com login bot password " + fill(16, 7), fill(16, 7)),),
        false_positives=("the machine login password prompt", "machine x login y password $NETRC_PW"),
    ),
    Rule(
        id="bundler-credentials",
        placeholder=PASSWORD,
        category=CREDENTIAL,
        description="Bundler's per-host credentials `BUNDLE_<HOST>__<TLD>=user:password` (or a token)",
        keywords=("bundle_",),
        anchor=NAME_CHARS,
        pattern=assignment(r"BUNDLE_[A-Z0-9_]{1,128}__[A-Z]{2,24}"),
        groups=_VALUE_GROUPS,
        accept=is_credential_value,
        json_quote=True,
        true_positives=(
            (
                "export BUNDLE_GEMS__CONTRIBSYS__COM="
                + fill(8, 1, "0123456789abcdef")
                + ":"
                + fill(8, 3, "abcdef0123"),
                fill(8, 1, "0123456789abcdef"),
            ),
            ("BUNDLE_RUBYGEMS__PKG__GITHUB__COM: " + fill(40, 2), fill(40, 2)),
        ),
        false_positives=(
            "BUNDLE_PATH=vendor/bundle",
            "BUNDLE_GEMS__EXAMPLE__COM=${BUNDLE_TOKEN}",
            "BUNDLE_DEPLOYMENT: true",
        ),
    ),
    Rule(
        id="sonar-login",
        placeholder=TOKEN,
        category=CREDENTIAL,
        description="SonarQube's `sonar.login` / `sonar.token` (a user token in old and new scanners)",
        keywords=("sonar",),
        anchor=NAME_CHARS,
        pattern=assignment(r"(?:-D)?sonar[._-]?(?:login|token)"),
        groups=_VALUE_GROUPS,
        accept=is_credential_value,
        json_quote=True,
        dotted_name=True,
        true_positives=(
            ("sonar.login=" + fill(40, 5, "0123456789abcdef"), fill(40, 5, "0123456789abcdef")),
            ("mvn sonar:sonar -Dsonar.token=sqp_" + fill(40, 1, "0123456789abcdef"), fill(40, 1, "0123456789abcdef")),
        ),
        false_positives=("sonar.login=${SONAR_TOKEN}", "sonar.host.url=https://sonarcloud.io"),
    ),
    Rule(
        id="public-ipv4",
        placeholder=HOST,
        category=HOST_CATEGORY,
        description="public IPv4 addresses (a transcript's addresses are its owner's servers); not "
        "`0.0.0.0`, netmasks, documentation ranges or well-known public resolvers (`8.8.8.8`, `1.1.1.1`)",
        keywords=tuple(f"{d}." for d in string.digits),  # the first octet's dot
        finder=find_public_ipv4,
        true_positives=(("ssh to 203.0.114.7 failed", "203.0.114.7"), ("peer 34.120.9.1:443", "34.120.9.1")),
        false_positives=(
            "dns 8.8.8.8",
            "mask 255.255.255.0",
            "bind 0.0.0.0",
            "doc 192.0.2.10",
            "v1.2.3.4",
            "version 1.2.3.4.5",
            "10.1.2.3",
            "1.2.3",
            "1.2.3.4rc1",
            "1.2.3.4-beta.2",
            "1.2.3.4+build.7",
        ),
    ),
    Rule(
        id="public-ipv6",
        placeholder=HOST,
        category=HOST_CATEGORY,
        description="public (global unicast) IPv6 addresses written with `::`; not documentation `2001:db8::/32`",
        keywords=("::",),
        anchor=HEX_COLON,
        pattern=IPV6,
        accept=public_ipv6,
        true_positives=(("from 2a00:1450:4001:80b::200e", "2a00:1450"),),
        false_positives=("2001:db8::1", "std::vector", "::1", "fe80::1"),
    ),
    Rule(
        id="internal-url-host",
        placeholder=HOST,
        category=HOST_CATEGORY,
        description="the host of a network URL when it has no dot (`http://jenkins:8080/`, "
        "`redis://cache/0`): a name only an internal resolver knows",
        keywords=("://",),
        gate=_URL_HOST,  # the pattern from `://` on: a host without a dot
        anchor=string.ascii_letters,  # back from `://` over the scheme
        pattern=(
            r"(?<![A-Za-z0-9+.-])(?i:https?|wss?|s?ftp|ssh|git|rediss?|postgres(?:ql)?|mysql|mongodb|amqps?|kafka"
            r"|nats|smtp|imaps?|ldaps?|tcp|udp|grpc)" + _URL_HOST
        ),
        groups=("host",),
        true_positives=(("open http://jenkins:8080/job/x", "jenkins"), ("redis://cache/0", "cache")),
        false_positives=("https://example.com/x", "chrome://settings", "https://docs.python.org/3/"),
    ),
    Rule(
        id="private-name",
        placeholder=EMAIL,
        category=IDENTITY,
        description="a person's name as a word: `redaction.private_names`, the account running kb, and the owner "
        "of any `/home/<name>`, `/Users/<name>`, `C:\\Users\\<name>` in the same text (not generic accounts "
        "such as root, runner, ubuntu, dev)",
        keywords=HOME_KEYWORDS,
        config_keywords=configured_names,
        woken_by=names_the_account,
        finder=find_private_names,
        true_positives=(
            ("cd /home/alicia/app; alicia approved it", "alicia"),
            ("Bob Kowalski reviewed it", "Kowalski"),
        ),
        false_positives=("cd /home/dev/app; dev server", "the Kowalskis' house", "cd /home/agent/app; the agent ran"),
        sample_config=(("private_names", ("Kowalski",)),),
    ),
    Rule(
        id="private-domain",
        placeholder=HOST,
        category=HOST_CATEGORY,
        description="any host under `redaction.private_domains` (e.g. the company's own domain)",
        keywords=(),
        config_keywords=configured_domains,
        finder=find_private_domains,
        true_positives=(("deploy to build-7.eu.acme-corp.example now", "build-7"),),
        false_positives=("acme-corp.example.org is someone else", "see example.com"),
        sample_config=(("private_domains", ("acme-corp.example",)),),
    ),
    Rule(
        id="secret-name-high-entropy",
        placeholder=TOKEN,
        category=CREDENTIAL,
        description="a random-looking value (≥ 16 chars, letters and digits, ≥ 3.3 bits/char) assigned to a "
        "name containing key, secret, token, credential, auth, pass, private, signature, salt, dsn or seed "
        "(not `public`; digests, shas, UUIDs and versions are not random-looking)",
        keywords=(
            "key",
            "secret",
            "token",
            "cred",
            "auth",
            "pass",
            "pwd",
            "private",
            "signature",
            "salt",
            "dsn",
            "seed",
            "login",
        ),
        anchor=NAME_CHARS,
        pattern=assignment(
            r"[A-Za-z0-9_-]{0,64}?(?:key|secret|token|cred|auth|pass|pwd|private|signature|salt|dsn|seed|login)"
            r"[A-Za-z0-9_-]{0,64}+",
            slash=True,
        ),
        groups=_VALUE_GROUPS,
        accept=secret_name_high_entropy,
        json_quote=True,
        true_positives=(
            ("AWS_SECRET_ACCESS_KEY=" + fill(40), fill(40)),
            ('{"signing_key": "' + fill(32, 9) + '"}', fill(32, 9)),
            ("export AWS_SECRET_ACCESS_KEY=/" + fill(39, 2), "/" + fill(39, 2)),  # base64 may start with `/`
        ),
        false_positives=(
            "cache_key: 3f2a9c1d4e5b6a7f8091a2b3c4d5e6f708192a3b",
            "idempotency_key=0b7d8c2e-1f3a-4b5c-9d6e-7f8a9b0c1d2e",
            "public_key: " + fill(40),
            "primary_key=id",
            "sort_key = 'created_at_desc_order_index'",
            "key_version=1.2.3-beta.4",
            "PRIVATE_KEY_FILE=/home/alice/.ssh/id_ed25519",
            "secret_dir=/run/secrets/app",
            "SIGNING_KEY_DIR=/usr/share/keyrings/Ubuntu2204",
            "TOKEN_CACHE=/run/user/1000/Tokens",
            "JAVA_KEYSTORE=/Library/Java/JavaVirtualMachines/jdk-17/Contents/Home",
        ),
    ),
)


WORD_CHARS = string.ascii_letters + string.digits + "_"


def _body_not_placeholder(shape: str) -> Accept:
    skip = -1  # the literal prefix's length, from the shape on the rule's first hit

    def accept(hit: Candidate, config: RedactionConfig) -> bool:
        nonlocal skip
        if skip < 0:
            skip = len(prefix(shape))
        return not is_placeholder_token(hit.value[skip:])

    return accept


def _token_rule(token: Token) -> Rule:
    return Rule(
        id=token.id,
        placeholder=token.placeholder,
        category=CREDENTIAL,
        description=token.description,
        keywords=token.rule_keywords,
        anchor=WORD_CHARS if token.leading else None,  # a literal prefix: the regex scan is fast
        token=token,
        accept=_body_not_placeholder(token.shape),
        shape=token.shape,
    )


def _named_value(named: Named) -> Accept:
    def accept(hit: Candidate, config: RedactionConfig) -> bool:
        value = hit.value
        return (
            named.value_regex.fullmatch(value) is not None
            and not is_placeholder_token(value)
            and not is_reference(value, hit.following)
        )

    return accept


def _named_rule(named: Named) -> Rule:
    return Rule(
        id=named.id,
        placeholder=named.placeholder,
        category=CREDENTIAL,
        description=f"{named.description}: `{named.shape}` under a name with `{named.keywords[0]}` in it",
        keywords=named.keywords,
        anchor=NAME_CHARS,
        pattern=assignment(r"[A-Za-z0-9_-]{0,40}?(?:" + named.vendor + r")[A-Za-z0-9_-]{0,40}+", slash=True),
        groups=_VALUE_GROUPS,
        accept=_named_value(named),
        json_quote=True,
        shape=named.shape,
        context=named.keywords[0].strip("_-"),
    )


_DISCORD = Rule(
    id="discord-bot-token",
    placeholder=TOKEN,
    category=CREDENTIAL,
    description="Discord bot token `<base64 of the numeric bot id>.<6>.<27-38>` (the id part is checked)",
    keywords=(),
    finder=find_discord_bot_tokens,
    shape="discord",
)

# Provider rules (kbtools.redact.providers) after the contract's and the hand-written ones, so a
# generic rule that covers the same span names it (order decides only ties).
RULES = RULES + tuple(_token_rule(t) for t in TOKENS) + (_DISCORD,) + tuple(_named_rule(n) for n in NAMED)


def rules_fingerprint() -> str:
    """A digest of the redaction code (the rules, their checks and the engine).

    Any edit changes it, so a test that pins (REDACTION_VERSION, fingerprint) stops every
    change to the rules from landing without a decision: bump the version when output can
    change; re-pin alone when it cannot (a comment, a rename).
    """
    from pathlib import Path

    here = Path(__file__).parent
    digest = hashlib.sha256()
    for name in ("rules.py", "checks.py", "engine.py", "grammar.py", "providers.py"):
        digest.update((here / name).read_bytes().replace(b"\r\n", b"\n"))
    return digest.hexdigest()[:16]
