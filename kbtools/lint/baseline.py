"""The baseline: findings a team has accepted, so adopting kbtools on an old KB does not
mean rewriting committed evidence.

Like detect-secrets' ``.secrets.baseline`` (a JSON file of results keyed by a hash of
the secret, never the secret) and gitleaks' ``.gitleaksignore`` (one fingerprint per
finding), ``.kb-baseline.json`` at the KB root lists accepted findings by fingerprint:
a SHA-256 over the check, the file and what identifies the finding in it. For a secret
that is a hash of the matched value (``Problem.identity``), so the entry survives lines
moving; for the other checks it is the message (which names the file, never a line).
The file keeps the check, path, line and message of each entry for review; a message
never contains a secret.

Every lint mode and hook drops the problems whose fingerprint the baseline lists and
says how many it dropped. `kb baseline create|update` writes the file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from kbtools.errors import ConfigError
from kbtools.lint.problem import Problem

BASELINE_FILE = ".kb-baseline.json"
BASELINE_VERSION = 1


def fingerprint(problem: Problem) -> str:
    """The finding's identity: stable across runs and line moves, never the secret itself."""
    identity = problem.identity or problem.message
    return hashlib.sha256(f"{problem.check}\0{problem.path or ''}\0{identity}".encode()).hexdigest()


@dataclass(frozen=True)
class Baseline:
    fingerprints: frozenset[str]


def apply_baseline(root: Path, problems: Sequence[Problem]) -> tuple[list[Problem], str | None]:
    """The problems the KB's baseline does not accept, and a notice saying how many it accepted."""
    baseline = read_baseline(baseline_path(root))
    if baseline is None:
        return list(problems), None
    kept = [p for p in problems if fingerprint(p) not in baseline.fingerprints]
    accepted = len(problems) - len(kept)
    return kept, f"kb lint: {accepted} finding(s) accepted by {BASELINE_FILE}" if accepted else None


def baseline_path(root: Path) -> Path:
    return root / BASELINE_FILE


def read_baseline(path: Path) -> Baseline | None:
    """The baseline at ``path``; None when there is none. A malformed file is a config error."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read the baseline: {exc.strerror or exc}", str(path)) from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"invalid baseline: {exc}", str(path)) from None
    findings = data.get("findings") if isinstance(data, dict) else None
    if not isinstance(findings, list) or data.get("version") != BASELINE_VERSION:
        raise ConfigError(f"invalid baseline: expected version {BASELINE_VERSION} and a findings list", str(path))
    prints = [f.get("fingerprint") if isinstance(f, dict) else None for f in findings]
    if not all(isinstance(p, str) and len(p) == 64 for p in prints):
        raise ConfigError("invalid baseline: every finding needs a 64-hex fingerprint", str(path))
    return Baseline(frozenset(p for p in prints if isinstance(p, str)))


def render_baseline(problems: Sequence[Problem], now: datetime | None = None) -> str:
    """The baseline file accepting ``problems`` (sorted, one entry per fingerprint)."""
    entries: dict[str, dict[str, object]] = {}
    for p in problems:
        entries.setdefault(
            fingerprint(p),
            {"fingerprint": fingerprint(p), "check": p.check, "path": p.path, "line": p.line, "message": p.message},
        )
    doc = {
        "version": BASELINE_VERSION,
        "generated_at": (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "findings": sorted(
            entries.values(), key=lambda e: (str(e["path"] or ""), str(e["check"]), str(e["fingerprint"]))
        ),
    }
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
