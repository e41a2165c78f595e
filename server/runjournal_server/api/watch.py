"""Read and Watch: a run's records, stored and then as they are acknowledged.

Watch and WatchRuns (``api/watch_runs.py``) follow one rule (``runs/events.py``):
subscribe to the news first, then read the store, then wait for news past
what was sent. The news says only *that* something moved; what is sent is
always read from the store after the news, so it is never stale, never ahead
of what is acknowledged (``Runs.read``), and nothing is buffered for a slow
client: while gRPC flow control holds a stream up, the stream holds one
serialized item, what is left of one read of the store (a chunk, about
256 KiB at most) and the news (one seq, or one set of run ids), and reads
the store again when it moves on.

Items are serialized here, one at a time, and the record they came from is
dropped before the item is handed out, so what a stalled client costs its
stream does not grow with what is appended meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import records_pb2
from runjournal_server.core.errors import InvalidArgumentError, RunDeletedError, RunNotFoundError
from runjournal_server.core.ids import validate_run_id
from runjournal_server.core.records import StoredRecord
from runjournal_server.runs.events import EventsClosedError, RunChannel
from runjournal_server.runs.runs import RecordReader, Runs

log = logging.getLogger(__name__)

STALE_NEWS_RETRY_SECONDS = 0.5
"""How long a watcher that was told of a record it could not read yet waits before reading again.

A safety net only: the news comes after the record is acknowledged, so the
read finds it. Without the net a tell that ever raced ahead of the store
would leave the watcher waiting for the next append; without the wait it
would spin on the event loop.
"""

RECENT_BYTES = 256 * 1024
"""A watcher told of news reads what is new backward from the run's end, up to about this much.

That costs what was appended since, whatever the run's length, where a
forward read from a seq may first scan the journal up to it (the file
backend counts lines): 100 ms per append on a 30 MB run. A watcher further
behind (its client stalled) reads forward instead, a chunk at a time.
"""


def read_response(stored: StoredRecord) -> pb.ReadResponse:
    """One record as Read and Watch send it; ``seq`` always set, so a reader can resume after any record.

    A record of a kind this server does not know decodes to no message: it is
    sent with only its seq and optional flag (its stored line holds the rest),
    never as an empty record at seq 0 that a resuming client would misplace.
    """
    record = stored.record
    if record is None:
        record = records_pb2.JournalRecord(seq=stored.seq, optional=stored.optional)
    return pb.ReadResponse(seq=stored.seq, record=record, stored_line=stored.line)


# ------------------------------------------------------------------ Watch


async def watch_run(runs: Runs, run_id: str, after_seq: int) -> AsyncGenerator[bytes, None]:
    """The serialized WatchResponse items of one run (see JournalService.Watch), until cancelled.

    One loop: send what the store holds after ``sent`` (``Runs.read_after``:
    back from the end near the head, forward further behind), then wait for
    news past it. The first pass checks the request once: ``after_seq``
    beyond the run's last seq is INVALID_ARGUMENT (a client cannot have seen
    a record that is not there, and answering ``caught_up`` with it would be
    a head the run never had), a run with no record RUN_NOT_FOUND; then it
    sends ``caught_up``. Whether the run was deleted is the backend's to say
    (``backends/deletion.py``), never worked out here: a read of a deleted
    run raises its RUN_DELETED, and so does the news of a deletion
    (``RunChannel.deleted``, told once the tombstone is stored); a run gone
    without a tombstone (removed by hand) is RUN_NOT_FOUND, as the read says.
    """
    validate_run_id(run_id)
    if after_seq < 0:
        raise InvalidArgumentError("after_seq", "must be 0 (from the start) or a seq the client received")
    with runs.events.watch_run(run_id) as channel:  # subscribed before the store is read: no news is missed
        sent = after_seq
        caught_up = False
        while True:
            moved_to = sent
            reader = await runs.read_after(run_id, sent, recent_bytes=RECENT_BYTES)
            head = reader.head
            async with contextlib.aclosing(reader):
                while (item := await _next_item(run_id, reader, moved_to)) is not None:
                    moved_to += 1
                    yield item
            if not caught_up:
                _check_request(run_id, after_seq, head, moved_to)
                yield pb.WatchResponse(caught_up=pb.CaughtUp(head_seq=moved_to)).SerializeToString()
                caught_up = True
            elif moved_to == sent:
                await _stale_news(channel)
            sent = moved_to
            await _news_past(channel, sent)


def _check_request(run_id: str, after_seq: int, head: int, sent: int) -> None:
    """After the first pass: the run had a record at ``after_seq`` (its ``head`` reached it), and a record at all."""
    if head < after_seq:
        raise InvalidArgumentError(
            "after_seq", f"run {run_id!r} has only {head} records; watch after at most its last seq, or 0"
        )
    if sent == 0:
        raise RunNotFoundError(run_id)  # no complete record: a creation that never became durable


async def _next_item(run_id: str, reader: RecordReader, sent: int) -> bytes | None:
    """The next record's item, or None at the end (so no name keeps the record alive while the stream waits)."""
    try:
        stored = await anext(reader)
    except StopAsyncIteration:
        return None
    if stored.seq != sent + 1:
        raise AssertionError(f"run {run_id}: the store gave seq {stored.seq} after {sent}")
    return pb.WatchResponse(record=read_response(stored)).SerializeToString()


async def _news_past(channel: RunChannel, sent: int) -> None:
    await channel.wait_past(sent)
    if channel.deleted:  # told by the backend's feed or ``runs/deleting.py``, each after the tombstone is stored
        raise RunDeletedError(channel.run_id, sent)
    if channel.closed:
        raise EventsClosedError


async def _stale_news(channel: RunChannel) -> None:
    """The news named a record the read did not find: wait for more news, or a moment, then read again."""
    log.debug("run %s: told of seq %d before the store showed it; reading again", channel.run_id, channel.last_seq)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(STALE_NEWS_RETRY_SECONDS):  # not wait_for: it may drop a cancel (3.11)
            await channel.wait_past(channel.last_seq)
