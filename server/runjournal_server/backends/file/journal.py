"""A journal file open for writing, under its held lock: appends, rollback, the duplicate check's read.

Each record is one stored line from ``records.py`` plus ``\\n``, written into
the journal and made durable before it is acknowledged: by the one fsync of
the commit log that its group shares (``group_commit.py``), which keeps the
same bytes for this offset until the journal itself is fsynced. The first
append through a handle also fsyncs the journal: bytes another writer left
there unsynced (a process killed before its sync) are what the new record
follows, and no log of ours holds them. Before an append is acknowledged the
held journal must still be the file at its path (one ``lstat``), else the
handle is poisoned: records written to a file that was replaced or unlinked
would be lost on the next open.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from runjournal_server.backends.file.commit_log import Entry, meta_digest
from runjournal_server.backends.file.files import os_errors, storage_error, write_all
from runjournal_server.backends.file.intent import Intent, blank, declare
from runjournal_server.backends.file.opening import Opened
from runjournal_server.backends.journal import Journal
from runjournal_server.backends.reading import decode_at
from runjournal_server.core.errors import CorruptJournalError, StorageUnavailableError
from runjournal_server.core.records import StoredRecord

if TYPE_CHECKING:
    from runjournal_server.backends.file.backend import FileBackend
    from runjournal_server.backends.file.group_commit import SyncCounts

log = logging.getLogger(__name__)


def check_lines(run_id: str, batch: Sequence[StoredRecord]) -> None:
    """Refuse a line runs/runs.py should never send: a newline inside it would split it in two in the file."""
    for stored in batch:
        if b"\n" in stored.line:
            raise ValueError(f"run {run_id!r}: the stored line for seq {stored.seq} holds a newline")


class FileJournal(Journal):
    """An open journal file and its held lock.

    Every method body that touches the file runs in the backend's executor
    under ``_mutex``: a cancelled caller does not stop the thread, so the
    thread itself must finish the write and advance the state, and the next
    call must wait for it.
    """

    def __init__(self, backend: FileBackend, run_id: str, opened: Opened) -> None:
        self.run_id = run_id
        self._backend = backend
        self._path = os.fspath(backend._directory.journal(run_id))  # a str: the per-append lstat skips __fspath__
        self._fd = opened.fd
        self._lock_fd = opened.lock_fd
        scan = opened.scan
        held = os.fstat(self._fd)
        self._identity = (held.st_dev, held.st_ino)
        self._starts = scan.starts
        self._end = scan.good_end
        self._poisoned_by: str | None = None
        self._closed = False
        self._intent_stale = False
        """The lock file may hold the intent of a batch that was rolled back: blank it before the next line."""
        self._lock_name_durable = opened.lock_name_durable
        """An intent is only as durable as the lock file's name: a lock file never synced into the
        directory (made by an open of a journal that came without one) could vanish in a power cut."""
        self._mutex = threading.Lock()
        self._meta = meta_digest(scan.records[0].line)
        """Names this incarnation of the run in the commit log's entries."""
        self._synced = False
        """True once this handle fsynced the journal (see the module docstring)."""
        self._pending_intent: Intent | None = None

    @property
    def last_seq(self) -> int:
        return len(self._starts)

    async def _store(self, batch: list[StoredRecord]) -> None:
        await self._backend._committer.commit(self, batch)

    async def _read_line(self, seq: int) -> StoredRecord:
        return await self._backend._run(self._stored_line_sync, seq)

    async def close(self) -> None:
        await self._backend._run(self._close_sync)

    # The three steps of an append in a group, run by the group's drain under ``_mutex``.

    def _write_for_group(self, batch: list[StoredRecord], counts: SyncCounts, *, alone: bool) -> Entry | None:
        """Write ``batch`` after the last line; the commit log entry that will make it durable.

        None when the lines are durable already: the journal was fsynced
        itself, as it is when the group holds it ``alone`` (one fsync either
        way, and the log would cost a second file) and on a handle's first
        append (see the module docstring).
        """
        self._check_append(batch)  # again, under the mutex: a cancelled caller's write may have run meanwhile
        check_lines(self.run_id, batch)
        data = b"".join(stored.line + b"\n" for stored in batch)
        # One line needs no intent: a cut single line is a torn tail already.
        intent = Intent(batch[0].seq, len(batch), self._end, self._end + len(data)) if len(batch) > 1 else None
        sync_here = alone or not self._synced
        try:
            self._prepare_intent(intent)
            write_all(self._fd, data, self._end)
            if sync_here:
                os.fsync(self._fd)
                counts.journal_syncs += 1
                self._synced = True
        except OSError as err:
            self._roll_back(err, stale_intent=intent is not None or self._intent_stale)
        self._pending_intent = intent
        return None if sync_here else Entry(self.run_id, self._meta, self._end, data)

    def _undo_group_write(self, err: OSError) -> NoReturn:
        """The group's log sync failed: cut the written lines away again (or poison), and raise."""
        intent, self._pending_intent = self._pending_intent, None
        self._roll_back(err, stale_intent=intent is not None or self._intent_stale)

    def _finish_group_write(self, batch: list[StoredRecord]) -> None:
        """The group's log entry is durable: check the file is still ours, then advance."""
        intent, self._pending_intent = self._pending_intent, None
        self._check_still_at_path()
        if intent is not None:
            with contextlib.suppress(OSError):
                blank(self._lock_fd, durable=False)  # the batch is whole: its intent means nothing now
        # Advance only now that the lines are durable, so a failed write is
        # re-appended at the same seq instead of being lost.
        for stored in batch:
            self._starts.append(self._end)
            self._end += len(stored.line) + 1

    def _prepare_intent(self, intent: Intent | None) -> None:
        """Declare the batch's intent, or blank a stale one durably, before any line is written."""
        if intent is not None:
            if not self._lock_name_durable:
                self._backend._directory.fsync()
                self._lock_name_durable = True
            declare(self._lock_fd, intent)
        elif self._intent_stale:
            blank(self._lock_fd, durable=True)
        self._intent_stale = False

    def _roll_back(self, err: OSError, *, stale_intent: bool) -> NoReturn:
        """Cut the file back to the last good line after a failed write, or poison the handle.

        The failed bytes may be partly on disk (a short write before ENOSPC) or
        in the page cache after a failed fsync; left there they would be read
        back as records nobody acknowledged, or glue the next append to a
        fragment. The fsync is never retried: after a failure the kernel may
        have dropped the dirty pages and a second fsync would report success.
        A failed batch's intent stays until the next append blanks it: it
        names a batch that is now not in the journal, which hides nothing.
        """
        try:
            os.ftruncate(self._fd, self._end)
            os.fsync(self._fd)
        except OSError as undo_err:
            self._poisoned_by = "an earlier write could not be rolled back"
            raise storage_error(
                self.run_id, f"appending failed ({err.strerror}) and so did rolling back", undo_err
            ) from err
        self._intent_stale = stale_intent
        raise storage_error(self.run_id, "appending", err) from err

    def _check_still_at_path(self) -> None:
        """Refuse to acknowledge lines written to a file that is no longer the journal at our path.

        An operator (or an attacker) who renames a file over the journal, or
        unlinks it, leaves us writing to an inode the next open never reads:
        every record acknowledged from then on would be lost. One ``lstat``
        after the fsync is the cheapest point that covers the whole append.
        """
        try:
            found = os.stat(self._path, follow_symlinks=False)
            same = (found.st_dev, found.st_ino) == self._identity
        except OSError:
            same = False
        if same:
            return
        self._poisoned_by = f"the journal file {self._path} was replaced or removed while the server held it"
        log.error("run %r: %s was replaced or removed while this server held it", self.run_id, self._path)
        raise StorageUnavailableError(
            self.run_id,
            f"the journal file {self._path} was replaced or removed while the server held it; nothing after "
            f"seq {self.last_seq} was acknowledged, and the run must be opened again from what the path holds now",
        )

    async def _read_bytes(self, seq: int) -> bytes:
        return await self._backend._run(self._stored_bytes_sync, seq)

    def _stored_line_sync(self, seq: int) -> StoredRecord:
        return decode_at(self.run_id, seq, self._stored_bytes_sync(seq), line=seq, at_seq=seq)

    def _stored_bytes_sync(self, seq: int) -> bytes:
        with self._mutex:
            self._check_usable()  # again, under the mutex: the descriptor may have been closed meanwhile
            start = self._starts[seq - 1]
            end = self._starts[seq] if seq < self.last_seq else self._end
            with os_errors(self.run_id, f"reading seq {seq}"):
                data = os.pread(self._fd, end - start, start)
        if not data.endswith(b"\n"):
            raise CorruptJournalError(
                self.run_id, f"the line is cut short ({len(data)} of {end - start} bytes)", line=seq, seq=seq
            )
        return data[:-1]

    def _close_sync(self) -> None:
        with self._mutex:
            if self._closed:
                return
            self._closed = True
            try:
                # What only the commit log made durable is fsynced here, before the descriptor goes.
                self._backend._committer.journal_closing(self)
                with contextlib.suppress(OSError):
                    os.close(self._fd)
            finally:
                # Closing the only descriptor of the lock file releases the flock.
                os.close(self._lock_fd)
        self._backend._forget(self)
