"""The runs a server holds: one lock per run, its open journal and its warm state, bounded.

A ``Slot`` is created on first use of a run and pinned while an operation
uses it. While the server holds the run, the slot keeps the journal open (on
the file backend: its flock) and the folded state warm. At most
``max_open`` journals stay open: beyond that the least recently used idle
ones are closed, so 10,000 runs touched in turn do not exhaust file
descriptors, and so are they while the warm states together exceed
``max_warm_bytes`` of memory, so 24 runs of 16 MiB do not keep 400 MiB warm.
A warm state's memory is counted as the stored bytes folded into it times
``WARM_BYTES_PER_STORED_BYTE``, the measured cost of a folded byte. There is no lock shared
between runs: the slot table is only touched between awaits.

The handles also own reading a run for its state: the lock-free cold read
and fold (a long journal folded in a thread), its reuse by the open that
follows, catching up with what other writers stored, and the corruption
ledger those reads keep for the listing. Under the run's lock an operation
gets a state it may decide on from ``current`` (opened, or else caught up:
one or the other, once) or, when it decides on the warm state first and
refreshes only before refusing (Append), from ``open`` and ``catch_up``.

Nobody sees a write change the warm state ahead of the store: it is
replaced whole once the write's records are durable (``advance``), or,
written in place (one record on an exclusive writer lock), hidden from
``pre_read`` until then (``Slot.ahead``). A refused batch or a lost write
race leaves the slot usable, and the next attempt catches up with the tail
instead of reopening and refolding the run (``runs/writing.py``).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from runjournal_server.backends.base import Backend, Journal
from runjournal_server.core import records
from runjournal_server.core.errors import CorruptJournalError, RunDeletedError
from runjournal_server.core.fold import Folder, JournalRuleError, fold_stored

DEFAULT_MAX_WARM_BYTES = 256 * 1024 * 1024
"""Warm states beyond this many stored bytes in all are closed, least recently used first."""

WARM_BYTES_PER_STORED_BYTE = 3.5
"""The server memory one stored byte folded into a warm state costs, measured (``bench/warm_memory.py``).

A stored line is compact JSON; held warm it is decoded protobuf messages
(each field and string its own allocation) in the folded conversation, with
the per-message seq bookkeeping, the open turn's calls and the allocator's
slack around them. Counting stored bytes alone, ``max_warm_bytes`` 256 MiB
let the server grow by about 740 MiB (issue 28), and 64 MiB by about 230 MiB
on the benchmark's runs of tool calls and results (3.6 times): counted at
this factor, the setting is the memory the warm states hold, as an operator
reads it. Text-heavy records cost less per byte than this, so it errs on
the safe side."""

FOLD_ON_LOOP_RECORDS = 256
"""Journals shorter than this are folded on the event loop; longer ones in a thread."""


@dataclass
class Slot:
    """A run's lock and, while the server holds the run, its journal and warm state."""

    run_id: str
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    journal: Journal | None = None
    folder: Folder | None = None
    users: int = 0
    ahead: bool = False
    """True while ``folder`` holds a record written in place that is not durable yet (``runs/writing.py``):
    only the lock's holder may look at it then."""
    warm_bytes: int = 0
    """What ``folder`` costs in memory: the stored bytes folded into it times ``WARM_BYTES_PER_STORED_BYTE``."""

    @property
    def last_seq(self) -> int:
        assert self.journal is not None
        return self.journal.last_seq

    @property
    def folded_bytes(self) -> int:
        """The stored bytes folded into ``folder``: what a response built from it is bounded by
        (``ResponseLimit.check_state``); its memory cost, 3.5 times as much, would make every state of a run
        over about 9 MiB stored be built twice, once only to measure it."""
        return int(self.warm_bytes / WARM_BYTES_PER_STORED_BYTE) + 1


class ColdRead:
    """A lock-free read of a run and its fold, offered once to the open that follows it."""

    def __init__(self, stored: list[records.StoredRecord], folder: Folder) -> None:
        self.stored = stored
        self._folder: Folder | None = folder

    @property
    def unused(self) -> bool:
        return self._folder is not None

    def take(self) -> Folder:
        """The fold, once: after that it may be the warm state, changed by later records."""
        folder, self._folder = self._folder, None
        assert folder is not None
        return folder


