"""What counts as an identifier: the anchors a rewrite of a note must not silently drop.

Each class is data — a regex fragment, a normaliser, and true and false samples
kept next to it (one test walks every class, so a class cannot land without
samples). The fragments are joined, in the order of ``CLASSES``, into one
alternation scanned left to right: where two classes could match at the same
place the earlier, more specific one wins, and matches never overlap, so a sha
inside a URL belongs to the URL.

The gate compares *keys*: the verbatim token with sentence punctuation and
unbalanced brackets stripped, hex ids and UUIDs lower-cased, env-var references
reduced to the variable name. Everything else stays as written, because the
warning must name each lost identifier exactly as the old page spelled it.

Every fragment that starts with a repeated character class is anchored by a
lookbehind or ``\\b`` so that it can only start at the beginning of a run: the
scan stays linear on adversarial input (a 1 MB word, a wall of slashes).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache


@dataclass(frozen=True)
class Identifier:
    """One identifier; equality and hashing use ``key`` only, so a moved or respelled-in-case sha is kept."""

    key: str
    text: str = field(compare=False)  # as the page wrote it (minus sentence punctuation)
    kind: str = field(compare=False)


Normaliser = Callable[[str, str], "Identifier | None"]


@dataclass(frozen=True)
class IdentifierClass:
    name: str
    description: str
    pattern: str  # a regex fragment without capture groups
    normalise: Normaliser
    # (text, key that extracting the text must yield with this class)
    true_samples: tuple[tuple[str, str], ...]
    # texts in which this class must find nothing
    false_samples: tuple[str, ...]


# ---------------------------------------------------------------------------
# Normalisation helpers

_TRAILING = ".,;:!?*_"
_CLOSERS = {")": "(", "]": "[", "}": "{"}
_QUOTES = "'\""


def strip_trailing(token: str) -> str:
    """Drop sentence punctuation, emphasis marks and unbalanced closing brackets or quotes."""
    while token:
        last = token[-1]
        if last in _TRAILING:
            token = token[:-1]
        elif last in _CLOSERS and token.count(last) > token.count(_CLOSERS[last]):
            token = token[:-1]
        elif last in _QUOTES and token.count(last) % 2 == 1:
            token = token[:-1]
        else:
            break
    return token


def _lower(kind: str, raw: str) -> Identifier | None:
    return Identifier(raw.lower(), raw, kind)


def _path(kind: str, raw: str) -> Identifier | None:
    text = strip_trailing(raw)
    # A path made only of separators, `~` or a drive (`/`, `~/`, `C:\`) names nothing.
    segments = re.split(r"[/\\]", text)
    if not any(re.search(r"\w", s) for s in segments if s != "~" and not re.fullmatch(r"[A-Za-z]:", s)):
        return None
    key = text.rstrip("/\\") if len(text) > 1 else text
    return Identifier(key, text, kind)


def _url(kind: str, raw: str) -> Identifier | None:
    text = strip_trailing(raw)
    if re.fullmatch(r"[a-z]+://", text):
        return None
    return Identifier(text.rstrip("/"), text, kind)


def _date(kind: str, raw: str) -> Identifier | None:
    month, day = int(raw[5:7]), int(raw[8:10])
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    return Identifier(raw, raw, kind)


def _hex_id(kind: str, raw: str) -> Identifier | None:
    # At least one digit and one letter: "defaced", "facade" and "1234567" are not ids.
    if raw.isdigit() or not any(c.isdigit() for c in raw):
        return None
    return Identifier(raw.lower(), raw, kind)


def _env_var(kind: str, raw: str) -> Identifier | None:
    # `$HOME`, `${HOME}` and `%HOME%` all refer to the variable HOME.
    return Identifier(raw.strip("${}%"), raw, kind)


def _version(kind: str, raw: str) -> Identifier | None:
    text = strip_trailing(raw)
    return Identifier(text, text, kind)


# Extensions of source files: `gate.py:120` is a file and a line, not a host and a port.
SOURCE_EXTENSIONS = frozenset(
    "py pyi md mdx txt json jsonl yaml yml toml ini cfg rs go ts tsx js jsx mjs cjs c h cc cpp hpp "
    "java kt rb php sh bash zsh ps1 sql html css scss vue svelte swift cs lua r".split()
)


def _host_port(kind: str, raw: str) -> Identifier | None:
    text = strip_trailing(raw)
    if text.endswith(("/tcp", "/udp")):
        return Identifier(text, text, kind)
    host, _, port = text.rpartition(":")
    if host.rpartition(".")[2] in SOURCE_EXTENSIONS:
        # A file reference with a line number: the file is the anchor, the line churns.
        return Identifier(host, host, "file_name")
    if not port.isdigit() or not 0 < int(port) <= 65535:
        return None
    return Identifier(text, text, kind)


def _file_name(kind: str, raw: str) -> Identifier | None:
    parts = raw.split(".")
    # "e.g", "i.e", "a.m", "U.S.A": every part a single letter is an abbreviation.
    if all(len(p) == 1 and p.isalpha() for p in parts):
        return None
    # "Ph.D": a one-letter capital "extension" is prose.
    if len(parts[-1]) == 1 and parts[-1].isupper():
        return None
    # "2.x", "1.0.x": numbers before the "extension" make a version wildcard, not a file.
    if all(p.isdigit() for p in parts[:-1]):
        return None
    return Identifier(raw, raw, kind)


def _registry_id(kind: str, raw: str) -> Identifier | None:
    text = raw.rstrip("-")
    # "RFC 9110" and "RFC9110" are the same id.
    return Identifier(text.replace(" ", ""), text, kind)


# ---------------------------------------------------------------------------
# The classes, most specific first

_SEG = r"[\w.@+\-]+"  # one path segment
_END = r"(?![\w\-]|\.\w)"  # end of a word-like token (and not the stem of a file name)
REGISTRY_PLACEHOLDER = "{registry}"

CLASSES: tuple[IdentifierClass, ...] = (
    IdentifierClass(
        "url",
        "http(s), ftp, ssh, git and file URLs",
        r"\b(?:https?|ftp|ssh|git|file)://[^\s<>\"'`\\]+",
        _url,
        true_samples=(
            ("see https://example.com/a/b, then", "https://example.com/a/b"),
            ("[spec](https://example.org/spec#s-7).", "https://example.org/spec#s-7"),
            ("(https://en.wikipedia.org/wiki/Foo_(bar))", "https://en.wikipedia.org/wiki/Foo_(bar)"),
            ("<https://example.com/x/>", "https://example.com/x"),
        ),
        false_samples=("https:// alone", "a plain example dot com", "mailto:someone"),
    ),
    IdentifierClass(
        "windows_path",
        "drive and UNC paths",
        r"(?<![\w\\])(?:[A-Za-z]:[\\/][\w\\/.\-$~+@]*|\\\\[\w.\-$]+(?:\\[\w.\-$]+)+)",
        _path,
        true_samples=(
            (r"ran C:\Users\dev\build.cmd twice", r"C:\Users\dev\build.cmd"),
            (r"share \\fileserver\team\notes.", r"\\fileserver\team\notes"),
            ("D:/data/run-7/out.json", "D:/data/run-7/out.json"),
        ),
        false_samples=(r"the C:\ drive", "ratio 3:2", "note: see"),
    ),
    IdentifierClass(
        "env_path",
        "paths rooted in an environment variable",
        r"(?:\$\{?[A-Za-z_]\w*\}?|%[A-Za-z_]\w*%)(?:[/\\]" + _SEG + r")+[/\\]?",
        _path,
        true_samples=(
            ("in $HOME/.config/kb.", "$HOME/.config/kb"),
            ("${XDG_DATA_HOME}/opencode/opencode.db", "${XDG_DATA_HOME}/opencode/opencode.db"),
            (r"%APPDATA%\Code\User", r"%APPDATA%\Code\User"),
        ),
        false_samples=("costs $5/month", "$HOME alone"),
    ),
    IdentifierClass(
        "posix_path",
        "absolute, home and dot-relative paths",
        # Absolute paths need two segments (`/tmp` alone is too often prose) and a
        # first segment that is not a number ("10/20/30"). Nothing word-like may
        # precede the slash (so "and/or" and base64 are not paths), except a port:
        # `localhost:8790/stm/jobs` keeps its tail.
        r"(?:(?<![\w.\-/~\\+=])|(?<=:\d\d)|(?<=:\d{3})|(?<=:\d{4})|(?<=:\d{5}))"
        r"(?:(?:~|\.\.?)(?:/" + _SEG + r")+|/[A-Za-z_.@][\w.@+\-]*(?:/" + _SEG + r")+)/?",
        _path,
        true_samples=(
            ("read /etc/hosts.", "/etc/hosts"),
            ("~/notes/today.md", "~/notes/today.md"),
            ("../shared/SPEC.md", "../shared/SPEC.md"),
            ("localhost:8790/stm/jobs", "/stm/jobs"),
            ("the site link /note/kb-lint/", "/note/kb-lint"),
        ),
        false_samples=(
            "and/or",
            "TCP/IP",
            "km/h",
            "10/20/30",
            "a / b",
            "/tmp alone",
            "Claude/Fable/Opus",
            "x+/No6+WQ/tV",
            "1x2/PYy/Bd",
        ),
    ),
    IdentifierClass(
        "relative_path",
        "relative paths ending in a file name with an extension, or in a slash",
        r"(?<![\w.\-/~\\$%@:])" + _SEG + r"(?:/" + _SEG + r")*"
        r"(?:/[\w@+\-]+(?:\.[\w@+\-]+)*\.[A-Za-z][A-Za-z0-9]{0,9}(?![\w\-])|/(?![\w\-]))",
        _path,
        true_samples=(
            ("edit src/content/note/en/kb.md today", "src/content/note/en/kb.md"),
            ("docs/status/hq_console.html", "docs/status/hq_console.html"),
            ("everything under src/content/ is linted", "src/content"),
        ),
        false_samples=("and/or", "input/output", "client/server model", "A/B test"),
    ),
    IdentifierClass(
        "uuid",
        "UUIDs, any case (compared lower-case)",
        r"(?<![\w\-])[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}(?![\w\-])",
        _lower,
        true_samples=(
            ("id 550E8400-E29B-41D4-A716-446655440000.", "550e8400-e29b-41d4-a716-446655440000"),
            ("123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-426614174000"),
        ),
        false_samples=("550e8400-e29b-41d4-a716", "phone 1234-5678"),
    ),
    IdentifierClass(
        "date",
        "ISO dates, also the date of a datetime",
        r"(?<![\w\-])\d{4}-\d{2}-\d{2}(?=T\d|[^\w\-]|$)(?!\.\w)",
        _date,
        true_samples=(
            ("on 2026-07-27 we", "2026-07-27"),
            ("at 2026-07-27T10:00:00Z", "2026-07-27"),
            ("## [2026-01-02] ingest | x", "2026-01-02"),
        ),
        false_samples=("2026-13-45", "20260727", "ISBN 1234-56-78901", "12-07-2026"),
    ),
    IdentifierClass(
        "host_port",
        "host:port (with its host) and port/tcp|udp",
        r"(?<![\w.\-@/])(?:"
        r"(?:localhost|\d{1,3}(?:\.\d{1,3}){3}|\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][\w\-]*(?:\.[A-Za-z0-9][\w\-]*)+)"
        r":\d{2,5}"
        r"|[A-Za-z][\w\-]*:\d{4,5}"  # a single-label host needs a port that looks like one
        r"|\d{2,5}/(?:tcp|udp)"
        r")(?![\w:]|\.\d)",
        _host_port,
        true_samples=(
            ("at 127.0.0.1:18888 now", "127.0.0.1:18888"),
            ("localhost:6280", "localhost:6280"),
            ("db.example.com:5432,", "db.example.com:5432"),
            ("postgres:5432", "postgres:5432"),
            ("expose 8080/tcp", "8080/tcp"),
        ),
        false_samples=(
            "at 10:30 today",
            "2026-07-27T10:00:00Z",
            "ratio 16:9",
            "retries:10",
            "gate.py:120",
            "example.com:99999",
        ),
    ),
    IdentifierClass(
        "version",
        "versions: v1.2, v1.2.3, 2.14.1, with pre-release or build suffix",
        r"(?<![\w.\-])(?:[vV]\d+(?:\.\d+){1,3}|\d+\.\d+\.\d+)(?:[-+][0-9A-Za-z][0-9A-Za-z.\-]*)?(?![\w]|\.\d)",
        _version,
        true_samples=(
            ("pin v1.2 now", "v1.2"),
            ("pre-commit 2.14.1.", "2.14.1"),
            ("release v3.0.0-rc.1", "v3.0.0-rc.1"),
            ("vitest@3.2.4", "3.2.4"),
        ),
        false_samples=("pi is 3.14", "10.0.0.1", "1.5x faster", "section 4.2"),
    ),
    IdentifierClass(
        "registry_id",
        "registry-style ids with a configured prefix (RetentionConfig.registry_prefixes)",
        r"(?<![\w\-])(?:" + REGISTRY_PLACEHOLDER + r")[ \-]?\d[\w\-]*" + _END,
        _registry_id,
        true_samples=(
            ("fixes CVE-2024-3094.", "CVE-2024-3094"),
            ("per RFC 9110 and", "RFC9110"),
            ("PEP8", "PEP8"),
            ("see ADR-0007", "ADR-0007"),
            ("GH-123", "GH-123"),
        ),
        false_samples=("RFC alone", "XCVE-1", "pep 8"),
    ),
    IdentifierClass(
        "env_var",
        "environment variables: NAME_WITH_UNDERSCORE, $NAME, ${NAME}, %NAME%",
        r"\$\{[A-Za-z_]\w*\}|\$[A-Z_][A-Z0-9_]*\b|%[A-Za-z_]\w*%"
        r"|(?<![\w$\-.])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+" + _END,
        _env_var,
        true_samples=(
            ("set KB_IDENTIFIER_LOSS_REFUSE=0", "KB_IDENTIFIER_LOSS_REFUSE"),
            ("HINDSIGHT_API_REFLECT_WALL_TIMEOUT", "HINDSIGHT_API_REFLECT_WALL_TIMEOUT"),
            ("echo $HOME", "HOME"),
            ("${CODEX_HOME}", "CODEX_HOME"),
            ("%APPDATA%", "APPDATA"),
        ),
        false_samples=("NOTE", "costs $5", "snake_case_name", "README_FIRST.md"),
    ),
    IdentifierClass(
        "hex_id",
        "hex ids and commit shas, 7–64 digits, any case (compared lower-case)",
        r"(?<![\w\-])[0-9A-Fa-f]{7,64}" + _END,
        _hex_id,
        true_samples=(
            ("sha 5ef5a70 landed", "5ef5a70"),
            ("DEADBEEF1", "deadbeef1"),
            ("range a1b2c3d..e4f5a6b", "a1b2c3d"),
            ("ABC1234567", "abc1234567"),
        ),
        false_samples=("defaced effaced", "a facade", "the last decade", "1234567", "12345678901"),
    ),
    IdentifierClass(
        "file_name",
        "file names with any extension",
        r"(?<![\w.\-/\\~$%@])[\w\-]+(?:\.[\w\-]+)*\.(?:[a-z][a-z0-9]{0,9}|[A-Z][A-Z0-9]{0,9})(?![\w\-])",
        _file_name,
        true_samples=(
            ("dropped TRIAL-CLOSE-RUNBOOK.md and", "TRIAL-CLOSE-RUNBOOK.md"),
            ("build_spec_a_overlay.py", "build_spec_a_overlay.py"),
            ("foo.tar.gz", "foo.tar.gz"),
            ("x.html and y.go", "x.html"),
            ("README_FIRST.md", "README_FIRST.md"),
            ("gate.py:120", "gate.py"),
            ("2026-07-27-notes.md", "2026-07-27-notes.md"),
        ),
        false_samples=("e.g. this", "i.e., that", "the U.S.A. and Ph.D. holders", "pi is 3.14", "2.x only"),
    ),
)


# ---------------------------------------------------------------------------
# Extraction


@dataclass(frozen=True)
class Taxonomy:
    """The identifier extractor for one set of registry prefixes."""

    registry_prefixes: tuple[str, ...] = ()
    ignore_frontmatter_keys: tuple[str, ...] = ()

    def extract(self, text: str | None, *, exclude_secrets: bool = True) -> frozenset[Identifier]:
        """Every identifier in ``text`` (None and "" are empty), secrets excluded unless asked."""
        return frozenset(self.scan(text, exclude_secrets=exclude_secrets))

    def scan(self, text: str | None, *, exclude_secrets: bool = True, prefilter: bool = True) -> list[Identifier]:
        """Identifiers in order of appearance (duplicates kept)."""
        if not text:
            return []
        if not text.isascii():
            text = unicodedata.normalize("NFC", text)
        if self.ignore_frontmatter_keys and text.startswith("---"):
            text = _blank_frontmatter(text, self.ignore_frontmatter_keys)
        located = _locate(self.registry_prefixes, text, prefilter)
        if not exclude_secrets or not located:
            return [identifier for _start, _end, identifier in located]
        secrets = _secret_spans(text)
        # A credential is never an anchor to protect.
        return [identifier for start, end, identifier in located if not _overlaps(secrets, start, end)]


@lru_cache(maxsize=8)  # the gate extracts the old page twice: with and without secrets
def _locate(
    registry_prefixes: tuple[str, ...], text: str, prefilter: bool = True
) -> tuple[tuple[int, int, Identifier], ...]:
    regex, by_group = _compiled(registry_prefixes)
    found: list[tuple[int, int, Identifier]] = []
    for match in _matches(regex, text, registry_prefixes) if prefilter else regex.finditer(text):
        kind = match.lastgroup
        assert kind is not None
        identifier = by_group[kind](kind, match.group())
        if identifier is not None:
            found.append((match.start(), match.end(), identifier))
    return tuple(found)


# Every class needs one of these inside a whitespace-delimited token: a digit, a
# slash or backslash, `$`, `%`, `_`, or a dot followed by a word character. One
# cheap pass finds such tokens, and the full alternation (about a dozen branch
# attempts per character) runs only on them: most prose words have none.
_CANDIDATE_TOKEN = re.compile(r"(?<!\S)(?=\S*?(?:[\d/\\$%_]|\.\w))\S+")


def _matches(regex: re.Pattern[str], text: str, registry_prefixes: tuple[str, ...]) -> Iterator[re.Match[str]]:
    """The matches of a full scan, found by scanning only candidate tokens."""
    # A registry id may be written with a space ("RFC 9110"): its prefix is the token before.
    spaced = {p for p in registry_prefixes if p[-1:].isalnum()}
    last_end = 0  # matches never overlap: nothing may start inside the previous one
    for token in _CANDIDATE_TOKEN.finditer(text):
        start, end = token.span()
        if spaced and start >= 2 and text[start - 1] == " ":
            for prefix in spaced:
                if text.endswith(prefix, 0, start - 1):
                    start = start - 1 - len(prefix)
                    break
        for match in regex.finditer(text, max(start, last_end), end):
            last_end = match.end()
            yield match


def taxonomy(registry_prefixes: Sequence[str] = (), ignore_frontmatter_keys: Sequence[str] = ()) -> Taxonomy:
    return Taxonomy(tuple(registry_prefixes), tuple(ignore_frontmatter_keys))


_FRONTMATTER = re.compile(r"---[ \t]*\r?\n(.*?\r?\n)?---[ \t]*(?:\r?\n|$)", re.DOTALL)


def _blank_frontmatter(text: str, keys: tuple[str, ...]) -> str:
    """The page with the values of ``keys`` in its leading YAML frontmatter removed."""
    block = _FRONTMATTER.match(text)
    if block is None or block.group(1) is None:
        return text
    key_line = re.compile(r"^(" + "|".join(re.escape(k) for k in keys) + r")[ \t]*:.*$", re.MULTILINE)
    start, end = block.span(1)
    return text[:start] + key_line.sub(r"\1:", block.group(1)) + text[end:]


@lru_cache(maxsize=8)
def _compiled(registry_prefixes: tuple[str, ...]) -> tuple[re.Pattern[str], dict[str, Normaliser]]:
    prefixes = "|".join(re.escape(p) for p in sorted(registry_prefixes, key=len, reverse=True))
    parts = []
    for cls in CLASSES:
        pattern = cls.pattern
        if REGISTRY_PLACEHOLDER in pattern:
            if not prefixes:
                continue
            pattern = pattern.replace(REGISTRY_PLACEHOLDER, prefixes)
        parts.append(f"(?P<{cls.name}>{pattern})")
    return re.compile("|".join(parts)), {cls.name: cls.normalise for cls in CLASSES}


def _secret_spans(text: str) -> tuple[list[int], list[int]]:
    """Secret starts, sorted, with the largest end reached by any secret up to each one."""
    # Lazy: the redaction engine is loaded only when a page has something to filter.
    from kbtools.redact import find_secrets

    starts: list[int] = []
    reach: list[int] = []
    for start, end in sorted((hit.start, hit.end) for hit in find_secrets(text)):
        starts.append(start)
        reach.append(max(end, reach[-1]) if reach else end)
    return starts, reach


def _overlaps(spans: tuple[list[int], list[int]], start: int, end: int) -> bool:
    starts, reach = spans
    i = bisect_left(starts, end)  # secrets [0, i) start before `end`
    return i > 0 and reach[i - 1] > start
