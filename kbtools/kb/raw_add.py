"""`kb raw add`: copy evidence into the raw layer and lock it with a manifest line.

The evidence keeps its bytes. Only its frontmatter may be completed: fields
the raw layer requires (`title`, `capturedAt`, `sourceType`, `sourceUrl`,
`immutable: true`) are added when missing, as new lines, so the lines the
source already had stay byte-identical.

Non-Markdown text (a `.txt`, `.json`, `.log`, a transcript…) is wrapped: the
frontmatter, then the text in a fenced block long enough that no backtick run
inside can close it. The raw layer is Markdown, and a fence keeps the text
verbatim for a reader and a renderer. Binary input (invalid UTF-8 or a NUL
byte) is refused: it cannot be evidence in a text wiki.

Every file is checked before anything is written, so one bad input leaves the
KB untouched; then each file is written, then its manifest line appended. A file
already in the raw layer but not in the manifest (copied there by hand) is
registered where it is, its frontmatter completed the same way.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from kbtools.errors import KbError
from kbtools.fsio import atomic_write_bytes
from kbtools.kb.layout import Layout
from kbtools.kb.manifest import ManifestAppender, sha256_bytes
from kbtools.kb.tree import SLUG_PATTERN, layer_path, scan_layer

MARKDOWN_SUFFIXES = (".md", ".markdown")
LOCALE_PATTERN = re.compile(r"[a-z]{2,3}(?:-[a-z0-9]{2,8})*")
DEFAULT_SOURCE_TYPE = "file"
REQUIRED_FIELDS = ("title", "capturedAt", "sourceType", "sourceUrl", "immutable")


@dataclass(frozen=True)
class RawAddition:
    source: Path
    slug: str
    path: Path  # the new raw file
    rel: str  # its manifest path, relative to the raw root
    sha256: str
    wrapped: bool  # non-Markdown text wrapped in a fenced block
    fields_added: tuple[str, ...]
    in_place: bool = False  # an unregistered file already in the raw layer, registered where it is


@dataclass(frozen=True)
class _Planned:
    addition: RawAddition
    data: bytes


def slug_from_filename(name: str) -> str:
    """`Design Notes_v2.TXT` → `design-notes-v2`: lowercase kebab-case of the stem."""
    stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    return "-".join(re.findall(r"[a-z0-9]+", stem.lower()))


@dataclass(frozen=True)
class Evidence:
    """One piece of evidence to add: a file's bytes, or a document made in memory
    (a promoted candidate). ``name`` decides the default slug, the title of
    wrapped text and whether it is Markdown; ``origin`` is what an error names."""

    name: str
    data: bytes
    origin: str
    file: Path | None = None  # the file it was read from (None: made in memory)
    source_type: str | None = None
    source_url: str | None = None
    fields: tuple[tuple[str, str], ...] = ()  # more frontmatter fields it must carry (e.g. candidateId)


def read_evidence(source: Path) -> Evidence:
    if source.is_dir():
        raise KbError("is a folder; give the evidence files themselves", str(source))
    if not source.is_file():
        raise KbError("no such file", str(source))
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise KbError(f"cannot read: {exc.strerror}", str(source)) from None
    return Evidence(source.name, data, str(source), file=source)


def add_raw(
    layout: Layout,
    files: Sequence[Path],
    *,
    locale: str | None = None,
    slug: str | None = None,
    source_type: str | None = None,
    source_url: str | None = None,
    now: dt.datetime | None = None,
) -> list[RawAddition]:
    """Add each file as raw evidence under ``<raw>/<locale>/<slug>.md`` and register it.

    ``locale`` defaults to the canonical one; ``slug`` (one file only) to the file
    name in kebab-case. Raises KbError, before writing anything, if any file is
    unreadable or binary, or its slug or manifest path is already taken.
    """
    if not files:
        raise KbError("no file given", "kb raw add")
    if source_url is not None and len(files) > 1:
        raise KbError("--source-url describes one file; several were given", "kb raw add")
    if slug is not None and len(files) > 1:
        raise KbError("--slug names one file; several were given", "kb raw add")
    items = [replace(read_evidence(source), source_type=source_type, source_url=source_url) for source in files]
    return add_evidence(layout, items, locale=locale, slug=slug, now=now)


def add_evidence(
    layout: Layout,
    items: Sequence[Evidence],
    *,
    locale: str | None = None,
    slug: str | None = None,
    now: dt.datetime | None = None,
) -> list[RawAddition]:
    """The one writer of raw evidence (`kb raw add` and `kb promote`): check every
    item (slug and locale rules, slugs unique across locales, manifest paths never
    reused, UTF-8 text, frontmatter), then write each and append its manifest line."""
    if slug is not None and len(items) > 1:
        raise KbError("--slug names one file; several were given", "kb raw add")
    locale = locale or layout.canonical_locale
    if not LOCALE_PATTERN.fullmatch(locale):
        raise KbError(f"invalid locale '{locale}' (expected e.g. en, zh-cn)", "--locale")
    captured_at = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC).replace(microsecond=0)
    taken = _existing_slugs(layout)
    manifest = ManifestAppender(layout)
    registered = manifest.registered
    planned: list[_Planned] = []
    for evidence in items:
        item = _plan_one(layout, evidence, locale=locale, slug=slug, captured_at=captured_at)
        new = item.addition
        if new.in_place:
            if new.rel in registered:
                raise KbError("already in the raw layer and registered in the manifest", evidence.origin)
            taken.pop(new.slug, None)  # the unregistered file being registered where it is
        if new.slug in taken:
            raise KbError(
                f"raw slug '{new.slug}' already exists (raw files are never overwritten; pick another with --slug)",
                taken[new.slug],
            )
        if new.rel in registered:
            raise KbError(
                f"manifest already has a line for {new.rel}; a slug is never reused", layout.rel(layout.raw_manifest)
            )
        taken[new.slug] = evidence.origin
        planned.append(item)
    for item in planned:
        if item.addition.in_place:
            if item.addition.path.read_bytes() != item.data:
                atomic_write_bytes(item.addition.path, [item.data], mode=0o644)
        else:
            _write_new(item.addition.path, item.data)
        manifest.append(item.addition.rel, item.addition.sha256)
    return [item.addition for item in planned]


@dataclass(frozen=True)
class IndexEntry:
    """A raw source's row in the index's raw-sources table."""

    slug: str
    source_type: str
    source: str
    summary: str


_RAW_HEADING = re.compile(r"^##[ \t]+raw sources?\b.*$", re.I | re.M)
RAW_TABLE_HEAD = "| slug | type | source | summary |\n| --- | --- | --- | --- |\n"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def index_with_rows(index_text: str, entries: Sequence[IndexEntry]) -> str:
    """The index with a row per entry appended to its raw-sources table (made if missing)."""
    rows = "".join(
        f"| `{e.slug}` | {_cell(e.source_type)} | {_cell(e.source)} | {_cell(e.summary)} |\n" for e in entries
    )
    text = index_text if index_text.endswith("\n") or not index_text else index_text + "\n"
    heading = _RAW_HEADING.search(text)
    if heading is None:
        return f"{text}\n## Raw sources\n\n{RAW_TABLE_HEAD}{rows}"
    next_heading = re.compile(r"^#{1,2}[ \t]", re.M).search(text, heading.end())
    section_end = next_heading.start() if next_heading else len(text)
    section = text[heading.end() : section_end]
    last_row = None
    for found in re.finditer(r"^\|.*\n", section, re.M):
        last_row = found
    if last_row is None:
        rest = text[heading.end() :].lstrip("\n")
        return f"{text[: heading.end()]}\n\n{RAW_TABLE_HEAD}{rows}" + (f"\n{rest}" if rest else "")
    at = heading.end() + last_row.end()
    return text[:at] + rows + text[at:]


def log_with_entry(log_text: str, *, day: str, op: str, title: str, body: str) -> str:
    """The log with a dated entry ``## [day] op | title`` appended."""
    text = log_text if log_text.endswith("\n") or not log_text else log_text + "\n"
    return f"{text}\n## [{day}] {op} | {' '.join(title.split())}\n\n{body.strip()}\n"


