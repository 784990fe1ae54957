"""The checks behind the rules: is a hit really a secret, an address, a private path?

A rule's regex (or finder) proposes a span; the rule's ``accept`` check, given the
:class:`Candidate`, decides. Finders cover what one regex cannot do in linear time
(PEM blocks, IPv4 found from its first dot) or what depends on the configuration and
the text itself (people's names, private domains).
"""

from __future__ import annotations

import ipaddress
import math
import re
import string
from bisect import bisect_right
from collections.abc import Callable, Iterator
from functools import cache, lru_cache
from typing import NamedTuple

from kbtools.config import RedactionConfig


class Candidate(NamedTuple):
    """A regex hit offered to a rule's ``accept`` check: the secret span of ``match``."""

    match: re.Match[str]
    start: int
    end: int

    @property
    def value(self) -> str:
        return self.match.string[self.start : self.end]

    @property
    def following(self) -> str:
        return self.match.string[self.end : self.end + 1]

    def group(self, name: str) -> str:
        return self.match.group(name) or ""


# ---------------------------------------------------------------------------
# Value checks.

_REFERENCE_PREFIXES = (
    "${",
    "$(",
    "{{",
    "<",
    "os.environ",
    "os.getenv",
    "process.env",
    "import.meta.env",
    "env[",
    "env.",
    "getenv",
    "system.getenv",
    "deno.env",
    "secrets.",
    "vars.",
    "inputs.",
    "self.",
    "this.",
    "cls.",
    "config.",
    "cfg.",
    "settings.",
    "args.",
    "opts.",
    "options.",
    "ctx.",
    "props.",
    "params.",
    "request.",
    "req.",
)
_NOT_A_VALUE = frozenset(
    """true false null none nil undefined str string bytes int bool any optional required redacted
    [redacted] hidden masked omitted empty unset n/a na tbd todo xxx ... … a an the is are was to of in
    on for and or not no yes it this that see use set from with by as be if each per one
    bearer basic digest bot await async new function lambda yield require import typeof
    include same-origin omit""".split()
)
# Words people write where a secret goes in an example, a template or a course note.
PLACEHOLDER_WORDS = frozenset(
    """changeme changeit change_me change-me changethis password passwd pass pwd secret token apikey api_key
    api-key key test testing example sample dummy placeholder replaceme replace_me replace-me fake foo bar
    foobar baz qux value username user admin root login mypassword mysecret mytoken yourpassword yoursecret
    yourtoken secretkey secret_key notasecret not-a-secret not_a_secret insecure unsafe default none""".split()
)
_STRING_PREFIXES = frozenset("f b r u rb br fr rf".split())
_MASKED = re.compile(r"[xX*.•…#_-]{1,64}")
_ALL_CAPS_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
# `${VAR}`, `${VAR:default}`, `$(cmd)`, `{{ tmpl }}`, `{% … %}`, `%VAR%`, `@VAR@`, `<your-token>`, `{0}`, `%s`.
_TEMPLATE = re.compile(r"\$\{[^}]{0,256}\}?|\$\([^)]{0,256}\)?|\{\{|\{%|<[^<>]{1,64}>")
# A whole value that is only a variable: `$VAR`, `%VAR%`, `@VAR@`, `{0}`, `%s`, `$1`.
_VARIABLE = re.compile(
    r"\$[A-Za-z_][A-Za-z0-9_]{0,64}|%[A-Za-z_][A-Za-z0-9_]{0,64}%|@[A-Za-z_][A-Za-z0-9_]{0,64}@|\{[0-9]{0,2}\}"
    r"|%[+# 0-]?[sdrfxv]|\$[0-9]"
)
# A placeholder body: x/X/*/0 runs (`ghp_xxxx…`, `XXXX-XXXX`, `sk-****`), a keyboard or alphabet run.
_MASK_RUN = re.compile(r"x{6}|X{6}|\*{3}|0{8}|#{4}|\.{3}|…|•{3}|_{6}")
_SEQUENCES = ("abcdefgh", "qwertyui", "abcd1234", "1234abcd")
_PLACEHOLDER_HINTS = ("your", "example", "placeholder", "redacted", "changeme", "insert", "replace", "dummy")
# A dotted or scoped code reference: `var.db_password`, `X25519.secret_length`, `Foo::BAR`, `a->b`.
_DOTTED = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]{0,64}(?:(?:\.|::|->)[A-Za-z_$][A-Za-z0-9_$]{0,64}){1,8}")
_DOTTED_SPLIT = re.compile(r"\.|::|->")
_CALL = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,128}\(.{0,256}\)")
_MODULE = re.compile(r"[a-z_]{2,32}(?:\.[a-z_]{2,32}){1,6}")
_FORMAT_ONLY = re.compile(r"(?:%[-+# 0-9.]*[sdrfxvi]|\{[0-9A-Za-z_]{0,32}\}|[:@/ ._-])+")
_SNAKE = re.compile(r"[a-z][a-z0-9]{0,32}(?:_[a-z0-9]{1,32}){1,8}")
_SECRET_WORDS = ("password", "passwd", "pass", "pwd", "token", "secret", "key", "cred", "auth", "login")
# Regular-expression syntax: two of these and the value is a pattern, not a password.
_REGEX_MARKS = re.compile(
    r"\(\?[=!:<]|\.\*|\.\+|\\[dwsSbDW]|\[[a-zA-Z0-9]-[a-zA-Z0-9]|\{\d{1,3},\d{0,3}\}|^\^|\$$|\[\^"
)


