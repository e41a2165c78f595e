"""A run's records in one stream of messages: an ephemeral pull consumer instead of one request per record.

Opening or streaming a 10,000-record run by exact subject is 10,000 requests
(64 in flight at a time); a consumer filtered on the run's subjects delivers
them in stream order, which is seq order (each record needs its predecessor)
but for a staged creation's meta (``staging.py``), a window of records per
pull request (``reading.StreamReader._consumed`` sizes them). The consumer
is in memory, has one replica and no acks, and is deleted at the end (its
inactivity threshold removes it if this process dies first).

A consumer is served by its own leader's copy of the stream, which in a
cluster may lag the stream leader: the caller says how many records it
expects (it read the last one from the leader), and whatever the consumer
did not deliver in time, or delivered on another subject than expected, is
returned as missing, for the caller to read by subject from the leader. So
the result is never short of what was acknowledged; at worst it is slower.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable

import nats.errors
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from runjournal_server.backends.jetstream.api import JetStreamApi

log = logging.getLogger(__name__)

FETCH_BATCH = 1024
"""Messages asked for per pull request by ``fetch_first``."""
INACTIVE_SECONDS = 30
"""A consumer whose reader died is removed by the server after this long."""
_NANOS = 1_000_000_000


async def fetch_first(
    api: JetStreamApi, filter_subject: str, count: int, expected_subject: Callable[[int], str]
) -> list[bytes]:
    """The bodies of the first ``count`` messages on the filter, in order: fewer when the consumer stops early.

    Message ``n`` (from 1) is kept only while its subject is
    ``expected_subject(n)``. The reads of runs use ``ConsumerRead`` through
    ``reading.StreamReader._consumed``; this is the transport alone, which
    the bench compares with a request per record (``bench/cold_open.py``).
    """
    found: list[bytes] = []
    async with ConsumerRead(api, filter_subject, expected_subject) as reader:
        while len(found) < count and not reader.ended:
            found += await reader.window(min(FETCH_BATCH, count - len(found)))
    return found


class ConsumerRead:
    """An ephemeral pull consumer on one run's subjects, read a window at a time, in stream order.

    Message ``n`` delivered (counted from ``first``) is kept only while its
    subject is ``expected_subject(n)``; a message on ``skip_subject`` is
    passed over (the run's meta, which a staged creation stores after its
    staged records, and which the caller reads by subject). A window that comes short (a status
    ends the pull, the consumer lags, a subject out of place, no consumer
    could be made) ends the read (``ended``): the caller reads the rest by
    subject from the stream leader. Only the window asked for is in flight,
    so a slow consumer of the records holds one window at a time.
    """

    def __init__(
        self,
        api: JetStreamApi,
        filter_subject: str,
        expected_subject: Callable[[int], str],
        *,
        first: int = 1,
        after_stream_seq: int = 0,
        skip_subject: str | None = None,
    ) -> None:
        self._api = api
        self._filter = filter_subject
        self._expected = expected_subject
        self._next = first
        self._after = after_stream_seq
        self._skip = skip_subject
        self._skipped = 0
        self._name: str | None = None
        self._subscription: Subscription | None = None
        self._inbox = ""
        self._found: list[bytes] = []
        self._wanted = 0
        self._done = asyncio.Event()
        self.ended = False

    async def __aenter__(self) -> ConsumerRead:
        await self._open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _open(self) -> None:
        nc = self._api.connection
        start: dict[str, object] = (
            {"deliver_policy": "by_start_sequence", "opt_start_seq": self._after + 1}
            if self._after
            else {"deliver_policy": "all"}
        )
        try:
            created = await nc.request(
                f"$JS.API.CONSUMER.CREATE.{self._api.stream}",
                json.dumps(
                    {
                        "stream_name": self._api.stream,
                        "config": {
                            **start,
                            "ack_policy": "none",
                            "filter_subject": self._filter,
                            "mem_storage": True,
                            "num_replicas": 1,
                            "inactive_threshold": INACTIVE_SECONDS * _NANOS,
                        },
                    }
                ).encode(),
                timeout=self._api.timeout,
            )
            self._name = json.loads(created.data)["name"]
            self._inbox = nc.new_inbox()
            self._subscription = await nc.subscribe(self._inbox, cb=self._take)
        except (nats.errors.Error, TimeoutError, OSError, ValueError, KeyError, TypeError) as err:
            log.info("stream %s: no consumer for %s (%s); reading by subject", self._api.stream, self._filter, err)
            self.ended = True

    async def _take(self, msg: Msg) -> None:
        if self._done.is_set():
            return
        if not msg.reply or not msg.reply.startswith("$JS.ACK."):
            self._done.set()  # a status (no more messages, request expired): the pull is over
            return
        if msg.subject == self._skip:
            self._skipped += 1
        elif msg.subject != self._expected(self._next + len(self._found)):
            self._done.set()
            return
        else:
            self._found.append(msg.data)
        if len(self._found) + self._skipped >= self._wanted:  # the pull's batch counts a skipped message too
            self._done.set()

    async def window(self, batch: int) -> list[bytes]:
        """The next ``batch`` bodies at most, in order; fewer (and ``ended``) when the read cannot go on."""
        if self.ended or self._name is None or batch <= 0:
            self.ended = True
            return []
        api, nc = self._api, self._api.connection
        self._found, self._wanted, self._skipped = [], batch, 0
        self._done = asyncio.Event()
        request = {"batch": batch, "expires": int(api.timeout * _NANOS)}
        try:
            await nc.publish(
                f"$JS.API.CONSUMER.MSG.NEXT.{api.stream}.{self._name}", json.dumps(request).encode(), self._inbox
            )
            async with asyncio.timeout(api.timeout):  # not wait_for: on 3.11 it may drop the caller's cancel
                await self._done.wait()
        except TimeoutError:
            pass
        except (nats.errors.Error, OSError) as err:
            log.info("stream %s: consumer read stopped (%s); reading the rest by subject", api.stream, err)
        found, self._found = self._found, []
        self._done.set()  # late deliveries of this pull are dropped, never taken into the next window
        self._next += len(found)
        if len(found) + self._skipped < batch:
            self.ended = True  # ended early: lagging, or a subject out of place
        return found

    async def close(self) -> None:
        """Stop listening and delete the consumer (its inactivity threshold removes it if this fails)."""
        self.ended = True
        nc = self._api.connection
        subscription, self._subscription = self._subscription, None
        name, self._name = self._name, None
        if subscription is not None:
            with contextlib.suppress(nats.errors.Error):
                await subscription.unsubscribe()
        if name is not None:
            with contextlib.suppress(nats.errors.Error, TimeoutError, OSError):
                await nc.request(f"$JS.API.CONSUMER.DELETE.{self._api.stream}.{name}", b"", timeout=self._api.timeout)
