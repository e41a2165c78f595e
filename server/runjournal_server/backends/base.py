"""The contract every storage backend keeps, stated once.

A backend stores and returns the canonical lines produced by ``records.py``;
it never builds or re-serialises a record, so byte-identity across backends is
a property of the structure. It does not decide sequence rules: ``runs/runs.py``
applies the shared append rule (``sequence.py``) and the fold checks, then
hands the backend lines that are already valid and already numbered.

The promises:

* ``Journal.append`` is durable before it returns (file: written and fsynced;
  JetStream: acked with ``sync_interval: always``), and all-or-nothing for the
  lines it is given, across a crash too: a batch the process died in the
  middle of is never read back in part (file: a batch intent the readers
  honour; JetStream: one atomic batch). ``Journal.last_seq`` advances only after that, so a failed
  or torn write is re-appended at the same seq instead of being lost.
* After a failed append the journal is exactly as it was before the call
  (truncated back), or the handle is ``poisoned`` and must be closed and opened
  again; it never reports success for data that is not durable.
* ``open_journal`` takes the run's writer lock (file: an exclusive flock that
  the kernel drops when the process dies), refuses at once with
  ``RunLockedError`` when another process holds it, and repairs a torn tail
  before it returns, so the next append is not glued to a fragment.
* ``load`` and ``ends`` read without taking the writer lock, so a refusal or
  a listing costs no lock.
* Interior damage is ``CorruptJournalError`` with the line (file) or seq; a
  damaged final line is a torn tail: dropped on read, truncated on open.
* A journal with no complete record counts as absent (a creation that crashed
  before its meta was durable can be retried).
* Blocking I/O happens off the event loop.
* Where the writer lock is not exclusive (JetStream: several replicas may hold
  the same run), another writer can move the journal's tail. ``append`` then
  raises ``WriteRaceError`` having stored nothing of its own, and ``refresh``
  adopts what the others wrote; callers never trust their warm state for a
  refusal without refreshing first.

The public methods of ``Journal`` and ``Backend`` keep the rules every
backend shares (batch numbering, closed and poisoned handles, the
``stored_line`` range, meta at seq 1, the backward walk of ``ends`` and
``tail``) and then call small storage hooks; they are ``final``, so a backend
changes how bytes are stored, never the rules. The hooks are the
``_``-prefixed methods a backend fills: ``Journal._store``, ``Journal._read_line``,
``Backend._create_exclusive`` and (where the store can read from the end)
``Backend._walk_back``. A record read back is checked with ``decode_at``, or
with ``check_seq`` by a reader that tolerates a torn final line.

Both writing templates (``Journal.append``, ``Backend.create_journal``) time
the store hook and tell an optional ``StoreObserver`` (the server's metrics):
the one place every backend's sync latency and batch size is measured.
"""

from __future__ import annotations

import abc
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, Protocol, TypeVar, final

from runjournal_server.core import records
from runjournal_server.core.errors import (
    CorruptJournalError,
    RunDeletedError,
    RunExistsError,
    RunNotFoundError,
    StorageUnavailableError,
)
from runjournal_server.core.records import RecordDecodeError, StoredRecord

if TYPE_CHECKING:
    from runjournal_server.backends.index_store import SharedIndexStore


@dataclass(frozen=True)
class RunEnds:
    """What the listing rule needs from a journal, read without folding it."""

    meta: StoredRecord
    """The record at seq 1."""
    last_significant: StoredRecord
    """The last record for which the listing's ``is_inert`` was false (the meta
    when every later record is inert)."""
    last_seq: int
    """The seq of the last stored record."""
    stored_at: float | None = None
    """When the last record was stored, in seconds since the epoch by the store's
    clock (file: the journal's mtime; JetStream: the message timestamp); None
    where the backend cannot tell."""


@dataclass(frozen=True)
class Tombstone:
    """What is kept of a deleted run, so that its id is never used again (RUN_DELETED)."""

    run_id: str
    last_seq: int
    """The run's last seq when it was deleted."""
    deleted_at: float
    """When, in seconds since the epoch."""


@dataclass(frozen=True)
class Deletion:
    """What ``Backend.delete_run`` did."""

    tombstone: Tombstone
    deleted: bool
    """False when the run was deleted already (by an earlier call, or another deleter first)."""
    erased: bool
    """True when none of the run's stored bytes is left; False while a background erasure removes them."""


T = TypeVar("T")


class StoreObserver(Protocol):
    """Told of every successful store write (see ``observing.Observer.stored``)."""

    def stored(self, records: int, seconds: float) -> None: ...


