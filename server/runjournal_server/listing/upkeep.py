"""Keeping the listing index true: news of writes, the repair at start, and the ticks that follow.

* **News.** ``RunEvents`` tells the upkeep of every acknowledged write and
  deletion, synchronously, before the writer's answer is sent: the run's entry
  becomes *dirty* (a candidate for every state filter) or, for a run the index
  has not placed, *pending* (placed before the next page is answered). So no
  listing misses a write this server acknowledged, nor, on JetStream, one the
  feed reported from another replica.
* **Ticks.** A background task places pending runs (reads their metas) soon
  after they are told, and every ``DIRTY_REFRESH_SECONDS`` reads the summaries of
  dirty runs again (a hot run costs one read per tick, not one per append),
  in bounded steps (``listing/reads.py``), so appends never wait behind it,
  then writes what changed to the persisted copy (``listing/persistence.py``).
* **Repair at start**, in two halves. *Places*, before the server serves:
  the runs are listed (file: one directory scan), a run the index lacks is
  placed, an entry whose run is gone is dropped once a read confirms it; so
  every page walks the right runs from the first call. *States*, right after
  the server serves: every journal's cheap version (``Backend.run_versions``;
  file: a ``stat``, no read) is compared with the version the entry's state
  was read at, and a run that moved (written in the last tick before a
  crash, or by another process while this one was down) is read again.
  Until that check is done a page with a state filter waits for it
  (``states_checked``): the index never serves a stale state. A page without
  one never reads the index's states (it reads every summary it lists), so it
  does not wait. The stat per run was most of an indexed start (100,000 runs:
  0.4 s of syscalls on this machine's disk), and appends, reads and claims need
  no index at all. A missing or damaged index (or a store with no local
  directory) is rebuilt from the journals in the background, in bounded
  steps; until the rebuild has placed every run the listing reads every run,
  as it always did, so it is slow meanwhile, never wrong.
* **On a shared store** (JetStream, ``Backend.shared_writers``): another
  replica's writes reach this one's news only through the feed, a moment
  later. So:

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
    message per record stored since the snapshot, where a version per run
    (the last stream seq of each run's subjects) would cost a request per
    run or pages of every subject. In the background the run ids are listed
    once (the meta subjects) and compared, for what no news tells (messages
    removed by hand). A start that cannot ask the stream where the news
    stands (a leader election, NATS away) does not give the index up: the
    rebuild waits in the background until the feed follows the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence

from runjournal.v1 import state_pb2
from runjournal_server.backends.base import Backend
from runjournal_server.backends.index_store import Entry
from runjournal_server.core.errors import JournalError
from runjournal_server.core.page_token import SortKey
from runjournal_server.listing.index import ListingIndex
from runjournal_server.listing.persistence import IndexPersistence
from runjournal_server.listing.reads import IndexReads, Summarize

log = logging.getLogger(__name__)

PLACE_DELAY_SECONDS = 0.05
"""How long news waits to be batched before the runs it names are placed."""
RETRY_SECONDS = 2.0
"""How long the repair waits before listing the runs again, after the store refused."""
DIRTY_REFRESH_SECONDS = 10.0
"""How often dirty runs are read again. A dirty run costs nothing while it waits (it is a candidate of every
state filter, read anyway if listed), and each read costs about 1 ms of CPU: under appends to 64 runs,
a 2 s cadence would spend about 3% of a core on them."""
INLINE_NEW_RUNS = 1_000
"""More runs than this (and a tenth of all) missing from a loaded index are placed in the background."""
LABEL_RUNS_PER_TICK = 512
"""Labels read back from the metas per tick after a restart, so that the fill costs others a few percent of the
server (100,000 runs: about half an hour); a label filter meanwhile reads the labels of the runs it walks."""

STATE_CHECK_CHUNK = 1_000
"""Journals asked for their version at a time, then compared, between two turns of the event loop: calls served
meanwhile wait for one chunk at most (100,000 runs: about 5 ms of stat and 1 ms of compare each)."""

LABELS_START: SortKey = (2**63, 0, "")
"""A key after every run's: the background fill of labels starts from the newest run."""