def _is_snake_words(value: str) -> bool:
    """`saved_assert_hooks`, `db_password`, `my_var_2`: words, not `ghp_bbbbbbbbbbbbbbbb`."""
    return bool(_SNAKE.fullmatch(value)) and all(len(p) <= 3 or any(v in p for v in "aeiouy") for p in value.split("_"))


def is_placeholder(value: str) -> bool:
    """A stand-in for a secret: a template, a placeholder word, a masked or degenerate body."""
    low = value.lower()
    if low in PLACEHOLDER_WORDS or low.strip("<>[]{}()'\"` ") in PLACEHOLDER_WORDS:
        return True
    if _TEMPLATE.match(value) or _VARIABLE.fullmatch(value) or _MASKED.fullmatch(value):
        return True
    if _MASK_RUN.search(value) or any(seq in low for seq in _SEQUENCES):
        return True
    if any(hint in low for hint in _PLACEHOLDER_HINTS):
        return True
    body = value.strip("-_.:/=")
    return len(body) >= 4 and len(set(body.lower())) <= 2


_TOKEN_SEQUENCES = (*_SEQUENCES, "12345678", "0123456789", "abcdefghij")


def is_placeholder_token(value: str) -> bool:
    """A provider-shaped stand-in: `ghp_xxxx…`, `AKIA…EXAMPLE`, `sk-****`, `xoxb-1234567890-…`,
    a body of a handful of distinct characters."""
    low = value.lower()
    if _MASK_RUN.search(value) or any(seq in low for seq in _TOKEN_SEQUENCES):
        return True
    if any(hint in low for hint in _PLACEHOLDER_HINTS):
        return True
    body = _NOT_ALNUM.sub("", value)
    return len(body) >= 12 and len(set(body.lower())) <= 2 and bool(set(body.lower()) & set("x0"))


def token_not_placeholder(hit: Candidate, config: RedactionConfig) -> bool:
    return not is_placeholder_token(hit.value)


def looks_like_regex(value: str) -> bool:
    return len(_REGEX_MARKS.findall(value)) >= 2


def is_code_reference(value: str) -> bool:
    """`var.db_password`, `PdfEncryptionKeySize.Key128Bit`, `settings::API_KEY`: a name, not a value."""
    if not _DOTTED.fullmatch(value):
        return False
    parts = _DOTTED_SPLIT.split(value)
    return not any(is_high_entropy(part) or len(part) > 40 for part in parts)


def is_reference(value: str, following: str = "") -> bool:
    """``$VAR``, ``${VAR}``, ``os.environ[...]``, ``process.env.X``, ``{{ tmpl }}``, ``<YOUR_TOKEN>``,
    a call ``get_secret()``, a constant ``MY_API_KEY``: a pointer to a secret, not one."""
    low = value.lower()
    if low.startswith(_REFERENCE_PREFIXES) or low.startswith("your") and len(value) > 4 and not value[4].isalnum():
        return True
    if following == "(" or following == "[":  # a call or a subscript: the value is computed
        return True
    return bool(_ALL_CAPS_NAME.fullmatch(value))


# --- the name model -----------------------------------------------------------------------
# A name's words (snake, kebab, dotted, camelCase) decide what its value can be.

