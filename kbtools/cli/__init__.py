"""The `kb` command line: parse, call one core function, render, map exit codes.

Each subcommand lives in its own module under ``kbtools.cli`` and exposes
``register(app)``; a module imports its core lazily inside the command so that
``kb lint --staged`` (the hook) does not pay for ingest, redaction or HTTP.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn

from kbtools.errors import ExitCode, KbError

if TYPE_CHECKING:
    import typer

# One module per command family; `kb --help` lists their commands in this order, then their groups.
COMMAND_MODULES = (
    "init",
    "lint",
    "raw",
    "ingest",
    "redact",
    "artifacts",
    "verify",
    "retention",
    "promote",
    "candidates",
    "search",
    "mcp",
    "hooks",
    "baseline",
)


def build_app(modules: Sequence[str] = COMMAND_MODULES) -> typer.Typer:
    import typer

    app = typer.Typer(
        name="kb",
        help="Lint, protect and feed a knowledge base written with coding agents.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )

    def _show_version(value: bool) -> None:
        if value:
            from kbtools import __version__

            print(f"kb {__version__}")
            raise typer.Exit(0)

    @app.callback()
    def _root(
        version: bool = typer.Option(
            False, "--version", help="Show the version and exit.", is_eager=True, callback=_show_version
        ),
    ) -> None:
        """Lint, protect and feed a knowledge base written with coding agents.

        Add --debug anywhere to see the traceback of an unexpected error.
        """

    for name in modules:
        module = importlib.import_module(f"kbtools.cli.{name}")
        module.register(app)
    return app


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:
        args = [a for a in args if a != "--debug"]
    from kbtools.cli.plain import plain_command

    command = plain_command(args)
    return guarded(command or (lambda: _typer_main(args)), debug)


def _typer_main(args: list[str]) -> int:
    """``args`` through the typer app; usage errors become one line and exit code 2."""
    import typer

    try:  # typer >= 0.26 vendors click
        from typer._click import exceptions as click_exc
    except ImportError:  # pragma: no cover - typer < 0.26 depends on click
        from click import exceptions as click_exc  # type: ignore[no-redef, import-not-found, unused-ignore]

    # Only the command being run is imported and built (each module is named after its
    # command); help, --version and an unknown name get every command.
    modules = args[:1] if args[:1] and args[0] in COMMAND_MODULES else COMMAND_MODULES
    try:
        result = build_app(modules)(args=args, prog_name="kb", standalone_mode=False)
    except click_exc.NoArgsIsHelpError as exc:
        print(exc.format_message(), file=sys.stderr)
        return int(ExitCode.USAGE)
    except click_exc.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "kb"
        print(f"kb: error: {exc.format_message()} ({where} --help)", file=sys.stderr)
        return int(ExitCode.USAGE)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort:  # typer < 0.26 (click) turns Ctrl-C into Abort
        return int(ExitCode.INTERRUPTED)
    return int(result) if isinstance(result, int) else int(ExitCode.OK)


def guarded(command: Callable[[], int], debug: bool) -> int:
    """Run a command; an error the user can act on is one line, a bug one line unless ``debug``."""
    try:
        code = command()
    except KbError as exc:
        if debug:
            raise
        print(f"kb: error: {exc}", file=sys.stderr)
        return int(exc.code)
    except KeyboardInterrupt:
        code = ExitCode.INTERRUPTED
    except BrokenPipeError:
        return int(ExitCode.OK)
    except UnicodeEncodeError as exc:
        if debug or not _undecodable_name(exc):
            raise
        # A file name that is not UTF-8 (the file system or git hands it over as lone
        # surrogates) met a place that must write UTF-8: say which name, not "internal error".
        print(f"kb: error: a file name is not valid UTF-8; rename the file ({_name_at(exc)})", file=sys.stderr)
        return int(ExitCode.USAGE)
    except Exception as exc:  # a bug: one line unless --debug
        if debug:
            raise
        print(
            f"kb: error: internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)",
            file=sys.stderr,
        )
        return 3
    if code == ExitCode.INTERRUPTED:  # typer >= 0.26 turns Ctrl-C into a silent exit code 130
        print("kb: interrupted", file=sys.stderr)
    return int(code)


def _undecodable_name(exc: UnicodeEncodeError) -> bool:
    return isinstance(exc.object, str) and all(0xDC80 <= ord(c) <= 0xDCFF for c in exc.object[exc.start : exc.end])


def _name_at(exc: UnicodeEncodeError) -> str:
    """The path-like word around the undecodable bytes, printable."""
    import re

    from kbtools.errors import shown_name

    text = exc.object
    words = re.finditer(r"[^\s\"',:;]+", text)
    word = next((m.group(0) for m in words if m.start() <= exc.start < m.end()), text[exc.start : exc.end])
    return shown_name(word[-200:])


def run() -> NoReturn:
    """The ``kb`` command: :func:`main`, its output flushed, its exit code the process's.
    A pipe closed by the reader (``kb … | head``) ends it quietly.

    Then out of the process at once: every file has been written and closed by then, and the
    interpreter's teardown (freeing each module and object in turn) costs 23-28 ms of CPU on
    every command, a tenth of the commit hook's 300 ms budget. Under a tracer or profiler
    (coverage) the interpreter exits normally, so that it can write its report."""
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can reach it
            try:  # and the interpreter's own flush at exit must not say so
                os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
            except (OSError, ValueError):
                pass
    if sys.gettrace() is not None or sys.getprofile() is not None:
        sys.exit(code)
    os._exit(code)
