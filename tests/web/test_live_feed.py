"""The inbox feed against a real journal server: through WatchRuns, and by listing again where there is none."""

from __future__ import annotations

import asyncio

import pytest

from runjournal import AsyncJournalClient, JournalClient
from runjournal.web.live import InboxFeed
from tests.web import demo


@pytest.mark.parametrize("mode", ["watch", "poll"])
async def test_the_feed_tells_a_run_that_starts_waiting_and_one_that_stops(journal_server, mode: str):
    async with AsyncJournalClient(journal_server.address) as client:
        feed = InboxFeed(client, poll_seconds=0.2)
        if mode == "poll":
            feed.mode = "poll"  # as after an UNIMPLEMENTED WatchRuns
        following = asyncio.create_task(feed.follow())
        try:
            changes = feed.changes(0)
            version, _ = await anext(changes)
            with JournalClient(journal_server.address) as sync_client:
                run_id = await asyncio.to_thread(demo.answer_waiting, sync_client)
                while run_id not in (await anext(changes))[1]:
                    pass
                await client.answer(run_id, "call_ask", text="the gold plan")
                while run_id in (await anext(changes))[1]:
                    pass
            assert feed.mode == mode
            assert feed.snapshot[0] > version
        finally:
            following.cancel()
