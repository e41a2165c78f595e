"""Keeping the listing index true: news of writes, the repair at start, and the persisted copy.

* **News.** ``RunEvents`` tells the upkeep of every acknowledged write and
  deletion, synchronously, before the writer's answer is sent: the run's entry
  becomes *dirty* (a candidate for every state filter) or, for a run the index
  has not placed, *pending* (placed before the next page is answered). So no
  listing misses a write this server acknowledged, nor, on JetStream, one the
  feed reported from another replica.
* **Ticks.** A background task places pending runs (reads their metas) soon
  after they are told, and every ``DIRTY_REFRESH_SECONDS`` reads the summaries of
  dirty runs again (a hot run costs one read per tick, not one per append),
  at most ``TICK_RUNS`` runs per step with ``READ_CONCURRENCY`` reads in
  flight, so appends never wait behind it.
* **Repair at start**, before the server serves: a persisted index is
  checked against the store, every journal's cheap version
  (``Backend.run_versions``; file: a ``stat``, no read) against the version
  the entry's state was read at. A run that moved (written in the last tick
  before a crash, or by another process while this one was down) is read
  again, a run the index lacks is placed, an entry whose run is gone is
  dropped once a read confirms it. So the index never serves a stale state,
  and the repair costs a stat per run plus a read per run that moved. A
  missing or damaged index (or a store with no local directory) is rebuilt
  from the journals in the background, in bounded steps; until the rebuild
  has placed every run the listing reads every run, as it always did, so it
  is slow meanwhile, never wrong.
* **Persistence** (an ``IndexStore``, ``backends/index_store.py``): on files,
  changes are appended to a log by one thread of its own each tick, and
  compacted into a snapshot when the log outgrows the index and at a clean
  shutdown.
* **On a shared store** (JetStream, ``Backend.shared_writers``; the store is
  ``Backend.listing_store()``, ``backends/jetstream/listing_store.py``):
  another replica's writes reach this one's news only through the feed, a
  moment later. So:

  - *the barrier*: before a page (any filter: the inbox and status filters
    too) trusts the index, it waits until the feed has delivered the
    stream's last record as of the call's start (``SharedIndexStore.caught_up``,
    one request); a run another replica acknowledged before ListRuns began
    is then dirty or pending here, as if this replica had written it. A feed
    that does not catch up within seconds (NATS away, the consumer being
    recreated) makes that page read every run instead: slow, never wrong.
  - *the repair at start* is the feed's news since the persisted index, not
    a version per run: the snapshot records the stream seq it was current
    to (every message up to there had been told; a run told of since its
    state was read is persisted without a state), the start replays the
    headers-only feed from there to the stream's last record, marking each
    run named dirty (or pending, if new) and dropping each deleted one, and
    the feed then follows from where the replay ended. That costs a small
    message per record stored since the snapshot (compacted again past
    ``REPLAY_COMPACT_MESSAGES``), where a version per run (the last stream
    seq of each run's subjects) would cost a request per run or pages of
    every subject. In the background the run ids are listed once (the
    meta subjects) and compared, for what no news tells (messages removed
    by hand). No log: the stream is the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from runjournal.v1 import state_pb2
from runjournal_server.backends.base import Backend
from runjournal_server.backends.file.index_store import FileIndexStore, FileStoreOnThread
from runjournal_server.backends.index_store import (
    LABELS_UNKNOWN,
    Entry,
    IndexStore,
    Op,
    RunState,
    SharedIndexStore,
    no_meta_key,
    shared_labels,
)
from runjournal_server.core.errors import JournalError, RunDeletedError, RunNotFoundError
from runjournal_server.core.kinds import Kind
from runjournal_server.core.page_token import SortKey
from runjournal_server.listing.index import ListingIndex

log = logging.getLogger(__name__)

INDEX_DIR = ".listing-index"
"""Under the backend's ``derived_data_dir``: not a valid run id, so never taken for a journal."""

TICK_RUNS = 256
READ_CONCURRENCY = 8
"""Fewer reads in flight than the I/O threads: an append's write never queues behind the upkeep's reads."""
PLACE_DELAY_SECONDS = 0.05
"""How long news waits to be batched before the runs it names are placed."""
REFRESH_SECONDS = 2.0
"""How often a process without the index tells the owner so (and retries listing the runs)."""
DIRTY_REFRESH_SECONDS = 10.0
"""How often dirty runs are read again. A dirty run costs nothing while it waits (it is a candidate of every
state filter, read anyway if listed), and each read costs about 1 ms of CPU: under appends to 64 runs,
a 2 s cadence would spend about 3% of a core on them."""
OTHERS_FRESH_SECONDS = 5 * REFRESH_SECONDS
"""How recent another process's ``others`` mark must be for it to count as still serving."""
COMPACT_MIN_OPS = 10_000
INLINE_NEW_RUNS = 1_000
"""More runs than this (and a tenth of all) missing from a loaded index are placed in the background."""
LABEL_RUNS_PER_TICK = 512
"""Labels read back from the metas per tick after a restart, so that the fill costs others a few percent of the
server (100,000 runs: about half an hour); a label filter meanwhile reads the labels of the runs it walks."""

