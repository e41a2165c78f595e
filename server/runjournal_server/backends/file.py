"""The file backend: one ``<run>.jsonl`` journal and one ``<run>.lock`` per run.

Each record is one stored line from ``records.py`` plus ``\\n``, written and
fsynced before it is acknowledged. The run's writer lock is an exclusive,
non-blocking ``flock`` on ``<run>.lock``, held while the journal is open; the
kernel drops it when the process dies, so a crash leaves no stale lock. The
lock file is never deleted: every locker must lock the same inode, and
deleting it would let a third process lock a fresh file while the first still
holds the old one.

A damaged final line is a torn tail (dropped on read, truncated on open); any
other damaged line is corruption, reported with its 1-based line number.

The batch commit rule. A batch of several lines is one write, and a crash can
cut it anywhere, leaving whole lines of it that read back as records. So the
lock file also carries the **batch intent**: before writing a batch of more
than one line the writer stores ``(first seq, count, start offset, end
offset)`` with a checksum at the front of ``<run>.lock`` and fsyncs it; then it
writes and fsyncs the lines; then it blanks the intent without an fsync (an
intent whose batch is whole in the journal means nothing, so losing the
blanking to a power cut is harmless). Every reader honours an intent that
names this journal (its batch starts at a line boundary right after seq
``first - 1``) but whose batch is not whole there: the journal ends at the
batch's start. A writer that opens the run cuts such a batch away, fsyncs, and
blanks the intent durably. A single-line append needs no intent: a torn final
line is already a torn tail. The journal itself stays plain canonical lines.

Every journal and lock file is opened with ``O_NOFOLLOW``: a symbolic link at
either path is refused, never followed. Before an append is acknowledged the
held journal must still be the file at its path (one ``lstat``), else the
handle is poisoned: records written to a file that was replaced or unlinked
would be lost on the next open.

See docs/file-backend.md for the whole story; the contract is in ``base.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import logging
import os
import re
import tempfile
import threading
import zlib
from array import array
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn, TypeVar

import portalocker

from runjournal_server import records
from runjournal_server.backends.base import Backend, BackwardWalk, Journal, TaskStore, check_seq, decode_at
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

log = logging.getLogger(__name__)

JOURNAL_SUFFIX = ".jsonl"
LOCK_SUFFIX = ".lock"
CHUNK_BYTES = 64 * 1024
"""How much ``ends`` reads per step when it scans a journal backward."""
STREAM_CHUNK_BYTES = 256 * 1024
"""How much ``stream`` reads per step: what one stream holds, plus at most one line."""
FILE_MODE = 0o644
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
_READ_ATTEMPTS = 3
"""How often a lock-free reader starts over when the file shrinks under it (a writer rolled back)."""


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


def _open_regular(run_id: str, path: Path, flags: int) -> int:
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


def _check_lines(run_id: str, batch: Sequence[StoredRecord]) -> None:
    """Refuse a line runs.py should never send: a newline inside it would split it in two in the file."""
    for stored in batch:
        if b"\n" in stored.line:
            raise ValueError(f"run {run_id!r}: the stored line for seq {stored.seq} holds a newline")


# ---------------------------------------------------------------- the batch intent

INTENT_BYTES = 128
"""The intent's fixed size at the front of the lock file: an overwrite always covers the one before."""
_INTENT_MAGIC = b"rjbatch1"
_NO_INTENT = b"\0" * INTENT_BYTES


@dataclass(frozen=True)
class _Intent:
    """A batch of several lines being written: seqs ``first_seq ...`` at journal bytes ``start .. end``."""

    first_seq: int
    count: int
    start: int
    end: int

    def encode(self) -> bytes:
        body = b"%s %d %d %d %d" % (_INTENT_MAGIC, self.first_seq, self.count, self.start, self.end)
        return (body + b" %08x" % zlib.crc32(body)).ljust(INTENT_BYTES, b" ")


