from __future__ import annotations

from kbtools.cli import run

if __name__ == "__main__":
    run()
