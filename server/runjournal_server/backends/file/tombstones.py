"""Deleting a run from the file backend: its tombstone first, then its files, truncated and unlinked.

A deleted run leaves ``<data_dir>/deleted/<run>.json`` (run id, last seq,
deletion time), written to a temporary file, fsynced, renamed into place and
the directory fsynced, before anything of the run is touched. Then the
journal and the lock file (whose batch intent describes the run's last batch)
are truncated to nothing and fsynced, so no block of theirs keeps a record
even while a reader still holds a descriptor, then unlinked, and the data
directory is fsynced. A crash anywhere in that order leaves either the whole
run without a tombstone, or a tombstone (with perhaps empty or leftover
files, which every reader ignores and the next ``start`` removes): never a run that
reads back in part.

``delete`` keeps that order under the run's writer lock, after checking
the run's last seq against the caller's; ``Tombstones.refuse`` is how a
creation learns the run's id is taken by a deletion.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable
from pathlib import Path

from runjournal_server.backends.file.directory import RunDirectory
from runjournal_server.backends.file.files import fsync_dir, open_regular, os_errors, write_new_file
from runjournal_server.backends.file.intent import held_intent
from runjournal_server.backends.file.reading import BackwardDamageError, walk_back
from runjournal_server.backends.reading import BackwardWalk
from runjournal_server.backends.tombstone import Tombstone, decode_tombstone, encode_tombstone
from runjournal_server.core.errors import (
    CorruptJournalError,
    LastSeqMismatchError,
    RunDeletedError,
    RunNotFoundError,
)
from runjournal_server.core.ids import is_valid_run_id, validate_run_id

DELETED_DIR = "deleted"
TOMBSTONE_SUFFIX = ".json"
_TEMP_PREFIX = ".tmp-"


class Tombstones:
    """The tombstones of one data directory (blocking calls: run them in the executor)."""

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir
        self._dir = data_dir / DELETED_DIR

    def _prepare(self) -> None:
        """Make the tombstone directory on the first deletion, its name durable before any tombstone is in it."""
        if not self._dir.is_dir():
            self._dir.mkdir(exist_ok=True)
            fsync_dir(self._data_dir)

    def _path(self, run_id: str) -> Path:
        return self._dir / (validate_run_id(run_id) + TOMBSTONE_SUFFIX)

    def read(self, run_id: str) -> Tombstone | None:
        path = self._path(run_id)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        return decode_tombstone(run_id, data, str(path))

    def write(self, tombstone: Tombstone) -> None:
        """Store the tombstone durably (temporary file, fsync, rename, directory fsync)."""
        body = encode_tombstone(tombstone)
        final = self._path(tombstone.run_id)
        self._prepare()
        temp = self._dir / f"{_TEMP_PREFIX}{uuid.uuid4().hex}"
        write_new_file(temp, body)
        try:
            os.replace(temp, final)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        fsync_dir(self._dir)

    def run_ids(self) -> set[str]:
        try:
            names = os.listdir(self._dir)
        except FileNotFoundError:
            return set()
        ids = (name.removesuffix(TOMBSTONE_SUFFIX) for name in names if name.endswith(TOMBSTONE_SUFFIX))
        return {run_id for run_id in ids if is_valid_run_id(run_id)}

    def all(self) -> list[Tombstone]:
        return [found for run_id in sorted(self.run_ids()) if (found := self.read(run_id)) is not None]

    def refuse(self, run_id: str) -> None:
        """Raise RUN_DELETED if the run has a tombstone."""
        found = self.read(run_id)
        if found is not None:
            raise RunDeletedError(run_id, found.last_seq)


def delete(
    directory: RunDirectory,
    tombstones: Tombstones,
    run_id: str,
    expected_last_seq: int,
    deleted_at: float,
    erase_run: Callable[[str], None],
) -> tuple[Tombstone, bool]:
    """Under the run's lock: check the last seq, store the tombstone, then ``erase_run`` (see the module docstring).

    Returns the tombstone and True, or the tombstone another deleter stored
    first and False.
    """
    with contextlib.ExitStack() as cleanup, os_errors(run_id, "deleting the run"):
        found = tombstones.read(run_id)
        if found is not None:
            return found, False
        if not os.path.lexists(directory.journal(run_id)):
            raise RunNotFoundError(run_id)  # before the lock file is made, as for an open
        lock_fd = directory.lock(run_id)
        cleanup.callback(os.close, lock_fd)
        found = tombstones.read(run_id)
        if found is not None:
            return found, False  # another process deleted it between our looks
        try:
            fd = open_regular(run_id, directory.journal(run_id), os.O_RDONLY)
        except FileNotFoundError:
            raise RunNotFoundError(run_id) from None
        cleanup.callback(os.close, fd)
        # The last seq from the end (as ``ends`` reads it), not a scan of a journal about to go.
        walk = BackwardWalk(lambda _: True, keep_all=False)
        try:
            walk_back(run_id, walk, fd, os.fstat(fd).st_size, held_intent(lock_fd))
        except BackwardDamageError as damage:
            raise CorruptJournalError(run_id, damage.problem, seq=damage.seq) from damage
        assert walk.last_seq is not None
        last_seq = walk.last_seq
        if last_seq != expected_last_seq:
            raise LastSeqMismatchError(run_id, last_seq, expected_last_seq)
        tombstone = Tombstone(run_id, last_seq, deleted_at)
        tombstones.write(tombstone)  # durable before any byte of the run goes
        erase_run(run_id)  # still holding the lock: no other process opens the run meanwhile
    return tombstone, True


def erase(paths: list[Path], data_dir: Path) -> None:
    """Truncate (fsynced) and unlink each file that is there, then fsync the directory; idempotent.

    Truncated first: a descriptor still open on the file (a reader) would
    otherwise keep its bytes alive after the unlink. Never follows a link.
    """
    removed = False
    for path in paths:
        try:
            fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            continue
        except OSError:
            fd = -1  # a symbolic link or an odd file: remove the name, touch nothing it points to
        try:
            if fd >= 0:
                os.ftruncate(fd, 0)
                os.fsync(fd)
        finally:
            if fd >= 0:
                os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        removed = True
    if removed:
        fsync_dir(data_dir)