def register_in_index_and_log(
    layout: Layout, entries: Sequence[IndexEntry], *, log_title: str, log_body: str, day: str
) -> None:
    """Append the index rows and one log entry (both files must exist: `kb init` makes them)."""
    for path in (layout.index, layout.log):
        if not path.is_file():
            raise KbError("missing; `kb init` makes the index and log", layout.rel(path))
    index = layout.index.read_text(encoding="utf-8")
    log = layout.log.read_text(encoding="utf-8")
    atomic_write_bytes(layout.index, [index_with_rows(index, entries).encode("utf-8")], mode=0o644)
    new_log = log_with_entry(log, day=day, op="ingest", title=log_title, body=log_body)
    atomic_write_bytes(layout.log, [new_log.encode("utf-8")], mode=0o644)


def _existing_slugs(layout: Layout) -> dict[str, str]:
    """Raw slug → its file, over every locale: lint resolves `sources` by slug alone."""
    return {f.slug: layout.rel(f.path) for f in scan_layer(layout.raw_root).files}


def _plan_one(
    layout: Layout, evidence: Evidence, *, locale: str, slug: str | None, captured_at: dt.datetime
) -> _Planned:
    data, origin, name = evidence.data, evidence.origin, evidence.name
    source_type, source_url = evidence.source_type, evidence.source_url
    if b"\0" in data:
        raise KbError("binary file refused: raw evidence is text (NUL byte found)", origin)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise KbError(
            f"binary file refused: raw evidence is UTF-8 text (invalid byte at offset {exc.start})", origin
        ) from None
    new_slug = slug if slug is not None else slug_from_filename(name)
    if not SLUG_PATTERN.fullmatch(new_slug):
        what = f"invalid slug '{new_slug}'" if slug is not None else "cannot derive a slug from the file name"
        raise KbError(f"{what} (lowercase kebab-case: a-z, 0-9, '-'; use --slug)", origin)
    defaults: dict[str, object] = {
        "sourceType": source_type or DEFAULT_SOURCE_TYPE,
        # Never an absolute local path: it would leak a private path into the KB.
        "sourceUrl": source_url or f"file:{name}",
        "capturedAt": captured_at,
        "immutable": True,
        **dict(evidence.fields),
    }
    wrapped = not name.lower().endswith(MARKDOWN_SUFFIXES)
    existing: dict[str, object]
    if wrapped:
        suffix = "." + name.rsplit(".", 1)[1] if "." in name.lstrip(".") else ""
        head, body, existing = b"", _fenced(text, suffix), {}
        defaults["title"] = name
    else:
        head, body, existing = _split_frontmatter(text, origin)
        defaults["title"] = _first_heading(body.decode("utf-8")) or new_slug.replace("-", " ")
    for key, flag, value in (
        ("sourceType", "--source-type", source_type),
        ("sourceUrl", "--source-url", source_url),
        *((key, key, value) for key, value in evidence.fields),
    ):
        if value is not None and key in existing and existing[key] != value:
            raise KbError(f"{flag} '{value}' conflicts with {key} '{existing[key]}' in the frontmatter", origin)
    if "immutable" in existing and existing["immutable"] is not True:
        raise KbError(f"immutable is '{existing['immutable']}'; raw evidence is immutable: true", origin)
    required = (*REQUIRED_FIELDS, *(key for key, _ in evidence.fields if key not in REQUIRED_FIELDS))
    missing = tuple(key for key in required if key not in existing)
    newline = "\r\n" if head.endswith(b"\r\n") or (not head and b"\r\n" in body[:200]) else "\n"
    added = "".join(f"{key}: {_yaml_scalar(defaults[key])}{newline}" for key in missing).encode()
    if head:
        out = head + added + b"---" + body  # body starts right after the opening fence's closing `---`
    else:
        out = (
            b"---"
            + newline.encode()
            + added
            + b"---"
            + newline.encode()
            + (newline.encode() if body and not body.startswith((b"\n", b"\r\n")) else b"")
            + body
        )
    rel = f"{locale}/{new_slug}.md"
    path = layer_path(layout.raw_root, locale, new_slug)
    addition = RawAddition(
        source=evidence.file or Path(name),
        slug=new_slug,
        path=path,
        rel=rel,
        sha256=sha256_bytes(out),
        wrapped=wrapped,
        fields_added=missing,
        in_place=evidence.file is not None and path.resolve() == evidence.file.resolve(),
    )
    return _Planned(addition, out)


