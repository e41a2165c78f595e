"""ListRuns and WatchRuns: pages of run summaries, newest first, by the shared listing rule.

A run's summary comes from its meta and its last non-inert record (see
``core/summary.py``), and, where a call might wait for a person, from the
trailing turn (``core/inbox.py``): never from a fold of the whole journal.

Which runs a page holds comes from the listing index (``listing/index.py``,
kept true by ``listing/upkeep.py``): the newest-first order of the token's
runs and their last known states, so a page reads the summaries it returns
(plus one, to know whether another page follows), not every run. Every
summary returned is read from its journal. Without the index (being rebuilt,
switched off, or on a shared store whose news cannot be known complete) a
page reads every run's meta, cached per server lifetime, and tail, as it
always did. Either way one helper (``_fill``) fills the page from the
candidates in order. A page ends at a sort key (``page_after``, which
WatchRuns walks); only ListRuns turns it into a page token (``page``).

Damage is never hidden: a run whose meta or tail cannot be read, or that the
server already found damaged on a full read, is listed as CORRUPT. Nor does
one run fail the listing of all the others: a run the store fails to read
(STORAGE_UNAVAILABLE, or any refusal but "not found") is listed as
UNAVAILABLE with what the store said, and read again by the next listing.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from runjournal.v1 import state_pb2
from runjournal_server.backends.base import Backend
from runjournal_server.backends.index_store import LABELS_UNKNOWN, Entry, no_meta_key
from runjournal_server.core.errors import (
    CorruptJournalError,
    InvalidArgumentError,
    JournalError,
    RunDeletedError,
    RunNotFoundError,
)
from runjournal_server.core.inbox import MAY_WAIT_AFTER_KINDS, TURN_START_KINDS, waiting_calls
from runjournal_server.core.kinds import Kind
from runjournal_server.core.page_token import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    SortKey,
    decode_page_token,
    encode_page_token,
    filters_digest,
)
from runjournal_server.core.summary import corrupt_summary, is_inert, summarize_stored, unavailable_summary
from runjournal_server.listing.filter import RunFilter
from runjournal_server.listing.index import ListingIndex
from runjournal_server.listing.upkeep import ListingUpkeep
from runjournal_server.runs.runs import Runs

READ_CONCURRENCY = 8
"""Summaries read at once. More only contend for the GIL (each read decodes in its thread): at 100,000 runs,
32 at once stalled the event loop 70-85 ms per page, 8 at once 8-15 ms and answered as fast."""
WALK_CHUNK = 512
"""Index entries a page's walk examines between two turns of the event loop."""


class _Candidate(Protocol):
    """A run that may be on a page, in the page's order: an index entry, or a run the full read listed."""

    @property
    def run_id(self) -> str: ...

    @property
    def key(self) -> SortKey: ...


C = TypeVar("C", bound=_Candidate)


@dataclass(frozen=True)
class _Listed:
    """A run the full read listed (without the index), at its place in the order."""

    run_id: str
    key: SortKey


async def _each(candidates: Sequence[C]) -> AsyncGenerator[C, None]:
    for candidate in candidates:
        yield candidate


@dataclass(frozen=True)
class _MetaInfo:
    """What listing needs from a run's meta; immutable once the run exists."""

    sort_key: SortKey
    labels: Mapping[str, str]
    task_id: str
    parent_run_id: str
    spawned_by_run_id: str
    root_run_id: str