# The name describes a secret without holding one: its length, age, file, field, type, ….
QUALIFIERS = frozenset(
    """min max minimum maximum length len size age days expiry expires expire expiration lifetime ttl timeout
    count policy policies rule rules history reuse complexity strength rounds iterations attempts retries
    limit lockout chars digits lowercase uppercase symbols special file files path dir directory url uri
    endpoint env var variable name names type kind id ids prefix suffix regex regexp pattern hint prompt
    label field header param parameter placeholder input form validator validation error message msg text
    title description desc help link button show hidden visible toggle enabled required provider store
    handler callback class module ref index position offset number num location format mode version
    algorithm algo bits column changed updated created reset manager mgr service helper fd""".split()
)
# The value under these is a digest or an identifier, never a secret however random it looks.
HASHISH = frozenset(
    """sha sha1 sha224 sha256 sha384 sha512 md5 digest checksum hash commit etag integrity fingerprint revision
    rev oid uuid guid crc shasum sum""".split()
)
# Keys that are not cryptographic keys: a cache key, a sort key, a primary key, ….
KEY_KINDS = frozenset(
    """cache sort primary partition idempotency foreign public pub object lookup routing dedup dedupe index
    group row map cursor unique composite natural sequence bucket hot idx schema hotkey shortcut keyboard
    react list item table dict hash s3 redis storage query""".split()
)
# Names whose value is a secret whatever its shape (hex and UUIDs included).
STRONG = frozenset(
    """secret secrets token tokens password passwd pwd passphrase private master signing encryption encrypt
    decrypt hmac aes credential credentials creds cred api apikey access auth session client bearer
    webhook license login""".split()
)
_CAMEL = re.compile(r"[A-Z]{2,}(?=[A-Z][a-z]|[0-9]|\b)|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]+")


@lru_cache(maxsize=4096)
def name_words(name: str) -> tuple[str, ...]:
    words: list[str] = []
    for part in _NOT_ALNUM.split(name):
        words.extend(w.lower() for w in _CAMEL.findall(part))
    return tuple(words)


def name_is_metadata(name: str) -> bool:
    """`password_min_length`, `max_password_age_days`, `token_file`, `secret_name`: about a secret."""
    return any(w in QUALIFIERS for w in name_words(name))


def name_is_hashish(name: str) -> bool:
    return any(w in HASHISH for w in name_words(name))


def name_holds_key_material(name: str) -> bool:
    """A hex or UUID value is a secret under `ENCRYPTION_KEY`, `signing_key`, `api_token` — not
    under `cache_key`, `sha256`, `commit`, `etag`, `idempotency_key`."""
    words = name_words(name)
    if any(w in HASHISH or w in KEY_KINDS for w in words):
        return False
    return any(w in STRONG or w == "key" or w.endswith("key") for w in words)


def is_benign(value: str, name: str, following: str = "", *, bare: bool = True) -> bool:
    """The benign model: what a value under ``name`` is when it is not a secret."""
    stripped = value.strip()
    if not stripped:
        return True
    low = stripped.lower()
    if low in _NOT_A_VALUE or is_placeholder(stripped) or is_reference(stripped, following):
        return True
    if name and name_is_metadata(name):
        return True
    if looks_like_regex(stripped):
        return True
    compact = _NOT_ALNUM.sub("", low)
    if len(compact) >= 3 and compact in _NOT_ALNUM.sub("", name.lower()):  # `PASSWORD = "password"`
        return True
    if _FORMAT_ONLY.fullmatch(stripped) or _CALL.fullmatch(stripped) or _MODULE.fullmatch(stripped):
        return True  # `'%s:%s' % (user, pw)`, `cookies.append(cookie)`, `'http.cookies'`
    if bare:
        if is_code_reference(stripped) or _is_snake_words(stripped):  # `= var.db_password`, `= saved_hooks`
            return True
        if len(stripped) <= 3:  # `token = 0`, `"token": i`: a counter or a variable, not a credential
            return True
    return False


def is_credential_value(hit: Candidate, config: RedactionConfig) -> bool:
    """An assigned value that may be a credential (placeholders and references are not)."""
    stripped = hit.value.strip()
    groups = hit.match.re.groupindex
    bare = "v_bare" in groups and hit.match.start("v_bare") == hit.start
    name = hit.group("name") if "name" in groups else ""
    if bare:
        if stripped.lower() in _STRING_PREFIXES and hit.following in ('"', "'"):  # `f"…"`: the string is next
            return False
        if _is_type_annotation(hit, stripped):
            return False
    if "kq" in groups and not _plausible_pair(hit, stripped):
        return False
    if not _ASCII_ALNUM.search(stripped):  # `"cookie": "🍪"`
        return False
    between = hit.match.string[hit.match.end("name") : hit.start] if "name" in groups else ""
    if ("==" in between or "!=" in between) and not distinctive(stripped):  # `if token == "integer":`
        return False
    if bare and stripped.isalpha() and not name.isupper() and " = " in between:  # `password = split`
        return False
    if bare and _in_prose_or_docs(hit, stripped):
        return False
    return not is_benign(stripped, name, hit.following, bare=bare)