class RunHandles:
    """The slot table and the bounded set of open journals."""

    def __init__(
        self,
        backend: Backend,
        *,
        max_open: int,
        max_warm_bytes: int = DEFAULT_MAX_WARM_BYTES,
    ) -> None:
        self._backend = backend
        self._max_open = max(1, max_open)
        self._max_warm_bytes = max_warm_bytes
        self._warm_bytes = 0
        self._known_corrupt: dict[str, str] = {}  # run id -> problem, from full reads
        self._slots: dict[str, Slot] = {}
        self._open: OrderedDict[str, None] = OrderedDict()

    def get(self, run_id: str) -> Slot | None:
        """The run's slot if it has one (for reads of warm state; never creates one)."""
        return self._slots.get(run_id)

    def use(self, run_id: str) -> SlotUse:
        """Pin the run's slot and hold its lock: ``async with handles.use(run_id) as slot``."""
        slot = self._slots.get(run_id)
        if slot is None:
            slot = self._slots[run_id] = Slot(run_id)
        return SlotUse(self, slot)

    def usable(self, slot: Slot) -> bool:
        """True when the slot holds the run open with its warm state, and the journal is not ``poisoned``."""
        journal = slot.journal
        return journal is not None and slot.folder is not None and not journal.poisoned

    def held(self, slot: Slot) -> tuple[Journal, Folder]:
        """The journal and warm state of a slot that holds the run open (``open``, ``current``)."""
        assert slot.journal is not None and slot.folder is not None, f"run {slot.run_id!r} is not open"
        return slot.journal, slot.folder

    async def open(self, slot: Slot, cold: ColdRead | None = None) -> tuple[Journal, Folder]:
        """The run's journal and warm state, opening the journal (taking its lock) unless the slot holds it usable.

        ``cold`` is a lock-free read of the run made just before: the backend
        reuses its records where the stored bytes are unchanged, and when it
        hands back exactly those records (nothing was written since), their
        fold is adopted as the warm state instead of being computed again.
        """
        if not self.usable(slot):
            await self.drop(slot)
            known = cold.stored if cold is not None else ()
            try:
                journal, stored = await self._backend.open_journal(slot.run_id, known)
            except CorruptJournalError as err:
                self._corrupt(err)
                raise
            try:
                unchanged = cold is not None and cold.unused and same_records(stored, cold.stored)
                folder = cold.take() if unchanged and cold is not None else await self.fold_cold(slot.run_id, stored)
            except BaseException:
                await journal.close()
                raise
            self.adopt(slot, journal, folder, stored_bytes(stored))
        self._open.move_to_end(slot.run_id)
        return self.held(slot)

    async def current(self, slot: Slot, cold: ColdRead | None = None) -> tuple[Journal, Folder]:
        """What an operation decides on under the run's lock: the run opened (reusing ``cold``), or refreshed.

        One or the other, once: an open reads every stored record, so the run
        it hands back is current; a run held already may have moved since (on
        a store shared by replicas), so it catches up with the tail.
        """
        if not self.usable(slot):
            return await self.open(slot, cold)
        await self.catch_up(slot)
        return self.held(slot)

    async def catch_up(self, slot: Slot) -> bool:
        """Adopt records other writers stored after the held journal's tail; True if any.

        Never any with an exclusive writer lock (``Journal.refresh`` reads
        nothing there). The slot holds the run open (``open``).
        """
        journal, folder = self.held(slot)
        try:
            newer = await journal.refresh()
        except RunDeletedError:  # another replica deleted the run: the backend found its tombstone
            await self.drop(slot)
            raise
        for item in newer:
            try:
                folder.apply_stored(item)
            except JournalRuleError as err:
                await self.drop(slot)
                raise self._corrupt(CorruptJournalError(slot.run_id, err.detail, seq=err.seq)) from err
        self.grow(slot, stored_bytes(newer))
        return bool(newer)

    async def pre_read(self, run_id: str) -> tuple[Folder, ColdRead | None]:
        """The state to check a request against before taking any lock.

        The warm state when the server holds the run (and no write in place is
        in flight, ``Slot.ahead``); else a cold read and fold without any lock,
        returned too so that opening the run next can reuse it instead of
        decoding and folding the journal a second time.
        """
        slot = self._slots.get(run_id)
        if slot is not None and slot.folder is not None and slot.journal is not None and not slot.ahead:
            return slot.folder, None
        stored = await self.load(run_id)
        folder = await self.fold_cold(run_id, stored)
        return folder, ColdRead(stored, folder)

    async def load(self, run_id: str) -> list[records.StoredRecord]:
        """Every stored record of the run, read without its lock; damage is remembered for the listing."""
        try:
            return await self._backend.load(run_id)
        except CorruptJournalError as err:
            raise self._corrupt(err) from None

    async def fold_cold(self, run_id: str, stored: Sequence[records.StoredRecord], *, whole: bool = True) -> Folder:
        """Fold stored records; a long journal in a thread, so other runs' calls do not wait on it.

        A rule the records break is corruption, remembered for the listing
        (here, on the event loop, where the ledger is kept). Only a fold of
        the ``whole`` journal clears what the ledger holds: a clean prefix
        says nothing of the records after it.
        """
        try:
            if len(stored) < FOLD_ON_LOOP_RECORDS:
                folder = _fold_checked(run_id, stored)
            else:
                folder = await asyncio.to_thread(_fold_checked, run_id, stored)
        except CorruptJournalError as err:
            raise self._corrupt(err) from None
        if whole:
            self._known_corrupt.pop(run_id, None)  # the whole journal just read back clean
        return folder

    def note_corrupt(self, err: CorruptJournalError) -> None:
        """Remember damage found by any read of a run, so the listing shows the run as CORRUPT."""
        self._corrupt(err)

    def forget_corrupt(self, run_id: str) -> None:
        """Forget the damage found in a run that is now deleted."""
        self._known_corrupt.pop(run_id, None)

    def _corrupt(self, err: CorruptJournalError) -> CorruptJournalError:
        self._known_corrupt[err.run_id] = err.message
        return err

    @property
    def corruption(self) -> Mapping[str, str]:
        """Run id -> the damage a full read of it found (read by the listing)."""
        return self._known_corrupt

    def adopt(self, slot: Slot, journal: Journal, folder: Folder, warm_bytes: int) -> None:
        slot.journal, slot.folder = journal, folder
        self._open[slot.run_id] = None
        self.grow(slot, warm_bytes)

    def advance(self, slot: Slot, folder: Folder, nbytes: int) -> None:
        """Make ``folder`` (the write's records applied to it) the warm state, now that they are durable."""
        slot.folder = folder
        self.grow(slot, nbytes)

    def grow(self, slot: Slot, nbytes: int) -> None:
        """Count ``nbytes`` more stored bytes folded into the slot's warm state, at what they cost in memory."""
        cost = warm_cost(nbytes)
        slot.warm_bytes += cost
        self._warm_bytes += cost

    @property
    def open_count(self) -> int:
        return len(self._open)

    @property
    def warm_bytes(self) -> int:
        """The memory every warm state held costs (``warm_cost`` of the stored bytes folded into them)."""
        return self._warm_bytes

    async def drop(self, slot: Slot) -> None:
        """Close the run's journal and forget its warm state (caller holds the run lock)."""
        journal, slot.journal, slot.folder = slot.journal, None, None
        self._open.pop(slot.run_id, None)
        self._warm_bytes -= slot.warm_bytes
        slot.warm_bytes = 0
        if journal is not None:
            await journal.close()

    async def evict_beyond_bound(self) -> None:
        """Close the least recently used idle journals beyond the bounds (file descriptors, memory)."""
        if not self._over_bounds():
            return
        for run_id in list(self._open):
            if not self._over_bounds():
                return
            slot = self._slots.get(run_id)
            if slot is None or slot.users or slot.lock.locked():
                continue
            async with slot.lock:
                await self.drop(slot)
            self._forget_if_idle(slot)

    def _over_bounds(self) -> bool:
        return len(self._open) > self._max_open or self._warm_bytes > self._max_warm_bytes

    def release(self, slot: Slot) -> None:
        slot.users -= 1
        self._forget_if_idle(slot)

    def _forget_if_idle(self, slot: Slot) -> None:
        """Remove a closed, unused slot so the slot table stays as small as the open set."""
        idle = not slot.users and slot.journal is None and not slot.lock.locked()
        if idle and self._slots.get(slot.run_id) is slot:
            del self._slots[slot.run_id]

    async def close(self) -> None:
        """Close every journal this server holds (releasing their locks)."""
        for slot in list(self._slots.values()):
            async with slot.lock:
                await self.drop(slot)
        self._slots.clear()


