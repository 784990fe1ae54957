"""The write lock of an output directory."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from kbtools.errors import KbError
from kbtools.fsio import check_private_dir, ensure_private_dir, open_private, refuse_symlinks_in
from kbtools.ingest.ledger import LOCK_FILE


def lock_output(output_dir: Path) -> int:
    """One ``--write`` per output directory at a time: the descriptor that holds the lock
    (closing it releases the lock).

    ``flock`` on ``<output>/.lock``: the kernel releases it when the holder
    dies, so a lock left by a killed run (a dead pid) is simply taken over.
    """
    import fcntl

    path = output_dir / LOCK_FILE
    try:
        # Nothing written through a symlink, nothing into another user's folder.
        check_private_dir(output_dir, "ingest output folder")
        ensure_private_dir(output_dir)
        check_private_dir(output_dir, "ingest output folder")
        refuse_symlinks_in(output_dir)
        fd = open_private(path, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        raise KbError(f"cannot create the output directory: {exc.strerror or exc}", str(output_dir)) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        os.close(fd)
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            who = f" (pid {holder})" if holder.isdigit() else ""
            raise KbError(
                f"another `kb ingest --write` is running on this output directory{who}", str(output_dir)
            ) from None
        raise KbError(f"cannot lock the output directory: {exc.strerror}", str(output_dir)) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd
