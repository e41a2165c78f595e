"""The file backend: one ``<run>.jsonl`` journal and one ``<run>.lock`` per run.

Each record is one stored line from ``records.py`` plus ``\\n``, written and
fsynced before it is acknowledged. The run's writer lock is an exclusive,
non-blocking ``flock`` on ``<run>.lock``, held while the journal is open; the
kernel drops it when the process dies, so a crash leaves no stale lock. The
lock file is never deleted: every locker must lock the same inode, and
deleting it would let a third process lock a fresh file while the first still
holds the old one.

A damaged final line is a torn tail (dropped on read, truncated on open); any
other damaged line is corruption, reported with its 1-based line number. See
docs/file-backend.md for the whole story; the contract is in ``base.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import os
import re
import tempfile
import threading
from array import array
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn, TypeVar

import portalocker

from runjournal_server import records
from runjournal_server.backends.base import Backend, Journal, RunEnds, TaskStore
from runjournal_server.errors import (
    CorruptJournalError,
    JournalError,
    RunExistsError,
    RunLockedError,
    RunNotFoundError,
    StorageFullError,
    StorageUnavailableError,
)
from runjournal_server.ids import is_valid_run_id, validate_run_id
from runjournal_server.records import RecordDecodeError, StoredRecord

T = TypeVar("T")

JOURNAL_SUFFIX = ".jsonl"
LOCK_SUFFIX = ".lock"
CHUNK_BYTES = 64 * 1024
"""How much ``ends`` reads per step when it scans a journal backward."""
FILE_MODE = 0o644
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
_ENDS_ATTEMPTS = 3
"""How often ``ends`` starts over when the file shrinks under it (a writer rolled back)."""


def _storage_error(run_id: str | None, action: str, err: OSError, *, what: str = "run") -> JournalError:
    """Translate an OSError at the backend edge: out of space is STORAGE_FULL, the rest UNAVAILABLE."""
    detail = f"{action}: {err.strerror or err}"
    if err.errno in _FULL_ERRNOS:
        return StorageFullError(run_id or "", detail, what=what)
    return StorageUnavailableError(run_id, detail, what=what)


@contextlib.contextmanager
def _os_errors(run_id: str | None, action: str, *, what: str = "run") -> Iterator[None]:
    try:
        yield
    except OSError as err:
        raise _storage_error(run_id, action, err, what=what) from err


def _write_all(fd: int, data: bytes, offset: int) -> None:
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


def _read_all(fd: int) -> bytes:
    """The whole file, read to its end (it may grow while we read)."""
    parts = []
    offset = 0
    size = os.fstat(fd).st_size
    while chunk := os.pread(fd, max(size - offset, CHUNK_BYTES), offset):
        parts.append(chunk)
        offset += len(chunk)
    return b"".join(parts)


# ---------------------------------------------------------------- reading


@dataclass
class _Scan:
    """A journal read front to back."""

    records: list[StoredRecord]
    starts: array[int]
    """The file offset where each record's line starts; index ``seq - 1``."""
    good_end: int
    """The offset just past the last good line: where a torn tail is cut."""
    size: int


def _scan(run_id: str, data: bytes, known: Sequence[StoredRecord] = ()) -> _Scan:
    """Decode every line of ``data``; a torn final line is left out, any other bad line raises.

    The piece after the last newline is a torn tail, and so is a final complete
    line that fails to decode: a crash in the middle of an append leaves
    exactly these. A bad line with anything after it is damage, not a torn
    write, and so is a line whose seq is not its line number, and so is a
    final line that is a whole line glued to the next (see ``_glued``).
    """
    *lines, fragment = data.split(b"\n")
    found: list[StoredRecord] = []
    starts: array[int] = array("q")
    offset = 0
    for number, line in enumerate(lines, start=1):
        if number <= len(known) and known[number - 1].line == line:
            found.append(known[number - 1])  # the same bytes decode to the same record: reuse it
            starts.append(offset)
            offset += len(line) + 1
            continue
        try:
            stored = records.decode(line)
        except RecordDecodeError as err:
            if number == len(lines) and not fragment and not _glued(line):
                break
            raise CorruptJournalError(run_id, err.detail, line=number) from err
        if stored.seq != number:
            raise CorruptJournalError(run_id, f"the line holds seq {stored.seq}", line=number)
        found.append(stored)
        starts.append(offset)
        offset += len(line) + 1
    return _Scan(found, starts, good_end=offset, size=len(data))