async def _timed_store(store: Awaitable[T], records: int, observer: StoreObserver | None) -> T:
    """Await one store write; tell ``observer`` how many records it made durable and how long it took.

    Only a write that succeeded is told: a failed one made nothing durable.
    """
    started = time.perf_counter()
    result = await store
    if observer is not None:
        observer.stored(records, time.perf_counter() - started)
    return result


class BackendStartError(Exception):
    """The store cannot be used as configured; the message names the fix."""


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


def check_seq(
    run_id: str,
    stored: StoredRecord,
    seq: int,
    *,
    holder: str = "the line",
    line: int | None = None,
    at_seq: int | None = None,
) -> StoredRecord:
    """``stored``, read where record ``seq`` is kept; a record holding another seq is CORRUPT_JOURNAL.

    ``line`` and ``at_seq`` say where the error places the damage (a file
    names its line, a store addressed by seq the seq); ``holder`` names what
    held the record in the message.
    """
    if stored.seq != seq:
        raise CorruptJournalError(run_id, f"{holder} holds seq {stored.seq}", line=line, seq=at_seq)
    return stored


def decode_at(
    run_id: str, seq: int, data: bytes, *, holder: str = "the line", line: int | None = None, at_seq: int | None = None
) -> StoredRecord:
    """Decode the stored bytes of record ``seq``: undecodable bytes or another seq is CORRUPT_JOURNAL.

    For reads where damage cannot be a torn write. A reader that tolerates a
    torn final line decodes itself and then calls ``check_seq``.
    """
    try:
        stored = records.decode(data)
    except RecordDecodeError as err:
        raise CorruptJournalError(run_id, err.detail, line=line, seq=at_seq) from err
    return check_seq(run_id, stored, seq, holder=holder, line=line, at_seq=at_seq)


class BackwardWalk:
    """The walk ``ends`` and ``tail`` share: take records from the last one back until ``stop`` holds, or the meta.

    A backend's ``_walk_back`` feeds it records, the last first, until
    ``take`` returns True; a reader that starts over calls ``restart`` first.
    ``keep_all`` keeps every record taken (``tail``); otherwise only the
    record the walk stopped at is kept (``ends``), so walking past many inert
    records holds none of them. ``wants_meta`` is False where the caller has
    no use for the meta (``tail``), so a backend that must read it separately
    (JetStream) need not.
    """

    def __init__(self, stop: Callable[[StoredRecord], bool], *, keep_all: bool, wants_meta: bool = True) -> None:
        self._stop = stop
        self._keep_all = keep_all
        self.wants_meta = wants_meta
        self.restart()

    def restart(self) -> None:
        self.last_seq: int | None = None
        """The seq of the first record taken: the run's last."""
        self.stored_at: float | None = None
        """Set by the backend: when the run's last record was stored (``RunEnds.stored_at``)."""
        self.taken: list[StoredRecord] = []
        """The records kept, in the order taken (the last record first)."""
        self.done = False

    def take(self, stored: StoredRecord) -> bool:
        """Take the next record up; True when the walk is done (``stop`` held for it, or it is the meta)."""
        if self.last_seq is None:
            self.last_seq = stored.seq
        self.done = stored.seq == 1 or self._stop(stored)
        if self._keep_all or self.done:
            self.taken.append(stored)
        return self.done


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
        await _timed_store(self._store(batch), len(batch), observer)

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

        A backend whose writer lock is exclusive has nobody to catch up with,
        so the default returns nothing without any I/O.
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

    @abc.abstractmethod
    async def _read_line(self, seq: int) -> StoredRecord:
        """Hook: the record stored at ``seq`` (in range), decoded with ``decode_at``."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release the writer lock and any handle. Idempotent."""


