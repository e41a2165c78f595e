"""Reading a run's stored records: as far as they are acknowledged, a chunk at a time, or back from the end.

Rules kept here:

* A reader shows only acknowledged records. With an exclusive writer lock
  (files) a stored record past the held journal's last seq is one this
  server is writing right now, so a reader stops before it; on a store
  shared by replicas every stored record was acknowledged by its writer.
* ``Read`` streams from the store a chunk at a time under the reader's flow
  control: a stalled reader holds one chunk, never the whole run.
* A reader a few records behind the head (a watcher told of news) reads what
  is new back from the run's end (``read_after``): that costs what was
  appended since, where a forward read from a seq may first scan the journal
  up to it (the file backend counts its lines). Further behind, it reads
  forward.
* Records 1..N are read by one helper (``read_prefix``), for a past state
  (Fold ``as_of_seq``) and a fork's prefix alike, and no further than N: a
  past state of a long run decodes only its past.
* Damage any read finds is remembered for the listing (``RunHandles.note_corrupt``).
* A position past the run's end is refused, as Watch's ``after_seq`` and
  Fold's ``as_of_seq`` are: ``Read`` from ``last_seq + 1`` is the empty
  resume of a client that has every record, but from further on it names a
  record no client can have received the one before (INVALID_ARGUMENT). Only
  a read that finds nothing pays for asking the run's last seq.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Protocol

from runjournal_server.backends.base import Backend
from runjournal_server.core.errors import CorruptJournalError, InvalidArgumentError
from runjournal_server.core.ids import validate_run_id
from runjournal_server.core.records import StoredRecord
from runjournal_server.runs.handles import RunHandles


class RecordSource(Protocol):
    """Where a reader's records come from: the store's stream, or records read back from the end."""

    def __anext__(self) -> Awaitable[StoredRecord]: ...

    def aclose(self) -> Awaitable[None]: ...


class RecordReader:
    """Records of one run from a source, up to what is acknowledged.

    An iterator object rather than a generator: a suspended generator frame
    would keep the last record it yielded alive while the consumer waits on a
    stalled client, and a stalled reader must hold as little as possible.
    """

    def __init__(
        self,
        run_id: str,
        source: RecordSource,
        acknowledged: Callable[[str, int], bool],
        on_corrupt: Callable[[CorruptJournalError], None],
        *,
        head: int = 0,
    ) -> None:
        self._run_id = run_id
        self._source = source
        self._acknowledged = acknowledged
        self._on_corrupt = on_corrupt
        self.head = head
        """The run's last acknowledged seq where the read found it (``read_after`` past 0); else 0."""

    def __aiter__(self) -> RecordReader:
        return self

    async def __anext__(self) -> StoredRecord:
        try:
            item = await anext(self._source)
        except CorruptJournalError as err:
            self._on_corrupt(err)  # the listing shows it from now on
            raise
        if not self._acknowledged(self._run_id, item.seq):
            raise StopAsyncIteration
        return item

    async def aclose(self) -> None:
        """Stop reading: the store's stream releases its descriptor or window."""
        await self._source.aclose()


class _WithinTheRun:
    """A Read's source from ``from_seq`` > 1 that refuses, when it finds nothing, a start past ``last_seq + 1``."""

    def __init__(
        self, source: RecordSource, run_id: str, from_seq: int, last_acknowledged: Callable[[str], Awaitable[int]]
    ) -> None:
        self._source = source
        self._run_id = run_id
        self._from_seq = from_seq
        self._last_acknowledged = last_acknowledged
        self._checked = False

    async def __anext__(self) -> StoredRecord:
        if self._checked:
            return await anext(self._source)
        self._checked = True
        try:
            return await anext(self._source)
        except StopAsyncIteration:
            last_seq = await self._last_acknowledged(self._run_id)
            if last_seq < self._from_seq - 1:
                raise InvalidArgumentError(
                    "from_seq",
                    f"run {self._run_id!r} has only {last_seq} records; read from at most last_seq + 1 "
                    f"({last_seq + 1}), where a client that has every record resumes",
                ) from None
            raise

    async def aclose(self) -> None:
        await self._source.aclose()


