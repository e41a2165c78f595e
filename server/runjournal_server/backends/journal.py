"""The contract of a run's journal opened for writing, and the rules its appends keep on every backend.

The promises of ``Journal.append``, stated once:

* It is durable before it returns (file: written and fsynced; JetStream:
  acked with ``sync_interval: always``), and all-or-nothing for the lines it
  is given, across a crash too: a batch the process died in the middle of is
  never read back in part (file: a batch intent the readers honour;
  JetStream: one atomic batch). ``Journal.last_seq`` advances only after
  that, so a failed or torn write is re-appended at the same seq instead of
  being lost.
* After a failed append the journal is exactly as it was before the call
  (truncated back), or the handle is ``poisoned`` and must be closed and
  opened again; it never reports success for data that is not durable.
* Where the writer lock is not exclusive (JetStream: several replicas may
  hold the same run), another writer can move the journal's tail. ``append``
  then raises ``WriteRaceError`` having stored nothing of its own, and
  ``refresh`` adopts what the others wrote; callers never trust their warm
  state for a refusal without refreshing first.

``append`` and ``stored_line`` are ``final``: they keep the rules every
backend shares (batch numbering, closed and poisoned handles, the
``stored_line`` range) and then call the hooks a backend fills, ``_store``
and ``_read_line``. ``timed_store`` times every store write (appends here,
creations in ``base.py``) and tells an optional ``StoreObserver`` (the
server's metrics): the one place every backend's sync latency and batch size
is measured.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Awaitable, Sequence
from typing import Protocol, TypeVar, final

from runjournal_server.core.errors import StorageUnavailableError
from runjournal_server.core.records import StoredRecord

T = TypeVar("T")


class StoreObserver(Protocol):
    """Told of every successful store write (see ``observing.Observer.stored``)."""

    def stored(self, records: int, seconds: float) -> None: ...


async def timed_store(store: Awaitable[T], records: int, observer: StoreObserver | None) -> T:
    """Await one store write; tell ``observer`` how many records it made durable and how long it took.

    Only a write that succeeded is told: a failed one made nothing durable.
    """
    started = time.perf_counter()
    result = await store
    if observer is not None:
        observer.stored(records, time.perf_counter() - started)
    return result


class WriteRaceError(Exception):
    """Another writer stored a record at a seq this append targeted; none of this append is stored.

    Not a client-facing reason: ``runs/runs.py`` catches up with the store and
    re-applies the append rule, which then answers duplicate, SEQ_CONFLICT or
    RUN_CLAIMED from what is really there.
    """


def check_numbering(run_id: str, batch: Sequence[StoredRecord], first_seq: int) -> None:
    """Refuse a batch runs/runs.py should never send: seqs other than ``first_seq, first_seq + 1, ...``.

    A wrong seq would store a journal that reads back as corrupt; ``runs/runs.py``
    decides what the next seq is, so this is a bug check, a ``ValueError``.
    """
    for index, stored in enumerate(batch):
        if stored.seq != first_seq + index:
            raise ValueError(f"run {run_id!r}: expected seq {first_seq + index}, got {stored.seq}")


class Journal(abc.ABC):
    """A run's journal opened for writing; holds the run's writer lock.

    A backend fills ``last_seq``, ``close`` and the hooks ``_store`` and
    ``_read_line``; it sets ``_closed`` when closed and ``_poisoned_by`` (why)
    after a failure it could not roll back.
    """

    run_id: str
    _closed: bool = False
    _poisoned_by: str | None = None

    @property
    @abc.abstractmethod
    def last_seq(self) -> int:
        """The seq of the last durable record."""

    @property
    def poisoned(self) -> bool:
        """True after a failure that could not be rolled back; close and reopen."""
        return self._poisoned_by is not None

    @final
    async def append(self, records: Sequence[StoredRecord], *, observer: StoreObserver | None = None) -> None:
        """Store ``records`` (seqs ``last_seq + 1 ...``, consecutive) durably, all or nothing; tell ``observer``.

        Raises ``StorageFullError`` when the store is out of space and
        ``StorageUnavailableError`` for any other storage failure; in both
        cases nothing was acknowledged and the journal is at its last good
        record (or poisoned). A closed or poisoned handle stores nothing
        (STORAGE_UNAVAILABLE), and a batch with other seqs is a ``ValueError``.
        """
        batch = list(records)
        if not batch:
            return
        self._check_append(batch)
        await timed_store(self._store(batch), len(batch), observer)

    def _check_append(self, batch: Sequence[StoredRecord]) -> None:
        """The checks ``append`` makes before it stores anything.

        A ``_store`` that waits for a lock of its own before it writes (file:
        the handle's thread mutex, which a cancelled caller's write may still
        hold) makes them again once it holds it: meanwhile the handle may have
        been closed, poisoned or advanced.
        """
        self._check_usable()
        check_numbering(self.run_id, batch, self.last_seq + 1)

    def _check_usable(self) -> None:
        """Refuse a closed or poisoned handle: nothing may be written or read through it."""
        if self._closed:
            raise StorageUnavailableError(self.run_id, "the journal was closed; open the run again")
        if self._poisoned_by is not None:
            raise StorageUnavailableError(self.run_id, f"{self._poisoned_by}; the run must be opened again")

    @abc.abstractmethod
    async def _store(self, batch: list[StoredRecord]) -> None:
        """Hook: write ``batch`` (checked, not empty) durably, all or nothing, and only then advance ``last_seq``."""

    async def refresh(self) -> list[StoredRecord]:
        """Records other writers stored after ``last_seq``, now adopted (``last_seq`` advanced).

        ``RunDeletedError`` when another writer deleted the run meanwhile (the
        backend found its tombstone: ``deletion.py``); ``CorruptJournalError``
        for anything else stored there that no record may be. A backend whose
        writer lock is exclusive has nobody to catch up with, so the default
        returns nothing without any I/O.
        """
        return []

    @final
    async def stored_line(self, seq: int) -> StoredRecord:
        """The stored record at ``seq`` (1 <= seq <= last_seq), for duplicate checks.

        A seq outside that range is a ``ValueError`` (runs/runs.py asks only for
        seqs it was told are stored); a closed or poisoned handle is
        STORAGE_UNAVAILABLE.
        """
        self._check_usable()
        if not 1 <= seq <= self.last_seq:
            raise ValueError(f"run {self.run_id!r}: seq {seq} is outside 1..{self.last_seq}")
        return await self._read_line(seq)

    @final
    async def stored_bytes(self, seq: int) -> bytes:
        """The exact line stored at ``seq`` (1 <= seq <= last_seq), not decoded, for duplicate checks.

        A retry is a duplicate only when its line equals the stored one, byte
        for byte, and equal bytes need no decoding to tell: the incoming line
        was checked when it was encoded, so the stored one is valid too. Only
        lines that differ are decoded (``stored_line``), to tell a conflict
        from damage. Same range and handle rules as ``stored_line``.
        """
        self._check_usable()
        if not 1 <= seq <= self.last_seq:
            raise ValueError(f"run {self.run_id!r}: seq {seq} is outside 1..{self.last_seq}")
        return await self._read_bytes(seq)

    @abc.abstractmethod
    async def _read_line(self, seq: int) -> StoredRecord:
        """Hook: the record stored at ``seq`` (in range), decoded with ``decode_at``."""

    @abc.abstractmethod
    async def _read_bytes(self, seq: int) -> bytes:
        """Hook: the line stored at ``seq`` (in range), without its newline, as stored."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release the writer lock and any handle. Idempotent."""