def _plausible_pair(hit: Candidate, value: str) -> bool:
    """`f("name", value)` binds only as a call's first argument (or a `[key, value]` pair), never
    as words in a list (`("text", "password", "label")`) nor a label (`t("password", "Your password")`)."""
    text, start = hit.match.string, hit.match.start()
    between = text[hit.match.end("name") : hit.start].lstrip("\\\"' ")
    if not between.startswith(","):
        return True
    if " " in value or (value.isalpha() and value.islower()):  # a label, or the next word of a list
        return False
    return text[max(0, start - 8) : start].rstrip().endswith(("(", "["))


_ASCII_ALNUM = re.compile(r"[A-Za-z0-9]")
_CAMEL_TOKEN = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|_+")


def _identifier_words(value: str) -> bool:
    """An identifier made of words: `identity`, `next_token`, `HTTPPasswordMgr`, `maxRetries2`
    (not `gBEslgyf3jT4…`, whose pieces are single letters and consonant runs)."""
    for piece in _CAMEL_TOKEN.findall(value):
        if piece[0] == "_":
            continue
        if piece.isdigit():
            if len(piece) > 3:
                return False
        elif piece.isupper() and len(piece) <= 6:
            continue
        elif len(piece) < 2 or not any(v in piece.lower() for v in "aeiouy"):
            return False
    return True


def distinctive(value: str) -> bool:
    """Not a word or an identifier, six characters or more, two kinds of character or more."""
    if len(value) < 6 or (value.isidentifier() and _identifier_words(value)):
        return False
    return _kinds(value) >= 2


_LOWER = re.compile(r"[a-z]")
_UPPER = re.compile(r"[A-Z]")
_DIGIT = re.compile(r"[0-9]")
_OTHER = re.compile(r"[^A-Za-z0-9]")


def _kinds(value: str) -> int:
    """How many of lower-case, upper-case, digit and other characters ``value`` holds."""
    return sum(1 for kind in (_LOWER, _UPPER, _DIGIT, _OTHER) if kind.search(value))


_DOC_FIELD = re.compile(
    r"(?:^|\s)(?::param|:ivar|:type|:raises|@param|@return|#|//|\*)[ \t]*(?:[A-Za-z_]{1,32}[ \t]+)?$"
)
_DOC_WINDOW = 80
_WORD_AFTER = re.compile(r"[ \t]+[a-z]{2,}")


def _in_prose_or_docs(hit: Candidate, value: str) -> bool:
    """`:param token: the token to use`, `# First pass: only look at …`, `Token: the smallest unit`."""
    text = hit.match.string
    start = hit.match.start()
    line_start = text.rfind("\n", max(0, start - _DOC_WINDOW), start) + 1  # bounded: linear on one huge line
    if _DOC_FIELD.search(text, max(line_start, start - _DOC_WINDOW), start):
        return not is_high_entropy(value)
    return value.isalpha() and value.islower() and _WORD_AFTER.match(text, hit.end) is not None


_TYPE_NAME = re.compile(r"[A-Z][a-z]+(?:[A-Z][a-z]+)*")


def _is_type_annotation(hit: Candidate, value: str) -> bool:
    """`token: CachedLedger,` / `(token: Token)` / `token: Token = None`: a parameter's type."""
    text = hit.match.string
    if not _TYPE_NAME.fullmatch(value) or ":" not in text[hit.match.end("name") : hit.start]:
        return False
    rest = text[hit.end : hit.end + 8].lstrip(" ")
    return rest[:1] in (",", ")", ";", "|", ">", "]", "=")


def shannon_entropy(value: str) -> float:
    counts: dict[str, int] = {}
    for ch in value:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


_TOKEN_CHARS = re.compile(r"[A-Za-z0-9+/=_.~-]{16,1024}")
_HEX_OR_UUID = re.compile(r"[0-9a-fA-F]{7,64}|[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")
_VERSIONISH = re.compile(r"v?\d+(?:\.\d+)+(?:[-+.][0-9A-Za-z.-]*)?")


_WORDS_JOINED = re.compile(r"[a-z]{2,}[0-9]{0,2}(?:[-_./][a-z]{2,}[0-9]{0,2}){1,12}")


def is_high_entropy(value: str) -> bool:
    """Random-looking: token characters only, ≥ 16 long, letters and digits, entropy ≥ 3.3 bits/char;
    not a hex digest, git sha, UUID, version or words joined by `-`/`_` (`types-auth0-python`)."""
    if not _TOKEN_CHARS.fullmatch(value) or _HEX_OR_UUID.fullmatch(value) or _VERSIONISH.fullmatch(value):
        return False
    if _WORDS_JOINED.fullmatch(value):
        return False
    if not (_DIGIT.search(value) and (_LOWER.search(value) or _UPPER.search(value))):
        return False
    return shannon_entropy(value) >= 3.3


