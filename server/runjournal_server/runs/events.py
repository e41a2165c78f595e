"""Run events: how Watch and WatchRuns learn that a run moved, without holding any record.

A watcher never receives records from here, only the news that a run's last
acknowledged seq moved (or that the run was deleted); it then reads the new
records from the store at its own pace. So a slow watcher costs one small
entry, whatever is appended meanwhile, and the store stays the one source of
what a watcher is sent: no gap, no duplicate, nothing buffered without bound.

Who tells: ``runs/writing.py`` after every acknowledged write (the record
is durable before anyone hears of it) and ``runs/deleting.py`` after a
deletion; on a store shared by replicas (JetStream), the backend's feed of
what other replicas stored.

The news is level-triggered: ``RunChannel.last_seq`` only grows, and a
watcher waits until it passes the seq it has sent, so news that arrives
between a watcher's store read and its wait is never lost (subscribe first,
then read, then wait). WatchRuns gets the set of runs changed since it last
looked; a run that changes ten times before it looks is in the set once
(coalesced: it then reads the newest summary).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol


class RunListener(Protocol):
    """Told of every acknowledged write and deletion as it is announced, before any watcher wakes."""

    def stored(self, run_id: str, last_seq: int) -> None: ...

    def deleted(self, run_id: str) -> None: ...


class EventsClosedError(Exception):
    """The server is shutting down: a watcher ends now, so that its client watches again elsewhere.

    Not a refusal (nothing is wrong with the request): the stream ends
    UNAVAILABLE without a reason, which clients treat as a transport failure
    and resume from the last item they received, instead of the watch holding
    the shutdown for its whole grace period and then being cut.
    """


class RunChannel:
    """The news of one run: its last acknowledged seq, whether it was deleted, whether the news closed."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.last_seq = 0
        self.deleted = False
        self.closed = False
        self._moved = asyncio.Event()

    def _tell(self, last_seq: int, *, deleted: bool = False) -> None:
        if last_seq > self.last_seq:
            self.last_seq = last_seq
        self.deleted = self.deleted or deleted
        # Wake every waiter, then arm a fresh event for the next news.
        self._moved.set()
        self._moved = asyncio.Event()

    def _close(self) -> None:
        self.closed = True
        self._moved.set()

    async def wait_past(self, seq: int) -> None:
        """Return once the run's last seq is past ``seq``, or it was deleted, or the news closed."""
        while self.last_seq <= seq and not self.deleted and not self.closed:
            await self._moved.wait()


class ChangedRuns:
    """The runs changed since a WatchRuns stream last looked (coalesced), and a way to wait for more."""

    def __init__(self) -> None:
        self._changed: dict[str, None] = {}  # insertion-ordered set
        self._event = asyncio.Event()
        self.closed = False

    def _add(self, run_id: str) -> None:
        self._changed[run_id] = None
        self._event.set()

    def _close(self) -> None:
        self.closed = True
        self._event.set()

    async def next(self) -> list[str]:
        """The runs changed since the last call, in the order they first changed; waits for at least one.

        Raises ``EventsClosedError`` once the news is closed.
        """
        while not self._changed and not self.closed:
            self._event.clear()
            await self._event.wait()
        if self.closed:
            raise EventsClosedError
        changed = list(self._changed)
        self._changed.clear()
        return changed


class RunEvents:
    """The server's news of runs; one per server, shared by every stream."""

    def __init__(self) -> None:
        # Channels live while a watcher holds them: no entry per run is kept for nobody.
        self._channels: weakref.WeakValueDictionary[str, RunChannel] = weakref.WeakValueDictionary()
        self._everything: set[ChangedRuns] = set()
        self._listeners: list[RunListener] = []
        self.closed = False
        """True once ``close`` ran: every wait returns at once and ends its watcher."""

    def listen(self, listener: RunListener) -> None:
        """Tell ``listener`` of every write and deletion too, synchronously (the listing index)."""
        self._listeners.append(listener)

    def stored(self, run_id: str, last_seq: int) -> None:
        """Records up to ``last_seq`` of ``run_id`` are acknowledged (created, appended, copied by a fork)."""
        for listener in self._listeners:
            listener.stored(run_id, last_seq)
        channel = self._channels.get(run_id)
        if channel is not None:
            channel._tell(last_seq)
        for changed in self._everything:
            changed._add(run_id)

    def deleted(self, run_id: str) -> None:
        """The run was deleted: its watchers end with RUN_DELETED; WatchRuns streams see it leave."""
        for listener in self._listeners:
            listener.deleted(run_id)
        channel = self._channels.get(run_id)
        if channel is not None:
            channel._tell(0, deleted=True)
        for changed in self._everything:
            changed._add(run_id)

    @contextmanager
    def watch_run(self, run_id: str) -> Iterator[RunChannel]:
        """The channel of one run, for as long as the ``with`` block holds it."""
        channel = self._channels.get(run_id)
        if channel is None:
            channel = RunChannel(run_id)
            self._channels[run_id] = channel
            if self.closed:
                channel._close()
        yield channel

    @contextmanager
    def watch_all(self) -> Iterator[ChangedRuns]:
        """The changed-runs set of one WatchRuns stream, for as long as the ``with`` block holds it."""
        changed = ChangedRuns()
        if self.closed:
            changed._close()
        self._everything.add(changed)
        try:
            yield changed
        finally:
            self._everything.discard(changed)

    def close(self) -> None:
        """End every watcher with ``EventsClosedError`` (at shutdown, before gRPC's grace period begins)."""
        self.closed = True
        for channel in list(self._channels.values()):
            channel._close()
        for changed in self._everything:
            changed._close()

    @property
    def watched_runs(self) -> int:
        """Runs with at least one watcher (a gauge)."""
        return len(self._channels)
