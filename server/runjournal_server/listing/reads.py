"""The listing index's reads of the journals: placing runs, reading their states again, filling labels.

``IndexReads`` changes an entry of the index (``listing/index.py``) only
from a read of the run's journal, and never over news that arrived while
the read was in flight: an entry's ``gen`` moves with every piece of news,
and a read whose entry moved meanwhile leaves it dirty for the next one.
The version of a journal is always taken before its summary is read, so
the version kept with a state is never newer than the state (a repair that
finds the journal moved since reads it again).

Every change it makes is kept as an op for the persisted copy
(``listing/persistence.py``), which the upkeep takes each tick
(``take_changes``). Reads go ``TICK_RUNS`` runs per step with
``READ_CONCURRENCY`` in flight, so appends never wait behind them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from runjournal.v1 import state_pb2
from runjournal_server.backends.base import Backend
from runjournal_server.backends.index_store import (
    LABELS_UNKNOWN,
    Entry,
    Op,
    RunState,
    no_meta_key,
    shared_labels,
)
from runjournal_server.core.errors import JournalError, RunDeletedError, RunNotFoundError
from runjournal_server.core.kinds import Kind
from runjournal_server.listing.index import ListingIndex

TICK_RUNS = 256
READ_CONCURRENCY = 8
"""Fewer reads in flight than the I/O threads: an append's write never queues behind the upkeep's reads."""

T = TypeVar("T")
K = TypeVar("K")

Summarize = Callable[[str], Awaitable[state_pb2.RunSummary]]
"""The listing rule for one run (``RunListing.summary``); RunNotFoundError when it is not there."""


class IndexReads:
    """The reads that keep the index's entries as their journals say (see the module docstring)."""

    def __init__(
        self, backend: Backend, index: ListingIndex, summarize: Summarize, known_corrupt: Callable[[str], bool]
    ) -> None:
        self._backend = backend
        self._index = index
        self._summarize = summarize
        self._known_corrupt = known_corrupt
        self._ops: list[Op] = []
        self._placing = asyncio.Lock()

    def take_changes(self) -> list[Op]:
        """The changes made since the last call, for the persisted copy."""
        ops, self._ops = self._ops, []
        return ops

    async def place_pending(self) -> None:
        """Place every run told of but not yet placed: a page never misses a run created a moment ago.

        One placement at a time: ``_place`` takes its runs off the pending set
        before it reads them, so a second caller that did not wait would find
        the set empty and walk the index without them.
        """
        async with self._placing:
            while self._index.pending:
                batch = sorted(self._index.pending)[:TICK_RUNS]
                await self._place(batch)

    def observed(self, entry: Entry, gen: int, summary: state_pb2.RunSummary) -> None:
        """A page read ``summary`` for ``entry``: keep the state it shows, unless news arrived meanwhile.

        The entry keeps the version it had (read before this state, so a
        repair that finds the journal moved since reads it again).
        """
        if self._index.get(entry.run_id) is not entry or entry.gen != gen:
            return
        if summary.status == state_pb2.RUN_STATUS_UNAVAILABLE or self._known_corrupt(entry.run_id):
            return  # what the store said this time, or what a full read found: not the journal's listing state
        version = entry.state.version if entry.state is not None else None
        self._record(entry, RunState.of(summary, version))

    def drop(self, run_id: str) -> None:
        """The run is gone (a read found it absent, or news of its deletion): no entry, no persisted row."""
        if self._index.remove(run_id) is not None:
            self._ops.append(("drop", run_id))

    async def _place(self, run_ids: Sequence[str]) -> None:
        """Place runs the index lacks, from one summary read each (it carries the meta's facts).

        A run whose summary is not the journal's listing state (corrupt,
        unavailable, known corrupt) is placed from its meta alone and read
        again later; the version is taken before the summary, as always.
        """
        for start in range(0, len(run_ids), TICK_RUNS):
            chunk = [r for r in run_ids[start : start + TICK_RUNS] if r not in self._index]
            self._index.pending.difference_update(chunk)  # news during the reads puts a run back: then dirty
            versions = await self._backend.run_versions(chunk) or {}
            summaries = await self._gather(chunk, self._read_summary)
            odd = [
                run_id
                for run_id, summary in zip(chunk, summaries, strict=True)
                if summary is not None and not self._is_state(run_id, summary)
            ]
            metas = dict(zip(odd, await self._gather(odd, self._meta_entry), strict=True))
            for run_id, summary in zip(chunk, summaries, strict=True):
                moved = run_id in self._index.pending
                if run_id in self._index or (summary is None and not moved):
                    self._index.pending.discard(run_id)
                    continue
                if summary is None:
                    continue  # gone when read, told of since: read again
                entry = metas.get(run_id) if run_id in metas else self._summary_entry(summary, versions.get(run_id))
                if entry is None:
                    self._index.pending.discard(run_id)
                    continue
                entry.dirty = entry.dirty or moved
                self._index.put(entry)
                self._ops.append(("put", entry))

    def _is_state(self, run_id: str, summary: state_pb2.RunSummary) -> bool:
        """Whether ``summary`` is what the journal says (not a damage, a store failure or a full read's finding)."""
        bad = (state_pb2.RUN_STATUS_CORRUPT, state_pb2.RUN_STATUS_UNAVAILABLE)
        return summary.status not in bad and not self._known_corrupt(run_id)

    @staticmethod
    def _summary_entry(summary: state_pb2.RunSummary, version: object) -> Entry:
        entry = Entry(
            run_id=summary.run_id,
            key=(summary.created_at.seconds, summary.created_at.nanos, summary.run_id),
            labels=shared_labels(summary.labels),
            task_id=summary.task_id,
            parent_run_id=summary.parent_run_id,
            spawned_by_run_id=summary.spawned_by_run_id,
            root_run_id=summary.root_run_id,
            dirty=False,
        )
        entry.set_state(RunState.of(summary, version))  # not placed yet: put() files it
        return entry

    async def _meta_entry(self, run_id: str) -> Entry | None:
        try:
            stored = await self._backend.meta(run_id)
        except (RunNotFoundError, RunDeletedError):
            return None
        except JournalError:
            return Entry(run_id=run_id, key=no_meta_key(run_id), labels=None)  # listed from its summary, last
        if stored.record is None or stored.record.WhichOneof("payload") != Kind.META:
            return Entry(run_id=run_id, key=no_meta_key(run_id), labels=None)
        meta = stored.record.meta
        return Entry(
            run_id=run_id,
            key=(meta.created_at.seconds, meta.created_at.nanos, run_id),
            labels=shared_labels(meta.labels),
            task_id=meta.task_id,
            parent_run_id=meta.forked_from.run_id,
            spawned_by_run_id=meta.spawned_by.run_id,
            root_run_id=meta.spawned_by.root_run_id,
        )

    async def refresh(self, run_ids: Sequence[str]) -> None:
        """Read the summaries of ``run_ids`` again (version first), and record what they show."""
        for start in range(0, len(run_ids), TICK_RUNS):
            chunk = [r for r in run_ids[start : start + TICK_RUNS] if r in self._index]
            gens = {r: self._index.get(r).gen for r in chunk}  # type: ignore[union-attr]
            versions = await self._backend.run_versions(chunk) or {}
            found = await self._gather(chunk, self._read_summary)
            for run_id, summary in zip(chunk, found, strict=True):
                entry = self._index.get(run_id)
                if entry is None or entry.gen != gens[run_id]:
                    continue  # news arrived meanwhile: it stays dirty for the next tick
                if summary is None:
                    self.drop(run_id)
                elif summary.status == state_pb2.RUN_STATUS_UNAVAILABLE:
                    continue
                elif entry.labels is None and summary.status != state_pb2.RUN_STATUS_CORRUPT:
                    # Its meta could not be read before and the run reads now: place it properly.
                    self.drop(run_id)
                    self._index.pending.add(run_id)
                elif self._known_corrupt(run_id):
                    self._index.mark_clean(entry)  # listed as corrupt by the listing itself; its state is not this
                else:
                    self._record(entry, RunState.of(summary, versions.get(run_id)))

    async def fill_labels(self, entries: Sequence[Entry]) -> None:
        """Read the metas of entries whose labels are not known (never persisted: they are content)."""

        async def one(entry: Entry) -> None:
            try:
                stored = await self._backend.meta(entry.run_id)
            except (RunNotFoundError, RunDeletedError):
                self.drop(entry.run_id)
                return
            except JournalError:
                stored = None
            if self._index.get(entry.run_id) is not entry or entry.labels is not LABELS_UNKNOWN:
                return
            if stored is None or stored.record is None or stored.record.WhichOneof("payload") != Kind.META:
                entry.labels = None  # unreadable now: excluded by any meta condition, as the full listing does
            else:
                entry.labels = shared_labels(stored.record.meta.labels)

        await self._gather(entries, one)

    async def _read_summary(self, run_id: str) -> state_pb2.RunSummary | None:
        try:
            return await self._summarize(run_id)
        except (RunNotFoundError, RunDeletedError):
            return None

    def _record(self, entry: Entry, state: RunState) -> None:
        self._index.mark_clean(entry)
        if state != entry.state:
            self._index.set_state(entry, state)
            self._ops.append(("put", entry))

    async def _gather(self, items: Sequence[K], read: Callable[[K], Awaitable[T]]) -> list[T]:
        found: list[T] = []
        for start in range(0, len(items), READ_CONCURRENCY):
            found += await asyncio.gather(*(read(item) for item in items[start : start + READ_CONCURRENCY]))
        return found
