"""The contract every storage backend keeps, stated once: ``Backend``, the store of run journals.

A backend stores and returns the canonical lines produced by ``records.py``;
it never builds or re-serialises a record, so byte-identity across backends is
a property of the structure. It does not decide sequence rules: ``runs/``
applies the shared append rule (``sequence.py``) and the fold checks, then
hands the backend lines that are already valid and already numbered.

The contract, a module per part:

* ``base.py`` (here): ``Backend``: creating, opening and reading runs;
* ``journal.py``: ``Journal``, a run opened for writing, and the promises of
  its appends (durable, all or nothing, ``WriteRaceError``);
* ``deletion.py``: deleting runs and the rule "is this run deleted", kept by
  the backends alone; ``tombstone.py``: the tombstone and its one document;
* ``reading.py``: checking a record read back (``decode_at``) and the
  backward walk of ``ends`` and ``tail``;
* ``task_store.py``: the task documents kept beside the journals.

The names other packages import from here (``Journal``, ``Tombstone``,
``decode_at`` ...) are re-exported, so ``from runjournal_server.backends.base
import X`` names the whole contract.

The promises of ``Backend``:

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

The public methods keep the rules every backend shares (meta at seq 1, batch
numbering, the backward walk of ``ends`` and ``tail``) and then call small
storage hooks; they are ``final``, so a backend changes how bytes are stored,
never the rules. The hooks are the ``_``-prefixed methods a backend fills:
``Backend._create_exclusive`` and (where the store can read from the end)
``Backend._walk_back``, besides those of ``Journal`` and ``Deletions``.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, final

from runjournal_server.backends.deletion import Deletion, Deletions
from runjournal_server.backends.journal import Journal, StoreObserver, WriteRaceError, check_numbering, timed_store
from runjournal_server.backends.reading import BackwardWalk, check_seq, decode_at
from runjournal_server.backends.task_store import MAX_TASK_DOCUMENT_BYTES, TaskStore
from runjournal_server.backends.tombstone import Tombstone
from runjournal_server.core.errors import CorruptJournalError, RunExistsError, RunNotFoundError
from runjournal_server.core.records import StoredRecord

if TYPE_CHECKING:
    from runjournal_server.backends.index_store import SharedIndexStore

__all__ = [
    "MAX_TASK_DOCUMENT_BYTES",
    "Backend",
    "BackendStartError",
    "BackwardWalk",
    "Deletion",
    "Journal",
    "RunEnds",
    "StoreObserver",
    "TaskStore",
    "Tombstone",
    "WriteRaceError",
    "check_seq",
    "decode_at",
]


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


class BackendStartError(Exception):
    """The store cannot be used as configured; the message names the fix."""


class Backend(Deletions):
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
        of runs they delete (for Watch, WatchRuns and the listing index).

        Not of this server's own acknowledged writes, nor of a deletion it
        answered ``deleted``: ``runs/`` tells those itself, right after the
        ack or the answer, and each listener hears of a change once.
        Called once, after ``start``. Where the writer lock is exclusive
        (files) every change is made by this server: nothing to follow. A
        store shared by replicas (``shared_writers``) overrides this to follow
        what the others do.
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
            return await timed_store(self._create_exclusive(run_id, batch), len(batch), observer)
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

    async def run_versions(self, run_ids: Sequence[str]) -> dict[str, object] | None:
        """A cheap version of the journal of each of ``run_ids``: runs absent are left out.

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

    def task_store(self) -> TaskStore:
        """The store of tasks kept beside the journals (same place, same durability)."""
        raise NotImplementedError(f"the {self.name} backend does not store tasks yet")
