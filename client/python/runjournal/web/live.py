"""The inbox as it changes: which runs wait for a person, at which last seq, told to every open page.

One feed per web server, whatever the number of browsers: it follows the
journal server through ``WatchRuns`` (waiting-for-person runs), and where the
server or the client does not have it yet (UNIMPLEMENTED, or a client without
``watch_runs``) it lists the inbox again every ``poll_seconds``. Pages get a
snapshot, ``{run_id: last_seq}``, with a version number; a page reloads what
it shows when its run's entry changed.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc

from runjournal.aio import AsyncJournalClient
from runjournal.errors import RunJournalError
from runjournal.v1 import journal_service_pb2, state_pb2

log = logging.getLogger(__name__)

RETRY_SECONDS = 2.0
"""How long the feed waits after the journal server failed before it follows it again."""


class InboxFeed:
    """The runs waiting for a person and their last seqs, kept current and told to subscribers."""

    def __init__(self, client: AsyncJournalClient, poll_seconds: float) -> None:
        self._client = client
        self._poll_seconds = poll_seconds
        self._runs: dict[str, int] = {}
        self._version = 0
        self._changed = asyncio.Condition()
        self.mode = "starting"
        """How the feed follows the server: "watch", "poll", or "starting" before it knows."""

    @property
    def snapshot(self) -> tuple[int, dict[str, int]]:
        return self._version, dict(self._runs)

    async def changes(self, after_version: int) -> AsyncIterator[tuple[int, dict[str, int]]]:
        """Each snapshot newer than ``after_version``, as it comes (a slow page skips to the newest)."""
        while True:
            async with self._changed:
                await self._changed.wait_for(functools.partial(self._newer_than, after_version))
                after_version = self._version
                snapshot = dict(self._runs)
            yield after_version, snapshot

    def _newer_than(self, version: int) -> bool:
        return self._version > version

    async def follow(self) -> None:
        """Follow the journal server until cancelled: by WatchRuns where it can, else by listing."""
        while True:
            try:
                if self.mode != "poll" and hasattr(self._client, "watch_runs"):
                    self.mode = "watch"
                    await self._watch()
                else:
                    self.mode = "poll"
                    await self._poll()
            except RunJournalError as err:
                if err.code == grpc.StatusCode.UNIMPLEMENTED:
                    log.info("the journal server has no WatchRuns: listing the inbox every %s s", self._poll_seconds)
                    self.mode = "poll"
                    continue
                log.warning("following the inbox failed (%s); again in %s s", err, RETRY_SECONDS)
                await asyncio.sleep(RETRY_SECONDS)

    async def _watch(self) -> None:
        watching: dict[str, int] = {}
        caught_up = False
        stream: AsyncIterator[Any] = self._client.watch_runs(waiting_for_person=True)  # type: ignore[attr-defined]
        async for item in stream:
            if isinstance(item, state_pb2.RunSummary):
                watching[item.run_id] = item.last_seq
            elif isinstance(item, journal_service_pb2.RunLeft):
                watching.pop(item.run_id, None)
            else:  # caught up: the stored part is complete, live changes follow
                caught_up = True
            if caught_up:
                await self._publish(watching)

    async def _poll(self) -> None:
        while True:
            listing = {summary.run_id: summary.last_seq async for summary in self._client.inbox()}
            await self._publish(listing)
            await asyncio.sleep(self._poll_seconds)

    async def _publish(self, runs: dict[str, int]) -> None:
        async with self._changed:
            if runs == self._runs and self._version:
                return
            self._runs = dict(runs)
            self._version += 1
            self._changed.notify_all()
