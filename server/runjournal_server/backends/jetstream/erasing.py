"""Erasing deleted runs in the background: one task per run, shared by everyone who waits for it.

Erasing a run on JetStream is one message delete per record, each a synced
rewrite of the message's bytes in the stream's block (5-9 ms each under
``sync_interval: always``): a 10,000-record run takes minutes, longer than
any caller's deadline. The run's tombstone is durable before the erasure
starts and makes every call about the run RUN_DELETED, so DeleteRun answers
as soon as the tombstone is stored and the erasure runs here.

* **One erasure per run.** A second DeleteRun of the run (or ``start``
  finding the run half erased) joins the task in flight instead of erasing
  the same messages again; a waiter that gives up (its deadline) does not
  stop the task, which others may be waiting for.
* **Bounded.** At most ``CONCURRENT_RUNS`` runs are erased at a time, each
  with its own bounded number of deletes in flight (``tombstones.py``), so
  retention deleting a thousand runs does not flood the NATS server.
* **Stopped at close, finished at start.** ``close`` cancels what is in
  flight; what it left (a tombstone and some messages) is what a crash
  leaves, and the next ``start`` begins those erasures again.
* **A failure** (the NATS server unreachable) is logged and ends the task;
  the run stays deleted, and DeleteRun again (which then raises the
  failure of its own attempt) or the next start finishes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

CONCURRENT_RUNS = 4
"""Runs erased at once; each has its own deletes in flight."""


class Erasures:
    """The background erasures of one backend (see the module docstring)."""

    def __init__(self, erase: Callable[[str], Awaitable[None]]) -> None:
        self._erase = erase
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._gate = asyncio.Semaphore(CONCURRENT_RUNS)
        self._closed = False
        self.begun = 0
        """Erasures begun since the backend started (joins of one in flight not counted)."""

    def begin(self, run_id: str) -> asyncio.Task[None]:
        """The run's erasure: the one in flight, or a new one."""
        task = self._tasks.get(run_id)
        if task is None:
            if self._closed:
                raise RuntimeError("the backend is closed")
            task = asyncio.get_running_loop().create_task(self._run(run_id), name=f"erase {run_id}")
            self.begun += 1
            self._tasks[run_id] = task
            task.add_done_callback(lambda done: self._done(run_id, done))
        return task

    async def wait(self, run_id: str) -> None:
        """Erase the run, or wait for its erasure in flight; raises what made it fail."""
        await asyncio.shield(self.begin(run_id))

    async def close(self) -> None:
        """Cancel every erasure in flight and wait until each has stopped."""
        self._closed = True
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _run(self, run_id: str) -> None:
        async with self._gate:
            await self._erase(run_id)

    def _done(self, run_id: str, task: asyncio.Task[None]) -> None:
        if self._tasks.get(run_id) is task:
            del self._tasks[run_id]
        if task.cancelled():
            return
        error = task.exception()  # retrieved here, so a failure nobody waited for is logged once, by us
        if error is not None:
            log.warning(
                "erasing deleted run %s stopped: %s; it stays deleted, and DeleteRun again or the next start "
                "finishes the erasure",
                run_id,
                error,
            )