class Backend(abc.ABC):
    """A store of run journals."""

    name: str

    shared_writers: bool = False
    """True where several server replicas may write one run (JetStream): a
    record in the store that this replica did not write is acknowledged by
    another. False where the writer lock is exclusive (files): there, a record
    past the holder's ``last_seq`` is one being written right now, not yet
    acknowledged, and readers must not show it."""

    async def follow(self, stored: Callable[[str, int], None], deleted: Callable[[str], None]) -> None:
        """From now on, tell ``stored(run_id, seq)`` of records other writers store, and ``deleted(run_id)``
        of runs they delete (for Watch and WatchRuns).

        Called once, after ``start``. Where the writer lock is exclusive
        (files) every change is made by this server, which tells its
        watchers itself: nothing to follow. A store shared by replicas
        (``shared_writers``) overrides this to follow what the others do.
        """
        return None

    health_listener: Callable[[bool], Awaitable[None]] | None = None
    """Told when the store becomes unreachable (False) or reachable again (True),
    so the server's health check routes traffic away meanwhile. A local store
    (files) is reachable whenever the process runs and never calls it."""

    @property
    def max_record_bytes(self) -> int | None:
        """The largest record line this store holds, decided by ``start``; None when the store sets no limit.

        A store with a message limit of its own (JetStream's ``max_payload``)
        lowers the default record limit to what it carries, so that a record
        is refused as RECORD_TOO_LARGE up front instead of failing in the store.
        """
        return None

    @abc.abstractmethod
    async def start(self) -> None:
        """Connect or prepare the store; raise with a clear message if unusable."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Close every open journal (releasing their locks) and the store."""

    @final
    async def create_journal(
        self,
        run_id: str,
        meta: StoredRecord,
        rest: Sequence[StoredRecord] = (),
        *,
        observer: StoreObserver | None = None,
    ) -> Journal:
        """Create the run with its meta record and ``rest`` (seqs 2, 3, ...), exclusively, durably, all or nothing.

        A creation batch is atomic like any other batch: after a crash or a
        failed write the run has all of it or does not exist (never a listed
        run with only its meta). Raises ``RunExistsError`` when a journal with
        a complete record already exists (the caller then checks whether it is
        the same meta, a retry), and ``RunLockedError`` when another process
        holds the run. A meta not at seq 1, or ``rest`` not numbered after it,
        is a ``ValueError``.
        """
        if meta.seq != 1:
            raise ValueError(f"run {run_id!r}: a journal starts at seq 1, got {meta.seq}")
        batch = [meta, *rest]
        check_numbering(run_id, batch, 1)
        try:
            return await _timed_store(self._create_exclusive(run_id, batch), len(batch), observer)
        except RunExistsError as err:
            # A store whose tombstone occupies the run's place (JetStream) refuses the
            # creation as if the run existed: a stale retry of a deleted run's meta.
            await self.refuse_deleted(run_id, err)

    @abc.abstractmethod
    async def _create_exclusive(self, run_id: str, batch: list[StoredRecord]) -> Journal:
        """Hook: store ``batch`` (seqs 1, 2, ..., checked) as a new run, exclusively, all or nothing; return it open."""

    @abc.abstractmethod
    async def open_journal(self, run_id: str, known: Sequence[StoredRecord] = ()) -> tuple[Journal, list[StoredRecord]]:
        """Open an existing run for writing, with every stored record in order.

        ``known`` are records of the run the caller decoded moments ago (from
        ``load``): a backend may hand back those very objects where it finds
        the stored bytes unchanged, instead of decoding them again.

        Raises ``RunNotFoundError``, ``RunLockedError`` or ``CorruptJournalError``.
        """

    @abc.abstractmethod
    async def load(self, run_id: str) -> list[StoredRecord]:
        """Every stored record of the run, in order, without taking the writer lock.

        A torn final line is dropped (not repaired). Raises ``RunNotFoundError``
        or ``CorruptJournalError``.
        """

    @final
    async def ends(self, run_id: str, is_inert: Callable[[StoredRecord], bool]) -> RunEnds:
        """The meta, the last record that is not inert, and the last seq; cheap.

        Reads from both ends of the journal rather than all of it. Raises
        ``RunNotFoundError`` or ``CorruptJournalError``.
        """
        walk = BackwardWalk(lambda stored: not is_inert(stored), keep_all=False)
        try:
            meta = await self._walk_back(run_id, walk)
        except (RunNotFoundError, CorruptJournalError) as err:
            await self.refuse_deleted(run_id, err)
        if meta is None or not walk.done or walk.last_seq is None:
            raise AssertionError("the backward walk always reaches the meta")
        return RunEnds(meta=meta, last_significant=walk.taken[-1], last_seq=walk.last_seq, stored_at=walk.stored_at)

    async def meta(self, run_id: str) -> StoredRecord:
        """The run's meta record (seq 1) alone: what the listing caches to order runs.

        This default reads the ends; a backend that can read the first record
        alone overrides it. Raises ``RunNotFoundError`` or ``CorruptJournalError``.
        """
        return (await self.ends(run_id, lambda _: False)).meta

    async def stream(self, run_id: str, from_seq: int) -> AsyncGenerator[StoredRecord, None]:
        """The stored records with seq >= ``from_seq``, in order, read from the store a bounded chunk at a time.

        For Read and Watch: memory held per stream is one chunk, whatever the
        run's size, and the consumer's pace (gRPC flow control) decides when
        the next chunk is read. A batch that is not complete in the store is
        never yielded. This default reads the whole journal; every real
        backend overrides it. Raises ``RunNotFoundError`` or
        ``CorruptJournalError`` (possibly after yielding the records before
        the damage).
        """
        for stored in await self.load(run_id):
            if stored.seq >= from_seq:
                yield stored

    @final
    async def tail(self, run_id: str, is_start: Callable[[StoredRecord], bool]) -> list[StoredRecord]:
        """The records from the last one for which ``is_start`` holds (or the meta) to the end.

        For the inbox, which needs only the trailing turn.
        """
        walk = BackwardWalk(is_start, keep_all=True, wants_meta=False)
        await self._walk_back(run_id, walk)
        walk.taken.reverse()
        return walk.taken

    async def _walk_back(self, run_id: str, walk: BackwardWalk) -> StoredRecord | None:
        """Hook: feed ``walk.take`` the run's records from the last back until it returns True; the run's meta.

        A backend may return None instead of the meta when ``walk.wants_meta``
        is False and reading the meta would cost it a read of its own.

        Each record is checked as it comes (decoded at its seq). This default
        reads the whole journal; a backend that can read from the end
        overrides it. Raises ``RunNotFoundError`` or ``CorruptJournalError``.
        """
        stored = await self.load(run_id)
        for record in reversed(stored):
            if walk.take(record):
                break
        return stored[0]

    @abc.abstractmethod
    async def list_run_ids(self) -> list[str]:
        """Every run id with a journal and no tombstone (unordered); may include unreadable ones."""

    async def run_versions(self, run_ids: Sequence[str] | None = None) -> dict[str, object] | None:
        """A cheap version of each run's journal (of every run when ``run_ids`` is None): runs absent are left out.

        A version changes whenever a record is stored, and is read without
        reading the journal (file: the journal's size, mtime and inode), so
        the listing index's repair can tell at start which of 100,000 runs
        moved while it was not looking. None where the store has no such
        version: the repair then reads every run again.
        """
        return None

    def durability_counts(self) -> Mapping[str, int]:
        """What the store did to make writes durable since it opened, by name, for /metrics (``observability/``).

        File: its group commit's ``SyncCounts`` (groups, the appends in them,
        fsyncs of the commit log and of journals, checkpoints), so an operator
        sees the group size and the fsyncs per append that ``bench`` measures.
        Read from the scrape's thread: plain ints, no lock. Empty where the
        store counts nothing of its own (JetStream: its acks are the syncs).
        """
        return {}

    def listing_store(self) -> SharedIndexStore | None:
        """Where the listing index persists on a store other replicas write (``shared_writers``), or None.

        Such a store also tells where the news of other replicas' writes
        stands, which a page must wait for (``backends/index_store.py``).
        None (the default, and before ``start``): a store with exclusive
        writers keeps its index in ``derived_data_dir``, and a shared store
        without one lists every run by reading it.
        """
        return None

    def derived_data_dir(self) -> Path | None:
        """A local directory where the server may keep files derived from the journals (the listing index).

        Such files are never the truth: they are checked against the store
        and rebuilt from it. None where the store keeps nothing local.
        """
        return None

    # ------------------------------------------------------------ deleting

    @final
    async def delete_run(self, run_id: str, expected_last_seq: int, *, wait_for_erase: bool = True) -> Deletion:
        """Delete the run if its last seq is ``expected_last_seq``.

        The tombstone is durable before any byte of the run is removed (or in
        the same atomic step), so a crash at any point leaves either the whole
        run, or a tombstone: never a run that reads back in part and could be
        written again. Once the tombstone exists every read and write of the
        run is RUN_DELETED (``refuse_deleted``), so the erasure need not be
        done before the answer: with ``wait_for_erase`` False a store whose
        erasure is slow (JetStream: a synced write per message) answers first
        and erases in the background (``_erase_deleted``). What a crash or a
        stop left behind is removed by ``_erase``: here (deleting again
        answers the tombstone, not deleted, once the erasure is complete) and
        by ``start``. Raises ``RunNotFoundError``, ``LastSeqMismatchError``
        (nothing removed), ``RunLockedError``.
        """
        found = await self.tombstone(run_id)
        if found is not None:
            await self._erase(run_id)
            return Deletion(found, deleted=False, erased=True)
        tombstone, deleted = await self._delete(run_id, expected_last_seq, time.time())
        if not deleted:  # another deleter's tombstone landed first: as for a retry, its erasure is finished here
            await self._erase(run_id)
            return Deletion(tombstone, deleted=False, erased=True)
        return Deletion(tombstone, deleted=True, erased=await self._erase_deleted(run_id, wait=wait_for_erase))

    @abc.abstractmethod
    async def _delete(self, run_id: str, expected_last_seq: int, deleted_at: float) -> tuple[Tombstone, bool]:
        """Hook: with the run's writers held off, check its last seq and store the tombstone durably.

        A last seq other than ``expected_last_seq`` is ``LastSeqMismatchError``
        with nothing written. Returns the tombstone and True, or the tombstone
        another deleter stored first and False. A store may erase the run here
        too, under the same hold (file); else ``_erase_deleted`` does.
        """

    async def _erase_deleted(self, run_id: str, *, wait: bool) -> bool:
        """Hook: after ``_delete`` stored this call's tombstone, erase the run (or begin to); True when nothing is left.

        This default erases before answering, whatever ``wait`` says. Without
        ``wait`` a store may start the erasure in the background and answer
        False; ``_erase`` then waits for it, and ``close`` stops it (``start``
        finishes it).
        """
        await self._erase(run_id)
        return True

    @abc.abstractmethod
    async def _erase(self, run_id: str) -> None:
        """Hook: remove what is left of a tombstoned run's stored bytes (idempotent), overwritten if the store can.

        Where erasures run in the background, this waits for the run's own.
        """

    @abc.abstractmethod
    async def tombstone(self, run_id: str) -> Tombstone | None:
        """The run's tombstone, or None when it was never deleted."""

    @abc.abstractmethod
    async def tombstones(self) -> list[Tombstone]:
        """Every tombstone (unordered): what a migration copies."""

    @abc.abstractmethod
    async def keep_tombstone(self, tombstone: Tombstone) -> None:
        """Store ``tombstone`` for a run this store does not hold (a migration's copy); idempotent.

        A run the store holds under that id is ``RunExistsError``: it is not removed.
        """

    async def refuse_deleted(self, run_id: str, err: Exception) -> NoReturn:
        """Raise RUN_DELETED if the run has a tombstone, else ``err``: for a read that found the run absent or damaged.

        Asked only on that path, so a healthy run's reads pay nothing for it.
        """
        found = await self.tombstone(run_id)
        if found is not None:
            raise RunDeletedError(run_id, found.last_seq) from err
        raise err

    def task_store(self) -> TaskStore:
        """The store of tasks kept beside the journals (same place, same durability)."""
        raise NotImplementedError(f"the {self.name} backend does not store tasks yet")


