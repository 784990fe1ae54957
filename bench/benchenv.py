"""What the benchmarks run `kb` with: the environment an installed `kb` sees.

An installed kb has its bytecode cached; a shell that sets PYTHONDONTWRITEBYTECODE
(this machine does) would make every run recompile the package from source
(about 50 ms), which no user pays. :func:`compile_package` writes the bytecode
of kbtools once, as `pip install` does for an installed package.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

RUN_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def compile_package() -> None:
    import kbtools

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(kbtools.__file__).parent)],
                   check=True, stdout=subprocess.DEVNULL)
