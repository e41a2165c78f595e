"""Creating and opening a run's journal under its writer lock (blocking: the backend runs these in its executor).

Both take the run's lock (``directory.py``) and hand back the journal and
lock descriptors, held, with what the journal holds (``Opened``); the
backend makes the ``FileJournal`` of them. On any failure every descriptor
taken is closed again, so a refused open leaves no lock behind.

* **Creating** writes the whole creation batch (under a batch intent when
  it has several lines) and syncs the directory, so the run has all of it
  or, after a crash, reads as absent and can be created again.
* **Opening** cuts a torn tail or an incomplete batch before it returns, so
  the next append is not glued to a fragment.
"""

from __future__ import annotations

import contextlib
import errno
import os
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from runjournal_server.backends.file.directory import RunDirectory
from runjournal_server.backends.file.files import open_regular, os_errors, read_all, same_file, write_all
from runjournal_server.backends.file.intent import INTENT_BYTES, Intent, blank, declare, held_intent
from runjournal_server.backends.file.reading import Scan, scan_journal
from runjournal_server.backends.file.tombstones import Tombstones
from runjournal_server.core.errors import RunExistsError, RunNotFoundError
from runjournal_server.core.records import StoredRecord


@dataclass(frozen=True)
class Opened:
    """A run's journal opened for writing: its descriptor and its held lock's, and what it holds."""

    fd: int
    lock_fd: int
    scan: Scan
    lock_name_durable: bool
    """The lock file's name is known durable (``FileJournal`` syncs the directory once otherwise)."""


def create(directory: RunDirectory, tombstones: Tombstones, run_id: str, creation: list[StoredRecord]) -> Opened:
    """Create the run with its whole creation batch, under its lock; the journal and lock held.

    The lock, not ``O_EXCL``, is what keeps creators apart: every creator
    locks the same never-deleted lock file, then reads and writes the
    journal through one descriptor, so there is no window between "is it
    there?" and "write the meta". ``O_EXCL`` alone could not tell a live
    journal from the empty or torn leftover of a crashed creation, which
    must be reusable. A rival holding the lock gets ``RunLockedError``
    (we cannot know whether its meta is durable yet); once the lock is
    free, a journal with a complete record gives ``RunExistsError``.
    """
    with contextlib.ExitStack() as cleanup, os_errors(run_id, "creating the journal"):
        tombstones.refuse(run_id)  # before the lock file is made: a deleted run keeps no file
        lock_fd = directory.lock(run_id)
        cleanup.callback(os.close, lock_fd)
        tombstones.refuse(run_id)  # again, holding the lock: a deleter may have just finished
        path = directory.journal(run_id)
        fd = open_regular(run_id, path, os.O_RDWR | os.O_CREAT)
        cleanup.callback(os.close, fd)
        leftover = held_intent(lock_fd)
        if scan_journal(run_id, read_all(fd), intent=leftover).records:
            raise RunExistsError(run_id)
        _write_creation(directory, path, fd, lock_fd, creation, leftover)
        cleanup.pop_all()
    starts = array("q")
    end = 0
    for stored in creation:
        starts.append(end)
        end += len(stored.line) + 1
    # The creation synced the directory after the lock file was made: its name is durable.
    return Opened(fd, lock_fd, Scan(creation, starts, good_end=end, size=end), lock_name_durable=True)


def _write_creation(
    directory: RunDirectory, path: Path, fd: int, lock_fd: int, creation: list[StoredRecord], leftover: Intent | None
) -> None:
    """Replace any leftover with the creation batch, durably, name included; several lines go under an intent."""
    data = b"".join(stored.line + b"\n" for stored in creation)
    intent = Intent(1, len(creation), 0, len(data)) if len(creation) > 1 else None
    try:
        if intent is not None:
            declare(lock_fd, intent)
            directory.fsync()  # the lock file may be new: its name must outlive a power cut like the intent
        elif leftover is not None:
            # A crashed creation batch's intent would otherwise claim this meta as part of it.
            blank(lock_fd, durable=True)
        os.ftruncate(fd, 0)
        write_all(fd, data, 0)
        os.fsync(fd)
        directory.fsync()
        if not same_file(fd, path):
            raise OSError(errno.ESTALE, f"{path} was replaced or removed while the run was being created")
    except OSError:
        # Unlink rather than leave a meta nobody acknowledged: a retry of
        # the same creation would take it for its own and report success
        # for a line that may never reach the disk.
        with contextlib.suppress(OSError):
            if same_file(fd, path):
                os.unlink(path)
        raise
    if intent is not None:
        with contextlib.suppress(OSError):
            blank(lock_fd, durable=False)


def open_existing(directory: RunDirectory, run_id: str, known: Sequence[StoredRecord] = ()) -> Opened:
    """Open the run under its lock, its torn tail (or incomplete batch) cut; the journal and lock held.

    ``known`` are records of the run decoded moments ago: where the bytes
    are unchanged the scan hands back those very objects.
    """
    with contextlib.ExitStack() as cleanup, os_errors(run_id, "opening the journal"):
        if not os.path.lexists(directory.journal(run_id)):
            # Refuse before the lock file is created: an append to a run that does
            # not exist must leave no trace (else any client could fill the directory).
            raise RunNotFoundError(run_id)
        lock_fd = directory.lock(run_id)
        cleanup.callback(os.close, lock_fd)
        try:
            fd = open_regular(run_id, directory.journal(run_id), os.O_RDWR)
        except FileNotFoundError:
            raise RunNotFoundError(run_id) from None
        cleanup.callback(os.close, fd)
        intent = held_intent(lock_fd)
        scan = scan_journal(run_id, read_all(fd), known, intent)
        if not scan.records:
            raise RunNotFoundError(run_id)
        if scan.good_end < scan.size:
            # Cut the torn tail (or the incomplete batch) now: the next append would be
            # glued to the fragment and an acknowledged record later dropped as torn.
            os.ftruncate(fd, scan.good_end)
            os.fsync(fd)
        if intent is not None:
            # Durably, and only after the cut is: single appends at the batch's seqs come next.
            blank(lock_fd, durable=True)
        # A lock file that ever held an intent had its name synced then (see FileJournal).
        lock_name_durable = os.fstat(lock_fd).st_size >= INTENT_BYTES
        cleanup.pop_all()
    return Opened(fd, lock_fd, scan, lock_name_durable)
