"""The file backend: one ``<run>.jsonl`` journal and one ``<run>.lock`` per run, in one directory.

The run's writer lock is an exclusive, non-blocking ``flock`` on
``<run>.lock``, held while the journal is open; the kernel drops it when the
process dies, so a crash leaves no stale lock. The lock file is never deleted:
every locker must lock the same inode, and deleting it would let a third
process lock a fresh file while the first still holds the old one. Only
deleting a run removes it (``tombstones.py``), after the run's tombstone is
durable: every locker checks the tombstone once it holds the lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import functools
import os
import tempfile
import threading
from array import array
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import TypeVar

import portalocker

from runjournal_server.backends.base import Backend
from runjournal_server.backends.file.files import (
    JOURNAL_SUFFIX,
    LOCK_SUFFIX,
    fsync_dir,
    open_regular,
    os_errors,
    read_all,
    same_file,
    write_all,
)
from runjournal_server.backends.file.group_commit import GroupCommitter
from runjournal_server.backends.file.intent import (
    INTENT_BYTES,
    Intent,
    acknowledged_end,
    blank,
    declare,
    held_intent,
)
from runjournal_server.backends.file.journal import FileJournal, check_lines
from runjournal_server.backends.file.lines import ShrunkError, fd_reader, first_line
from runjournal_server.backends.file.reading import (
    BackwardDamageError,
    Scan,
    StreamCursor,
    decode_meta,
    read_meta,
    scan_journal,
    walk_back,
)
from runjournal_server.backends.file.tombstones import Tombstones, erase
from runjournal_server.backends.reading import BackwardWalk
from runjournal_server.backends.task_store import TaskStore
from runjournal_server.backends.tombstone import Tombstone
from runjournal_server.core.errors import (
    CorruptJournalError,
    LastSeqMismatchError,
    RunDeletedError,
    RunExistsError,
    RunLockedError,
    RunNotFoundError,
    StorageUnavailableError,
)
from runjournal_server.core.ids import is_valid_run_id, validate_run_id
from runjournal_server.core.records import StoredRecord

T = TypeVar("T")

_READ_ATTEMPTS = 3
"""How often a lock-free reader starts over when the file shrinks under it (a writer rolled back)."""


class FileBackend(Backend):
    """Run journals as files in one directory (see the module docstring)."""

    name = "file"

    def __init__(self, data_dir: Path, *, executor: Executor | None = None) -> None:
        self._dir = Path(data_dir)
        self._executor = executor
        self._journals: set[FileJournal] = set()
        self._journals_mutex = threading.Lock()
        self._committer = GroupCommitter(self._dir, executor)
        self._tombstones = Tombstones(self._dir)

    @property
    def data_dir(self) -> Path:
        return self._dir

    async def start(self) -> None:
        await self._run(self._start_sync)

    async def close(self) -> None:
        with self._journals_mutex:
            journals = list(self._journals)
        await asyncio.gather(*(journal.close() for journal in journals))
        await self._run(self._committer.close_sync)

    async def _create_exclusive(self, run_id: str, batch: list[StoredRecord]) -> FileJournal:
        """Create the run with its whole creation batch; see ``_create_sync`` for how two creators are kept apart."""
        check_lines(run_id, batch)
        journal, _ = await self._run_opening(self._create_sync, run_id, batch)
        return journal

    async def open_journal(
        self, run_id: str, known: Sequence[StoredRecord] = ()
    ) -> tuple[FileJournal, list[StoredRecord]]:
        return await self._found(
            run_id, self._run_opening(functools.partial(self._open_sync, known=known), run_id, None)
        )

    async def load(self, run_id: str) -> list[StoredRecord]:
        return await self._found(run_id, self._run(self._load_sync, run_id))

    async def _walk_back(self, run_id: str, walk: BackwardWalk) -> StoredRecord:
        return await self._found(run_id, self._run(self._read_sync, run_id, functools.partial(walk_back, run_id, walk)))

    async def meta(self, run_id: str) -> StoredRecord:
        return await self._found(run_id, self._run(self._read_sync, run_id, functools.partial(read_meta, run_id)))

    async def _found(self, run_id: str, read: Awaitable[T]) -> T:
        """``read``; a run it found absent is RUN_DELETED where a tombstone says so (the journal is gone)."""
        try:
            return await read
        except RunNotFoundError as err:
            await self.refuse_deleted(run_id, err)

    async def stream(self, run_id: str, from_seq: int) -> AsyncGenerator[StoredRecord, None]:
        """Read forward a chunk at a time (``STREAM_CHUNK_BYTES`` plus at most one line held).

        The stream ends at the end the journal had when it started (later
        appends are for the next stream), a torn final line and an incomplete
        batch left out. Lines before ``from_seq`` are counted, not decoded.
        """
        cursor = await self._found(run_id, self._run_cursor(run_id, max(from_seq, 1)))
        try:
            while found := await self._run(cursor.next_records):
                found.reverse()
                while found:
                    # Popped, not bound to a name: while the consumer is
                    # stalled this frame holds no record it already handed out.
                    yield found.pop()
        finally:
            cursor.close()
        if cursor.shrunk and (tombstone := await self.tombstone(run_id)) is not None:
            # Deleted under the stream (``tombstones.py`` truncates first): not an end, a refusal.
            raise RunDeletedError(run_id, tombstone.last_seq)

    async def list_run_ids(self) -> list[str]:
        return await self._run(self._list_sync)

    async def run_versions(self, run_ids: Sequence[str] | None = None) -> dict[str, object]:
        """Size, mtime and inode of each journal: every acknowledged append grows the file (see ``Backend``)."""
        ids = await self.list_run_ids() if run_ids is None else run_ids
        return await self._run(self._versions_sync, ids)

    def derived_data_dir(self) -> Path:
        return self._dir

    def durability_counts(self) -> Mapping[str, int]:
        return dataclasses.asdict(self._committer.counts)

    def _versions_sync(self, run_ids: Sequence[str]) -> dict[str, object]:
        versions: dict[str, object] = {}
        for run_id in run_ids:
            try:
                info = os.stat(self._journal_path(run_id), follow_symlinks=False)
            except OSError:
                continue  # gone (or unreadable): the repair reads it and finds out which
            versions[run_id] = (info.st_size, info.st_mtime_ns, info.st_ino)
        return versions

    # ------------------------------------------------------------ deleting (tombstones.py)

    async def _delete(self, run_id: str, expected_last_seq: int, deleted_at: float) -> tuple[Tombstone, bool]:
        return await self._run(self._delete_sync, run_id, expected_last_seq, deleted_at)

    async def _erase_deleted(self, run_id: str, *, wait: bool) -> bool:
        return True  # ``_delete_sync`` erased the files under the run's lock: fast, so never in the background

    async def _erase(self, run_id: str) -> None:
        await self._run(self._erase_sync, run_id)

    async def tombstone(self, run_id: str) -> Tombstone | None:
        return await self._run(self._tombstone_sync, run_id)

    async def tombstones(self) -> list[Tombstone]:
        return await self._run(self._tombstones.all)

    async def keep_tombstone(self, tombstone: Tombstone) -> None:
        await self._run(self._keep_tombstone_sync, tombstone)

    def task_store(self) -> TaskStore:
        from runjournal_server.backends.file.tasks import FileTaskStore

        return FileTaskStore(self._dir, self._executor)

    # ------------------------------------------------------------ plumbing

    async def _run(self, fn: Callable[..., T], *args: object) -> T:
        """Run blocking file work in the executor, never on the event loop."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args))

    async def _run_opening(
        self,
        fn: Callable[[str, list[StoredRecord] | None], tuple[FileJournal, list[StoredRecord]]],
        run_id: str,
        creation: list[StoredRecord] | None,
    ) -> tuple[FileJournal, list[StoredRecord]]:
        """Run an open or create so that a cancelled caller cannot leak the run's lock.

        A gRPC deadline cancels the handler, but not the thread: without this
        the thread would finish, take the lock and hand the journal to nobody,
        and the run would stay locked until the server exits.
        """
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._executor, functools.partial(fn, run_id, creation))
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            future.add_done_callback(self._close_abandoned)
            raise

    def _close_abandoned(self, future: asyncio.Future[tuple[FileJournal, list[StoredRecord]]]) -> None:
        if future.cancelled() or future.exception() is not None:
            return
        journal, _ = future.result()
        asyncio.get_running_loop().run_in_executor(self._executor, journal._close_sync)

    async def _run_cursor(self, run_id: str, from_seq: int) -> StreamCursor:
        """Open a stream's descriptor so that a cancelled caller cannot leak it (as ``_run_opening``)."""
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._executor, functools.partial(self._cursor_sync, run_id, from_seq))
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            future.add_done_callback(
                lambda done: None if done.cancelled() or done.exception() else done.result().close()
            )
            raise

    def _forget(self, journal: FileJournal) -> None:
        with self._journals_mutex:
            self._journals.discard(journal)

    def _adopt(self, run_id: str, fd: int, lock_fd: int, scan: Scan, *, lock_name_durable: bool) -> FileJournal:
        journal = FileJournal(self, run_id, fd, lock_fd, scan, lock_name_durable=lock_name_durable)
        with self._journals_mutex:
            self._journals.add(journal)
        return journal

    def _journal_path(self, run_id: str) -> Path:
        # Never build a path from an unchecked id: "../x" would leave the directory.
        return self._dir / (validate_run_id(run_id) + JOURNAL_SUFFIX)

    def _lock_path(self, run_id: str) -> Path:
        return self._dir / (validate_run_id(run_id) + LOCK_SUFFIX)

    def _lock(self, run_id: str) -> int:
        """Take the run's writer lock at once or raise ``RunLockedError``; returns the lock's fd."""
        fd = open_regular(run_id, self._lock_path(run_id), os.O_RDWR | os.O_CREAT)
        try:
            portalocker.lock(fd, portalocker.LOCK_EX | portalocker.LOCK_NB)
        except portalocker.AlreadyLocked as err:
            os.close(fd)
            raise RunLockedError(run_id) from err
        except portalocker.LockException as err:
            os.close(fd)
            raise StorageUnavailableError(run_id, f"locking {self._lock_path(run_id)}: {err}") from err
        return fd

    def _peek_intent(self, run_id: str) -> Intent | None:
        """The run's batch intent, read without the lock (a lock file that is not there holds none)."""
        try:
            fd = open_regular(run_id, self._lock_path(run_id), os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            return held_intent(fd)
        finally:
            os.close(fd)

    def _open_for_reading(self, run_id: str) -> int:
        try:
            return open_regular(run_id, self._journal_path(run_id), os.O_RDONLY)
        except FileNotFoundError:
            raise RunNotFoundError(run_id) from None

    def _fsync_dir(self) -> None:
        fsync_dir(self._dir)

    # ------------------------------------------------------------ blocking work

    def _start_sync(self) -> None:
        try:
            self._dir.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=self._dir, prefix=".write-probe-")
            os.close(fd)
            os.unlink(probe)
            self._committer.start_sync()  # replays a dead process's commit log before any journal is read
        except OSError as err:
            raise StorageUnavailableError(
                None, f"the data directory {self._dir} is not a writable directory ({err.strerror or err})"
            ) from err
        with os_errors(None, "finishing the deletions a crash interrupted"):
            for run_id in self._tombstones.run_ids():
                self._erase_sync(run_id)

    def _create_sync(self, run_id: str, creation: list[StoredRecord] | None) -> tuple[FileJournal, list[StoredRecord]]:
        """Create the run under its lock.

        The lock, not ``O_EXCL``, is what keeps creators apart: every creator
        locks the same never-deleted lock file, then reads and writes the
        journal through one descriptor, so there is no window between "is it
        there?" and "write the meta". ``O_EXCL`` alone could not tell a live
        journal from the empty or torn leftover of a crashed creation, which
        must be reusable. A rival holding the lock gets ``RunLockedError``
        (we cannot know whether its meta is durable yet); once the lock is
        free, a journal with a complete record gives ``RunExistsError``.
        """
        assert creation
        with contextlib.ExitStack() as cleanup, os_errors(run_id, "creating the journal"):
            self._refuse_tombstoned(run_id)  # before the lock file is made: a deleted run keeps no file
            lock_fd = self._lock(run_id)
            cleanup.callback(os.close, lock_fd)
            self._refuse_tombstoned(run_id)  # again, holding the lock: a deleter may have just finished
            path = self._journal_path(run_id)
            fd = open_regular(run_id, path, os.O_RDWR | os.O_CREAT)
            cleanup.callback(os.close, fd)
            leftover = held_intent(lock_fd)
            if scan_journal(run_id, read_all(fd), intent=leftover).records:
                raise RunExistsError(run_id)
            self._write_creation(path, fd, lock_fd, creation, leftover)
            cleanup.pop_all()
        starts = array("q")
        end = 0
        for stored in creation:
            starts.append(end)
            end += len(stored.line) + 1
        # The creation synced the directory after the lock file was made: its name is durable.
        journal = self._adopt(
            run_id, fd, lock_fd, Scan(creation, starts, good_end=end, size=end), lock_name_durable=True
        )
        return journal, creation

    def _write_creation(
        self, path: Path, fd: int, lock_fd: int, creation: list[StoredRecord], leftover: Intent | None
    ) -> None:
        """Replace any leftover with the creation batch, durably, name included; several lines go under an intent."""
        data = b"".join(stored.line + b"\n" for stored in creation)
        intent = Intent(1, len(creation), 0, len(data)) if len(creation) > 1 else None
        try:
            if intent is not None:
                declare(lock_fd, intent)
                self._fsync_dir()  # the lock file may be new: its name must outlive a power cut like the intent
            elif leftover is not None:
                # A crashed creation batch's intent would otherwise claim this meta as part of it.
                blank(lock_fd, durable=True)
            os.ftruncate(fd, 0)
            write_all(fd, data, 0)
            os.fsync(fd)
            self._fsync_dir()
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

    def _open_sync(
        self, run_id: str, _: list[StoredRecord] | None, *, known: Sequence[StoredRecord] = ()
    ) -> tuple[FileJournal, list[StoredRecord]]:
        with contextlib.ExitStack() as cleanup, os_errors(run_id, "opening the journal"):
            if not os.path.lexists(self._journal_path(run_id)):
                # Refuse before the lock file is created: an append to a run that does
                # not exist must leave no trace (else any client could fill the directory).
                raise RunNotFoundError(run_id)
            lock_fd = self._lock(run_id)
            cleanup.callback(os.close, lock_fd)
            try:
                fd = open_regular(run_id, self._journal_path(run_id), os.O_RDWR)
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
        return self._adopt(run_id, fd, lock_fd, scan, lock_name_durable=lock_name_durable), scan.records

    def _refuse_tombstoned(self, run_id: str) -> None:
        found = self._tombstones.read(run_id)
        if found is not None:
            raise RunDeletedError(run_id, found.last_seq)

    def _tombstone_sync(self, run_id: str) -> Tombstone | None:
        with os_errors(run_id, "reading the run's tombstone"):
            return self._tombstones.read(run_id)

    def _delete_sync(self, run_id: str, expected_last_seq: int, deleted_at: float) -> tuple[Tombstone, bool]:
        """Under the run's lock: check the last seq, store the tombstone, then erase the files (see tombstones.py)."""
        with contextlib.ExitStack() as cleanup, os_errors(run_id, "deleting the run"):
            found = self._tombstones.read(run_id)
            if found is not None:
                return found, False
            if not os.path.lexists(self._journal_path(run_id)):
                raise RunNotFoundError(run_id)  # before the lock file is made, as for an open
            lock_fd = self._lock(run_id)
            cleanup.callback(os.close, lock_fd)
            found = self._tombstones.read(run_id)
            if found is not None:
                return found, False  # another process deleted it between our looks
            try:
                fd = open_regular(run_id, self._journal_path(run_id), os.O_RDONLY)
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
            self._tombstones.write(tombstone)  # durable before any byte of the run goes
            self._erase_sync(run_id)  # still holding the lock: no other process opens the run meanwhile
        return tombstone, True

    def _erase_sync(self, run_id: str) -> None:
        erase([self._journal_path(run_id), self._lock_path(run_id)], self._dir)
        self._committer.scrub_sync()  # the commit log may hold the run's last lines too

    def _keep_tombstone_sync(self, tombstone: Tombstone) -> None:
        with os_errors(tombstone.run_id, "storing the run's tombstone"):
            if self._tombstones.read(tombstone.run_id) is not None:
                return
            try:
                self._load_sync(tombstone.run_id)
            except RunNotFoundError:
                pass
            else:
                raise RunExistsError(tombstone.run_id)
            self._tombstones.write(tombstone)
            self._erase_sync(tombstone.run_id)  # a creation that never became durable leaves nothing

    def _load_sync(self, run_id: str) -> list[StoredRecord]:
        with os_errors(run_id, "reading the journal"):
            fd = self._open_for_reading(run_id)
            try:
                data = read_all(fd)
            finally:
                os.close(fd)
            # The intent after the data: an intent that is gone by now was blanked after its batch was whole.
            intent = self._peek_intent(run_id)
        found = scan_journal(run_id, data, intent=intent).records
        if not found:
            raise RunNotFoundError(run_id)
        return found

    def _read_sync(self, run_id: str, reader: Callable[[int, int, Intent | None], T]) -> T:
        """Run a lock-free reader (ends, tail, meta) on a descriptor of the journal, starting over if it shrinks."""
        with os_errors(run_id, "reading the journal"):
            fd = self._open_for_reading(run_id)
            try:
                for _ in range(_READ_ATTEMPTS):
                    size = os.fstat(fd).st_size
                    intent = self._peek_intent(run_id)
                    try:
                        return reader(fd, size, intent)
                    except ShrunkError:
                        continue  # a writer cut its tail while we read; what it cut was never acknowledged
                    except BackwardDamageError as damage:
                        # Damage is rare: pay for a full read to name the line, as load would.
                        scan_journal(run_id, read_all(fd), intent=intent)
                        raise CorruptJournalError(run_id, damage.problem, seq=damage.seq) from damage
                raise StorageUnavailableError(run_id, "the journal kept shrinking while it was read")
            finally:
                os.close(fd)

    def _cursor_sync(self, run_id: str, from_seq: int) -> StreamCursor:
        """Check the meta (a run with none is not found) and hand a cursor its own descriptor."""

        def start(fd: int, size: int, intent: Intent | None) -> StreamCursor:
            read = fd_reader(fd)
            end, strict = acknowledged_end(read, size, intent)
            decode_meta(run_id, first_line(read, end), end, torn_allowed=not strict)
            return StreamCursor(run_id, os.dup(fd), end, strict, from_seq)

        return self._read_sync(run_id, start)

    def _list_sync(self) -> list[str]:
        with os_errors(None, f"listing {self._dir}"):
            # A journal a crash left beside its tombstone (until start erases it) is not listed.
            deleted = self._tombstones.run_ids()
            with os.scandir(self._dir) as entries:
                return [
                    entry.name.removesuffix(JOURNAL_SUFFIX)
                    for entry in entries
                    if entry.name.endswith(JOURNAL_SUFFIX)
                    and is_valid_run_id(entry.name.removesuffix(JOURNAL_SUFFIX))
                    and entry.name.removesuffix(JOURNAL_SUFFIX) not in deleted
                    and entry.is_file()
                ]
