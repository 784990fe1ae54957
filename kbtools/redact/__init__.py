"""Redaction: secrets, identities, private hosts and paths out before anything reaches disk.

    from kbtools.redact import redact, find_secrets, Redactor, REDACTION_VERSION

    redact(text)          → Redacted(text=…, labels=("<REDACTED_TOKEN>", …))
    find_secrets(text)    → [SecretHit(start, end, kind), …]   credentials only
    Redactor(config)      → a redactor with a RedactionConfig (public path prefixes, allow-list)

Rules are data (``kbtools.redact.rules``); the engine (``kbtools.redact.engine``) runs
the rules whose keywords occur, merges overlapping hits and replaces each once.
``REDACTION_VERSION`` changes whenever any rule does.
"""

from __future__ import annotations

from functools import lru_cache

from kbtools.redact.engine import ALLOW_PRAGMA, Redacted, Redactor, SecretHit
from kbtools.redact.rules import PLACEHOLDERS, REDACTION_VERSION, RULES, Rule

__all__ = [
    "ALLOW_PRAGMA",
    "PLACEHOLDERS",
    "REDACTION_VERSION",
    "RULES",
    "Redacted",
    "Redactor",
    "Rule",
    "SecretHit",
    "default_redactor",
    "find_secrets",
    "redact",
]


@lru_cache(maxsize=1)
def default_redactor() -> Redactor:
    return Redactor()


def redact(text: str) -> Redacted:
    """Redact ``text`` with every rule and the default configuration."""
    return default_redactor().redact(text)


def find_secrets(text: str) -> list[SecretHit]:
    """Credentials in ``text`` (placeholders and lines with ``kb:allow-secret`` are not)."""
    return default_redactor().find_secrets(text)
