"""Expected failures and exit codes.

An expected failure is a :class:`KbError`: the CLI prints it as one line
``kb: error: <what> (<where>)`` on stderr and exits with its code. Anything
else is a bug and shows a traceback only with ``--debug``.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    OK = 0
    FINDINGS = 1  # lint problems, a refused gate, a failed verify
    USAGE = 2  # usage, config or environment error
    INTERRUPTED = 130


class KbError(Exception):
    """An expected failure with a one-line message naming what and where."""

    def __init__(self, what: str, where: str | None = None, *, code: ExitCode = ExitCode.USAGE) -> None:
        super().__init__(what)
        self.what = what
        self.where = where
        self.code = code

    def __str__(self) -> str:
        return f"{self.what} ({self.where})" if self.where else self.what


class ConfigError(KbError):
    """A bad `.kb.yaml`, environment variable or flag value.

    ``path``, ``line`` and ``column`` (1-based) locate it in a file when it comes from one,
    for renderers that annotate files (``--format json`` / ``github``).
    """

    def __init__(
        self,
        what: str,
        where: str | None = None,
        *,
        path: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        super().__init__(what, where)
        self.path = path
        self.line = line
        self.column = column


def shown_name(name: str) -> str:
    """A file name as it can be printed: bytes that are not UTF-8 (kept by the file system
    decoding as lone surrogates) shown as ``\\xNN``, valid characters as they are."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def utf8_name(name: str) -> bool:
    """Whether ``name`` (from the file system or git) is valid UTF-8."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def require_utf8_name(path: object) -> None:
    """KbError when the name of ``path`` is not valid UTF-8: such a name cannot be written
    into a manifest, a ledger or a report."""
    name = str(path)
    if not utf8_name(name):
        raise KbError("file name is not valid UTF-8; rename the file", shown_name(name))