class RunListing:
    """Summaries and pages of runs over one backend: from the listing index once it holds every run."""

    def __init__(self, backend: Backend, known_corrupt: Mapping[str, str]) -> None:
        self._backend = backend
        self._known_corrupt = known_corrupt  # run id -> problem, kept by runs/runs.py from full reads
        self._meta_cache: dict[str, _MetaInfo] = {}
        self._unavailable: set[str] = set()
        """Runs the last read of which the store refused (listed UNAVAILABLE): the index keeps their journal's
        state, which a store failure is not, so until a read succeeds they are candidates of every page, as a
        dirty run is; otherwise a filter by UNAVAILABLE, answered from the index, would never find them."""
        self._index = ListingIndex()
        self.upkeep = ListingUpkeep(backend, self._index, self.summary, known_corrupt.__contains__)
        """Told of every write and deletion (through ``stored`` and ``deleted``); keeps the index true."""

    @classmethod
    def of(cls, runs: Runs) -> RunListing:
        """The listing of ``runs``' store, told of every write and deletion ``runs`` announces."""
        listing = cls(runs.backend, runs.corruption)
        runs.events.listen(listing)
        return listing

    async def start(self, *, defer: bool = False) -> None:
        """Load the persisted listing index; the rest of its repair runs in the background (``listing/upkeep.py``),
        once ``serving`` is called if ``defer``."""
        await self.upkeep.start(defer=defer)

    def serving(self) -> None:
        self.upkeep.serving()

    async def close(self) -> None:
        await self.upkeep.close()

    async def page(
        self, *, page_size: int, page_token: str, where: RunFilter
    ) -> tuple[list[state_pb2.RunSummary], str]:
        """ListRuns' page: the runs after the position ``page_token`` names, and the next page's token."""
        if page_size < 0 or page_size > MAX_PAGE_SIZE:
            raise InvalidArgumentError("page_size", f"must be between 0 and {MAX_PAGE_SIZE}")
        where.check()
        digest = filters_digest(dataclasses.asdict(where))  # the token's prefixes too: a token is its caller's
        after = decode_page_token(page_token, digest)
        page, last = await self.page_after(after, page_size=page_size or DEFAULT_PAGE_SIZE, where=where)
        return page, encode_page_token(last, digest)

    async def page_after(
        self, after: SortKey | None, *, page_size: int, where: RunFilter
    ) -> tuple[list[state_pb2.RunSummary], SortKey | None]:
        """Up to ``page_size`` (at least 1) summaries ``where`` admits, newest first, after the position ``after``.

        With the sort key of the page's last run when another page follows,
        else None: the position, not a token, so WatchRuns walks the listing
        by it and only ListRuns encodes it. ``where`` is checked by its caller
        (``RunFilter.check``).
        """
        if (
            self.upkeep.ready
            and await self.upkeep.trusted()
            and (not where.has_state_condition or await self.upkeep.states_checked())
        ):
            await self.upkeep.place_pending()
            return await self._fill(self._matching(where, after, page_size), self._read_indexed, page_size, where)
        return await self._fill(_each(await self._listed(where, after)), self._read_listed, page_size, where)

    @staticmethod
    async def _fill(
        candidates: AsyncGenerator[C, None],
        read: Callable[[Sequence[C]], Awaitable[list[state_pb2.RunSummary | None]]],
        page_size: int,
        where: RunFilter,
    ) -> tuple[list[state_pb2.RunSummary], SortKey | None]:
        """The page of both walks (the index's and the full read's): ``candidates`` in the page's order,
        whose summaries ``read`` reads a window at a time, kept when their state passes ``where``.

        A window holds the summaries the page still needs, plus one to know
        whether another page follows, read concurrently (each is a small read
        off the event loop). So the one past the page is always a window's last.
        """
        page: list[state_pb2.RunSummary] = []
        last_key: SortKey | None = None
        async with contextlib.aclosing(candidates):
            while True:
                wanted = page_size + 1 - len(page)
                window: list[C] = []
                async for candidate in candidates:
                    window.append(candidate)
                    if len(window) == wanted:
                        break
                if not window:
                    return page, None
                for candidate, summary in zip(window, await read(window), strict=True):
                    if summary is None or not where.admits_state(summary):
                        continue
                    if len(page) == page_size:
                        return page, last_key
                    page.append(summary)
                    last_key = candidate.key

    async def _listed(self, where: RunFilter, after: SortKey | None) -> list[_Listed]:
        """Without the index: every run of the token's prefixes, by its meta (cached), newest first."""
        run_ids = [r for r in await self._backend.list_run_ids() if where.admits_run_id(r)]
        infos = await self._meta_infos(run_ids)
        listed = [
            _Listed(run_id, info.sort_key if (info := infos.get(run_id)) is not None else no_meta_key(run_id))
            for run_id in run_ids  # an unreadable meta: listed last
        ]
        listed.sort(key=lambda candidate: candidate.key, reverse=True)
        return [
            candidate
            for candidate in listed
            if (after is None or candidate.key < after) and self._meta_matches(infos.get(candidate.run_id), where)
        ]

    async def _read_listed(self, window: Sequence[_Listed]) -> list[state_pb2.RunSummary | None]:
        return await self._summaries([candidate.run_id for candidate in window])

    async def _read_indexed(self, window: Sequence[Entry]) -> list[state_pb2.RunSummary | None]:
        """The window's summaries, each told to the upkeep: the index keeps the state read, or drops the run.

        The index chooses the candidates (a dirty run is one for every state
        filter); what a listed run says always comes from its journal, now.
        """
        gens = [entry.gen for entry in window]
        summaries = await self._summaries([entry.run_id for entry in window])
        for entry, gen, summary in zip(window, gens, summaries, strict=True):
            if summary is not None and summary.status == state_pb2.RUN_STATUS_UNAVAILABLE:
                self._unavailable.add(entry.run_id)
            else:
                self._unavailable.discard(entry.run_id)
            if summary is None:
                self.upkeep.forget(entry.run_id)
            else:
                self.upkeep.observed(entry, gen, summary)
        return summaries

    async def _matching(self, where: RunFilter, after: SortKey | None, page_size: int) -> AsyncGenerator[Entry, None]:
        """The candidates that may match, in order, a chunk at a time (the event loop runs between chunks).

        A label filter reads the labels of a chunk's runs that are not known
        since the restart (never persisted) before it decides on them.
        """
        walk = self._candidates(where, after, page_size)
        while chunk := list(itertools.islice(walk, WALK_CHUNK)):
            if where.labels:
                await self.upkeep.fill_labels([entry for entry in chunk if entry.labels is LABELS_UNKNOWN])
            for entry in chunk:
                if self._may_match(entry, where):
                    yield entry
            await asyncio.sleep(0)  # a long walk (a sparse filter over many runs) lets other calls run

    def _candidates(self, where: RunFilter, after: SortKey | None, page_size: int) -> Iterator[Entry]:
        """The runs that could be on the page, newest first: a sparse state filter's few, or a walk.

        The few are the runs whose last known state could pass (by status,
        or waiting) plus every dirty and known-corrupt run, sorted; taken
        when sorting them costs less than the walk would (which examines
        about page_size x runs / few entries), and only for a token that
        sees every run, so a tenant never costs what other tenants hold.
        """
        statuses, waiting = where.possible_states()
        if "" in where.run_id_prefixes:
            few = self._index.with_state(statuses, waiting)
            if few is not None and len(few) * len(few) < page_size * len(self._index):
                few.update(self._index.dirty_run_ids())
                few.update(run_id for run_id in self._known_corrupt if run_id in self._index)
                few.update(run_id for run_id in self._unavailable if run_id in self._index)
                return iter(self._index.newest_of(few, after))
        return self._index.newest_first(tuple(where.run_id_prefixes), after)

    def _may_match(self, entry: Entry, where: RunFilter) -> bool:
        """Whether the run could be on the page: its meta's facts, and its last known state unless that moved."""
        if entry.labels is None:
            if where.has_meta_condition:
                return False  # as the full listing: an unreadable meta is excluded by any meta condition
        elif not where.admits_meta(
            entry.labels, entry.task_id, entry.parent_run_id, entry.spawned_by_run_id, entry.root_run_id, entry.run_id
        ):
            return False
        if entry.dirty or entry.run_id in self._known_corrupt or entry.run_id in self._unavailable:
            return True
        known = entry.state_summary()
        return known is None or where.admits_state(known)

    async def _summaries(self, run_ids: Sequence[str]) -> list[state_pb2.RunSummary | None]:
        """Summaries in order; None for a journal with no complete record (a creation that never
        became durable: the run does not exist, and must not fail the whole listing)."""

        async def one(run_id: str) -> state_pb2.RunSummary | None:
            try:
                return await self.summary(run_id)
            except (RunNotFoundError, RunDeletedError):
                return None  # deleted between the listing of ids and this read: not a run any more

        found: list[state_pb2.RunSummary | None] = []
        for begin in range(0, len(run_ids), READ_CONCURRENCY):
            found += await asyncio.gather(*(one(r) for r in run_ids[begin : begin + READ_CONCURRENCY]))
        return found

    @staticmethod
    def _meta_matches(info: _MetaInfo | None, where: RunFilter) -> bool:
        if not where.has_meta_condition:
            return True  # an unreadable meta is listed (as corrupt) unless a meta condition excludes it
        return info is not None and where.admits_meta(
            info.labels,
            info.task_id,
            info.parent_run_id,
            info.spawned_by_run_id,
            info.root_run_id,
            info.sort_key[2],
        )

    async def summary(self, run_id: str) -> state_pb2.RunSummary:
        """One run's summary: meta, last non-inert record and, where a call may wait, the trailing turn."""
        known = self._known_corrupt.get(run_id)
        if known is not None:
            return corrupt_summary(run_id, known)
        try:
            ends = await self._backend.ends(run_id, is_inert)
            summary = summarize_stored(run_id, ends.meta, ends.last_significant, ends.last_seq)
            if ends.stored_at is not None and summary.status != state_pb2.RUN_STATUS_CORRUPT:
                summary.updated_at.FromNanoseconds(int(ends.stored_at * 1e9))
            if summary.status != state_pb2.RUN_STATUS_CORRUPT and ends.last_significant.kind in MAY_WAIT_AFTER_KINDS:
                tail = await self._backend.tail(run_id, lambda stored: stored.kind in TURN_START_KINDS)
                summary.waiting_calls.extend(waiting_calls(tail))
        except CorruptJournalError as err:
            return corrupt_summary(run_id, err.message)
        except (RunNotFoundError, RunDeletedError):
            raise  # a creation that never became durable, or a deleted run: not a run (see _summaries)
        except JournalError as err:
            return unavailable_summary(run_id, err.message)
        return summary

    # RunListener (``runs/events.py``): told of every acknowledged write and deletion, this server's and the
    # feed's, once each.

    def stored(self, run_id: str, last_seq: int) -> None:
        self.upkeep.stored(run_id, last_seq)

    def deleted(self, run_id: str) -> None:
        """Drop what is cached of a deleted run's meta (a tombstoned id is never created again, but stay exact)."""
        self._meta_cache.pop(run_id, None)
        self._unavailable.discard(run_id)
        self.upkeep.deleted(run_id)

    async def _meta_infos(self, run_ids: Sequence[str]) -> dict[str, _MetaInfo]:
        missing = [r for r in run_ids if r not in self._meta_cache]
        for start in range(0, len(missing), READ_CONCURRENCY):
            chunk = missing[start : start + READ_CONCURRENCY]
            await asyncio.gather(*(self._cache_meta(r) for r in chunk))
        return {r: self._meta_cache[r] for r in run_ids if r in self._meta_cache}

    async def _cache_meta(self, run_id: str) -> None:
        try:
            stored = await self._backend.meta(run_id)
        except JournalError:
            return  # listed from its summary, sorted last; retried next time
        if stored.record is None or stored.record.WhichOneof("payload") != Kind.META:
            return
        meta = stored.record.meta
        self._meta_cache[run_id] = _MetaInfo(
            sort_key=(meta.created_at.seconds, meta.created_at.nanos, run_id),
            labels=dict(meta.labels),
            task_id=meta.task_id,
            parent_run_id=meta.forked_from.run_id,
            spawned_by_run_id=meta.spawned_by.run_id,
            root_run_id=meta.spawned_by.root_run_id,
        )