_LINE_END = re.compile(rb'"seq":[0-9]+}}')
"""How every stored line ends: ``seq`` is the body's last key (keys are sorted), then the envelope closes."""


def _glued(line: bytes) -> bool:
    """True when ``line`` starts with a whole stored line and goes on: two lines whose newline was damaged.

    A crash mid-append leaves a prefix of one line, and no stored line is a
    proper prefix of another (its JSON ends where it ends), so this is never a
    torn write. Dropping it as one would silently lose the acknowledged record
    at its front (one flipped bit in a newline), and opening would truncate it.
    """
    for match in _LINE_END.finditer(line, 0, len(line) - 1):
        try:
            records.decode(line[: match.end()])
        except RecordDecodeError:
            continue
        return True
    return False


class _ShrunkError(Exception):
    """The file got shorter while ``ends`` read it: a writer rolled back or repaired its tail."""


def _pread_exact(fd: int, size: int, offset: int) -> bytes:
    data = os.pread(fd, size, offset)
    if len(data) != size:
        raise _ShrunkError
    return data


def _first_line(fd: int, size: int) -> bytes | None:
    """The first complete line (without its newline), or None when the file has no newline."""
    head = bytearray()
    offset = 0
    while offset < size:
        chunk = _pread_exact(fd, min(CHUNK_BYTES, size - offset), offset)
        newline = chunk.find(b"\n")
        if newline >= 0:
            return bytes(head + chunk[:newline])
        head += chunk
        offset += len(chunk)
    return None


def _lines_backward(fd: int, size: int) -> Iterator[tuple[int, bytes]]:
    """Yield ``(start offset, line)`` for each complete line, the last first.

    Reads ``CHUNK_BYTES`` at a time from the end and keeps only the part of a
    line not yet complete in memory. Bytes after the last newline (a torn
    fragment) are never yielded.
    """
    offset = size  # the file offset of buf[0]
    buf = b""
    found_end = False
    while offset > 0:
        step = min(CHUNK_BYTES, offset)
        offset -= step
        buf = _pread_exact(fd, step, offset) + buf
        if not found_end:
            last_newline = buf.rfind(b"\n")
            if last_newline < 0:
                continue
            buf = buf[: last_newline + 1]
            found_end = True
        end = len(buf) - 1  # the newline that closes the line being looked for
        while (newline := buf.rfind(b"\n", 0, end)) >= 0:
            yield offset + newline + 1, buf[newline + 1 : end]
            end = newline
        buf = buf[: end + 1]
    if found_end:
        yield 0, buf[:-1]


def _records_backward(run_id: str, fd: int) -> tuple[StoredRecord, Iterator[StoredRecord]]:
    """The meta from the front, and the records from the last one back to the meta, checked as they come."""
    size = os.fstat(fd).st_size
    meta = _decode_meta(run_id, _first_line(fd, size), size)

    def backward() -> Iterator[StoredRecord]:
        expected: int | None = None  # the seq the next line up must hold
        for start, line in _lines_backward(fd, size):
            if start == 0:
                stored = meta
            else:
                try:
                    stored = records.decode(line)
                except RecordDecodeError as err:
                    if expected is None and start + len(line) + 1 == size and not _glued(line):
                        continue  # a torn final line: the line before it is the last
                    raise _BackwardDamageError(err.detail, expected) from err
            if expected is not None and stored.seq != expected:
                raise _BackwardDamageError(f"the line holds seq {stored.seq}, expected {expected}", expected)
            yield stored
            if start == 0:
                return
            expected = stored.seq - 1

    return meta, backward()


