"""`kb promote`: a ledger candidate becomes new raw evidence.

The candidate's (already redacted) text is written to
``<raw root>/<locale>/<slug>.md`` with the raw layer's frontmatter and locked
by a new manifest line. An existing raw file is never overwritten: evidence is
immutable, a second promotion needs another slug.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kbtools.errors import KbError
from kbtools.ingest.ledger import iter_ledger, ledger_path
from kbtools.kb.layout import Layout
from kbtools.kb.manifest import append_manifest_line, sha256_bytes
from kbtools.kb.raw_add import LOCALE_PATTERN
from kbtools.kb.tree import SLUG_PATTERN, layer_path

MIN_PREFIX = 8
TITLE_CHARS = 80
SLUG_WORDS = 6


@dataclass(frozen=True)
class Promotion:
    candidate_id: str
    slug: str
    path: Path
    rel: str  # relative to the raw root, as in the manifest
    sha256: str


def find_candidate(output_dir: Path, candidate_id: str) -> dict[str, Any]:
    """The ledger row whose id is ``candidate_id`` (or starts with it, if unique and ≥ 8 chars)."""
    wanted = candidate_id.strip().lower()
    path = ledger_path(output_dir, "candidates")
    if not path.is_file():
        raise KbError("no candidate ledger; run `kb ingest --write` first", str(path))
    if len(wanted) < MIN_PREFIX:
        raise KbError(f"candidate id must have at least {MIN_PREFIX} characters", candidate_id)
    found: list[dict[str, Any]] = []
    for row in iter_ledger(path, "candidates"):
        if row is None:
            continue
        cid = row["candidate_id"]
        if cid == wanted:
            return row
        if cid.startswith(wanted):
            found.append(row)
    if not found:
        raise KbError(f"no candidate {candidate_id} in the ledger", str(path))
    if len(found) > 1:
        raise KbError(f"candidate id prefix {candidate_id} is ambiguous ({len(found)} candidates)", str(path))
    return found[0]


def title_of(candidate: dict[str, Any]) -> str:
    goal = str(candidate.get("user_goal") or "").strip().splitlines()
    title = goal[0] if goal else str(candidate.get("topic") or "Session evidence")
    return title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1].rstrip() + "…"


def default_slug(candidate: dict[str, Any]) -> str:
    words = re.findall(r"[a-z0-9]+", title_of(candidate).lower())[:SLUG_WORDS]
    return "-".join([*words, str(candidate["candidate_id"])[:MIN_PREFIX]])


def raw_document(candidate: dict[str, Any], *, captured_at: datetime) -> str:
    text = str(candidate.get("text", ""))
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=0)
    fence = "`" * max(3, longest + 1)
    fields = [
        ("title", json.dumps(title_of(candidate), ensure_ascii=False)),
        ("capturedAt", captured_at.strftime("%Y-%m-%dT%H:%M:%SZ")),
        ("sourceType", "session"),
        ("sourceUrl", json.dumps(f"kb-ingest:{candidate['candidate_id']}")),
        ("immutable", "true"),
        (
            "description",
            json.dumps(
                f"{candidate.get('tool', '')} session turn, promoted from the ingest ledger", ensure_ascii=False
            ),
        ),
    ]
    head = "".join(f"{name}: {value}\n" for name, value in fields)
    return f"---\n{head}---\n\n{fence}text\n{text}\n{fence}\n"


def promote(
    layout: Layout,
    output_dir: Path,
    candidate_id: str,
    *,
    redact: Callable[[str], str],
    slug: str | None = None,
    locale: str | None = None,
    now: datetime | None = None,
) -> Promotion:
    candidate = find_candidate(output_dir, candidate_id)
    slug = slug or default_slug(candidate)
    if not SLUG_PATTERN.fullmatch(slug):
        raise KbError(f"invalid slug '{slug}': use lowercase kebab-case", "--slug")
    locale = locale or layout.canonical_locale
    if not LOCALE_PATTERN.fullmatch(locale):
        raise KbError(f"invalid locale '{locale}'", "--locale")
    # The ledger text was redacted at ingest; redact again in case the ledger was edited by hand.
    candidate = {
        **candidate,
        "text": redact(str(candidate.get("text", ""))),
        "user_goal": redact(str(candidate.get("user_goal", ""))),
    }
    data = raw_document(candidate, captured_at=now or datetime.now(UTC)).encode("utf-8")
    path = layer_path(layout.raw_root, locale, slug)
    rel = f"{locale}/{slug}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with path.open("xb") as fh:
            fh.write(data)
    except FileExistsError:
        raise KbError("raw file already exists; raw evidence is never overwritten", layout.rel(path)) from None
    sha = sha256_bytes(data)
    append_manifest_line(layout, rel, sha)
    return Promotion(str(candidate["candidate_id"]), slug, path, rel, sha)
