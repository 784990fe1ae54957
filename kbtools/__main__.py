"""The process entry of ``kb`` and ``python -m kbtools`` (the CLI itself: :mod:`kbtools.cli`).

Nothing is imported here but what the interpreter already holds (``os``, ``sys``),
so that a Ctrl-C in the first milliseconds, while the CLI's modules are still being
imported, ends like one at any later moment: ``kb: interrupted``, exit 130, no
traceback.
"""

from __future__ import annotations

import os


def main() -> None:  # never returns: kbtools.cli.run exits
    try:
        from kbtools.cli import run

        run()
    except KeyboardInterrupt:
        interrupted()


def interrupted() -> None:
    """Ctrl-C outside the CLI's own handling (while importing, or while leaving)."""
    try:
        os.write(2, b"kb: interrupted\n")
    finally:
        os._exit(130)


if __name__ == "__main__":
    main()