def secret_name_high_entropy(hit: Candidate, config: RedactionConfig) -> bool:
    """A random-looking value under a secret-ish name; a hex digest or UUID only under a name that
    holds key material (`ENCRYPTION_KEY`, not `cache_key`, `sha256`, `commit`)."""
    value = hit.value
    # The value's shape first: most values under such names (`token = parse_record`) fail it,
    # and it is the cheapest of the checks (all of them must hold; none has a side effect).
    hexish = _HEX_OR_UUID.fullmatch(value) is not None
    if hexish:
        if len(value) < 16 or shannon_entropy(value) < 2.5:
            return False
    elif not is_high_entropy(value):
        return False
    name = hit.group("name")
    low = name.lower()
    if (
        "public" in low
        or "pub_key" in low
        or "publishable" in low
        or _path_like(value, config)
        or name_is_hashish(name)
    ):
        return False
    if not is_credential_value(hit, config):
        return False
    return not hexish or name_holds_key_material(name)


# Top folders of paths that are not system paths (those are config.public_path_prefixes).
_PATH_ROOTS = ("/home/", "/Users/", "/root/", "/tmp/", "/mnt/", "/media/", "/Volumes/", "/private/", "/workspace/")


def _path_like(value: str, config: RedactionConfig) -> bool:
    """An absolute path, not a base64 value that starts with ``/``: under a known top
    folder, or with a dot (a file name, ``.ssh``), or without a capital letter (base64
    of that length always has some)."""
    if not value.startswith("/"):
        return False
    return (
        value.startswith(config.public_path_prefixes)
        or value.startswith(_PATH_ROOTS)
        or "." in value
        or not any(c.isupper() for c in value)
    )


def _has_mixed_classes(value: str) -> bool:
    """Not a plain word: a digit, or a capital after the first character."""
    return any(c.isdigit() for c in value) or any(c.isupper() for c in value[1:])


def url_password(hit: Candidate, config: RedactionConfig) -> bool:
    userinfo = hit.value.split("://", 1)[1].split("@", 1)[0]
    return not is_reference(userinfo.split(":", 1)[1])


def sk_key(hit: Candidate, config: RedactionConfig) -> bool:
    body = hit.value[3:]
    return _has_mixed_classes(body) and not is_placeholder_token(body)  # `sk-learn-compatible-…` is prose


def command_line_password(hit: Candidate, config: RedactionConfig) -> bool:
    """`-u 1000:1000` is a uid:gid, not a user and password; `$PASS` is a reference;
    `curl -u username:token` and `-u user:<password>` are placeholders."""
    value = hit.value.strip("'\"")
    if value.isdigit() or is_reference(value, hit.following) or is_placeholder(value):
        return False
    if value.isalpha() and value.islower():  # `the --password options`: prose about a flag
        return False
    return not looks_like_regex(value)


def not_a_word(hit: Candidate, config: RedactionConfig) -> bool:
    return _has_mixed_classes(hit.value) and not is_placeholder_token(hit.value)


# ---------------------------------------------------------------------------
# PEM private keys: BEGIN … END pairs found with two linear scans. A block cut off
# before its END (a truncated transcript) is redacted through the end of its body.

