"""`kb redact [--jsonl]`: SPEC §5 redaction as a filter, stdin → stdout."""

from __future__ import annotations

import io
import sys
from typing import Annotated, TextIO

import typer

from kbtools.cli.common import RootOption


def register(app: typer.Typer) -> None:
    @app.command("redact", short_help="Redact secrets and private details: stdin to stdout.")
    def redact(
        jsonl: Annotated[
            bool,
            typer.Option(
                "--jsonl",
                help='Each input line is {"text": …}; each output line {"text": redacted, "redactions": [labels]}.',
            ),
        ] = False,
        root: RootOption = None,
    ) -> int:
        """Redact secrets, identities, private hosts and paths from stdin to stdout.

        Uses the redaction settings (public path prefixes, allow-list) of the knowledge
        base's .kb.yaml when run inside one. A bad --jsonl line is an error naming its
        line number (exit 2).
        """
        from kbtools.cli.common import open_kb
        from kbtools.redact import Redactor
        from kbtools.redact.stream import redact_jsonl

        config, _ = open_kb(root)
        redactor = Redactor(config.redaction)
        stdin = _utf8(sys.stdin)
        stdout = sys.stdout
        if hasattr(stdout, "reconfigure"):  # UTF-8 out whatever the locale, like the input
            stdout.reconfigure(encoding="utf-8", errors="replace")
        if jsonl:
            for line in redact_jsonl(redactor, stdin):
                stdout.write(line)
        else:
            stdout.write(redactor.redact(stdin.read()).text)
        stdout.flush()
        return 0


def _utf8(stream: TextIO) -> TextIO:
    """stdin as UTF-8 whatever the locale; undecodable bytes become U+FFFD, never a crash."""
    buffer = getattr(stream, "buffer", None)
    if buffer is None:  # already text (tests run in-process with a StringIO)
        return stream
    return io.TextIOWrapper(buffer, encoding="utf-8", errors="replace", newline="")
