"""The listing index's persisted copy: which store keeps it, its load at start, and the changes written to it.

* **On files** (``backends/file/index_store.py``, in ``INDEX_DIR`` under the
  backend's ``derived_data_dir``): one thread of its own appends each tick's
  changes to a log, and compacts them into a snapshot when the log outgrows
  the index and at a clean shutdown. One server process owns the directory
  (a lock). Another process serving the same data directory hears nothing of
  the owner's writes, nor the owner of its, so neither may trust an index:
  that process says so (touches ``others``, every ``REFRESH_SECONDS``) for as
  long as it serves, and an owner that sees it (``others_serving``) turns its
  index off; one that sees it at start never turns it on.
* **On a shared store** (JetStream, ``Backend.listing_store()``,
  ``backends/jetstream/listing_store.py``): no log, the stream is the log. A
  snapshot records the news position it is current to, and a new one is
  written once the news since it passes ``REPLAY_COMPACT_MESSAGES`` (a start
  replays the news of each: ``listing/upkeep.py``).

The copy is derived data: a change this module fails to write (logged) is
found again by the next start's repair.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from runjournal_server.backends.base import Backend
from runjournal_server.backends.file.index_store import FileIndexStore, FileStoreOnThread
from runjournal_server.backends.index_store import Entry, IndexStore, Loaded, Op, SharedIndexStore

log = logging.getLogger(__name__)

INDEX_DIR = ".listing-index"
"""Under the backend's ``derived_data_dir``: not a valid run id, so never taken for a journal."""

REFRESH_SECONDS = 2.0
"""How often a process without the index tells the owner so."""
OTHERS_FRESH_SECONDS = 5 * REFRESH_SECONDS
"""How recent another process's ``others`` mark must be for it to count as still serving."""
COMPACT_MIN_OPS = 10_000
REPLAY_COMPACT_MESSAGES = 100_000
"""On a shared store: messages stored since the persisted snapshot past which a new one is written (a start
replays the news of each: a headers-only message apiece)."""

T = TypeVar("T")


class IndexPersistence:
    """Where one server's listing index is kept between starts (see the module docstring)."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self._store: IndexStore | None = None
        self._files: FileIndexStore | None = None
        """The file store under ``_store``, for what only files need (another process on the directory)."""
        self.shared: SharedIndexStore | None = None
        """``_store`` where other replicas write the store too: the barrier and the news since a snapshot."""
        self._thread: ThreadPoolExecutor | None = None
        self._others: asyncio.Task[None] | None = None
        self._log_ops = 0

    @property
    def kept(self) -> bool:
        """Whether a store keeps the index (else it lives in memory only, or is off)."""
        return self._store is not None

    async def open_files(self) -> Loaded | None:
        """Take the index beside the journals and load it; None when this process may not keep one.

        None while another server process owns the directory (this one then
        says so until closed) or serves it (the owner's index stays off). A
        ``Loaded`` whose ``damaged`` says why is rebuilt from the journals:
        no local directory, an unreadable or damaged copy.
        """
        directory = self._backend.derived_data_dir()
        if directory is None:
            return Loaded([], "the store keeps no local index", 0)
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="runjournal-index")
        store = FileIndexStore(directory / INDEX_DIR)
        try:
            if not await self._blocking(store.open):
                # Another server process owns the index: neither may trust one (see the store's docstring).
                log.warning("listing index: another server process uses %s; every listing reads every run", directory)
                await self._blocking(store.touch_others)  # before this process serves
                self._others = asyncio.create_task(self._say_others(store), name="listing-index-others")
                return None
            self._files = store
            self._store = FileStoreOnThread(store, self._thread)
            if await self._blocking(store.others_seen_within, OTHERS_FRESH_SECONDS):
                return None  # another server process uses this data directory: the lock stays held, the index off
            loaded = await self._store.load()
        except OSError as err:
            return Loaded([], f"{store.directory}: {err.strerror or err}", 0)
        self._log_ops = loaded.log_ops
        return loaded

    def open_shared(self) -> SharedIndexStore | None:
        """The store other replicas write too (``Backend.listing_store``); None when it keeps no index."""
        self._store = self.shared = self._backend.listing_store()
        return self.shared

    def let_go(self) -> None:
        """Keep nothing from now on (a shared store whose news cannot be followed)."""
        self._store = self.shared = None

    def position(self) -> int | None:
        """Where a shared store's news stands now (every change up to it is in the index); None on files."""
        return self.shared.position() if self.shared is not None else None

    async def others_serving(self) -> bool:
        """Whether another server process said lately that it serves this data directory (files only).

        Not on the index's own thread, which may be busy compacting: a page must not wait for that.
        """
        if self._files is None:
            return False
        return await asyncio.to_thread(self._files.others_seen_within, OTHERS_FRESH_SECONDS)

    async def append(self, ops: Sequence[Op]) -> None:
        """Write the changes of a tick (a shared store keeps no log: there, nothing)."""
        if ops and self._store is not None:
            await self._store.append(ops)
            self._log_ops += len(ops)

    def compaction_due(self, runs: int, ready: bool) -> bool:
        """Whether to write a snapshot now: the log outgrew an index of ``runs``, or a start would replay too much."""
        if self.shared is not None:
            if not ready:
                return False  # an index still lacking runs: the news since it would not bring them back
            return self._log_ops > max(COMPACT_MIN_OPS, runs) or self.shared.behind() > REPLAY_COMPACT_MESSAGES
        return self._log_ops > max(COMPACT_MIN_OPS, runs)

    async def compact(self, entries: Sequence[Entry], position: int | None) -> None:
        """Replace the persisted copy with ``entries``, current to the news ``position`` (shared stores)."""
        if self._store is not None:
            await self._store.compact(entries, position)
            self._log_ops = 0

    async def close(self) -> None:
        """Stop telling the owner, and close the store and its thread (the upkeep wrote what it had)."""
        if self._others is not None:
            self._others.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._others
            self._others = None
        try:
            if self._store is not None:
                await self._store.close()
        finally:
            self._store = self._files = self.shared = None
            if self._thread is not None:
                self._thread.shutdown(wait=True)
                self._thread = None

    async def _say_others(self, store: FileIndexStore) -> None:
        """Without an index: keep saying so to the process that owns it (``store``), until closed."""
        while True:
            try:
                await self._blocking(store.touch_others)
            except OSError as err:
                log.warning("listing index: cannot tell the other server process (%s)", err)
            await asyncio.sleep(REFRESH_SECONDS)

    async def _blocking(self, fn: Callable[..., T], *args: object) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn, *args)
