"""``FileBackend``: the backend contract over one directory of runs, blocking work kept off the event loop.

Every blocking call runs in the executor. An open or a creation runs so that
a cancelled caller cannot leak the run's lock (``_run_opening``), and a
stream's descriptor likewise (``_run_cursor``). The lock-free readers (load,
the backward walk, the meta, the stream cursor) start over when the journal
shrinks under them: a writer rolled back a tail it never acknowledged.

Where the files are and the writer lock: ``directory.py``; creating and
opening under the lock: ``opening.py``; deleting: ``tombstones.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import os
import tempfile
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import TypeVar

from runjournal_server.backends.base import Backend
from runjournal_server.backends.file import opening
from runjournal_server.backends.file.casing import check_case_sensitive
from runjournal_server.backends.file.directory import RunDirectory
from runjournal_server.backends.file.files import os_errors, read_all
from runjournal_server.backends.file.group_commit import GroupCommitter
from runjournal_server.backends.file.intent import Intent, acknowledged_end
from runjournal_server.backends.file.journal import FileJournal, check_lines
from runjournal_server.backends.file.lines import ShrunkError, fd_reader, first_line
from runjournal_server.backends.file.opening import Opened
from runjournal_server.backends.file.reading import (
    BackwardDamageError,
    StreamCursor,
    decode_meta,
    read_meta,
    scan_journal,
    walk_back,
)
from runjournal_server.backends.file.tasks import TASKS_DIR
from runjournal_server.backends.file.tombstones import DELETED_DIR, Tombstones, delete, erase
from runjournal_server.backends.reading import BackwardWalk
from runjournal_server.backends.task_store import TaskStore
from runjournal_server.backends.tombstone import Tombstone
from runjournal_server.core.errors import (
    CorruptJournalError,
    RunDeletedError,
    RunExistsError,
    RunNotFoundError,
    StorageUnavailableError,
)
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
        self._directory = RunDirectory(self._dir)
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

    async def run_versions(self, run_ids: Sequence[str]) -> dict[str, object]:
        """Size, mtime and inode of each journal: every acknowledged append grows the file (see ``Backend``)."""
        return await self._run(self._directory.versions, run_ids)

    def derived_data_dir(self) -> Path:
        return self._dir

    def durability_counts(self) -> Mapping[str, int]:
        return dataclasses.asdict(self._committer.counts)

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

    def _adopt(self, run_id: str, opened: Opened) -> FileJournal:
        journal = FileJournal(self, run_id, opened)
        with self._journals_mutex:
            self._journals.add(journal)
        return journal

    # ------------------------------------------------------------ blocking work

    def _start_sync(self) -> None:
        try:
            self._dir.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=self._dir, prefix=".write-probe-")
            os.close(fd)
            os.unlink(probe)
            # Before any file is touched: on a volume that folds case two runs would share one journal.
            check_case_sensitive(self._dir, (DELETED_DIR, TASKS_DIR))
            self._committer.start_sync()  # replays a dead process's commit log before any journal is read
        except OSError as err:
            raise StorageUnavailableError(
                None, f"the data directory {self._dir} is not a writable directory ({err.strerror or err})"
            ) from err
        with os_errors(None, "finishing the deletions a crash interrupted"):
            for run_id in self._tombstones.run_ids():
                self._erase_sync(run_id)

    def _create_sync(self, run_id: str, creation: list[StoredRecord] | None) -> tuple[FileJournal, list[StoredRecord]]:
        assert creation
        return self._adopt(run_id, opening.create(self._directory, self._tombstones, run_id, creation)), creation

    def _open_sync(
        self, run_id: str, _: list[StoredRecord] | None, *, known: Sequence[StoredRecord] = ()
    ) -> tuple[FileJournal, list[StoredRecord]]:
        opened = opening.open_existing(self._directory, run_id, known)
        return self._adopt(run_id, opened), opened.scan.records

    def _tombstone_sync(self, run_id: str) -> Tombstone | None:
        with os_errors(run_id, "reading the run's tombstone"):
            return self._tombstones.read(run_id)

    def _delete_sync(self, run_id: str, expected_last_seq: int, deleted_at: float) -> tuple[Tombstone, bool]:
        return delete(self._directory, self._tombstones, run_id, expected_last_seq, deleted_at, self._erase_sync)

    def _erase_sync(self, run_id: str) -> None:
        erase([self._directory.journal(run_id), self._directory.lock_file(run_id)], self._dir)
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
            fd = self._directory.open_for_reading(run_id)
            try:
                data = read_all(fd)
            finally:
                os.close(fd)
            # The intent after the data: an intent that is gone by now was blanked after its batch was whole.
            intent = self._directory.peek_intent(run_id)
        found = scan_journal(run_id, data, intent=intent).records
        if not found:
            raise RunNotFoundError(run_id)
        return found

    def _read_sync(self, run_id: str, reader: Callable[[int, int, Intent | None], T]) -> T:
        """Run a lock-free reader (ends, tail, meta) on a descriptor of the journal, starting over if it shrinks."""
        with os_errors(run_id, "reading the journal"):
            fd = self._directory.open_for_reading(run_id)
            try:
                for _ in range(_READ_ATTEMPTS):
                    size = os.fstat(fd).st_size
                    intent = self._directory.peek_intent(run_id)
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
            return self._directory.run_ids(self._tombstones.run_ids())