def _fold_checked(run_id: str, stored: Sequence[records.StoredRecord]) -> Folder:
    """Fold stored records of ``run_id``; a rule they break, or a meta naming another run, is corruption."""
    try:
        folder = fold_stored(stored)
    except JournalRuleError as err:
        raise CorruptJournalError(run_id, err.detail, seq=err.seq) from err
    if folder.run_id != run_id:
        raise CorruptJournalError(run_id, f"its meta names run {folder.run_id!r}", seq=1)
    return folder


def warm_cost(stored: int) -> int:
    """The memory a warm state of ``stored`` folded bytes costs (``WARM_BYTES_PER_STORED_BYTE``)."""
    return int(stored * WARM_BYTES_PER_STORED_BYTE)


def stored_bytes(stored: Sequence[records.StoredRecord]) -> int:
    return sum(len(item.line) for item in stored)


def same_records(opened: Sequence[records.StoredRecord], read: Sequence[records.StoredRecord]) -> bool:
    """True when the backend handed back the very records of the earlier read (bytes verified by it)."""
    return len(opened) == len(read) and all(a is b for a, b in zip(opened, read, strict=True))


class SlotUse:
    """Pins a run's slot and holds its lock for one operation."""

    def __init__(self, handles: RunHandles, slot: Slot) -> None:
        self._handles = handles
        self._slot = slot

    async def __aenter__(self) -> Slot:
        self._slot.users += 1
        try:
            await self._slot.lock.acquire()
        except BaseException:
            self._handles.release(self._slot)
            raise
        return self._slot

    async def __aexit__(self, *exc: object) -> None:
        self._slot.lock.release()
        self._handles.release(self._slot)
        await self._handles.evict_beyond_bound()
