"""`kb promote`: a ledger candidate becomes new raw evidence, once.

The candidate's (already redacted, and redacted again) text is made into a
Markdown document and handed to the one writer of raw evidence,
:func:`kbtools.kb.raw_add.add_evidence`, so a promotion obeys every rule of
`kb raw add`: slug and locale patterns, a slug unique across locales, a
manifest path never reused, the raw frontmatter completed. The new file's
frontmatter names the candidate (``candidateId``); a candidate some raw file
already names is refused, so the same turn never becomes two raw files.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from kbtools.errors import KbError
from kbtools.kb.layout import Layout
from kbtools.kb.raw_add import Evidence, IndexEntry, add_evidence, register_in_index_and_log
from kbtools.review.rows import MIN_PREFIX, Row, find_candidate

TITLE_CHARS = 80
SLUG_WORDS = 6
SOURCE_TYPE = "session"
URL_SCHEME = "kb-ingest:"
HEAD_BYTES = 16 * 1024  # the frontmatter of a raw file is at its top
_NAMED = re.compile(rf'^(?:candidateId:[ \t]*["\']?|sourceUrl:[ \t]*["\']?{URL_SCHEME})([0-9a-f]{{64}})\b', re.M)


@dataclass(frozen=True)
class Promotion:
    candidate_id: str
    slug: str
    path: Path
    rel: str  # relative to the raw root, as in the manifest
    sha256: str
    indexed: bool


def promoted_candidates(layout: Layout) -> dict[str, str]:
    """Candidate id → the raw file (path under the raw root) whose frontmatter names it."""
    from kbtools.kb.tree import scan_layer

    if not layout.raw_root.is_dir():
        return {}
    out: dict[str, str] = {}
    for f in scan_layer(layout.raw_root).files:
        try:
            fd = os.open(f.abspath, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            continue
        try:
            head = os.read(fd, HEAD_BYTES).decode("utf-8", "replace") if os.path.isfile(f.abspath) else ""
        except OSError:
            head = ""
        finally:
            os.close(fd)
        if not head.startswith("---"):
            continue
        end = head.find("\n---", 3)
        for found in _NAMED.finditer(head[: end if end > 0 else len(head)]):
            out.setdefault(found.group(1), f.rel)
    return out


def title_of(candidate: Row) -> str:
    goal = str(candidate.get("user_goal") or "").strip().splitlines()
    title = goal[0] if goal else str(candidate.get("topic") or "Session evidence")
    return title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1].rstrip() + "…"


def default_slug(candidate: Row) -> str:
    words = re.findall(r"[a-z0-9]+", title_of(candidate).lower())[:SLUG_WORDS]
    return "-".join([*words, str(candidate["candidate_id"])[:MIN_PREFIX]])


def raw_document(candidate: Row) -> str:
    """Title, description and the turn in a fence no backtick run inside can close;
    the raw layer's other fields are completed by the raw writer."""
    text = str(candidate.get("text", ""))
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=0)
    fence = "`" * max(3, longest + 1)
    description = f"{candidate.get('tool', '')} session turn, promoted from the ingest ledger"
    head = f"title: {json.dumps(title_of(candidate), ensure_ascii=False)}\n"
    head += f"description: {json.dumps(description, ensure_ascii=False)}\n"
    return f"---\n{head}---\n\n{fence}text\n{text}\n{fence}\n"


def promote(
    layout: Layout,
    output_dir: Path,
    candidate_id: str,
    *,
    redact: Callable[[str], str],
    slug: str | None = None,
    locale: str | None = None,
    index: bool = False,
    now: datetime | None = None,
) -> Promotion:
    """Write the candidate as raw evidence (and, with ``index``, its index row and a log entry)."""
    candidate = find_candidate(output_dir, candidate_id)
    cid = str(candidate["candidate_id"])
    already = promoted_candidates(layout).get(cid)
    if already is not None:
        raise KbError(
            f"candidate {cid[:12]} is already promoted; a candidate becomes raw evidence once",
            layout.rel(layout.raw_root / already),
        )
    if index:
        for path in (layout.index, layout.log):
            if not path.is_file():
                raise KbError(
                    "missing; `kb init` makes the index and log (or promote without --index)", layout.rel(path)
                )
    # The ledger text was redacted at ingest; redact again in case the ledger was edited by hand.
    candidate = {
        **candidate,
        "text": redact(str(candidate.get("text", ""))),
        "user_goal": redact(str(candidate.get("user_goal", ""))),
    }
    slug = slug or default_slug(candidate)
    evidence = Evidence(
        name=f"{slug}.md",
        data=raw_document(candidate).encode("utf-8"),
        origin=f"candidate {cid[:12]}",
        source_type=SOURCE_TYPE,
        source_url=URL_SCHEME + cid,
        fields=(("candidateId", cid),),
    )
    moment = now or datetime.now(UTC)
    (added,) = add_evidence(layout, [evidence], locale=locale, slug=slug, now=moment)
    if index:
        title = title_of(candidate)
        register_in_index_and_log(
            layout,
            [IndexEntry(added.slug, SOURCE_TYPE, f"{candidate.get('tool', '')} session (kb ingest)", title)],
            log_title=f"Promoted session evidence: {title}",
            log_body=(
                f"Promoted candidate `{cid[:12]}` from the ingest ledger as the raw source `{added.slug}` "
                "with `kb promote --index`."
            ),
            day=moment.astimezone(UTC).strftime("%Y-%m-%d"),
        )
    return Promotion(cid, added.slug, added.path, added.rel, added.sha256, index)
