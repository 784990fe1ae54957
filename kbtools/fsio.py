"""Crash-safe file writes: temp file + fsync + rename, private permissions, no symlink followed."""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path

from kbtools.errors import KbError

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
# Never through a symlink: a committed symlink must not redirect a write out of its folder.
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
SYMLINK_REFUSED = "refusing to write through a symlink"


def open_private(path: Path, flags: int) -> int:
    """``os.open`` of a file kb writes: never through a symlink (``O_NOFOLLOW``), created
    0600, and a file found with a wider mode (a 0666 one) tightened to 0600."""
    try:
        fd = os.open(path, flags | NOFOLLOW | os.O_CLOEXEC, PRIVATE_FILE_MODE)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise KbError(SYMLINK_REFUSED, str(path)) from None
        raise
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) != PRIVATE_FILE_MODE:
            os.fchmod(fd, PRIVATE_FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_private_dir(path: Path, what: str) -> None:
    """Refuse to write into ``path`` when it is a symlink, not a folder, or another user's;
    nothing to check when it does not exist yet."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise KbError(f"the {what} is a symlink; {SYMLINK_REFUSED}", str(path))
    if not stat.S_ISDIR(st.st_mode):
        raise KbError(f"the {what} is not a folder", str(path))
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        raise KbError(f"the {what} is owned by another user", str(path))


def refuse_symlinks_in(path: Path) -> None:
    """Refuse a folder holding any symlink: every file in it is one kb may write."""
    with os.scandir(path) as entries:
        for entry in entries:
            if entry.is_symlink():
                raise KbError(SYMLINK_REFUSED, entry.path)


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` and every missing folder above it with mode 0700 (``.agent/`` too,
    not only the leaf); tighten ``path`` if it exists."""
    missing = []
    probe = path
    while not os.path.lexists(probe) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        folder.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)
        os.chmod(folder, PRIVATE_DIR_MODE)
    if os.path.islink(path):  # chmod would change the link's target
        raise KbError(SYMLINK_REFUSED, str(path))
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
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, mode)
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