_PEM_BEGIN = re.compile(r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_BODY = re.compile(r"(?:[A-Za-z0-9+/=:, \t\r\n-]|\\[nrt]){0,65536}")


def find_private_keys(text: str, config: RedactionConfig) -> Iterator[tuple[int, int]]:
    pos = 0
    ends_exhausted = False
    while True:
        begin = _PEM_BEGIN.search(text, pos)
        if begin is None:
            return
        end = None if ends_exhausted else _PEM_END.search(text, begin.end())
        if end is None:
            ends_exhausted = True  # no END anywhere later: every later BEGIN is truncated too
            body = _PEM_BODY.match(text, begin.end())
            stop = body.end() if body else begin.end()
            yield begin.start(), stop
            pos = max(stop, begin.end())
        else:
            yield begin.start(), end.end()
            pos = end.end()


# ---------------------------------------------------------------------------
# Identity and hosts.

_FILE_EXTENSION_TLDS = frozenset(
    "png jpg jpeg gif svg webp ico bmp css scss less js mjs cjs ts tsx jsx json lock yaml yml toml "
    "html htm txt map wasm vue svelte astro mdx ini cfg conf log csv".split()
)


def email_not_a_file(hit: Candidate, config: RedactionConfig) -> bool:
    return hit.value.rsplit(".", 1)[-1].lower() not in _FILE_EXTENSION_TLDS


# `pkg@tag`: npm dist-tags, branch names and version pins are not hosts.
_PACKAGE_TAGS = frozenset(
    "latest next canary beta alpha rc stable lts nightly experimental insiders dev edge main master head "
    "preview release current legacy".split()
)
_VERSION_PIN = re.compile(r"v?\d[\w.-]*|[0-9a-fA-F]{7,40}|\d+\.x|x|sha\d{1,3}|md5")


# `pkg@npm:^2.0.0`, `pkg@workspace:*`, `pkg@patch:…`: a package manager's protocol, not a host.
_PACKAGE_PROTOCOLS = frozenset("npm jsr workspace patch portal link file git github exec".split())


def login_at_host(hit: Candidate, config: RedactionConfig) -> bool:
    host = hit.value.rsplit("@", 1)[1]
    if hit.following == ":" and host.lower() in _PACKAGE_PROTOCOLS:
        return False
    if host[0].isdigit():  # only a dotted-quad address is a host here; `pkg@18.2.0` is a version
        return _is_ipv4(host)
    if host.lower() in _PACKAGE_TAGS or _VERSION_PIN.fullmatch(host):
        return False
    return len(host) >= 2


def _is_ipv4(value: str) -> bool:
    return ipv4_value(value) is not None


def ipv4_value(text: str) -> int | None:
    """The address ``ipaddress.IPv4Address(text)`` stands for, as an int, or None where it
    refuses the text: four dot-separated ASCII decimal octets, each at most 255, none with a
    leading zero. (Parsed here, in half the time the class takes: a pasted server log holds
    an address on nearly every line.)"""
    parts = text.split(".")
    if len(parts) != 4 or not text.isascii():
        return None
    value = 0
    for part in parts:
        if not part.isdigit() or len(part) > 3 or (part[0] == "0" and len(part) > 1):
            return None
        octet = int(part)
        if octet > 255:
            return None
        value = value << 8 | octet
    return value


_PRIVATE_V4 = ("10.0.0.0/8", "127.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10")
_PRIVATE_V6 = ("::1/128", "fc00::/7", "fe80::/10")


@cache
def _networks(names: tuple[str, ...]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(n) for n in names)


# An IPv4 address is found from its first dot (`.d.d.d`, a literal the regex engine finds
# fast) and extended back over its first octet, instead of trying a regex at every digit.
_IPV4_TAIL = re.compile(r"\.\d{1,3}\.\d{1,3}\.\d{1,3}(?![0-9]|\.\d)")


_last_quads: tuple[str, list[tuple[int, int, int]]] = ("", [])


def _ipv4_candidates(text: str) -> list[tuple[int, int, int]]:
    """``(start, end, address)`` of every dotted quad :class:`ipaddress.IPv4Address` takes.
    Those of the last text asked for are kept: the private and the public rule ask in turn."""
    global _last_quads
    last = _last_quads
    if last[0] is text:
        return last[1]
    found = []
    for match in _IPV4_TAIL.finditer(text):
        start, lead = match.start(), 0
        while start > 0 and lead < 4 and text[start - 1] in "0123456789":
            start, lead = start - 1, lead + 1
        if not 1 <= lead <= 3 or not _token_start(text, start):
            continue
        value = ipv4_value(text[start : match.end()])
        if value is not None:
            found.append((start, match.end(), value))
    _last_quads = (text, found)
    return found


@cache
def _private_v4() -> tuple[tuple[int, int], ...]:
    """(network address, netmask) of each of :data:`_PRIVATE_V4`: an address is in one when
    its bits under the mask are the network's (what ``address in network`` tests)."""
    return tuple((int(net.network_address), int(net.netmask)) for net in _networks(_PRIVATE_V4))


def find_private_ipv4(text: str, config: RedactionConfig) -> Iterator[tuple[int, int]]:
    networks = _private_v4()
    for start, end, value in _ipv4_candidates(text):
        if any(value & mask == first for first, mask in networks):
            yield start, end


@cache
def _v4_global() -> Callable[[int], bool]:
    """``ipaddress.IPv4Address(value).is_global``, from a table of address ranges.

    Python decides it by membership in the networks of ``IPv4Address._constants`` (which
    ones, and the exceptions among them, differ between patch releases). Between two edges
    of those networks the answer cannot change, so it is asked of ``ipaddress`` once per
    range, at the range's first address, and checked at its last; where the constants are
    not there, or a check disagrees, every address is asked of ``ipaddress``."""

    def asked(value: int) -> bool:
        return ipaddress.IPv4Address(value).is_global

    networks: list[ipaddress.IPv4Network] = []
    for value in vars(getattr(ipaddress.IPv4Address, "_constants", object)).values():
        for item in value if isinstance(value, list | tuple) else (value,):
            if isinstance(item, ipaddress.IPv4Network):
                networks.append(item)
    if not networks:
        return asked
    top = 1 << 32
    starts = sorted({0, *(int(n.network_address) for n in networks), *(int(n.broadcast_address) + 1 for n in networks)})
    if starts[-1] == top:
        starts.pop()
    answers = [asked(start) for start in starts]
    ends = [*starts[1:], top]
    if any(asked(end - 1) != answer for end, answer in zip(ends, answers, strict=True)):
        return asked
    return lambda value: answers[bisect_right(starts, value) - 1]


def private_ipv6(hit: Candidate, config: RedactionConfig) -> bool:
    try:
        address = ipaddress.IPv6Address(hit.value.split("%", 1)[0])
    except ValueError:  # `fcab:12`, `std::` and friends are not addresses
        return False
    return any(address in net for net in _networks(_PRIVATE_V6))


def _not_public(config: RedactionConfig, path: str) -> bool:
    return not path.startswith(config.public_path_prefixes)


def not_public_path(hit: Candidate, config: RedactionConfig) -> bool:
    return _not_public(config, hit.value)


def file_url_not_public(hit: Candidate, config: RedactionConfig) -> bool:
    value = hit.value
    path = "/" + value.lstrip("/") if value.startswith("/") else value
    return _not_public(config, path)


# ---------------------------------------------------------------------------
# Public addresses, internal URL hosts, and the names and domains a text or the
# configuration makes private (all beyond the contract).

# Public resolvers everybody writes down; not anybody's own server.
_WELL_KNOWN_ADDRESSES = frozenset(
    "8.8.8.8 8.8.4.4 1.1.1.1 1.0.0.1 9.9.9.9 149.112.112.112 208.67.222.222 208.67.220.220".split()
)


def _token_start(text: str, start: int) -> bool:
    """Nothing of a word, number or address before ``start`` (a JSON `\\n` escape is a boundary)."""
    if start == 0 or text[start - 1] not in _ADDRESS_CHARS:
        return True
    return start >= 2 and text[start - 2] == "\\" and text[start - 1] in "nrt"


_ADDRESS_CHARS = frozenset(string.ascii_letters + string.digits + "_.\\")


def find_public_ipv4(text: str, config: RedactionConfig) -> Iterator[tuple[int, int]]:
    is_global = _v4_global()
    for start, end, value in _ipv4_candidates(text):
        # The text of a quad taken is the address's own (no leading zeros).
        if is_global(value) and text[start:end] not in _WELL_KNOWN_ADDRESSES and not _version_suffix(text, end):
            yield start, end


def _version_suffix(text: str, end: int) -> bool:
    """``1.2.3.4rc1``, ``1.2.3.4-beta``, ``1.2.3.4+build``: a four-part version, not an address."""
    follow = text[end : end + 2]
    return bool(follow) and (follow[0].isalpha() or (follow[0] in "-+" and follow[1:2].isalpha()))


def public_ipv6(hit: Candidate, config: RedactionConfig) -> bool:
    try:  # documentation (2001:db8::/32), loopback, unique-local and link-local are not global
        return ipaddress.IPv6Address(hit.value.split("%", 1)[0]).is_global
    except ValueError:
        return False


_GENERIC_ACCOUNTS = frozenset(
    """root admin administrator user users runner runneradmin ubuntu debian ec2-user vscode node app dev
    developer build builder ci git jenkins docker guest default public shared share home test tester nobody
    www-data codespace codespaces data project projects work src code repos workspace workspaces tmp temp
    backup storage media docs files apps opt local lib bin vagrant gitpod coder centos fedora alpine kali
    daemon operator postgres agent sandbox container""".split()
)
_POSIX_HOME = re.compile(r"/(?:home|Users)/([A-Za-z0-9._-]{3,64})")
_WINDOWS_HOME = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z]:(?:\\{1,4}|/)Users(?:\\{1,4}|/)([A-Za-z0-9._-]{3,64})")


