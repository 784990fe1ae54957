"""Keys, fingerprints and timestamps shared by the sources and the ledgers.

The contract (seed 003, §3.1 of the reference) fixes these formulas so that a
ledger written by one run can be matched by the next:

- ``hash_identifier(v) = sha256(NFKC(v))`` — project and session identities
  reach the ledgers only in this form;
- ``source_key = sha256(tool \\0 hash_identifier(project) \\0
  hash_identifier(session) \\0 content_hash)`` — the ledger row;
- the identity key is the same without the content hash — "who", where the
  content hash answers "changed or not";
- ``normalize_text`` = NFKC, lower-case, whitespace collapsed, trimmed;
  ``fingerprint = sha256(normalize_text(text))``.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from kbtools.nfkc import nfkc

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Numbers below this are epoch seconds, the rest epoch milliseconds (as the reference).
_SECONDS_LIMIT = 10**10
# Epoch milliseconds of 10000-01-01: an int from 0 up to this is formatted by gmtime and
# strftime (1.2 µs instead of 2.4 µs through datetime), the same text (years 1970-9999).
_MILLIS_LIMIT = 253_402_300_800_000
_gmtime = time.gmtime
_strftime = time.strftime


def sha256_hex(value: str | bytes) -> str:
    data = value.encode("utf-8") if isinstance(value, str) else value
    return hashlib.sha256(data).hexdigest()


def hash_identifier(value: str) -> str:
    return sha256_hex(nfkc(value))


def normalize_text(value: str) -> str:
    folded = nfkc(value).lower()
    # str.split() and `\s` agree on what is whitespace; split/join runs in C.
    return " ".join(folded.split())


def fingerprint(text: str) -> str:
    return sha256_hex(normalize_text(text))


def hashed_identity_key(tool: str, project_key: str, session_hash: str) -> str:
    """Which source this is, across runs, of its identities as hashed (never in clear)."""
    return f"{tool}\0{project_key}\0{session_hash}"


def source_key_of(identity: str, content_hash: str) -> str:
    """The source key of a :func:`hashed_identity_key`."""
    return sha256_hex(f"{identity}\0{content_hash}")


def iso_time(value: Any) -> str:
    """Normalise a timestamp to ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (UTC), or "".

    Numbers below 1e10 are epoch seconds, others epoch milliseconds; a string
    of digits counts as a number. ISO-8601 strings without an offset are UTC —
    never local time, so a ledger does not depend on the machine's time zone.
    Anything unparseable or outside years 1–9999 gives "".
    """
    if type(value) is int and 0 <= value < _MILLIS_LIMIT:  # most numbers: by the C library's calendar
        seconds, millis = divmod(value, 1000) if value >= _SECONDS_LIMIT else (value, 0)
        return f"{_strftime('%Y-%m-%dT%H:%M:%S', _gmtime(seconds))}.{millis:03d}Z"
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, (int, float)):
        return _from_number(float(value))
    if not isinstance(value, str):
        return ""
    if len(value) == 24 and _CANONICAL.fullmatch(value):  # most are: only checked, not rebuilt
        try:
            datetime.fromisoformat(value)
            return value
        except ValueError:
            pass  # not a date (month 13): as below
    text = value.strip()
    if not text:
        return ""
    if text.isascii() and text.lstrip("-").replace(".", "", 1).isdigit():
        try:
            return _from_number(float(text))
        except ValueError:
            return ""
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        from email.utils import parsedate_to_datetime  # rarely needed; the email package is slow to import

        try:
            parsed = parsedate_to_datetime(text)  # RFC 2822, as HTTP servers write it
        except (TypeError, ValueError, IndexError):
            return ""
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return _format(parsed.astimezone(UTC))
    except (OverflowError, ValueError):
        return ""


# The form iso_time gives, which a valid date in it keeps unchanged.
_CANONICAL = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")


def _from_number(number: float) -> str:
    if not math.isfinite(number):
        return ""
    millis = number * 1000 if abs(number) < _SECONDS_LIMIT else number
    try:
        moment = _EPOCH + timedelta(milliseconds=millis)
    except (OverflowError, ValueError):
        return ""
    return _format(moment)


def _format(moment: datetime) -> str:
    # isoformat is implemented in C; only the year needs padding below 1000.
    text = moment.replace(tzinfo=None).isoformat(timespec="milliseconds")
    return (text if moment.year >= 1000 else f"{moment.year:04d}{text[text.index('-') :]}") + "Z"
