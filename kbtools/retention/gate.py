"""The graded gate: warn on a small identifier loss, refuse a large one.

``lost = identifiers(old) - identifiers(new)`` is a set difference with no
positions, so an identifier that moved to another section is kept: otherwise
every reorganisation would be refused and the gate switched off within a day.
The same holds across notes: when one commit (or one staged change set) rewrites
several notes, an identifier that leaves one note and arrives in another of them
moved (a note split in two, a section moved to the page it belongs to), and is
kept (:func:`with_moves`).
Losing one or two anchors is often legitimate churn (a superseded date, a path
that stopped mattering), so below the threshold the gate only warns, naming
what went; at or above it the rewrite is refused.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from kbtools.config import Config, RetentionConfig, pick
from kbtools.retention.taxonomy import Identifier, Taxonomy, taxonomy

ENV_VAR = "KB_IDENTIFIER_LOSS_REFUSE"
DEFAULT_THRESHOLD = RetentionConfig().refuse
MAX_NAMED = 10


@dataclass(frozen=True)
class Threshold:
    value: int  # 0 = warn only
    source: str  # "--threshold", the env var, the .kb.yaml, or "default"
    warning: str | None = None  # set when the environment held garbage


@dataclass(frozen=True)
class Verdict:
    lost: tuple[Identifier, ...]  # sorted by their text as the old page wrote it
    threshold: int
    new_page: bool = False  # no old version: nothing to lose, never refused
    kept: int = 0  # identifiers of the old page still present
    moved: int = 0  # identifiers that left this page for another page of the same change set
    moved_to: tuple[str, ...] = ()  # those pages, sorted

    @property
    def refused(self) -> bool:
        return not self.new_page and self.threshold > 0 and len(self.lost) >= self.threshold

    @property
    def names(self) -> str:
        """The lost identifiers verbatim, sorted, the first ten then `+K more`."""
        shown = [i.text for i in self.lost[:MAX_NAMED]]
        extra = len(self.lost) - len(shown)
        return ", ".join(shown) + (f", +{extra} more" if extra > 0 else "")

    def message(self, where: str) -> str | None:
        """One line for a loss (None when nothing was lost)."""
        if not self.lost:
            return None
        n = len(self.lost)
        if self.refused:
            outcome = f"refused: {n} >= threshold {self.threshold}"
        elif self.threshold == 0:
            outcome = "warning only: threshold 0"
        else:
            outcome = f"warning: refuses at {self.threshold}"
        return (
            f"identifier-retention: {where} dropped {n} identifier(s) present in the previous "
            f"version: {self.names} ({outcome})"
        )


def grade(old: str | None, new: str | None, *, threshold: int, extractor: Taxonomy) -> Verdict:
    """Compare two versions of a page. ``old`` None means a new page."""
    if old is None:
        return Verdict(lost=(), threshold=threshold, new_page=True)
    lost, kept = compare(
        extractor.extract(old, exclude_secrets=False),
        extractor.extract(new, exclude_secrets=False),
        lambda: extractor.extract(old),
    )
    return Verdict(lost=lost, threshold=threshold, kept=kept)


def compare(
    before: frozenset[Identifier], after: frozenset[Identifier], protected: Callable[[], frozenset[Identifier]]
) -> tuple[tuple[Identifier, ...], int]:
    """(lost, kept): the one definition of loss, shared by the gate and the probe.

    ``before``/``after`` are extracted without the secret filter; ``protected()``
    is the old page's identifiers with secrets excluded. Only a token that went
    missing can be a lost secret, so the secret scanner (the costliest import
    of a hook run) is loaded only when something went missing at all.
    """
    missing = before - after
    if not missing:
        return (), len(before)
    anchors = protected()
    lost = sorted((i for i in missing if i in anchors), key=lambda i: (i.text, i.key))
    return tuple(lost), len(anchors) - len(lost)


def with_moves(verdict: Verdict, path: str, arrivals: Mapping[str, frozenset[Identifier]]) -> Verdict:
    """``verdict`` with every lost identifier that arrived in another page of the same change
    set counted as moved, not lost. ``arrivals``: by path, the identifiers (unfiltered) each
    changed page gained — all of an added page's, those a modified page did not have before
    (a page that already held one did not take it over); ``path`` is the page graded."""
    if not verdict.lost:
        return verdict
    lost: list[Identifier] = []
    homes: set[str] = set()
    for identifier in verdict.lost:
        found = [other for other, held in arrivals.items() if other != path and identifier in held]
        if found:
            homes.update(found)
        else:
            lost.append(identifier)
    if not homes:
        return verdict
    moved = len(verdict.lost) - len(lost)
    return replace(verdict, lost=tuple(lost), moved=verdict.moved + moved, moved_to=tuple(sorted(homes)))


def extractor_for(config: Config) -> Taxonomy:
    return taxonomy(config.retention.registry_prefixes, config.retention.ignore_frontmatter_keys)


def resolve_threshold(flag: int | None, config: Config) -> Threshold:
    """Flag > KB_IDENTIFIER_LOSS_REFUSE > .kb.yaml retention.refuse > 3.

    The gate sits on a write path, so garbage in the environment falls back to
    the configured value with a warning instead of breaking every commit; a
    negative value means 0 (warn only). Read on every call: no caching.
    """
    configured = config.retention.refuse
    garbage: list[str] = []

    def parse(raw: str) -> int:
        try:
            return int(raw.strip())
        except ValueError:
            garbage.append(raw)
            return configured

    value = pick(flag, ENV_VAR, configured, parse)
    if flag is not None:
        source = "--threshold"
    elif os.environ.get(ENV_VAR) and not garbage:
        source = ENV_VAR
    elif configured != DEFAULT_THRESHOLD:
        source = "retention.refuse"
    else:
        source = "default"
    warning = f"{ENV_VAR}={garbage[0]!r} is not an integer; using {configured}" if garbage else None
    return Threshold(max(0, value), source, warning)
