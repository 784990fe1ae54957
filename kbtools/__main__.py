"""The process entry of ``kb`` and ``python -m kbtools`` (the CLI itself: :mod:`kbtools.cli`).

Nothing is imported here but what the interpreter already holds (``gc``, ``os``,
``sys``), so that a Ctrl-C in the first milliseconds, while the CLI's modules are
still being imported, ends like one at any later moment: ``kb: interrupted``, exit
130, no traceback.
"""

from __future__ import annotations

import gc
import os


def main() -> None:  # never returns: kbtools.cli.run leaves the process
    try:
        # Young objects are collected after 10,000 allocations, not 700, before anything is
        # imported: a command builds hundreds of thousands of objects that live until it
        # exits (modules, the prior ledgers' index), and the default threshold had the
        # collector walk them some 60 times in a 0.3 s rerun.
        gc.set_threshold(10_000, 10, 10)
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
