"""Group commit: the appends pending across all runs share one executor hop and one fsync.

An append joins the pending group and waits. While a drain job runs in the
backend's executor, new appends only join the list (no hop of their own);
when none runs, the append that finds the list empty starts one. The drain
takes every pending append at once, writes each into its own journal (under
the journal's mutex, held until the group is settled), writes all of them as
entries of the commit log and fsyncs the log once (``commit_log.py``), then
advances the journals and wakes the callers with one callback per event
loop; meanwhile the next group fills, so there is no fixed delay, and a
quiet server's append is one hop and one sync like before.

A failed journal write fails that append alone (rolled back as before); a
failed log write or sync fails the group: every journal in it is cut back,
and the log is retired (see ``_retire``), since its tail may hold entries of
appends that were refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Set as AbstractSet
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from runjournal_server.backends.file import commit_log, files
from runjournal_server.backends.file.commit_log import CommitLog, Entry
from runjournal_server.core.errors import StorageUnavailableError
from runjournal_server.core.records import StoredRecord

if TYPE_CHECKING:
    from runjournal_server.backends.file.journal import FileJournal

log = logging.getLogger(__name__)

GATHER_TURNS = 8
"""The most turns of the event loop a forming group waits for more appends before its drain starts."""
DIRTY_LIMIT = 512
"""Journals written since the last checkpoint before the next group checkpoints: bounds a checkpoint's fsyncs."""


@dataclass(eq=False)
class _Append:
    journal: FileJournal
    batch: list[StoredRecord]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[None]
    written: bool = False
    """In the journal, not yet acknowledged: settled by the log's sync (or cut back if it fails)."""
    entry: Entry | None = None
    """What the log must hold for it; None when the journal was fsynced itself."""
    error: BaseException | None = None
    stored: bool = False
    """Set only once the append is durable and its journal advanced: nothing else is acknowledged."""


@dataclass
class SyncCounts:
    """What the drain has done, for the benchmark's fsyncs-per-append row and the docs."""

    appends: int = 0
    groups: int = 0
    log_syncs: int = 0
    journal_syncs: int = 0
    """Journal fsyncs: the first append of a journal opened here, checkpoints, closes."""
    checkpoints: int = 0