def _parse_intent(data: bytes) -> _Intent | None:
    """The intent in ``data``, or None: blank, torn or not ours (a torn intent's batch was never written)."""
    fields = data.split()
    if len(fields) != 6 or fields[0] != _INTENT_MAGIC:
        return None
    body = b" ".join(fields[:5])
    try:
        crc = int(fields[5], 16)
        first_seq, count, start, end = (int(field) for field in fields[1:5])
    except ValueError:
        return None
    if crc != zlib.crc32(body) or first_seq < 1 or count < 2 or not 0 <= start < end:
        return None
    return _Intent(first_seq, count, start, end)


def _held_intent(lock_fd: int) -> _Intent | None:
    return _parse_intent(os.pread(lock_fd, INTENT_BYTES, 0))


def _declare(lock_fd: int, intent: _Intent) -> None:
    """Store the intent durably before any line of its batch is written."""
    _write_all(lock_fd, intent.encode(), 0)
    os.fsync(lock_fd)


def _blank(lock_fd: int, *, durable: bool) -> None:
    """Blank the intent; ``durable`` where lines that could be taken for its batch come next."""
    _write_all(lock_fd, _NO_INTENT, 0)
    if durable:
        os.fsync(lock_fd)


# ---------------------------------------------------------------- reading

_Read = Callable[[int, int], bytes]
"""``read(size, offset)``: exactly ``size`` bytes of the journal at ``offset``, or ``_ShrunkError``."""


class _ShrunkError(Exception):
    """The file got shorter while a lock-free reader read it: a writer rolled back or repaired its tail."""


def _pread_exact(fd: int, size: int, offset: int) -> bytes:
    data = os.pread(fd, size, offset)
    if len(data) != size:
        raise _ShrunkError
    return data


def _fd_reader(fd: int) -> _Read:
    return functools.partial(_pread_exact, fd)


def _bytes_reader(data: bytes) -> _Read:
    def read(size: int, offset: int) -> bytes:
        return data[offset : offset + size]

    return read


def _acknowledged_end(read: _Read, size: int, intent: _Intent | None) -> tuple[int, bool]:
    """Where the journal's records end, and whether that end is an incomplete batch's start.

    At an incomplete batch's start the line before is fsynced and whole, so
    the torn-tail leniency does not apply to it (the caller is strict there).
    """
    if intent is None or intent.start > size or not _names_this_journal(read, intent):
        return size, False
    if _batch_is_whole(read, size, intent):
        return size, False
    return intent.start, True


def _names_this_journal(read: _Read, intent: _Intent) -> bool:
    """True when the intent's batch starts at a line boundary right after seq ``first_seq - 1``.

    Every line before a batch is fsynced before its intent, so a real intent
    always passes; a leftover that does not (a replaced file) is ignored.
    """
    if intent.first_seq == 1:
        return intent.start == 0
    previous = next(_lines_backward(read, intent.start), None)
    if previous is None or previous[0] + len(previous[1]) + 1 != intent.start:
        return False
    try:
        return records.decode(previous[1]).seq == intent.first_seq - 1
    except RecordDecodeError:
        return False


def _batch_is_whole(read: _Read, size: int, intent: _Intent) -> bool:
    """True when the journal holds all ``count`` lines of the batch, valid, ending exactly at its end."""
    if intent.end > size:
        return False
    expected = intent.first_seq
    reached = intent.start
    for offset, line in _lines_forward(read, intent.start, intent.end):
        try:
            if records.decode(line).seq != expected:
                return False
        except RecordDecodeError:
            return False
        expected += 1
        reached = offset + len(line) + 1
    return expected == intent.first_seq + intent.count and reached == intent.end


@dataclass
class _Scan:
    """A journal read front to back."""

    records: list[StoredRecord]
    starts: array[int]
    """The file offset where each record's line starts; index ``seq - 1``."""
    good_end: int
    """The offset just past the last good line: where a torn tail or an incomplete batch is cut."""
    size: int


def _scan(run_id: str, data: bytes, known: Sequence[StoredRecord] = (), intent: _Intent | None = None) -> _Scan:
    """Decode every line of ``data``; a torn final line and an incomplete batch are left out, any other bad line raises.

    The piece after the last newline is a torn tail, and so is a final complete
    line that fails to decode: a crash in the middle of an append leaves
    exactly these. A bad line with anything after it is damage, not a torn
    write, and so is a line whose seq is not its line number, and so is a
    final line that is a whole line glued to the next (see ``_glued``).
    """
    end, strict = _acknowledged_end(_bytes_reader(data), len(data), intent)
    *lines, fragment = (data if end == len(data) else data[:end]).split(b"\n")
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
            if number == len(lines) and not fragment and not strict and not _glued(line):
                break
            raise CorruptJournalError(run_id, err.detail, line=number) from err
        found.append(check_seq(run_id, stored, number, line=number))
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