def _read_ends(run_id: str, fd: int, is_inert: Callable[[StoredRecord], bool]) -> RunEnds:
    """The meta from the front, then a backward scan to the last record that is not inert."""
    meta, backward = _records_backward(run_id, fd)
    last_seq: int | None = None
    for stored in backward:
        if last_seq is None:
            last_seq = stored.seq
        if stored.seq == 1 or not is_inert(stored):
            return RunEnds(meta=meta, last_significant=stored, last_seq=last_seq)
    raise AssertionError("the backward scan always reaches the first line")


def _read_tail(run_id: str, fd: int, is_start: Callable[[StoredRecord], bool]) -> list[StoredRecord]:
    """The records from the last one for which ``is_start`` holds (or the meta) to the end."""
    _, backward = _records_backward(run_id, fd)
    tail: list[StoredRecord] = []
    for stored in backward:
        tail.append(stored)
        if stored.seq == 1 or is_start(stored):
            break
    tail.reverse()
    return tail


class _BackwardDamageError(Exception):
    """Damage seen by the backward scan; ``ends`` locates it by line before reporting it."""

    def __init__(self, problem: str, seq: int | None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.seq = seq


def _decode_meta(run_id: str, line: bytes | None, size: int) -> StoredRecord:
    """Decode the first line; a file whose only line is torn counts as absent."""
    if line is None:
        raise RunNotFoundError(run_id)
    try:
        meta = records.decode(line)
    except RecordDecodeError as err:
        if len(line) + 1 == size and not _glued(line):
            raise RunNotFoundError(run_id) from err
        raise CorruptJournalError(run_id, err.detail, line=1) from err
    if meta.seq != 1:
        raise CorruptJournalError(run_id, f"the line holds seq {meta.seq}", line=1)
    return meta


# ---------------------------------------------------------------- writing


class FileJournal(Journal):
    """An open journal file and its held lock.

    Every method body that touches the file runs in the backend's executor
    under ``_mutex``: a cancelled caller does not stop the thread, so the
    thread itself must finish the write and advance the state, and the next
    call must wait for it.
    """

    def __init__(self, backend: FileBackend, run_id: str, fd: int, lock_fd: int, scan: _Scan) -> None:
        self.run_id = run_id
        self._backend = backend
        self._fd = fd
        self._lock_fd = lock_fd
        self._starts = scan.starts
        self._end = scan.good_end
        self._poisoned = False
        self._closed = False
        self._mutex = threading.Lock()

    @property
    def last_seq(self) -> int:
        return len(self._starts)

    @property
    def poisoned(self) -> bool:
        return self._poisoned

    async def append(self, records: Sequence[StoredRecord]) -> None:
        if records:
            await self._backend._run(self._append_sync, list(records))

    async def stored_line(self, seq: int) -> StoredRecord:
        return await self._backend._run(self._stored_line_sync, seq)

    async def close(self) -> None:
        await self._backend._run(self._close_sync)

    def _append_sync(self, batch: list[StoredRecord]) -> None:
        with self._mutex:
            self._check_usable()
            self._check_numbering(batch)
            data = b"".join(stored.line + b"\n" for stored in batch)
            try:
                _write_all(self._fd, data, self._end)
                os.fsync(self._fd)
            except OSError as err:
                self._roll_back(err)
            # Advance only now that the lines are durable, so a failed write is
            # re-appended at the same seq instead of being lost.
            for stored in batch:
                self._starts.append(self._end)
                self._end += len(stored.line) + 1

    def _check_numbering(self, batch: list[StoredRecord]) -> None:
        """Refuse a batch runs.py should never send: a wrong seq or a newline would corrupt the file."""
        for index, stored in enumerate(batch):
            if stored.seq != self.last_seq + 1 + index:
                raise ValueError(f"run {self.run_id!r}: expected seq {self.last_seq + 1 + index}, got {stored.seq}")
            if b"\n" in stored.line:
                raise ValueError(f"run {self.run_id!r}: the stored line for seq {stored.seq} holds a newline")

    def _roll_back(self, err: OSError) -> NoReturn:
        """Cut the file back to the last good line after a failed write, or poison the handle.

        The failed bytes may be partly on disk (a short write before ENOSPC) or
        in the page cache after a failed fsync; left there they would be read
        back as records nobody acknowledged, or glue the next append to a
        fragment. The fsync is never retried: after a failure the kernel may
        have dropped the dirty pages and a second fsync would report success.
        """
        try:
            os.ftruncate(self._fd, self._end)
            os.fsync(self._fd)
        except OSError as undo_err:
            self._poisoned = True
            raise _storage_error(
                self.run_id, f"appending failed ({err.strerror}) and so did rolling back", undo_err
            ) from err
        raise _storage_error(self.run_id, "appending", err) from err

    def _stored_line_sync(self, seq: int) -> StoredRecord:
        with self._mutex:
            self._check_usable()
            if not 1 <= seq <= self.last_seq:
                raise ValueError(f"run {self.run_id!r}: seq {seq} is outside 1..{self.last_seq}")
            start = self._starts[seq - 1]
            end = self._starts[seq] if seq < self.last_seq else self._end
            with _os_errors(self.run_id, f"reading seq {seq}"):
                data = os.pread(self._fd, end - start, start)
        try:
            if not data.endswith(b"\n"):
                raise RecordDecodeError(f"the line is cut short ({len(data)} of {end - start} bytes)")
            return records.decode(data[:-1])
        except RecordDecodeError as err:
            raise CorruptJournalError(self.run_id, err.detail, line=seq, seq=seq) from err

    def _check_usable(self) -> None:
        if self._closed:
            raise StorageUnavailableError(self.run_id, "the journal was closed; open the run again")
        if self._poisoned:
            raise StorageUnavailableError(
                self.run_id, "an earlier write could not be rolled back; the run must be opened again"
            )

    def _close_sync(self) -> None:
        with self._mutex:
            if self._closed:
                return
            self._closed = True
            try:
                # Every acknowledged line was fsynced, so a failing close loses nothing.
                with contextlib.suppress(OSError):
                    os.close(self._fd)
            finally:
                # Closing the only descriptor of the lock file releases the flock.
                os.close(self._lock_fd)
        self._backend._forget(self)


# ---------------------------------------------------------------- the backend


class FileBackend(Backend):
    """Run journals as files in one directory (see the module docstring)."""

    name = "file"

    def __init__(self, data_dir: Path, *, executor: Executor | None = None) -> None:
        self._dir = Path(data_dir)
        self._executor = executor
        self._journals: set[FileJournal] = set()
        self._journals_mutex = threading.Lock()

    @property
    def data_dir(self) -> Path:
        return self._dir

    async def start(self) -> None:
        await self._run(self._start_sync)

    async def close(self) -> None:
        with self._journals_mutex:
            journals = list(self._journals)
        await asyncio.gather(*(journal.close() for journal in journals))

    async def create_journal(self, run_id: str, meta: StoredRecord) -> FileJournal:
        """Create the run; see ``_create_sync`` for how two creators are kept apart."""
        if meta.seq != 1:
            raise ValueError(f"run {run_id!r}: a journal starts at seq 1, got {meta.seq}")
        journal, _ = await self._run_opening(self._create_sync, run_id, meta)
        return journal

    async def open_journal(
        self, run_id: str, known: Sequence[StoredRecord] = ()
    ) -> tuple[FileJournal, list[StoredRecord]]:
        return await self._run_opening(functools.partial(self._open_sync, known=known), run_id, None)

    async def load(self, run_id: str) -> list[StoredRecord]:
        return await self._run(self._load_sync, run_id)

    async def ends(self, run_id: str, is_inert: Callable[[StoredRecord], bool]) -> RunEnds:
        return await self._run(self._backward_sync, run_id, _read_ends, is_inert)

    async def meta(self, run_id: str) -> StoredRecord:
        return await self._run(self._meta_sync, run_id)

    async def tail(self, run_id: str, is_start: Callable[[StoredRecord], bool]) -> list[StoredRecord]:
        return await self._run(self._backward_sync, run_id, _read_tail, is_start)

    async def list_run_ids(self) -> list[str]:
        return await self._run(self._list_sync)

    def task_store(self) -> TaskStore:
        from runjournal_server.backends.file_tasks import FileTaskStore

        return FileTaskStore(self._dir, self._executor)

    # ------------------------------------------------------------ plumbing

    async def _run(self, fn: Callable[..., T], *args: object) -> T:
        """Run blocking file work in the executor, never on the event loop."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args))

    async def _run_opening(
        self,
        fn: Callable[[str, StoredRecord | None], tuple[FileJournal, list[StoredRecord]]],
        run_id: str,
        meta: StoredRecord | None,
    ) -> tuple[FileJournal, list[StoredRecord]]:
        """Run an open or create so that a cancelled caller cannot leak the run's lock.

        A gRPC deadline cancels the handler, but not the thread: without this
        the thread would finish, take the lock and hand the journal to nobody,
        and the run would stay locked until the server exits.
        """
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._executor, functools.partial(fn, run_id, meta))
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

    def _forget(self, journal: FileJournal) -> None:
        with self._journals_mutex:
            self._journals.discard(journal)

    def _adopt(self, run_id: str, fd: int, lock_fd: int, scan: _Scan) -> FileJournal:
        journal = FileJournal(self, run_id, fd, lock_fd, scan)
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
        fd = os.open(self._lock_path(run_id), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        try:
            portalocker.lock(fd, portalocker.LOCK_EX | portalocker.LOCK_NB)
        except portalocker.AlreadyLocked as err:
            os.close(fd)
            raise RunLockedError(run_id) from err
        except portalocker.LockException as err:
            os.close(fd)
            raise StorageUnavailableError(run_id, f"locking {self._lock_path(run_id)}: {err}") from err
        return fd

    def _fsync_dir(self) -> None:
        fd = os.open(self._dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    # ------------------------------------------------------------ blocking work

    def _start_sync(self) -> None:
        try:
            self._dir.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=self._dir, prefix=".write-probe-")
            os.close(fd)
            os.unlink(probe)
        except OSError as err:
            raise StorageUnavailableError(
                None, f"the data directory {self._dir} is not a writable directory ({err.strerror or err})"
            ) from err

    def _create_sync(self, run_id: str, meta: StoredRecord | None) -> tuple[FileJournal, list[StoredRecord]]:
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
        assert meta is not None
        with contextlib.ExitStack() as cleanup, _os_errors(run_id, "creating the journal"):
            lock_fd = self._lock(run_id)
            cleanup.callback(os.close, lock_fd)
            path = self._journal_path(run_id)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
            cleanup.callback(os.close, fd)
            if _scan(run_id, _read_all(fd)).records:
                raise RunExistsError(run_id)
            self._write_meta(path, fd, meta)
            cleanup.pop_all()
        scan = _Scan([meta], array("q", [0]), good_end=len(meta.line) + 1, size=len(meta.line) + 1)
        return self._adopt(run_id, fd, lock_fd, scan), [meta]

    def _write_meta(self, path: Path, fd: int, meta: StoredRecord) -> None:
        """Replace any leftover with the meta line, durably, name included."""
        try:
            os.ftruncate(fd, 0)
            _write_all(fd, meta.line + b"\n", 0)
            os.fsync(fd)
            self._fsync_dir()
        except OSError:
            # Unlink rather than leave a meta nobody acknowledged: a retry of
            # the same creation would take it for its own and report success
            # for a line that may never reach the disk.
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise

    def _open_sync(
        self, run_id: str, _: StoredRecord | None, *, known: Sequence[StoredRecord] = ()
    ) -> tuple[FileJournal, list[StoredRecord]]:
        with contextlib.ExitStack() as cleanup, _os_errors(run_id, "opening the journal"):
            if not os.path.lexists(self._journal_path(run_id)):
                # Refuse before the lock file is created: an append to a run that does
                # not exist must leave no trace (else any client could fill the directory).
                raise RunNotFoundError(run_id)
            lock_fd = self._lock(run_id)
            cleanup.callback(os.close, lock_fd)
            try:
                fd = os.open(self._journal_path(run_id), os.O_RDWR | os.O_CLOEXEC)
            except FileNotFoundError:
                raise RunNotFoundError(run_id) from None
            cleanup.callback(os.close, fd)
            scan = _scan(run_id, _read_all(fd), known)
            if not scan.records:
                raise RunNotFoundError(run_id)
            if scan.good_end < scan.size:
                # Cut the torn tail now: the next append would be glued to the
                # fragment and an acknowledged record later dropped as torn.
                os.ftruncate(fd, scan.good_end)
                os.fsync(fd)
            cleanup.pop_all()
        return self._adopt(run_id, fd, lock_fd, scan), scan.records

    def _load_sync(self, run_id: str) -> list[StoredRecord]:
        with _os_errors(run_id, "reading the journal"):
            try:
                fd = os.open(self._journal_path(run_id), os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                raise RunNotFoundError(run_id) from None
            try:
                data = _read_all(fd)
            finally:
                os.close(fd)
        found = _scan(run_id, data).records
        if not found:
            raise RunNotFoundError(run_id)
        return found

    def _backward_sync(
        self,
        run_id: str,
        reader: Callable[[str, int, Callable[[StoredRecord], bool]], T],
        stop: Callable[[StoredRecord], bool],
    ) -> T:
        """Run a backward reader (ends or tail) on a lock-free descriptor of the journal."""
        with _os_errors(run_id, "reading the journal"):
            try:
                fd = os.open(self._journal_path(run_id), os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                raise RunNotFoundError(run_id) from None
            try:
                for _ in range(_ENDS_ATTEMPTS):
                    try:
                        return reader(run_id, fd, stop)
                    except _ShrunkError:
                        continue  # a writer cut its tail while we read; what it cut was never acknowledged
                    except _BackwardDamageError as damage:
                        # Damage is rare: pay for a full read to name the line, as load would.
                        _scan(run_id, _read_all(fd))
                        raise CorruptJournalError(run_id, damage.problem, seq=damage.seq) from damage
                raise StorageUnavailableError(run_id, "the journal kept shrinking while it was read")
            finally:
                os.close(fd)

    def _meta_sync(self, run_id: str) -> StoredRecord:
        """The first line only: a listing orders 10,000 runs by their metas without reading their tails."""
        with _os_errors(run_id, "reading the journal"):
            try:
                fd = os.open(self._journal_path(run_id), os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                raise RunNotFoundError(run_id) from None
            try:
                size = os.fstat(fd).st_size
                return _decode_meta(run_id, _first_line(fd, size), size)
            finally:
                os.close(fd)

    def _list_sync(self) -> list[str]:
        with _os_errors(None, f"listing {self._dir}"), os.scandir(self._dir) as entries:
            return [
                entry.name.removesuffix(JOURNAL_SUFFIX)
                for entry in entries
                if entry.name.endswith(JOURNAL_SUFFIX)
                and is_valid_run_id(entry.name.removesuffix(JOURNAL_SUFFIX))
                and entry.is_file()
            ]
