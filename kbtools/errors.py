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