class _ReadBack:
    """Records read back from the run's end, handed out oldest first and let go of one by one."""

    def __init__(self, found: list[StoredRecord]) -> None:
        found.reverse()
        self._left = found

    async def __anext__(self) -> StoredRecord:
        if not self._left:
            raise StopAsyncIteration
        return self._left.pop()

    async def aclose(self) -> None:
        self._left.clear()


class Reads:
    """The reads of runs over one backend, bounded by what the server acknowledged."""

    def __init__(self, backend: Backend, handles: RunHandles) -> None:
        self._backend = backend
        self._handles = handles

    def read(self, run_id: str, from_seq: int) -> RecordReader:
        """The stored records from ``from_seq``, as far as they are acknowledged, streamed a chunk at a time.

        Close the reader (``aclose``) when done early, to release its descriptor.
        """
        validate_run_id(run_id)
        if from_seq < 0:
            raise InvalidArgumentError("from_seq", "must be >= 0")
        source: RecordSource = self._backend.stream(run_id, from_seq)
        if from_seq > 1:
            source = _WithinTheRun(source, run_id, from_seq, self._last_acknowledged)
        return self._reader(run_id, source)

    async def read_after(self, run_id: str, after_seq: int, *, recent_bytes: int) -> RecordReader:
        """The acknowledged records after ``after_seq``: back from the run's end when they hold at most about
        ``recent_bytes``, else (and from 0) forward a chunk at a time.

        A read past 0 walks back from the end first, so its reader knows the
        run's ``head`` (its last acknowledged seq) whichever way it then reads.
        """
        validate_run_id(run_id)
        if after_seq == 0:
            return self.read(run_id, 1)
        held = 0

        def reached(stored: StoredRecord) -> bool:
            nonlocal held
            held += len(stored.line)
            return stored.seq <= after_seq + 1 or held > recent_bytes

        try:
            found = await self._backend.tail(run_id, reached)
        except CorruptJournalError as err:
            self._handles.note_corrupt(err)
            raise
        head = self._acknowledged_head(run_id, found[-1].seq)
        if found[0].seq > after_seq + 1:  # stopped by the size bound, short of after_seq
            return self._reader(run_id, self._backend.stream(run_id, after_seq + 1), head=head)
        return self._reader(run_id, _ReadBack([item for item in found if item.seq > after_seq]), head=head)

    async def read_prefix(self, run_id: str, last_seq: int) -> list[StoredRecord]:
        """Records 1..``last_seq`` (0: every acknowledged record), read no further; fewer when the run is shorter.

        The caller refuses a short run in the terms of its own request.
        """
        found: list[StoredRecord] = []
        async with contextlib.aclosing(self.read(run_id, 1)) as reader:
            async for item in reader:
                found.append(item)
                if item.seq == last_seq:
                    break
        return found

    def acknowledged(self, run_id: str, seq: int) -> bool:
        """False for a record this server is writing right now (stored, not yet acknowledged)."""
        bound = self._written_up_to(run_id)
        return bound is None or seq <= bound

    async def _last_acknowledged(self, run_id: str) -> int:
        """The run's last acknowledged seq, read back from its end (RUN_NOT_FOUND, RUN_DELETED as any read)."""
        try:
            found = await self._backend.tail(run_id, lambda stored: True)
        except CorruptJournalError as err:
            self._handles.note_corrupt(err)
            raise
        return self._acknowledged_head(run_id, found[-1].seq) if found else 0

    def _acknowledged_head(self, run_id: str, stored_last: int) -> int:
        bound = self._written_up_to(run_id)
        return stored_last if bound is None else min(stored_last, bound)

    def _written_up_to(self, run_id: str) -> int | None:
        """The last seq this server acknowledged of a run it holds with an exclusive writer lock; else None.

        None on a store shared by replicas: a record this replica did not
        write was acknowledged by another, and a replica's Read must show
        every acknowledged record.
        """
        if self._backend.shared_writers:
            return None
        slot = self._handles.get(run_id)
        return None if slot is None or slot.journal is None else slot.journal.last_seq

    def _reader(self, run_id: str, source: RecordSource, *, head: int = 0) -> RecordReader:
        return RecordReader(run_id, source, self.acknowledged, self._handles.note_corrupt, head=head)