MAX_TASK_DOCUMENT_BYTES = 1 << 20
"""The largest task document (request or outcome) a task store must keep; ``tasks.py`` refuses larger ones."""


class TaskStore(abc.ABC):
    """Create-only storage of task documents: a request and, later, an outcome per task.

    Both writes are create-only and durable before they return, so the first
    completion wins at the store itself, whichever server replica races
    (file: a fully synced file linked into place; JetStream: a KV create).
    The store keeps bytes; ``tasks.py`` builds and reads them.
    """

    @abc.abstractmethod
    async def create_request(self, task_id: str, body: bytes) -> bytes | None:
        """Store the request if the task has none; None when stored, else the existing bytes."""

    @abc.abstractmethod
    async def create_outcome(self, task_id: str, body: bytes) -> bytes | None:
        """Store the outcome if the task has none; None when stored, else the existing bytes."""

    @abc.abstractmethod
    async def get(self, task_id: str) -> tuple[bytes | None, bytes | None]:
        """The task's request and outcome bytes, each None when absent."""

    @abc.abstractmethod
    async def list_task_ids(self) -> list[str]:
        """Every task id with a stored request and no tombstone (unordered)."""

    @abc.abstractmethod
    async def delete(self, task_id: str) -> bool:
        """Keep a durable tombstone of the task, then remove its documents; False when it had a tombstone already.

        The tombstone comes first, so a crash leaves the task whole or
        tombstoned, never readable in part; deleting again removes what a
        crash left. ``tasks.py`` checks that the task exists first.
        """

    @abc.abstractmethod
    async def is_deleted(self, task_id: str) -> bool:
        """True when the task has a tombstone (TASK_DELETED)."""

    @abc.abstractmethod
    async def deleted_task_ids(self) -> list[str]:
        """Every task id with a tombstone (unordered): what a migration copies (``delete`` stores one)."""
