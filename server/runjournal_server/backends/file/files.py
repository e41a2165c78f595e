"""The file system edge of the file backend: opening, writing and reading files, and their errors.

Every journal and lock file is opened with ``O_NOFOLLOW``: a symbolic link at
either path is refused, never followed. An ``OSError`` is translated here
(``raise ... from err``): out of space is STORAGE_FULL, the rest
STORAGE_UNAVAILABLE.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from runjournal_server.backends.file.lines import CHUNK_BYTES
from runjournal_server.core.errors import CorruptJournalError, JournalError, StorageFullError, StorageUnavailableError

JOURNAL_SUFFIX = ".jsonl"
LOCK_SUFFIX = ".lock"
FILE_MODE = 0o644
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def storage_error(run_id: str | None, action: str, err: OSError, *, what: str = "run") -> JournalError:
    """Translate an OSError at the backend edge: out of space is STORAGE_FULL, the rest UNAVAILABLE."""
    detail = f"{action}: {err.strerror or err}"
    if err.errno in _FULL_ERRNOS:
        return StorageFullError(run_id or "", detail, what=what)
    return StorageUnavailableError(run_id, detail, what=what)


@contextlib.contextmanager
def os_errors(run_id: str | None, action: str, *, what: str = "run") -> Iterator[None]:
    try:
        yield
    except OSError as err:
        raise storage_error(run_id, action, err, what=what) from err


def open_regular(run_id: str, path: Path, flags: int) -> int:
    """Open ``path`` without following a symbolic link there: a link would aim our writes at any file.

    A link is CORRUPT_JOURNAL, not STORAGE_UNAVAILABLE: no retry will get past
    it, and the listing shows the run as damaged until an operator acts.
    """
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise CorruptJournalError(
                run_id,
                f"{path.name} is a symbolic link, which the file backend never follows (it could aim the run's "
                "writes at any file); put the run's own file there",
            ) from err
        raise


def write_all(fd: int, data: bytes, offset: int) -> None:
    """Write all of ``data`` at ``offset``, continuing after short writes.

    Positional writes keep no file position: after a rollback truncates the
    file, a plain ``write`` would continue past the new end and leave a hole.
    """
    view = memoryview(data)
    done = 0
    while done < len(view):
        written = os.pwrite(fd, view[done:], offset + done)
        if written <= 0:
            raise OSError(errno.EIO, "the write made no progress")
        done += written


def write_new_file(path: Path, data: bytes) -> None:
    """Create ``path`` (never an existing file), write and fsync ``data``, or remove it again and raise.

    The first step of every small durable document (a task's, a tombstone):
    the caller then links or renames it into place and fsyncs the directory.
    A failed write (a full disk, a failing fsync) leaves no half-written
    debris behind to fill the disk further.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    try:
        try:
            write_all(fd, data, 0)
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise


def sync(fd: int) -> None:
    """fsync ``fd``: the commit log's syncs go through here, so fault injection into this module's ``os`` sees them."""
    os.fsync(fd)


def fsync_dir(directory: Path) -> None:
    """fsync a directory, so the names created, renamed or removed in it outlive a power cut.

    The one directory sync of the file backend (journals, lock files, the
    commit log, tombstones): fault injection into this module's ``os`` sees
    every one of them.
    """
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_all(fd: int) -> bytes:
    """The whole file, read to its end (it may grow while we read)."""
    parts = []
    offset = 0
    size = os.fstat(fd).st_size
    while chunk := os.pread(fd, max(size - offset, CHUNK_BYTES), offset):
        parts.append(chunk)
        offset += len(chunk)
    return b"".join(parts)


def same_file(fd: int, path: Path) -> bool:
    """True when ``path`` (not followed if a link) names the file open on ``fd``."""
    try:
        held, found = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (held.st_dev, held.st_ino) == (found.st_dev, found.st_ino)
