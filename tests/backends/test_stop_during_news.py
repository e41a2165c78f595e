"""A server's background tasks stop when they are cancelled, even when news arrives at that very moment.

Python 3.11's ``asyncio.wait_for`` returns the inner result, and drops the
cancellation, when the task is cancelled in the same turn of the event loop
in which the awaited event fires (fixed in 3.12). The listing index's upkeep
waited for news that way: a write told to it just as the server stopped kept
it looping, and the stop waited for it forever (seen twice in CI: a server
that logged "shutting down" and never "stopped").
"""

from __future__ import annotations

import asyncio

import pytest

from runjournal_server.backends.file import FileBackend
from runjournal_server.listing.pages import RunListing
from runjournal_server.runs.runs import Runs
from tests.support import builders as b

STOP_BOUND_SECONDS = 10


@pytest.mark.timeout(30)
async def test_the_listing_upkeep_stops_when_a_write_is_told_to_it_as_it_is_cancelled(file_backend: FileBackend):
    runs = Runs(file_backend, max_record_bytes=1 << 20, max_open_journals=16)
    listing = RunListing.of(runs)
    await listing.start()
    await listing.upkeep.wait_repaired()
    await asyncio.sleep(0)  # one turn: the upkeep's task runs up to its wait for news, and parks there
    # The write's news and the stop's cancellation in one turn of the loop: nothing yields in between.
    await runs.append("told-at-stop", 1, [b.meta(run_id="told-at-stop")])
    # Waited for with asyncio.wait, which neither cancels nor drops a cancellation (wait_for has the very
    # flaw this is about, and a timeout would cancel the stop and so end the loop it is waiting for).
    stop = asyncio.create_task(listing.close())
    try:
        done, _ = await asyncio.wait({stop}, timeout=STOP_BOUND_SECONDS)
        assert stop in done, f"the listing upkeep did not stop within {STOP_BOUND_SECONDS}s of its cancellation"
        stop.result()
    finally:
        stop.cancel()
        await runs.close()
    still_running = [task.get_name() for task in asyncio.all_tasks() if task.get_name().startswith("listing-index")]
    assert still_running == [], "the upkeep's task outlived the stop"
