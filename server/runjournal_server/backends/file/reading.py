"""Lock-free readers of a journal: the full scan, the backward walk (ends, tail), the meta, the stream cursor.

A damaged final line is a torn tail (dropped on read, truncated on open); any
other damaged line is corruption, reported with its 1-based line number.
Every reader honours the batch intent (``intent.py``): an incomplete batch is
never read back, in part or at all.
"""

from __future__ import annotations

import os
import threading
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from runjournal_server.backends.file.files import os_errors
from runjournal_server.backends.file.intent import Intent, acknowledged_end
from runjournal_server.backends.file.lines import (
    STREAM_CHUNK_BYTES,
    bytes_reader,
    fd_reader,
    first_line,
    glued,
    lines_backward,
    lines_forward,
)
from runjournal_server.backends.reading import BackwardWalk, check_seq
from runjournal_server.core import records
from runjournal_server.core.errors import CorruptJournalError, RunNotFoundError
from runjournal_server.core.records import RecordDecodeError, StoredRecord


@dataclass
class Scan:
    """A journal read front to back."""

    records: list[StoredRecord]
    starts: array[int]
    """The file offset where each record's line starts; index ``seq - 1``."""
    good_end: int
    """The offset just past the last good line: where a torn tail or an incomplete batch is cut."""
    size: int


def scan_journal(run_id: str, data: bytes, known: Sequence[StoredRecord] = (), intent: Intent | None = None) -> Scan:
    """Decode every line of ``data``; a torn final line and an incomplete batch are left out, any other bad line raises.

    The piece after the last newline is a torn tail, and so is a final complete
    line that fails to decode: a crash in the middle of an append leaves
    exactly these. A bad line with anything after it is damage, not a torn
    write, and so is a line whose seq is not its line number, and so is a
    final line that is a whole line glued to the next (see ``glued``).
    """
    end, strict = acknowledged_end(bytes_reader(data), len(data), intent)
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
            if number == len(lines) and not fragment and not strict and not glued(line):
                break
            raise CorruptJournalError(run_id, err.detail, line=number) from err
        found.append(check_seq(run_id, stored, number, line=number))
        starts.append(offset)
        offset += len(line) + 1
    return Scan(found, starts, good_end=offset, size=len(data))


def _records_backward(
    run_id: str, fd: int, size: int, intent: Intent | None
) -> tuple[StoredRecord, Iterator[StoredRecord]]:
    """The meta from the front, and the records from the last one back to the meta, checked as they come."""
    read = fd_reader(fd)
    size, strict = acknowledged_end(read, size, intent)
    meta = decode_meta(run_id, first_line(read, size), size, torn_allowed=not strict)

    def backward() -> Iterator[StoredRecord]:
        expected: int | None = None  # the seq the next line up must hold
        for start, line in lines_backward(read, size):
            if start == 0:
                stored = meta
            else:
                try:
                    stored = records.decode(line)
                except RecordDecodeError as err:
                    final = expected is None and start + len(line) + 1 == size
                    if final and not strict and not glued(line):
                        continue  # a torn final line: the line before it is the last
                    raise BackwardDamageError(err.detail, expected) from err
            if expected is not None and stored.seq != expected:
                raise BackwardDamageError(f"the line holds seq {stored.seq}, expected {expected}", expected)
            yield stored
            if start == 0:
                return
            expected = stored.seq - 1

    return meta, backward()


def walk_back(run_id: str, walk: BackwardWalk, fd: int, size: int, intent: Intent | None) -> StoredRecord:
    """The meta from the front, then the records from the last one back, fed to ``walk`` until it is done."""
    walk.restart()  # the reader may be starting over (the file shrank under the last attempt)
    walk.stored_at = os.fstat(fd).st_mtime  # every append writes the file: its mtime is the last record's time
    meta, backward = _records_backward(run_id, fd, size, intent)
    for stored in backward:
        if walk.take(stored):
            break
    return meta


def read_meta(run_id: str, fd: int, size: int, intent: Intent | None) -> StoredRecord:
    """The first line only: a listing orders 10,000 runs by their metas without reading their tails."""
    read = fd_reader(fd)
    strict = False
    if intent is not None and intent.first_seq == 1:  # only a creation batch can take the meta away
        size, strict = acknowledged_end(read, size, intent)
    return decode_meta(run_id, first_line(read, size), size, torn_allowed=not strict)


class BackwardDamageError(Exception):
    """Damage seen by the backward scan; ``ends`` locates it by line before reporting it."""

    def __init__(self, problem: str, seq: int | None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.seq = seq


def decode_meta(run_id: str, line: bytes | None, size: int, *, torn_allowed: bool = True) -> StoredRecord:
    """Decode the first line; a file whose only line is torn counts as absent."""
    if line is None:
        raise RunNotFoundError(run_id)
    try:
        meta = records.decode(line)
    except RecordDecodeError as err:
        if torn_allowed and len(line) + 1 == size and not glued(line):
            raise RunNotFoundError(run_id) from err
        raise CorruptJournalError(run_id, err.detail, line=1) from err
    return check_seq(run_id, meta, 1, line=1)


class StreamCursor:
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
        self._lines = lines_forward(self._read, 0, end)
        self._number = 0
        self._damage: CorruptJournalError | None = None
        self._mutex = threading.Lock()
        self._closing = False
        self._closed = False
        self.shrunk = False
        """True once the file was found shorter than the end the stream started with."""

    def _read(self, size: int, offset: int) -> bytes:
        data = os.pread(self._fd, size, offset)
        if len(data) < size:
            # A writer cut what was never acknowledged (a torn tail, a rolled-back append),
            # or the run was deleted (truncated to nothing): the end moved.
            self._end = offset + len(data)
            self.shrunk = True
        return data

    def next_records(self) -> list[StoredRecord]:
        """The next records (at least one unless the end is reached): about one chunk's worth."""
        try:
            with self._mutex, os_errors(self._run_id, "reading the journal"):
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
            if final and not self._strict and not glued(line):
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