@contextlib.contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """No cyclic collection while the start loads the index and places every run (before the server serves).

    The load builds an entry, its key, state and version per run, none in a
    cycle: refcounting frees what is dropped, and the collector's passes over
    the growing heap found nothing but cost about half of the load's time.
    The server freezes what the start built right after (``app.py``).
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


class ListingUpkeep:
    """The index's upkeep over one backend (see the module docstring)."""

    def __init__(
        self, backend: Backend, index: ListingIndex, summarize: Summarize, known_corrupt: Callable[[str], bool]
    ) -> None:
        self._backend = backend
        self._index = index
        self._reads = IndexReads(backend, index, summarize, known_corrupt)
        self._persisted = IndexPersistence(backend)
        self._news = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._repair_done = asyncio.Event()
        self._states_checked = asyncio.Event()
        """Set once no entry's state is older than its journal unless the entry is dirty (``states_checked``),
        or once that will never be so (the upkeep failed or stopped: then it is no longer ``_active``)."""
        self._serving = asyncio.Event()
        """Set once the server serves (``serving``): the background task waits for it, not to slow the start."""
        self._placed = False
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
        self._reads.drop(run_id)
        self._index.pending.discard(run_id)

    # ------------------------------------------------------------ life

    async def start(self, *, defer: bool = False) -> None:
        """Load the persisted index and place every run; the rest (states, ticks, a rebuild) in the background.

        ``defer``: the background task waits for ``serving`` (the server calls
        it once it listens), so its work does not share the event loop with
        the rest of the start.
        """
        if not defer:
            self._serving.set()
        with _cyclic_gc_paused():
            await self._start()

    def serving(self) -> None:
        """The server serves: the background task may begin (see ``start``)."""
        self._serving.set()

    async def _start(self) -> None:
        if self._backend.shared_writers:
            await self._start_shared()
            return
        # The runs are listed on the backend's threads while the index's thread decodes the persisted
        # copy: neither needs the other, and nobody writes before the server serves (another process
        # would have kept this one from the index).
        listed = asyncio.ensure_future(self._backend.list_run_ids())
        try:
            loaded = await self._persisted.open_files()
        except BaseException:
            listed.cancel()
            raise
        if loaded is None or loaded.damaged is not None:
            listed.cancel()  # a rebuild lists the runs itself, later
            with contextlib.suppress(asyncio.CancelledError, JournalError):
                await listed
            # No state is loaded: every entry a rebuild places is a candidate until its summary is read.
            self._states_checked.set()
        if loaded is None:
            return  # another server process serves this data directory: no index here
        if loaded.damaged is not None:
            log.info("listing index: %s; rebuilding it from the journals", loaded.damaged)
        else:
            self._index.load(loaded.entries)
            self.ready = True
            # Before the server serves, the places: every run the index lacks placed, every entry whose
            # run is gone read (and dropped). The states are checked right after (the background task).
            if await self._place_runs(inline=True, listed=listed):
                log.info(
                    "listing index: %d runs placed; their states are checked against the store next", len(self._index)
                )
        self._active = True
        self._task = asyncio.create_task(self._run(), name="listing-index-upkeep")

    async def _start_shared(self) -> None:
        """On a store other replicas write: load the snapshot, replay the news since it (module docstring)."""
        # What moved since the snapshot is marked dirty by the news it replays, before the index is ready.
        self._states_checked.set()
        shared = self._persisted.open_shared()
        if shared is None:
            log.info("listing index: off (this shared store keeps none); every listing reads every run")
            return
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
                # The store cannot be asked now (a leader election, NATS away): the feed the server starts
                # next follows from wherever the stream is then, so the rebuild waits for it and lists the
                # runs after; until then every listing reads every run.
                log.warning("listing index: the news cannot be followed yet; rebuilt once the feed follows it")
                self._active = True
                self._task = asyncio.create_task(self._run(await_feed=True), name="listing-index-upkeep")
                return
        elif len(self._index.pending) <= max(INLINE_NEW_RUNS, len(self._index) // 10):
            # Before the server serves: place the runs created since the snapshot, read the moved ones
            # again if they are few (else they stay candidates of every filter until a tick reads them).
            await self.place_pending()
            dirty = self._index.dirty_run_ids()
            if len(dirty) <= INLINE_NEW_RUNS:
                await self._reads.refresh(dirty)
            self.ready = True
            log.info("listing index: %d runs, loaded from %s and told the news since", len(self._index), shared.where)
        self._active = True
        self._task = asyncio.create_task(self._run(), name="listing-index-upkeep")

    async def close(self) -> None:
        """Stop the upkeep; persist what changed and compact, so the next start loads one snapshot."""
        self._active = False
        self._states_checked.set()  # a page still waiting for the check reads every run instead
        # Where the news stands as it stops being heard: every change up to here is in the index.
        position = self._persisted.position()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        try:
            if self._persisted.kept and (self.ready or (self._persisted.shared is None and self.repaired)):
                await self._persist(compact=False)
                await self._snapshot(lambda: position)
        except (OSError, JournalError) as err:
            log.warning("listing index: not persisted at shutdown (%s); the next start repairs it", err)
        finally:
            await self._persisted.close()

    async def wait_repaired(self) -> None:
        await self._repair_done.wait()

    async def states_checked(self) -> bool:
        """Whether a state filter may trust the index's states: waits for the check after a start.

        A persisted state is as of its journal's version when it was read;
        a journal that moved since (while the server was down) is found by
        the check (``_check_states``), which marks its entry dirty. False
        when the index went off meanwhile (the page then reads every run).
        """
        await self._states_checked.wait()
        return self.ready and self._active

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
        if self._persisted.shared is not None:
            return await self._persisted.shared.caught_up() and self.ready
        if await self._persisted.others_serving():
            log.warning("listing index: another server process uses this data directory; off")
            self.ready = self._active = False
        return self.ready

    async def place_pending(self) -> None:
        """Place every run told of but not yet placed: a page never misses a run created a moment ago."""
        await self._reads.place_pending()

    def observed(self, entry: Entry, gen: int, summary: state_pb2.RunSummary) -> None:
        """A page read ``summary`` for ``entry``: keep the state it shows, unless news arrived meanwhile."""
        self._reads.observed(entry, gen, summary)

    def forget(self, run_id: str) -> None:
        """A read found the run absent (a failed creation, a deletion by another replica or by hand)."""
        self._reads.drop(run_id)

    async def fill_labels(self, entries: Sequence[Entry]) -> None:
        """Read the metas of entries whose labels are not known (never persisted: they are content)."""
        await self._reads.fill_labels(entries)

    # ------------------------------------------------------------ the background task

    async def _run(self, *, await_feed: bool = False) -> None:
        try:
            await self._serving.wait()
            if await_feed:
                await self._until_following()
            if not self.repaired:
                await self._repair()
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
                    if await self._persisted.others_serving():
                        log.warning("listing index: another server process uses this data directory; off")
                        self.ready = self._active = False
                        return
                    await self._reads.refresh(self._index.dirty_run_ids())
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
            self._states_checked.set()  # a page waiting for the check reads every run instead

    async def _until_following(self) -> None:
        """Until the shared store's feed follows the stream (the server starts it right after the upkeep)."""
        while self._persisted.position() is None:
            await asyncio.sleep(RETRY_SECONDS)

    def _repaired(self) -> None:
        self.ready = self.repaired = True
        self._repair_done.set()
        log.info("listing index: %d runs, checked against the store", len(self._index))

    async def _repair(self) -> None:
        """Check every entry against the store (see the module docstring), in bounded steps, then persist."""
        if not self._placed:
            await self._place_runs(inline=False)
        await self._check_states()
        await self._persist()

    async def _place_runs(self, *, inline: bool, listed: Awaitable[list[str]] | None = None) -> bool:
        """The places: place every run the index lacks, read every entry whose run is not listed (dropped if gone).

        ``inline`` (before the server serves) gives up, returning False, when
        the store cannot list the runs, or the index lacks many of them (a
        rebuild a crash cut short): the start would wait for all their reads.
        The index is then not ready, and the background task does it all
        while the listing reads every run. ``listed``: the listing asked for
        while the persisted index loaded (awaited once; asked again after a failure).
        """
        while True:
            try:
                asked, listed = listed, None
                run_ids = await (asked if asked is not None else self._backend.list_run_ids())
                break
            except JournalError as err:
                if inline:
                    self.ready = False
                    return False
                log.warning("listing index: cannot list the runs (%s); trying again", err.message)
                await asyncio.sleep(RETRY_SECONDS)
        absent, new = self._index.differences(run_ids)
        if inline and len(new) > max(INLINE_NEW_RUNS, len(run_ids) // 10):
            self.ready = False
            return False
        self._index.pending.update(new)
        await self.place_pending()
        self.ready = True  # every run has its place: pages walk the index
        await self._reads.refresh(absent)
        self._placed = True
        return True

    async def _check_states(self) -> None:
        """The states: mark dirty every entry whose journal moved since its state was read, then read those.

        On a shared store the news since the snapshot (or since the rebuild
        began) marked what moved: those are dirty and read by the ticks. On
        files, a version per journal, asked off the event loop; the entries
        are compared a chunk at a time, so calls served meanwhile never wait
        for all of them.
        """
        if self._persisted.shared is not None:
            self._states_checked.set()
            return
        entries = list(self._index.entries())  # the index changes while the check awaits
        stale: list[str] = []
        for begin in range(0, len(entries), STATE_CHECK_CHUNK):
            chunk = entries[begin : begin + STATE_CHECK_CHUNK]
            while True:
                try:
                    versions = await self._backend.run_versions([entry.run_id for entry in chunk])
                    break
                except JournalError as err:
                    log.warning("listing index: cannot ask the journals' versions (%s); trying again", err.message)
                    await asyncio.sleep(RETRY_SECONDS)
            for entry in chunk:
                if self._index.get(entry.run_id) is not entry:
                    continue  # dropped or replaced since the check began: its news did the rest
                state = entry.state
                if versions is None or state is None or state.version is None:
                    stale.append(entry.run_id)  # no version to compare: read it again
                elif versions.get(entry.run_id) != state.version:
                    self._index.mark_dirty(entry.run_id)  # moved while nobody looked: a candidate everywhere
                    stale.append(entry.run_id)
        # Every moved entry is dirty now, a candidate of every state filter: pages need not wait for the reads.
        self._states_checked.set()
        await self._reads.refresh(stale)

    async def _persist(self, *, compact: bool = True) -> None:
        """Write the changes since the last tick; a snapshot instead of a longer log when one is due."""
        if not self._persisted.kept:
            return
        try:
            await self._persisted.append(self._reads.take_changes())
            if compact and self._persisted.compaction_due(len(self._index), self.ready):
                await self._snapshot(self._persisted.position)
        except (OSError, JournalError) as err:
            # Lost changes are found again by the next start's repair (versions differ).
            log.warning("listing index: cannot persist (%s); it is repaired at the next start", err)

    async def _snapshot(self, position: Callable[[], int | None]) -> None:
        """Replace the persisted copy with the whole index, current to the news ``position()`` (shared stores)."""
        if self._persisted.shared is not None:
            await self.place_pending()  # a run told of but not placed would be in no snapshot
        # No await between these two: every change up to ``position`` is in ``entries``.
        entries = list(self._index.entries())
        await self._persisted.compact(entries, position())
