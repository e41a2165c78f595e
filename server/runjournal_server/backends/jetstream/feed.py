"""The feed: news of the records other replicas store, and of the runs they delete, for Watch and WatchRuns.

Replicas share the stream and no replica hears of another's appends, so each
replica follows the stream itself with an ordered consumer: ephemeral, in
memory, no acks, filtered to the record subjects (``<prefix>.<run>.<token>``;
task documents have one token more and fall outside), and **headers only**,
so a replica is sent each record's subject and not its body: following a
busy stream costs a small message per record, whatever the records weigh.
The subject alone says which run moved and to which seq (``layout.py``),
or, for a run's tombstone subject, that the run was deleted;
watchers then read the records from the stream leader as they always do.
This replica's own acknowledged writes and deletions are skipped
(``own_writes.py``): ``runs/`` told of them already, right after the ack or
the deletion's answer, so each listener hears of every change once.

A consumer delivers a message only once the stream has stored it, so the
news never runs ahead of what a watcher can read, and an ordered consumer
notices a gap in its deliveries (a missed message, a lost connection, a
restarted NATS server) and recreates itself from the stream seq after the
last it delivered (nats-py's ordered consumer). News lost while NATS is away
is therefore told late, not lost; watchers read whatever is there by then.

The listing index needs two more things of it (``listing_store.py``):

* **where it is**: ``position`` is the stream seq of the last message it
  delivered (every news up to there has been told, synchronously, in stream
  order; a message of this replica's own whose write has not ended yet
  holds it just below), and ``start`` may begin right after a given seq instead of at the
  stream's end, so a replica that replayed the news since its persisted
  index up to seq L follows from L + 1, missing nothing in between;
* **a barrier**: ``caught_up`` reads the stream seq of the last message on
  the feed's subjects (one request to the stream leader) and waits until the
  feed has delivered it. A write another replica acknowledged before the
  call is at or below that seq, so once it returns its news has been told.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import api as js_api
from nats.js.client import JetStreamContext

from runjournal_server.backends.jetstream.api import ApiError, JetStreamApi, NoAnswerError, NotDeliveredError
from runjournal_server.backends.jetstream.layout import Layout
from runjournal_server.backends.jetstream.own_writes import OwnWrites
from runjournal_server.core.errors import StorageUnavailableError

log = logging.getLogger("runjournal_server.backends.jetstream")

Stored = Callable[[str, int], None]
"""Told ``(run_id, seq)``: the run's record at ``seq`` is stored (so every record before it is)."""
Deleted = Callable[[str], None]
"""Told ``run_id``: the run was deleted (its tombstone is stored)."""

RECHECK_SECONDS = 0.5
"""How often a barrier that waits asks again for the stream's last record."""
IDLE_HEARTBEAT_SECONDS = 5.0
"""How often the consumer proves it is alive while nothing is stored; two missed ones recreate it."""


def stream_seq_of(reply: str | None) -> int | None:
    """The stream seq a JetStream delivery's reply subject carries; None for any other message.

    ``$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>...`` (9 tokens), or
    with a domain and account hash after ``ACK`` (12 or more). Only that one
    field, where nats-py's ``msg.metadata`` builds the whole of it, timestamp
    included, for every message the feed gets (one per append).
    """
    if not reply:
        return None
    tokens = reply.split(".")
    if len(tokens) < 9 or tokens[0] != "$JS" or tokens[1] != "ACK":
        return None
    token = tokens[5] if len(tokens) == 9 else tokens[7] if len(tokens) >= 11 else ""
    return int(token) if token.isdigit() else None