def _first_line(read: _Read, size: int) -> bytes | None:
    """The first complete line (without its newline), or None when the file has no newline."""
    head = bytearray()
    offset = 0
    while offset < size:
        chunk = read(min(CHUNK_BYTES, size - offset), offset)
        newline = chunk.find(b"\n")
        if newline >= 0:
            return bytes(head + chunk[:newline])
        head += chunk
        offset += len(chunk)
    return None


def _lines_backward(read: _Read, size: int) -> Iterator[tuple[int, bytes]]:
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
        buf = read(step, offset) + buf
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


def _lines_forward(read: _Read, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    """Yield ``(start offset, line)`` for each complete line in ``start .. end``, first first.

    Holds one ``STREAM_CHUNK_BYTES`` chunk plus the line not yet complete;
    bytes after the last newline (a torn fragment) are never yielded.
    """
    offset = start  # the file offset of buf[0]
    buf = b""
    read_to = start
    while read_to < end:
        step = min(STREAM_CHUNK_BYTES, end - read_to)
        chunk = read(step, read_to)
        buf += chunk
        read_to += len(chunk)
        if len(chunk) < step:
            end = read_to  # the file got shorter (a reader that allows it): it ends here now
        taken = 0
        while (newline := buf.find(b"\n", taken)) >= 0:
            yield offset + taken, buf[taken:newline]
            taken = newline + 1
        buf = buf[taken:]
        offset += taken


def _records_backward(
    run_id: str, fd: int, size: int, intent: _Intent | None
) -> tuple[StoredRecord, Iterator[StoredRecord]]:
    """The meta from the front, and the records from the last one back to the meta, checked as they come."""
    read = _fd_reader(fd)
    size, strict = _acknowledged_end(read, size, intent)
    meta = _decode_meta(run_id, _first_line(read, size), size, torn_allowed=not strict)

    def backward() -> Iterator[StoredRecord]:
        expected: int | None = None  # the seq the next line up must hold
        for start, line in _lines_backward(read, size):
            if start == 0:
                stored = meta
            else:
                try:
                    stored = records.decode(line)
                except RecordDecodeError as err:
                    final = expected is None and start + len(line) + 1 == size
                    if final and not strict and not _glued(line):
                        continue  # a torn final line: the line before it is the last
                    raise _BackwardDamageError(err.detail, expected) from err
            if expected is not None and stored.seq != expected:
                raise _BackwardDamageError(f"the line holds seq {stored.seq}, expected {expected}", expected)
            yield stored
            if start == 0:
                return
            expected = stored.seq - 1

    return meta, backward()


def _walk_back(run_id: str, walk: BackwardWalk, fd: int, size: int, intent: _Intent | None) -> StoredRecord:
    """The meta from the front, then the records from the last one back, fed to ``walk`` until it is done."""
    walk.restart()  # the reader may be starting over (the file shrank under the last attempt)
    meta, backward = _records_backward(run_id, fd, size, intent)
    for stored in backward:
        if walk.take(stored):
            break
    return meta


def _read_meta(run_id: str, fd: int, size: int, intent: _Intent | None) -> StoredRecord:
    """The first line only: a listing orders 10,000 runs by their metas without reading their tails."""
    read = _fd_reader(fd)
    strict = False
    if intent is not None and intent.first_seq == 1:  # only a creation batch can take the meta away
        size, strict = _acknowledged_end(read, size, intent)
    return _decode_meta(run_id, _first_line(read, size), size, torn_allowed=not strict)


class _BackwardDamageError(Exception):
    """Damage seen by the backward scan; ``ends`` locates it by line before reporting it."""

    def __init__(self, problem: str, seq: int | None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.seq = seq


def _decode_meta(run_id: str, line: bytes | None, size: int, *, torn_allowed: bool = True) -> StoredRecord:
    """Decode the first line; a file whose only line is torn counts as absent."""
    if line is None:
        raise RunNotFoundError(run_id)
    try:
        meta = records.decode(line)
    except RecordDecodeError as err:
        if torn_allowed and len(line) + 1 == size and not _glued(line):
            raise RunNotFoundError(run_id) from err
        raise CorruptJournalError(run_id, err.detail, line=1) from err
    return check_seq(run_id, meta, 1, line=1)


class _StreamCursor:
    """A lock-free forward read of a journal's records from one seq, a bounded chunk per call.

    ``next_records`` runs in the executor; ``close`` may come from the event
    loop while a read is still running there (the consumer was cancelled), so
    the descriptor is closed by whichever side is last, never under a read.
    """

    def __init__(self, run_id: str, fd: int, end: int, strict: bool, from_seq: int) -> None:
        self._run_id = run_id
        self._fd = fd
        self._end = end
        self._strict = strict
        self._from_seq = from_seq
        self._lines = _lines_forward(self._read, 0, end)
        self._number = 0
        self._damage: CorruptJournalError | None = None
        self._mutex = threading.Lock()
        self._closing = False
        self._closed = False

    def _read(self, size: int, offset: int) -> bytes:
        data = os.pread(self._fd, size, offset)
        if len(data) < size:
            # A writer cut what was never acknowledged (a torn tail, a rolled-back append): the end moved.
            self._end = offset + len(data)
        return data

    def next_records(self) -> list[StoredRecord]:
        """The next records (at least one unless the end is reached): about one chunk's worth."""
        try:
            with self._mutex, _os_errors(self._run_id, "reading the journal"):
                if self._closed:
                    return []
                if self._damage is not None:
                    raise self._damage
                found: list[StoredRecord] = []
                taken = 0
                for offset, line in self._lines:
                    self._number += 1
                    taken += len(line) + 1
                    if self._number >= self._from_seq:
                        try:
                            stored = self._decode(offset, line)
                        except CorruptJournalError as damage:
                            if not found:
                                raise
                            self._damage = damage  # the records before the damage go out first
                            break
                        if stored is None:
                            break
                        found.append(stored)
                    if found and taken >= STREAM_CHUNK_BYTES:
                        break
                return found
        finally:
            if self._closing:
                self._close_if_idle()

    def _decode(self, offset: int, line: bytes) -> StoredRecord | None:
        """The record on line ``self._number``; None for a torn final line; damage raises."""
        try:
            stored = records.decode(line)
        except RecordDecodeError as err:
            final = offset + len(line) + 1 >= self._end
            if final and not self._strict and not _glued(line):
                return None
            raise CorruptJournalError(self._run_id, err.detail, line=self._number) from err
        return check_seq(self._run_id, stored, self._number, line=self._number)

    def close(self) -> None:
        self._closing = True
        self._close_if_idle()

    def _close_if_idle(self) -> None:
        if not self._mutex.acquire(blocking=False):
            return  # a read is running: it closes the descriptor when it is done
        try:
            if not self._closed:
                self._closed = True
                os.close(self._fd)
        finally:
            self._mutex.release()


# ---------------------------------------------------------------- writing


class FileJournal(Journal):
    """An open journal file and its held lock.

    Every method body that touches the file runs in the backend's executor
    under ``_mutex``: a cancelled caller does not stop the thread, so the
    thread itself must finish the write and advance the state, and the next
    call must wait for it.
    """

    def __init__(
        self, backend: FileBackend, run_id: str, fd: int, lock_fd: int, scan: _Scan, *, lock_name_durable: bool
    ) -> None:
        self.run_id = run_id
        self._backend = backend
        self._path = os.fspath(backend._journal_path(run_id))  # a str: the per-append lstat skips __fspath__
        self._fd = fd
        self._lock_fd = lock_fd
        held = os.fstat(fd)
        self._identity = (held.st_dev, held.st_ino)
        self._starts = scan.starts
        self._end = scan.good_end
        self._poisoned_by: str | None = None
        self._closed = False
        self._intent_stale = False
        """The lock file may hold the intent of a batch that was rolled back: blank it before the next line."""
        self._lock_name_durable = lock_name_durable
        """An intent is only as durable as the lock file's name: a lock file never synced into the
        directory (made by an open of a journal that came without one) could vanish in a power cut."""
        self._mutex = threading.Lock()

    @property
    def last_seq(self) -> int:
        return len(self._starts)

    async def _store(self, batch: list[StoredRecord]) -> None:
        await self._backend._run(self._append_sync, batch)

    async def _read_line(self, seq: int) -> StoredRecord:
        return await self._backend._run(self._stored_line_sync, seq)

    async def close(self) -> None:
        await self._backend._run(self._close_sync)

    def _append_sync(self, batch: list[StoredRecord]) -> None:
        with self._mutex:
            self._check_append(batch)  # again, under the mutex: a cancelled caller's write may have run meanwhile
            _check_lines(self.run_id, batch)
            data = b"".join(stored.line + b"\n" for stored in batch)
            # One line needs no intent: a cut single line is a torn tail already.
            intent = _Intent(batch[0].seq, len(batch), self._end, self._end + len(data)) if len(batch) > 1 else None
            try:
                self._prepare_intent(intent)
                _write_all(self._fd, data, self._end)
                os.fsync(self._fd)
            except OSError as err:
                self._roll_back(err, stale_intent=intent is not None or self._intent_stale)
            self._check_still_at_path()
            if intent is not None:
                with contextlib.suppress(OSError):
                    _blank(self._lock_fd, durable=False)  # the batch is whole: its intent means nothing now
            # Advance only now that the lines are durable, so a failed write is
            # re-appended at the same seq instead of being lost.
            for stored in batch:
                self._starts.append(self._end)
                self._end += len(stored.line) + 1

    def _prepare_intent(self, intent: _Intent | None) -> None:
        """Declare the batch's intent, or blank a stale one durably, before any line is written."""
        if intent is not None:
            if not self._lock_name_durable:
                self._backend._fsync_dir()
                self._lock_name_durable = True
            _declare(self._lock_fd, intent)
        elif self._intent_stale:
            _blank(self._lock_fd, durable=True)
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
            raise _storage_error(
                self.run_id, f"appending failed ({err.strerror}) and so did rolling back", undo_err
            ) from err
        self._intent_stale = stale_intent
        raise _storage_error(self.run_id, "appending", err) from err

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

    def _stored_line_sync(self, seq: int) -> StoredRecord:
        with self._mutex:
            self._check_usable()  # again, under the mutex: the descriptor may have been closed meanwhile
            start = self._starts[seq - 1]
            end = self._starts[seq] if seq < self.last_seq else self._end
            with _os_errors(self.run_id, f"reading seq {seq}"):
                data = os.pread(self._fd, end - start, start)
        if not data.endswith(b"\n"):
            raise CorruptJournalError(
                self.run_id, f"the line is cut short ({len(data)} of {end - start} bytes)", line=seq, seq=seq
            )
        return decode_at(self.run_id, seq, data[:-1], line=seq, at_seq=seq)

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

    async def _create_exclusive(self, run_id: str, batch: list[StoredRecord]) -> FileJournal:
        """Create the run with its whole creation batch; see ``_create_sync`` for how two creators are kept apart."""
        _check_lines(run_id, batch)
        journal, _ = await self._run_opening(self._create_sync, run_id, batch)
        return journal

    async def open_journal(
        self, run_id: str, known: Sequence[StoredRecord] = ()
    ) -> tuple[FileJournal, list[StoredRecord]]:
        return await self._run_opening(functools.partial(self._open_sync, known=known), run_id, None)

    async def load(self, run_id: str) -> list[StoredRecord]:
        return await self._run(self._load_sync, run_id)

    async def _walk_back(self, run_id: str, walk: BackwardWalk) -> StoredRecord:
        return await self._run(self._read_sync, run_id, functools.partial(_walk_back, run_id, walk))

    async def meta(self, run_id: str) -> StoredRecord:
        return await self._run(self._read_sync, run_id, functools.partial(_read_meta, run_id))

    async def stream(self, run_id: str, from_seq: int) -> AsyncGenerator[StoredRecord, None]:
        """Read forward a chunk at a time (``STREAM_CHUNK_BYTES`` plus at most one line held).

        The stream ends at the end the journal had when it started (later
        appends are for the next stream), a torn final line and an incomplete
        batch left out. Lines before ``from_seq`` are counted, not decoded.
        """
        cursor = await self._run_cursor(run_id, max(from_seq, 1))
        try:
            while found := await self._run(cursor.next_records):
                found.reverse()
                while found:
                    # Popped, not bound to a name: while the consumer is
                    # stalled this frame holds no record it already handed out.
                    yield found.pop()
        finally:
            cursor.close()

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

    async def _run_cursor(self, run_id: str, from_seq: int) -> _StreamCursor:
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

    def _adopt(self, run_id: str, fd: int, lock_fd: int, scan: _Scan, *, lock_name_durable: bool) -> FileJournal:
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
        fd = _open_regular(run_id, self._lock_path(run_id), os.O_RDWR | os.O_CREAT)
        try:
            portalocker.lock(fd, portalocker.LOCK_EX | portalocker.LOCK_NB)
        except portalocker.AlreadyLocked as err:
            os.close(fd)
            raise RunLockedError(run_id) from err
        except portalocker.LockException as err:
            os.close(fd)
            raise StorageUnavailableError(run_id, f"locking {self._lock_path(run_id)}: {err}") from err
        return fd

    def _peek_intent(self, run_id: str) -> _Intent | None:
        """The run's batch intent, read without the lock (a lock file that is not there holds none)."""
        try:
            fd = _open_regular(run_id, self._lock_path(run_id), os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            return _held_intent(fd)
        finally:
            os.close(fd)

    def _open_for_reading(self, run_id: str) -> int:
        try:
            return _open_regular(run_id, self._journal_path(run_id), os.O_RDONLY)
        except FileNotFoundError:
            raise RunNotFoundError(run_id) from None

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
        with contextlib.ExitStack() as cleanup, _os_errors(run_id, "creating the journal"):
            lock_fd = self._lock(run_id)
            cleanup.callback(os.close, lock_fd)
            path = self._journal_path(run_id)
            fd = _open_regular(run_id, path, os.O_RDWR | os.O_CREAT)
            cleanup.callback(os.close, fd)
            leftover = _held_intent(lock_fd)
            if _scan(run_id, _read_all(fd), intent=leftover).records:
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
            run_id, fd, lock_fd, _Scan(creation, starts, good_end=end, size=end), lock_name_durable=True
        )
        return journal, creation

    def _write_creation(
        self, path: Path, fd: int, lock_fd: int, creation: list[StoredRecord], leftover: _Intent | None
    ) -> None:
        """Replace any leftover with the creation batch, durably, name included; several lines go under an intent."""
        data = b"".join(stored.line + b"\n" for stored in creation)
        intent = _Intent(1, len(creation), 0, len(data)) if len(creation) > 1 else None
        try:
            if intent is not None:
                _declare(lock_fd, intent)
                self._fsync_dir()  # the lock file may be new: its name must outlive a power cut like the intent
            elif leftover is not None:
                # A crashed creation batch's intent would otherwise claim this meta as part of it.
                _blank(lock_fd, durable=True)
            os.ftruncate(fd, 0)
            _write_all(fd, data, 0)
            os.fsync(fd)
            self._fsync_dir()
            if not _same_file(fd, path):
                raise OSError(errno.ESTALE, f"{path} was replaced or removed while the run was being created")
        except OSError:
            # Unlink rather than leave a meta nobody acknowledged: a retry of
            # the same creation would take it for its own and report success
            # for a line that may never reach the disk.
            with contextlib.suppress(OSError):
                if _same_file(fd, path):
                    os.unlink(path)
            raise
        if intent is not None:
            with contextlib.suppress(OSError):
                _blank(lock_fd, durable=False)

    def _open_sync(
        self, run_id: str, _: list[StoredRecord] | None, *, known: Sequence[StoredRecord] = ()
    ) -> tuple[FileJournal, list[StoredRecord]]:
        with contextlib.ExitStack() as cleanup, _os_errors(run_id, "opening the journal"):
            if not os.path.lexists(self._journal_path(run_id)):
                # Refuse before the lock file is created: an append to a run that does
                # not exist must leave no trace (else any client could fill the directory).
                raise RunNotFoundError(run_id)
            lock_fd = self._lock(run_id)
            cleanup.callback(os.close, lock_fd)
            try:
                fd = _open_regular(run_id, self._journal_path(run_id), os.O_RDWR)
            except FileNotFoundError:
                raise RunNotFoundError(run_id) from None
            cleanup.callback(os.close, fd)
            intent = _held_intent(lock_fd)
            scan = _scan(run_id, _read_all(fd), known, intent)
            if not scan.records:
                raise RunNotFoundError(run_id)
            if scan.good_end < scan.size:
                # Cut the torn tail (or the incomplete batch) now: the next append would be
                # glued to the fragment and an acknowledged record later dropped as torn.
                os.ftruncate(fd, scan.good_end)
                os.fsync(fd)
            if intent is not None:
                # Durably, and only after the cut is: single appends at the batch's seqs come next.
                _blank(lock_fd, durable=True)
            # A lock file that ever held an intent had its name synced then (see FileJournal).
            lock_name_durable = os.fstat(lock_fd).st_size >= INTENT_BYTES
            cleanup.pop_all()
        return self._adopt(run_id, fd, lock_fd, scan, lock_name_durable=lock_name_durable), scan.records

    def _load_sync(self, run_id: str) -> list[StoredRecord]:
        with _os_errors(run_id, "reading the journal"):
            fd = self._open_for_reading(run_id)
            try:
                data = _read_all(fd)
            finally:
                os.close(fd)
            # The intent after the data: an intent that is gone by now was blanked after its batch was whole.
            intent = self._peek_intent(run_id)
        found = _scan(run_id, data, intent=intent).records
        if not found:
            raise RunNotFoundError(run_id)
        return found

    def _read_sync(self, run_id: str, reader: Callable[[int, int, _Intent | None], T]) -> T:
        """Run a lock-free reader (ends, tail, meta) on a descriptor of the journal, starting over if it shrinks."""
        with _os_errors(run_id, "reading the journal"):
            fd = self._open_for_reading(run_id)
            try:
                for _ in range(_READ_ATTEMPTS):
                    size = os.fstat(fd).st_size
                    intent = self._peek_intent(run_id)
                    try:
                        return reader(fd, size, intent)
                    except _ShrunkError:
                        continue  # a writer cut its tail while we read; what it cut was never acknowledged
                    except _BackwardDamageError as damage:
                        # Damage is rare: pay for a full read to name the line, as load would.
                        _scan(run_id, _read_all(fd), intent=intent)
                        raise CorruptJournalError(run_id, damage.problem, seq=damage.seq) from damage
                raise StorageUnavailableError(run_id, "the journal kept shrinking while it was read")
            finally:
                os.close(fd)

    def _cursor_sync(self, run_id: str, from_seq: int) -> _StreamCursor:
        """Check the meta (a run with none is not found) and hand a cursor its own descriptor."""

        def start(fd: int, size: int, intent: _Intent | None) -> _StreamCursor:
            read = _fd_reader(fd)
            end, strict = _acknowledged_end(read, size, intent)
            _decode_meta(run_id, _first_line(read, end), end, torn_allowed=not strict)
            return _StreamCursor(run_id, os.dup(fd), end, strict, from_seq)

        return self._read_sync(run_id, start)

    def _list_sync(self) -> list[str]:
        with _os_errors(None, f"listing {self._dir}"), os.scandir(self._dir) as entries:
            return [
                entry.name.removesuffix(JOURNAL_SUFFIX)
                for entry in entries
                if entry.name.endswith(JOURNAL_SUFFIX)
                and is_valid_run_id(entry.name.removesuffix(JOURNAL_SUFFIX))
                and entry.is_file()
            ]


def _same_file(fd: int, path: Path) -> bool:
    """True when ``path`` (not followed if a link) names the file open on ``fd``."""
    try:
        held, found = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (held.st_dev, held.st_ino) == (found.st_dev, found.st_ino)