def _split_frontmatter(text: str, origin: str) -> tuple[bytes, bytes, dict[str, object]]:
    """(opening fence + frontmatter lines, the rest from the closing fence on minus ``---``, fields).

    No frontmatter: (b"", the whole file, {}).
    """
    from kbtools.kb.frontmatter import FrontmatterError, load_yaml_mapping, split_frontmatter

    try:
        block, _, _ = split_frontmatter(text)
        if block is None:
            return b"", text.encode(), {}
        fields = load_yaml_mapping(block, first_line=2)
    except FrontmatterError as exc:
        raise KbError(f"frontmatter: {exc.reason}", origin) from None
    close = text.index("\n") + 1 + len(block)  # where the closing `---` line starts
    return text[:close].encode(), text[close + 3 :].encode(), fields


def _first_heading(body: str) -> str | None:
    match = re.search(r"^#[ \t]+(.+?)[ \t#]*$", body, re.M)
    return match.group(1).strip() if match else None


def _fenced(text: str, suffix: str) -> bytes:
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=0)
    fence = "`" * max(3, longest + 1)
    language = suffix.lstrip(".").lower() if re.fullmatch(r"\.[A-Za-z0-9_+-]{1,15}", suffix) else ""
    ending = "" if text.endswith("\n") or not text else "\n"
    return f"\n{fence}{language}\n{text}{ending}{fence}\n".encode()


def _yaml_scalar(value: object) -> str:
    if value is True:
        return "true"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")  # a YAML timestamp, like the reference's
    # A JSON string is a valid YAML double-quoted scalar: safe for any title or URL.
    return json.dumps(str(value), ensure_ascii=False)


def _write_new(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with path.open("xb") as fh:  # "x": an existing raw file is never overwritten
            fh.write(data)
    except FileExistsError:
        raise KbError("raw file already exists; raw evidence is never overwritten", str(path)) from None