@lru_cache(maxsize=1)
def local_account() -> str:
    """The account running kb: the name most likely to appear in its own transcripts."""
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for the uid (a container)
        return ""


@lru_cache(maxsize=64)
def _standing_names(configured: tuple[str, ...], account: str) -> tuple[str, ...]:
    return tuple({n.lower() for n in (*configured, account) if _is_private_name(n)})


def _is_private_name(name: str) -> bool:
    return len(name) >= 3 and name.lower() not in _GENERIC_ACCOUNTS


# What the home-directory patterns cannot match without, lower-cased: the private-name rule's keywords.
HOME_KEYWORDS = ("/home/", "/users/", ":\\", ":/users")


def configured_names(config: RedactionConfig) -> tuple[str, ...]:
    """The configured private names, lower-cased: keywords of the private-name rule."""
    return _standing_names(config.private_names, "")


def names_the_account(lower: str, config: RedactionConfig) -> bool:
    """The (lower-cased) text holds the name of the account running kb, a private name."""
    name = _private_account(local_account())
    return bool(name) and name in lower


@lru_cache(maxsize=8)
def _private_account(account: str) -> str:
    return account.lower() if _is_private_name(account) else ""


def private_names(text: str, config: RedactionConfig) -> set[str]:
    """Configured names, the local account, and the owners of home directories in ``text``."""
    standing = _standing_names(config.private_names, local_account())
    lower = text.lower() if standing else ""
    names = {n for n in standing if n in lower}
    # What each pattern cannot match without (they are case-sensitive).
    homes = [_POSIX_HOME] if "/home/" in text or "/Users/" in text else []
    if ":\\" in text or ":/Users" in text:
        homes.append(_WINDOWS_HOME)
    for pattern in homes:  # each owner once (a transcript names its home directory again and again)
        names.update(name.lower() for name in set(pattern.findall(text)) if _is_private_name(name))
    return names


