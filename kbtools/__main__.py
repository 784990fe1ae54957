"""The process entry of ``kb`` and ``python -m kbtools`` (the CLI itself: :mod:`kbtools.cli`)."""

from __future__ import annotations

import gc
from typing import NoReturn


def main() -> NoReturn:
    # Young objects are collected after 10,000 allocations, not 700, before anything is
    # imported: a command builds hundreds of thousands of objects that live until it
    # exits (modules, the prior ledgers' index), and the default threshold had the
    # collector walk them some 60 times in a 0.3 s rerun.
    gc.set_threshold(10_000, 10, 10)
    from kbtools.cli import run

    run()


if __name__ == "__main__":
    main()
