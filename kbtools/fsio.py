"""Crash-safe file writes: temp file + fsync + rename, private permissions."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable
from pathlib import Path

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` and every missing folder above it with mode 0700 (``.agent/`` too,
    not only the leaf); tighten ``path`` if it exists."""
    missing = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        folder.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)
        os.chmod(folder, PRIVATE_DIR_MODE)
    os.chmod(path, PRIVATE_DIR_MODE)


def write_all(fd: int, data: bytes) -> None:
    """All of ``data`` to ``fd`` (a write to a pipe or a file may take only part)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def stat_key(st: os.stat_result) -> tuple[int, int, int]:
    """(size, mtime_ns, inode): equal keys mean an unchanged file, as in git's index."""
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def pwrite_all(fd: int, data: bytes, offset: int) -> None:
    """:func:`write_all` at ``offset`` (the file's own offset is left alone)."""
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


def temp_path_for(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def atomic_write_bytes(
    path: Path, chunks: Iterable[bytes], *, mode: int = PRIVATE_FILE_MODE, durable: bool = True
) -> None:
    """Write ``chunks`` to ``path`` atomically: a reader sees the old or the new file, never a mix.

    ``durable=False`` skips the fsyncs: for a cache, which after a power loss may
    be missing or empty (and a cache that does not load is a miss)."""
    tmp = temp_path_for(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if durable:
        fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str, *, mode: int = PRIVATE_FILE_MODE) -> None:
    atomic_write_bytes(path, [text.encode("utf-8")], mode=mode)


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
