"""The data directory of the file backend: where a run's files are, and the run's writer lock.

A run ``R`` is ``<data_dir>/R.jsonl`` (its journal) and ``<data_dir>/R.lock``.
The run's writer lock is an exclusive, non-blocking ``flock`` on ``R.lock``,
held while the journal is open; the kernel drops it when the process dies,
so a crash leaves no stale lock. The lock file is never deleted: every
locker must lock the same inode, and deleting it would let a third process
lock a fresh file while the first still holds the old one. Only deleting a
run removes it (``tombstones.py``), after the run's tombstone is durable:
every locker checks the tombstone once it holds the lock. The lock file
also holds the run's batch intent (``intent.py``), which a reader peeks at
without the lock.

Blocking calls: the backend runs them in its executor.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import portalocker

from runjournal_server.backends.file.files import JOURNAL_SUFFIX, LOCK_SUFFIX, fsync_dir, open_regular
from runjournal_server.backends.file.intent import Intent, held_intent
from runjournal_server.core.errors import RunLockedError, RunNotFoundError, StorageUnavailableError
from runjournal_server.core.ids import is_valid_run_id, validate_run_id


class RunDirectory:
    """The runs' files in one directory (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def journal(self, run_id: str) -> Path:
        # Never build a path from an unchecked id: "../x" would leave the directory.
        return self.path / (validate_run_id(run_id) + JOURNAL_SUFFIX)

    def lock_file(self, run_id: str) -> Path:
        return self.path / (validate_run_id(run_id) + LOCK_SUFFIX)

    def lock(self, run_id: str) -> int:
        """Take the run's writer lock at once or raise ``RunLockedError``; returns the lock's fd."""
        fd = open_regular(run_id, self.lock_file(run_id), os.O_RDWR | os.O_CREAT)
        try:
            portalocker.lock(fd, portalocker.LOCK_EX | portalocker.LOCK_NB)
        except portalocker.AlreadyLocked as err:
            os.close(fd)
            raise RunLockedError(run_id) from err
        except portalocker.LockException as err:
            os.close(fd)
            raise StorageUnavailableError(run_id, f"locking {self.lock_file(run_id)}: {err}") from err
        return fd

    def peek_intent(self, run_id: str) -> Intent | None:
        """The run's batch intent, read without the lock (a lock file that is not there holds none)."""
        try:
            fd = open_regular(run_id, self.lock_file(run_id), os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            return held_intent(fd)
        finally:
            os.close(fd)

    def open_for_reading(self, run_id: str) -> int:
        try:
            return open_regular(run_id, self.journal(run_id), os.O_RDONLY)
        except FileNotFoundError:
            raise RunNotFoundError(run_id) from None

    def fsync(self) -> None:
        fsync_dir(self.path)

    def run_ids(self, deleted: set[str]) -> list[str]:
        """Every run with a journal file, except those in ``deleted`` (a crash's leftover beside its tombstone)."""
        with os.scandir(self.path) as entries:
            return [
                entry.name.removesuffix(JOURNAL_SUFFIX)
                for entry in entries
                if entry.name.endswith(JOURNAL_SUFFIX)
                and is_valid_run_id(entry.name.removesuffix(JOURNAL_SUFFIX))
                and entry.name.removesuffix(JOURNAL_SUFFIX) not in deleted
                and entry.is_file()
            ]

    def versions(self, run_ids: Sequence[str]) -> dict[str, object]:
        """Size, mtime and inode of each run's journal: every acknowledged append grows the file."""
        versions: dict[str, object] = {}
        base = os.fspath(self.path)  # a str path per run, not a Path: a start's repair stats every journal
        for run_id in run_ids:
            try:
                info = os.stat(f"{base}/{validate_run_id(run_id)}{JOURNAL_SUFFIX}", follow_symlinks=False)
            except OSError:
                continue  # gone (or unreadable): the repair reads it and finds out which
            versions[run_id] = (info.st_size, info.st_mtime_ns, info.st_ino)
        return versions