REPLAY_COMPACT_MESSAGES = 100_000
"""On a shared store: messages stored since the persisted snapshot past which a new one is written (a start
replays the news of each: a headers-only message apiece)."""

LABELS_START: SortKey = (2**63, 0, "")
"""A key after every run's: the background fill of labels starts from the newest run."""

T = TypeVar("T")
K = TypeVar("K")

Summarize = Callable[[str], Awaitable[state_pb2.RunSummary]]
"""The listing rule for one run (``RunListing.summary``); RunNotFoundError when it is not there."""


class ListingUpkeep:
    """The index's upkeep over one backend (see the module docstring)."""

    def __init__(
        self, backend: Backend, index: ListingIndex, summarize: Summarize, known_corrupt: Callable[[str], bool]
    ) -> None:
        self._backend = backend
        self._index = index
        self._summarize = summarize
        self._known_corrupt = known_corrupt
        self._store: IndexStore | None = None
        self._files: FileIndexStore | None = None
        """The file store under ``_store``, for what only files need (another process on the directory)."""
        self._shared: SharedIndexStore | None = None
        """``_store`` where other replicas write the store too: the barrier and the news since a snapshot."""
        self._thread: ThreadPoolExecutor | None = None
        self._ops: list[Op] = []
        self._log_ops = 0
        self._placing = asyncio.Lock()
        self._news = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._repair_done = asyncio.Event()
        self._active = False
        self.ready = False
        """True once every run is placed: the listing then walks the index instead of every run."""
        self.repaired = False
        """True once the start's repair (or rebuild) has checked every run against the store."""

    # ------------------------------------------------------------ news (RunListener)

    def stored(self, run_id: str, last_seq: int) -> None:
        if not self._active:
            return  # no index (not started, off, or closed): the listing reads every run
        self._index.mark_dirty(run_id)
        self._news.set()

    def deleted(self, run_id: str) -> None:
        if not self._active:
            return
        self._forget_deleted(run_id)

    def _forget_deleted(self, run_id: str) -> None:
        self._drop(run_id)
        self._index.pending.discard(run_id)

    # ------------------------------------------------------------ life

    async def start(self) -> None:
        """Load the persisted index and check it against the store; rebuild a missing one in the background."""
        if self._backend.shared_writers:
            await self._start_shared()
            return
        directory = self._backend.derived_data_dir()
        damaged: str | None = "the store keeps no local index"
        if directory is not None:
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="runjournal-index")
            store = FileIndexStore(directory / INDEX_DIR)
            try:
                if not await self._blocking(store.open):
                    # Another server process owns the index: neither may trust one (see the store's docstring).
                    log.warning(
                        "listing index: another server process uses %s; every listing reads every run", directory
                    )
                    await self._blocking(store.touch_others)  # before this process serves
                    self._task = asyncio.create_task(self._say_others(store), name="listing-index-others")
                    return
                self._files = store
                self._store = FileStoreOnThread(store, self._thread)
                if await self._blocking(store.others_seen_within, OTHERS_FRESH_SECONDS):
                    damaged = "another server process uses this data directory"
                    self._task = asyncio.create_task(self._say_others(None), name="listing-index-off")
                    return
                loaded = await self._store.load()
                self._log_ops = loaded.log_ops
                damaged = loaded.damaged
                if damaged is None:
                    self._index.load(loaded.entries)
                    self.ready = True
            except OSError as err:
                damaged = f"{store.directory}: {err.strerror or err}"
        if damaged is not None:
            log.info("listing index: %s; rebuilding it from the journals", damaged)
        else:
            # Before the server serves: a stat per run and a read of each run that moved, so the
            # index is exact from the first call on (a missing one is rebuilt in the background).
            if await self._repair(inline=True):
                self._repaired()
        self._active = True
        self._task = asyncio.create_task(self._run(), name="listing-index-upkeep")

    async def _start_shared(self) -> None:
        """On a store other replicas write: load the snapshot, replay the news since it (module docstring)."""
        shared = self._backend.listing_store()
        if shared is None:
            log.info("listing index: off (this shared store keeps none); every listing reads every run")
            return
        self._store = self._shared = shared
        loaded = await shared.load()
        damaged = loaded.damaged
        if damaged is None:
            self._index.load(loaded.entries)
            if not await shared.news_since(loaded.position, self._index.mark_dirty, self._forget_deleted):
                damaged = "the news since it was persisted cannot be replayed"
                self._index.load([])
        if damaged is not None:
            log.info("listing index: %s (%s); rebuilding it from the journals", damaged, shared.where)
            # Follow the news from now on before the rebuild lists the runs: nothing falls between.
            if not await shared.news_since(None, self._index.mark_dirty, self._forget_deleted):
                log.warning("listing index: off (the news cannot be followed); every listing reads every run")
                self._store = self._shared = None
                return
        elif len(self._index.pending) <= max(INLINE_NEW_RUNS, len(self._index) // 10):
            # Before the server serves: place the runs created since the snapshot, read the moved ones
            # again if they are few (else they stay candidates of every filter until a tick reads them).
            await self.place_pending()
            dirty = self._index.dirty_run_ids()
            if len(dirty) <= INLINE_NEW_RUNS:
                await self._refresh(dirty)
            self.ready = True
            log.info("listing index: %d runs, loaded from %s and told the news since", len(self._index), shared.where)
        self._active = True
        self._task = asyncio.create_task(self._run(), name="listing-index-upkeep")

    async def close(self) -> None:
        """Stop the upkeep; persist what changed and compact, so the next start loads one snapshot."""
        self._active = False
        # Where the news stands as it stops being heard: every change up to here is in the index.
        position = self._shared.position() if self._shared is not None else None
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._store is not None:
            try:
                if self.ready or (self._shared is None and self.repaired):
                    if self._shared is not None:
                        await self.place_pending()  # a run told of but not placed would be in no snapshot
                    await self._persist(compact=False)
                    entries = list(self._index.entries())
                    await self._store.compact(entries, position)
            except (OSError, JournalError) as err:
                log.warning("listing index: not persisted at shutdown (%s); the next start repairs it", err)
            finally:
                await self._store.close()
                self._store = self._files = self._shared = None
        if self._thread is not None:
            self._thread.shutdown(wait=True)
            self._thread = None

    async def _say_others(self, store: FileIndexStore | None) -> None:
        """Without an index: keep saying so to the process that owns it (``store``), until closed."""
        self.ready = False
        while True:
            if store is not None:
                try:
                    await self._blocking(store.touch_others)
                except OSError as err:
                    log.warning("listing index: cannot tell the other server process (%s)", err)
            await asyncio.sleep(REFRESH_SECONDS)

    async def wait_repaired(self) -> None:
        await self._repair_done.wait()

    # ------------------------------------------------------------ what the listing calls

    async def trusted(self) -> bool:
        """Whether this page may walk the index: it has every run, and has heard of every write before the call.

        Asked before every indexed page. On a shared store, the barrier
        (``SharedIndexStore.caught_up``): False when the news cannot be
        known to be complete, and the page reads every run. On files, a
        stat: False (and the index off from now on) once another server
        process serves this data directory, whose writes it does not hear
        of (that process touches ``others`` before it serves).
        """
        if not self.ready:
            return False
        if self._shared is not None:
            return await self._shared.caught_up() and self.ready
        if self._files is None:
            return self.ready
        # Not on the index's own thread, which may be busy compacting: a page must not wait for that.
        seen = await asyncio.to_thread(self._files.others_seen_within, OTHERS_FRESH_SECONDS)
        if seen:
            log.warning("listing index: another server process uses this data directory; off")
            self.ready = self._active = False
        return self.ready

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

    def forget(self, run_id: str) -> None:
        """A read found the run absent (a failed creation, a deletion by another replica or by hand)."""
        self._drop(run_id)

    # ------------------------------------------------------------ the background task

    async def _run(self) -> None:
        try:
            if not self.repaired:
                await self._repair(inline=False)
                self._repaired()
            loop = asyncio.get_running_loop()
            next_refresh = loop.time() + DIRTY_REFRESH_SECONDS
            labels_from: SortKey | None = LABELS_START  # where the background fill of labels goes on
            while True:
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for drops a cancel that comes in the
                # turn the news arrives, and the stop then waited for this loop forever.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(max(0.0, next_refresh - loop.time())):
                        await self._news.wait()
                self._news.clear()
                await asyncio.sleep(PLACE_DELAY_SECONDS)  # batch the news of a burst of writes
                await self.place_pending()
                if loop.time() >= next_refresh:
                    if self._files is not None and await self._blocking(
                        self._files.others_seen_within, OTHERS_FRESH_SECONDS
                    ):
                        log.warning("listing index: another server process uses this data directory; off")
                        self.ready = self._active = False
                        return
                    await self._refresh(self._index.dirty_run_ids())
                    if labels_from is not None:
                        unknown, labels_from = self._index.unlabelled([""], LABEL_RUNS_PER_TICK, labels_from)
                        await self.fill_labels(unknown)
                    next_refresh = loop.time() + DIRTY_REFRESH_SECONDS
                await self._persist()
        except asyncio.CancelledError:
            raise
        except Exception:
            # The index is an accelerator: without it the listing reads every run, as it always could.
            log.exception("listing index: upkeep failed; listing by reading every run from now on")
            self.ready = self._active = False

    def _repaired(self) -> None:
        self.ready = self.repaired = True
        self._repair_done.set()
        log.info("listing index: %d runs, checked against the store", len(self._index))

    async def _repair(self, *, inline: bool) -> bool:
        """Check every entry against the store (see the module docstring); bounded steps, then persist.

        ``inline`` (before the server serves) gives up, returning False, when
        the index lacks many runs (a rebuild a crash cut short): the start
        would wait for all their reads. The index is then not ready, and the
        background task does it all while the listing reads every run.
        """
        while True:
            try:
                versions = await self._backend.run_versions()
                run_ids = list(versions) if versions is not None else await self._backend.list_run_ids()
                break
            except JournalError as err:
                log.warning("listing index: cannot list the runs (%s); trying again", err.message)
                await asyncio.sleep(REFRESH_SECONDS)
        present = set(run_ids)
        absent = [entry.run_id for entry in self._index.entries() if entry.run_id not in present]
        new = [run_id for run_id in run_ids if run_id not in self._index]
        if inline and len(new) > max(INLINE_NEW_RUNS, len(run_ids) // 10):
            self.ready = False
            return False
        self._index.pending.update(new)
        await self.place_pending()
        if not self.ready:
            self.ready = True  # every run has its place: pages walk the index, states are read below
        # On a shared store the news since the snapshot (or since the rebuild began) marked what moved:
        # those are dirty and read by the ticks; every other state was read after its last write.
        stale = self._stale(versions) if self._shared is None else []
        await self._refresh(absent + stale)
        await self._persist()
        return True

    def _stale(self, versions: dict[str, object] | None) -> list[str]:
        """The entries to read again at start: those whose journal's version moved, or that have none."""
        stale: list[str] = []
        for entry in self._index.entries():
            state = entry.state
            if versions is None or state is None or state.version is None:
                stale.append(entry.run_id)  # no version to compare: read it again
            elif versions.get(entry.run_id) != state.version:
                self._index.mark_dirty(entry.run_id)  # moved while nobody looked: a candidate everywhere
                stale.append(entry.run_id)
        return stale

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
        )

    async def _refresh(self, run_ids: Sequence[str]) -> None:
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
                    self._drop(run_id)
                elif summary.status == state_pb2.RUN_STATUS_UNAVAILABLE:
                    continue
                elif entry.labels is None and summary.status != state_pb2.RUN_STATUS_CORRUPT:
                    # Its meta could not be read before and the run reads now: place it properly.
                    self._drop(run_id)
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
                self._drop(entry.run_id)
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

    def _drop(self, run_id: str) -> None:
        if self._index.remove(run_id) is not None:
            self._ops.append(("drop", run_id))

    async def _persist(self, *, compact: bool = True) -> None:
        if self._store is None:
            return
        ops, self._ops = self._ops, []
        try:
            if ops:
                await self._store.append(ops)
                self._log_ops += len(ops)
            if compact and self._compaction_due():
                if self._shared is not None:
                    await self.place_pending()  # a run told of but not placed would be in no snapshot
                # No await between these two: every change up to ``position`` is in ``entries``.
                position = self._shared.position() if self._shared is not None else None
                entries = list(self._index.entries())
                await self._store.compact(entries, position)
                self._log_ops = 0
        except (OSError, JournalError) as err:
            # Lost changes are found again by the next start's repair (versions differ).
            log.warning("listing index: cannot persist (%s); it is repaired at the next start", err)

    def _compaction_due(self) -> bool:
        if self._shared is not None:
            if not self.ready:
                return False  # an index still lacking runs: the news since it would not bring them back
            return self._log_ops > max(COMPACT_MIN_OPS, len(self._index)) or (
                self._shared.behind() > REPLAY_COMPACT_MESSAGES
            )
        return self._log_ops > max(COMPACT_MIN_OPS, len(self._index))

    async def _gather(self, items: Sequence[K], read: Callable[[K], Awaitable[T]]) -> list[T]:
        found: list[T] = []
        for start in range(0, len(items), READ_CONCURRENCY):
            found += await asyncio.gather(*(read(item) for item in items[start : start + READ_CONCURRENCY]))
        return found

    async def _blocking(self, fn: Callable[..., T], *args: object) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn, *args)