@dataclass
class GroupCommitter:
    """The file backend's write path (see the module docstring); one per backend."""

    data_dir: Path
    executor: Executor | None
    counts: SyncCounts = field(default_factory=SyncCounts)

    def __post_init__(self) -> None:
        self._mutex = threading.Lock()
        """Guards ``_pending`` and ``_draining``; never held while doing I/O."""
        self._pending: list[_Append] = []
        self._draining = False
        self._log: CommitLog | None = None
        """Made by the first group: a server that never appends leaves no log behind."""
        self._abandoned: list[CommitLog] = []
        """Logs that still hold the only durable copy of some appends (a journal's fsync failed): kept,
        locked, until this process ends; the next start replays them."""
        self._dirty: set[FileJournal] = set()
        """Journals written since the log's last checkpoint: fsynced before the log may be rewound."""
        self._lost_sync = False
        """A dirty journal's fsync failed at its close: the log must not be rewound or removed."""
        self._dirty_mutex = threading.Lock()
        self._log_mutex = threading.Lock()
        """Held by the drain around a group's commit, and by ``scrub_sync``: one of them uses the log at a time."""

    def start_sync(self) -> None:
        """Replay what dead processes left in their logs; refuse to start when that fails.

        Serving journals that may lack acknowledged appends, and appending
        after them, would lose those appends for good: an operator must fix
        the cause (a journal that cannot be opened or written) first.
        """
        try:
            restored = commit_log.recover(self.data_dir)
        except OSError as err:
            raise StorageUnavailableError(
                None,
                f"replaying the commit log in {self.data_dir / commit_log.LOG_DIR} failed ({err}); the log is kept: "
                "fix the file it names and start again",
            ) from err
        if restored:
            log.warning("the commit log restored %d appends after a crash", restored)

    async def commit(self, journal: FileJournal, batch: list[StoredRecord]) -> None:
        """Store ``batch`` in ``journal`` durably with whatever group is forming; raise its failure."""
        loop = asyncio.get_running_loop()
        pending = _Append(journal, batch, loop, loop.create_future())
        with self._mutex:
            self._pending.append(pending)
            start = not self._draining
            self._draining = True
        if start:
            loop.call_soon(self._start_drain, loop, 1, 1)
        await pending.future

    def _start_drain(self, loop: asyncio.AbstractEventLoop, seen: int, turns: int) -> None:
        """Start the drain once a turn of the event loop brought no new append (at most ``GATHER_TURNS``).

        No timer: while requests keep arriving, each turn of the loop handles
        more of them (work it does anyway, the server being CPU-bound), and
        their appends join this group instead of each starting a sync of its
        own; the first quiet turn starts it. An append alone costs two turns.
        """
        with self._mutex:
            waiting = len(self._pending)
        if waiting > seen and turns < GATHER_TURNS:
            loop.call_soon(self._start_drain, loop, waiting, turns + 1)
            return
        # A cancelled caller does not stop the drain: it writes and advances the journal anyway.
        # Nobody awaits the drain itself, so a configured executor gets it without an asyncio future.
        try:
            if self.executor is not None:
                self.executor.submit(self._drain)
            else:
                loop.run_in_executor(None, self._drain)
        except RuntimeError as err:  # the executor is shut down: nothing will drain, so nobody may wait
            with self._mutex:
                self._draining = False
                stranded, self._pending = self._pending, []
            for item in stranded:
                item.error = StorageUnavailableError(item.journal.run_id, f"the server is stopping ({err})")
            _wake(stranded)

    # ------------------------------------------------------------ the drain (one at a time, in the executor)

    def _drain(self) -> None:
        while True:
            with self._mutex:
                group, later = _one_per_journal(self._pending)
                self._pending = later
                if not group:
                    self._draining = False
                    return
            try:
                with self._log_mutex:
                    self._commit(group)
            except BaseException as err:  # never leave callers waiting on a drain that died
                log.exception("the group commit failed unexpectedly")
                for pending in group:
                    if pending.error is None and not pending.stored:
                        pending.error = StorageUnavailableError(pending.journal.run_id, f"group commit failed: {err}")
            # Counted before the callers wake: a client that has its answer and then scrapes finds its group.
            self.counts.groups += 1
            self.counts.appends += len(group)
            _wake(group)

    def _commit(self, group: list[_Append]) -> None:
        held: list[_Append] = []
        try:
            for pending in group:
                pending.journal._mutex.acquire()
                held.append(pending)
                try:
                    pending.entry = pending.journal._write_for_group(pending.batch, self.counts, alone=len(group) == 1)
                    pending.written = True
                except BaseException as err:
                    pending.error = err
            written = [pending for pending in group if pending.written]
            entries = [pending.entry for pending in written if pending.entry is not None]
            try:
                if entries:
                    self._log_for_group({pending.journal for pending in held}).append(entries)
                    self.counts.log_syncs += 1
            except OSError as err:
                for pending in written:
                    if pending.entry is None:
                        continue  # durable by its own fsync: not this failure's
                    pending.written = False
                    try:
                        pending.journal._undo_group_write(err)
                    except BaseException as refused:
                        pending.error = refused
                self._retire({pending.journal for pending in held})
            for pending in written:
                if not pending.written:
                    continue
                if pending.entry is not None:
                    with self._dirty_mutex:
                        self._dirty.add(pending.journal)
                try:
                    pending.journal._finish_group_write(pending.batch)
                    pending.stored = True
                except BaseException as err:
                    pending.error = err
        finally:
            for pending in held:
                pending.journal._mutex.release()

    def _log_for_group(self, held: AbstractSet[FileJournal]) -> CommitLog:
        """The log to write this group to: made on first use, checkpointed and rewound when full."""
        if self._log is None:
            self._log = CommitLog.create(self.data_dir)
        elif self._log.full or len(self._dirty) >= DIRTY_LIMIT:
            if self._checkpoint(held):
                self._log.rewind()
            else:
                self._abandon()
                self._log = CommitLog.create(self.data_dir)
        return self._log

    def _checkpoint(self, held: AbstractSet[FileJournal] = frozenset()) -> bool:
        """fsync every journal written since the last checkpoint; False if one failed (keep the log then).

        ``held``: journals whose mutex the drain holds already (the group's).
        """
        self.counts.checkpoints += 1
        with self._dirty_mutex:
            dirty, self._dirty = self._dirty, set()
            lost, self._lost_sync = self._lost_sync, False
        synced = not lost
        for journal in dirty:
            with contextlib.nullcontext() if journal in held else journal._mutex:
                if journal._closed:
                    continue  # synced at its close (or it set _lost_sync)
                try:
                    files.sync(journal._fd)
                    self.counts.journal_syncs += 1
                except OSError:
                    log.exception("run %r: fsync at a commit log checkpoint failed", journal.run_id)
                    synced = False
        return synced

    def _abandon(self) -> None:
        if self._log is not None:
            log.error("keeping commit log %s for the next start to replay: a journal fsync failed", self._log.path)
            self._abandoned.append(self._log)
            self._log = None

    def _retire(self, held: AbstractSet[FileJournal]) -> None:
        """After a failed log write or sync: make the journals durable and remove the log, or keep it aside.

        The log's tail may now hold entries of appends that were just refused
        and cut back; a fresh log is made by the next group.
        """
        retired = self._log
        if retired is None:
            return
        if self._checkpoint(held):
            try:
                retired.remove()
                self._log = None
                return
            except OSError:
                log.exception("could not remove commit log %s after a failed sync", retired.path)
        self._abandon()

    def scrub_sync(self) -> None:
        """Leave no line of a run just deleted in this process's log (``tombstones.py``): checkpoint, then wipe.

        The log keeps each append's lines until its journal is fsynced and the
        log rewound, and a rewind overwrites only as far as new entries go. So
        after a deletion every journal the log covers is fsynced and the whole
        log overwritten with zeros. Where a journal's fsync fails the log is
        still the only copy of its appends: it is kept (as ``_abandon`` says)
        and the next start replays and removes it, which writes nothing into a
        deleted run.
        """
        with self._log_mutex:
            if self._log is None:
                return
            if self._checkpoint():
                self._log.wipe()
            else:
                self._abandon()

    # ------------------------------------------------------------ journal lifecycle

    def journal_closing(self, journal: FileJournal) -> None:
        """Called under the journal's mutex before its descriptor closes: sync what only the log holds."""
        with self._dirty_mutex:
            if journal not in self._dirty:
                return
            self._dirty.discard(journal)
        try:
            files.sync(journal._fd)
            self.counts.journal_syncs += 1
        except OSError:
            log.exception("run %r: fsync at close failed; the commit log keeps its appends", journal.run_id)
            with self._dirty_mutex:
                self._lost_sync = True

    def close_sync(self) -> None:
        """At shutdown, after every journal closed: the log is needed no more, unless a sync failed."""
        if self._log is not None:
            if self._checkpoint():
                with contextlib.suppress(OSError):
                    self._log.remove()
                self._log.close()
            else:
                self._abandon()
        for kept in self._abandoned:
            kept.close()
        self._log = None
        self._abandoned = []


def _one_per_journal(pending: list[_Append]) -> tuple[list[_Append], list[_Append]]:
    """Split off the appends of a journal already in the group: the next group takes them, in order."""
    seen: set[FileJournal] = set()
    group: list[_Append] = []
    later: list[_Append] = []
    for item in pending:
        if item.journal in seen:
            later.append(item)
        else:
            seen.add(item.journal)
            group.append(item)
    return group, later


def _wake(group: list[_Append]) -> None:
    """One callback per event loop settles every caller of the group."""
    by_loop: dict[asyncio.AbstractEventLoop, list[_Append]] = {}
    for pending in group:
        by_loop.setdefault(pending.loop, []).append(pending)
    for loop, settled in by_loop.items():
        with contextlib.suppress(RuntimeError):  # a loop that closed meanwhile has nobody waiting
            loop.call_soon_threadsafe(_settle, settled)


def _settle(settled: list[_Append]) -> None:
    for pending in settled:
        if pending.future.done():
            continue  # cancelled: the append is stored all the same
        if pending.stored:
            pending.future.set_result(None)
        else:
            pending.future.set_exception(
                pending.error or StorageUnavailableError(pending.journal.run_id, "the append was not stored")
            )
