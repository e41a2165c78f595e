"""WatchRuns: the listing's summaries of the matching runs, then each change as it happens.

The rule is Watch's (``api/watch.py``): subscribe to the news, read the
listing, then read a changed run's summary again after each piece of news,
so nothing sent is stale and nothing is buffered for a slow client. The
listing is walked a page at a time by its position (``RunListing.page_after``),
never through ListRuns' public page token.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncGenerator

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import state_pb2
from runjournal_server.core.errors import RunDeletedError, RunNotFoundError
from runjournal_server.core.page_token import MAX_PAGE_SIZE, SortKey
from runjournal_server.listing.filter import RunFilter
from runjournal_server.listing.pages import RunListing
from runjournal_server.runs.events import RunEvents

LISTING_PAGE_SIZE = min(100, MAX_PAGE_SIZE)
"""WatchRuns reads the matching runs a page at a time: its stored part holds one page, not the listing."""


async def watch_runs(events: RunEvents, listing: RunListing, where: RunFilter) -> AsyncGenerator[bytes, None]:
    """The serialized WatchRunsResponse items of the runs ``where`` admits (see JournalService.WatchRuns).

    Remembers, per run it has sent, a digest of the last summary sent: a run
    that leaves is sent as ``left`` once, and news that changed nothing a
    summary shows (news of a change that the read after earlier news
    already showed) sends nothing.
    """
    where.check()
    with events.watch_all() as changed:  # subscribed before the listing is read: no change is missed
        sent: dict[str, bytes] = {}
        after: SortKey | None = None  # the listing's position: an internal cursor, not a page token
        while True:
            page, after = await listing.page_after(after, page_size=LISTING_PAGE_SIZE, where=where)
            page.reverse()
            while page:
                item = _summary_item(page.pop(), sent)
                if item is not None:
                    yield item
            if after is None:
                break
        yield pb.WatchRunsResponse(caught_up=pb.CaughtUp(head_seq=0)).SerializeToString()
        while True:
            for run_id in await changed.next():
                item = await _change_item(listing, where, run_id, sent)
                if item is not None:
                    yield item


async def _change_item(listing: RunListing, where: RunFilter, run_id: str, sent: dict[str, bytes]) -> bytes | None:
    """What a change of ``run_id`` sends: its summary now when it matches, ``left`` when a sent run stopped.

    ``left.deleted`` is the backend's word (``backends/deletion.py``): true
    when reading the run raised RUN_DELETED (it has a tombstone), false when
    it no longer matches, or is gone without a tombstone (RUN_NOT_FOUND).
    """
    if not where.admits_run_id(run_id):
        return None  # outside the token's prefixes: not even read
    try:
        summary = await listing.summary(run_id)
    except RunDeletedError:
        return _left_item(run_id, sent, deleted=True)
    except RunNotFoundError:
        return _left_item(run_id, sent, deleted=False)
    if where.admits(summary):
        return _summary_item(summary, sent)
    return _left_item(run_id, sent, deleted=False)


def _left_item(run_id: str, sent: dict[str, bytes], *, deleted: bool) -> bytes | None:
    """The ``left`` item of a run that was sent; None for one that never was."""
    if sent.pop(run_id, None) is None:
        return None
    return pb.WatchRunsResponse(left=pb.RunLeft(run_id=run_id, deleted=deleted)).SerializeToString()


def _summary_item(summary: state_pb2.RunSummary, sent: dict[str, bytes]) -> bytes | None:
    """The item of a matching summary; None when it is the summary sent last for that run."""
    item = pb.WatchRunsResponse(run=summary).SerializeToString()
    digest = hashlib.blake2b(item, digest_size=16).digest()
    if sent.get(summary.run_id) == digest:
        return None
    sent[summary.run_id] = digest
    return item