class Feed:
    """One replica's ordered, headers-only consumer of the stream's record subjects.

    With ``own``, this replica's own writes and deletions are left to
    ``runs/`` (see the module docstring); without (the listing index's
    replay at start, which must hear of every change), every one is told.
    """

    def __init__(self, layout: Layout, stored: Stored, deleted: Deleted, own: OwnWrites | None = None) -> None:
        self._layout = layout
        self._stored = stored
        self._deleted = deleted
        self._own = own
        self._subscription: JetStreamContext.PushSubscription | None = None
        self._delivered = 0
        """The stream seq of the last message delivered (or of where the feed began)."""
        self._moved = asyncio.Event()

    @property
    def position(self) -> int:
        """The stream seq up to which every message's news has been told.

        The last delivered, or just below a message of this replica's whose
        write has not ended yet (``own_writes.py``): its news is not told
        until it does.
        """
        held = self._own.held_below() if self._own is not None else None
        return self._delivered if held is None else min(self._delivered, held - 1)

    async def start(self, nc: Client, stream: str, after: int | None = None) -> None:
        """Follow what is stored after stream seq ``after`` (default: from now on).

        STORAGE_UNAVAILABLE when the consumer cannot be made.
        """
        js = nc.jetstream()
        try:
            if after is None:
                info = await js.stream_info(stream)
                after = info.state.last_seq
            self._delivered = after
            if self._own is not None:
                self._own.follow(self.news, after, self._wake)
            config = js_api.ConsumerConfig(
                deliver_policy=js_api.DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=after + 1
            )
            self._subscription = await js.subscribe(
                self._layout.records(),
                stream=stream,
                cb=self._on_message,
                config=config,
                ordered_consumer=True,
                headers_only=True,
                idle_heartbeat=IDLE_HEARTBEAT_SECONDS,
            )
        except Exception as err:  # nats-py raises its own errors, OSError or a timeout
            if self._own is not None:
                self._own.stop()
            raise StorageUnavailableError(None, f"cannot follow stream {stream}: {err or type(err).__name__}") from err
        # nats-py restarts an ordered consumer from the last stream seq it delivered, +1; before the
        # first delivery that is seq 1, and a restart then would replay the whole stream's news.
        # Start its count where this feed starts instead.
        jsi = getattr(self._subscription._sub, "_jsi", None)
        if jsi is not None and getattr(jsi, "_sseq", None) == 0:
            jsi._sseq = after

    async def _on_message(self, msg: Msg) -> None:
        stream_seq = stream_seq_of(msg.reply)
        try:
            self.tell(msg.subject, stream_seq)
        finally:
            # The position moves only once the news is told: a barrier past it sees the news.
            if stream_seq is not None:
                self._advance(stream_seq)

    def tell(self, subject: str, stream_seq: int | None = None) -> None:
        """Tell the news of the message delivered at ``stream_seq``, unless it is this replica's to tell."""
        if self._own is not None and stream_seq is not None and self._own.delivered(subject, stream_seq):
            return  # this replica's own write or deletion: told by ``runs/``, or by its write's end
        self.news(subject)

    def news(self, subject: str) -> None:
        """Tell the news one stored message's subject carries (a record, a tombstone, or nothing)."""
        deleted = self._layout.run_of_tombstone(subject)
        if deleted is not None:
            self._deleted(deleted)
            return
        record = self._layout.record_of(subject)
        if record is not None:
            self._stored(*record)

    def _advance(self, stream_seq: int) -> None:
        if stream_seq > self._delivered:
            self._delivered = stream_seq
            if self._own is not None:
                self._own.passed(stream_seq)
            self._wake()

    def _wake(self) -> None:
        """Wake the barriers waiting for the position to move."""
        self._moved.set()
        self._moved = asyncio.Event()

    async def caught_up(self, api: JetStreamApi, timeout_seconds: float) -> bool:
        """Wait until every message on the feed's subjects stored before this call has been told.

        False when that takes longer than ``timeout_seconds`` (the feed is
        recreating itself, or NATS is away) or the stream cannot be asked:
        the caller then must not trust what the news built. While it waits
        it asks again every ``RECHECK_SECONDS``: a last message erased
        before the feed delivered it (a deletion's) is never delivered, and
        what is left is all that must be told.
        """
        target: int | None = None
        try:
            async with asyncio.timeout(timeout_seconds):
                while True:
                    last = await self._last_stored(api)
                    if last is None:
                        return False
                    # Never a later target than the first: what was stored before the call is what counts.
                    target = last if target is None else min(target, last)
                    if self.position >= target:
                        return True
                    if self._subscription is None:
                        return False
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(RECHECK_SECONDS):
                            while self.position < target:
                                await self._moved.wait()
        except TimeoutError:
            log.warning("feed barrier: the feed is at stream seq %d, behind the stream", self.position)
            return False

    async def _last_stored(self, api: JetStreamApi) -> int | None:
        """The stream seq of the last message on the feed's subjects (0: none), from the leader; None: unknown."""
        try:
            last = await api.get_last(self._layout.records())
        except (ApiError, NotDeliveredError, NoAnswerError) as err:
            log.info("feed barrier: cannot read the stream's last record (%s)", err)
            return None
        return 0 if last is None else last.stream_seq

    async def stop(self) -> None:
        """Stop following (the ephemeral consumer goes away with its subscription's interest)."""
        subscription, self._subscription = self._subscription, None
        if self._own is not None:
            self._own.stop()
        if subscription is None:
            return
        try:
            await subscription.unsubscribe()
        except Exception as err:  # a connection already closed has nothing left to stop
            log.debug("stopping the feed: %s", err)
