"""The data that flows from a source module into the pipeline.

A source module (``kbtools.ingest.sources.<tool>``) exposes two functions:

    discover(settings: SourceSettings) -> Iterator[SourceRef]
        Cheap: lists what exists (paths, stat, row versions) without reading
        content. A missing store yields one ref whose ``format`` is
        ``unavailable``.

    load(ref: SourceRef, settings: SourceSettings) -> SourceUnit
        Reads and parses one source in a streaming pass. Never raises on bad
        input: it returns a unit with ``error`` set (and whatever records it
        could keep). Runs in a worker process, so refs and settings pickle.

Records carry raw (unredacted) user/assistant prose only: no system,
developer, tool call, tool result, thinking or reasoning text ever leaves a
source module. The pipeline applies the control-plane filter, the derived
filter and redaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple


class Record(NamedTuple):
    """One message. The records of this module are named tuples: a class made by
    ``@dataclass`` costs ~0.6 ms of start-up each, a named tuple ~0.1 ms."""

    # "user" | "assistant" | "agent" (text an agent wrote under the user role:
    # a sub-agent's task prompt, never attributed to the person)
    role: str
    text: str  # raw prose, not yet filtered or redacted
    created_at: str  # ISO-8601 UTC (`YYYY-MM-DDTHH:MM:SS.mmmZ`) or ""
    index: int  # type: ignore[assignment]  # position of the message within its source (not tuple.index)


class SourceRef(NamedTuple):
    """A discovered source. ``locator`` (a path or URL) is never persisted."""

    tool: str
    record_type: str  # session | advisor | prompt-history | memory | memory-store | session-store
    format: str  # jsonl | sqlite | json | api | unavailable
    locator: str
    # A cheap version of the source (size, mtime_ns, inode; or row versions):
    # equal keys mean unchanged content, so a stat cache may skip the read.
    # None: always load.
    stat_key: tuple[Any, ...] | None = None
    # Source-specific data already fetched during discovery (e.g. an HTTP item
    # or the error of an unavailable store).
    payload: Any = None


@dataclass
class SourceUnit:
    tool: str
    record_type: str
    format: str
    source_identity: str  # never persisted
    session_identity: str
    project_identity: str
    created_at: str
    updated_at: str
    content_hash: str
    records: list[Record] = field(default_factory=list)
    skip_reason: str = ""
    error: str = ""
    # Kept prose beyond what the pipeline can use was not retained.
    truncated: bool = False
    stat_key: tuple[Any, ...] | None = None
    # Records read, counted per reader decision (``sources.common.DECISIONS``):
    # what was kept as prose and what was not, and why; ``unknown`` counts the
    # record types the reader does not know.
    decisions: dict[str, int] = field(default_factory=dict)


class SourceSettings(NamedTuple):
    """Resolved source locations (flag > env > .kb.yaml > default) and limits."""

    omp_sessions: Path | None = None
    codex_dir: Path | None = None
    opencode_db: Path | None = None
    opencode_storage: Path | None = None
    prompt_history: Path | None = None
    claude_dir: Path | None = None
    hindsight_url: str | None = None
    hindsight_api_key: str | None = None
    hindsight_timeout: float = 10.0
    hindsight_retries: int = 3
    max_text: int = 120_000
    # The locations readers declare (``sources.common.Location``), resolved:
    # ``(name, paths)`` pairs.
    locations: tuple[tuple[str, tuple[Path, ...]], ...] = ()

    def paths(self, name: str) -> tuple[Path, ...]:
        """The resolved paths of the declared location ``name`` (none if unset)."""
        return dict(self.locations).get(name, ())