def find_private_names(text: str, config: RedactionConfig) -> list[tuple[int, int]]:
    names = private_names(text, config)
    if not names:
        return []
    ordered = tuple(sorted(names, key=lambda n: (-len(n), n)))
    if text.isascii() and all(n.isascii() for n in ordered):
        return _ascii_words(text.lower(), ordered)
    return [(m.start(), m.end()) for m in _names_pattern(ordered).finditer(text)]


_WORD_CHARS = frozenset(string.ascii_lowercase + string.digits + "_")


def _ascii_words(lower: str, names: tuple[str, ...]) -> list[tuple[int, int]]:
    """What ``_names_pattern(names).finditer`` finds in an ASCII text, from ``str.find`` on its
    lower-cased form (an ASCII name matches it case-insensitively exactly where it occurs there):
    left to right, at each place the first (longest) name that stands as a word, never overlapping."""
    at: dict[int, list[str]] = {}
    for name in names:  # longest first: each place's list keeps the pattern's order
        pos = lower.find(name)
        while pos != -1:
            at.setdefault(pos, []).append(name)
            pos = lower.find(name, pos + 1)
    found: list[tuple[int, int]] = []
    done = 0
    for pos in sorted(at):
        if pos < done or (pos > 0 and lower[pos - 1] in _WORD_CHARS):
            continue
        for name in at[pos]:
            end = pos + len(name)
            if end == len(lower) or lower[end] not in _WORD_CHARS:
                found.append((pos, end))
                done = end
                break
    return found


@lru_cache(maxsize=256)
def _names_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    """Any of ``names`` (longest first) as a word, case-insensitive."""
    alternation = "|".join(re.escape(n) for n in names)
    return re.compile(r"(?<![A-Za-z0-9_])(?:" + alternation + r")(?![A-Za-z0-9_])", re.IGNORECASE)


def configured_domains(config: RedactionConfig) -> tuple[str, ...]:
    """The configured private domains, lower-cased: the private-domain rule's keywords."""
    return tuple(d.strip(".").lower() for d in config.private_domains if d.strip("."))


def find_private_domains(text: str, config: RedactionConfig) -> Iterator[tuple[int, int]]:
    domains = configured_domains(config)
    if not domains:
        return
    lower = text.lower()
    domains = tuple(d for d in domains if d in lower)
    if not domains:
        return
    for match in _domains_pattern(tuple(sorted(domains, key=len, reverse=True))).finditer(text):
        yield match.start(), match.end()


@lru_cache(maxsize=256)
def _domains_pattern(domains: tuple[str, ...]) -> re.Pattern[str]:
    """A host under any of ``domains`` (longest first), case-insensitive."""
    alternation = "|".join(re.escape(d) for d in domains)
    return re.compile(
        r"(?<![A-Za-z0-9_.-])(?:[A-Za-z0-9-]{1,63}\.){0,10}(?:" + alternation + r")(?![A-Za-z0-9_-]|\.[A-Za-z0-9])",
        re.IGNORECASE,
    )
