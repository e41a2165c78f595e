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
from runjournal_server.runs.runs import Runs

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


def _record_item(stored: StoredRecord) -> bytes:
    return pb.WatchResponse(record=read_response(stored)).SerializeToString()


# ------------------------------------------------------------------ Watch


async def watch_run(runs: Runs, run_id: str, after_seq: int) -> AsyncGenerator[bytes, None]:
    """The serialized WatchResponse items of one run (see JournalService.Watch), until cancelled.

    ``after_seq`` beyond the run's last seq is INVALID_ARGUMENT: a client
    cannot have seen a record that is not there, and answering ``caught_up``
    with it would be a head the run never had.
    """
    validate_run_id(run_id)
    if after_seq < 0:
        raise InvalidArgumentError("after_seq", "must be 0 (from the start) or a seq the client received")
    with runs.events.watch_run(run_id) as channel:  # subscribed before the store is read: no news is missed
        # A client resuming near the head (after a transport failure) reads what it missed back from the
        # end, with the record at after_seq as proof the run has it; from the start, or far behind, forward.
        recent = await runs.read_recent(run_id, after_seq - 1, RECENT_BYTES) if after_seq else None
        if recent is None:
            async with contextlib.aclosing(_Records(runs, run_id, after_seq)) as stored_part:
                while (item := await _next(stored_part)) is not None:
                    yield item
                sent = stored_part.sent
        else:
            if not recent or recent[0].seq != after_seq:
                raise _beyond_head(run_id, after_seq)
            sent = recent[-1].seq
            recent.reverse()
            recent.pop()  # the record at after_seq: checked, not sent
            while recent:
                yield _record_item(recent.pop())
        yield pb.WatchResponse(caught_up=pb.CaughtUp(head_seq=sent)).SerializeToString()
        while True:
            await _news_past(channel, sent)
            recent = await _recent(runs, run_id, sent)
            if recent is None:  # far behind (the client stalled): forward, a chunk at a time
                async with contextlib.aclosing(_Records(runs, run_id, sent, live=True)) as live:
                    while (item := await _next(live)) is not None:
                        yield item
                    moved_to = live.sent
            else:
                moved_to = recent[-1].seq if recent else sent
                recent.reverse()
                while recent:
                    yield _record_item(recent.pop())  # popped: a stalled client holds this item, not the list
            if moved_to == sent:
                await _stale_news(channel)
            sent = moved_to


def _beyond_head(run_id: str, after_seq: int) -> InvalidArgumentError:
    return InvalidArgumentError("after_seq", f"run {run_id!r} has no record at seq {after_seq}")


async def _recent(runs: Runs, run_id: str, sent: int) -> list[StoredRecord] | None:
    """What was appended after ``sent``, read back from the end; None when it is more than ``RECENT_BYTES``."""
    try:
        return await runs.read_recent(run_id, sent, RECENT_BYTES)
    except RunNotFoundError as err:
        raise RunDeletedError(run_id, sent) from err  # it was there when the watch began


async def _next(records: _Records) -> bytes | None:
    """The next item, or None at the end (so no name keeps the last item alive while the stream waits)."""
    try:
        return await anext(records)
    except StopAsyncIteration:
        return None


async def _news_past(channel: RunChannel, sent: int) -> None:
    await channel.wait_past(sent)
    if channel.deleted:
        raise RunDeletedError(channel.run_id, sent)
    if channel.closed:
        raise EventsClosedError


async def _stale_news(channel: RunChannel) -> None:
    """The news named a record the read did not find: wait for more news, or a moment, then read again."""
    log.debug("run %s: told of seq %d before the store showed it; reading again", channel.run_id, channel.last_seq)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(STALE_NEWS_RETRY_SECONDS):  # not wait_for: it may drop a cancel (3.11)
            await channel.wait_past(channel.last_seq)


class _Records:
    """The serialized record items of a run after ``after`` as far as acknowledged; ``sent`` the last seq given out.

    An iterator object, not a generator, for the reason ``RecordReader`` is
    one: a suspended generator frame would keep its last record alive while
    the client stalls. The store is read from ``after`` itself (not after it)
    when ``after`` is a seq: finding that record proves the run has it, and
    that the run exists; it is checked and not sent.
    """

    def __init__(self, runs: Runs, run_id: str, after: int, *, live: bool = False) -> None:
        self._run_id = run_id
        self._after = after
        self._live = live
        # The live part reads past what was sent: the stored part already proved the run.
        self._reader = runs.read(run_id, after + 1 if live else max(after, 1))
        self._checked = live or after == 0
        self.sent = after

    def __aiter__(self) -> _Records:
        return self

    async def __anext__(self) -> bytes:
        try:
            stored = await anext(self._reader)
            if not self._checked:
                self._checked = True
                if stored.seq != self._after:
                    raise AssertionError(f"the store streamed seq {stored.seq} when asked from {self._after}")
                stored = await anext(self._reader)
        except StopAsyncIteration:
            if not self._checked or self.sent == 0:
                self._refuse_missing()
            raise
        except RunNotFoundError as err:
            if self._live:
                # It was there when the watch began: it went away since, which only a deletion does.
                raise RunDeletedError(self._run_id, self.sent) from err
            raise
        if stored.seq != self.sent + 1:
            raise AssertionError(f"run {self._run_id}: the store streamed seq {stored.seq} after {self.sent}")
        self.sent = stored.seq
        return _record_item(stored)

    def _refuse_missing(self) -> None:
        if self.sent == 0:
            raise RunNotFoundError(self._run_id)  # no complete record: a creation that never became durable
        raise _beyond_head(self._run_id, self._after)

    async def aclose(self) -> None:
        await self._reader.aclose()
