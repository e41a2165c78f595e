"""A run's records in one stream of messages: an ephemeral pull consumer instead of one request per record.

Opening a 10,000-record run by exact subject is 10,000 requests (64 in flight
at a time); a consumer filtered on the run's subjects delivers them in stream
order, which is seq order (each record needs its predecessor), in batches of
``FETCH_BATCH`` per pull request. The consumer is in memory, has one replica
and no acks, and is deleted at the end (its inactivity threshold removes it
if this process dies first).

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

from runjournal_server.backends.jetstream.api import JetStreamApi

log = logging.getLogger(__name__)

FETCH_BATCH = 1024
"""Messages asked for per pull request: bounds what the connection buffers for one open ahead of the decoding."""
INACTIVE_SECONDS = 30
"""A consumer whose reader died is removed by the server after this long."""
_NANOS = 1_000_000_000


async def fetch_first(
    api: JetStreamApi, filter_subject: str, count: int, expected_subject: Callable[[int], str]
) -> list[bytes]:
    """The bodies of the run's first messages, up to ``count``, in order: fewer when the consumer lagged or failed.

    Message ``n`` (from 1) is kept only while its subject is
    ``expected_subject(n)``; delivery stops at the first that is not. Only
    the bodies: the records are decoded and checked at their seq by the
    caller, and nothing else of a message before the last is used (the
    fence is on the last, which the caller read from the stream leader).
    """
    nc = api.connection
    try:
        created = await nc.request(
            f"$JS.API.CONSUMER.CREATE.{api.stream}",
            json.dumps(
                {
                    "stream_name": api.stream,
                    "config": {
                        "deliver_policy": "all",
                        "ack_policy": "none",
                        "filter_subject": filter_subject,
                        "mem_storage": True,
                        "num_replicas": 1,
                        "inactive_threshold": INACTIVE_SECONDS * _NANOS,
                    },
                }
            ).encode(),
            timeout=api.timeout,
        )
        name = json.loads(created.data)["name"]
    except (nats.errors.Error, TimeoutError, OSError, ValueError, KeyError, TypeError) as err:
        log.info("stream %s: no consumer for %s (%s); reading by subject", api.stream, filter_subject, err)
        return []
    try:
        return await _pull(api, name, count, expected_subject)
    finally:
        with contextlib.suppress(nats.errors.Error, TimeoutError, OSError):
            await nc.request(f"$JS.API.CONSUMER.DELETE.{api.stream}.{name}", b"", timeout=api.timeout)


async def _pull(api: JetStreamApi, consumer: str, count: int, expected_subject: Callable[[int], str]) -> list[bytes]:
    nc = api.connection
    found: list[bytes] = []
    done = asyncio.Event()
    inbox = nc.new_inbox()

    async def take(msg: Msg) -> None:
        if done.is_set():
            return
        if not msg.reply or not msg.reply.startswith("$JS.ACK."):
            done.set()  # a status (no more messages, request expired): the pull is over
            return
        if msg.subject != expected_subject(len(found) + 1):
            done.set()
            return
        found.append(msg.data)
        if len(found) >= count or len(found) % FETCH_BATCH == 0:
            done.set()

    subscription = await nc.subscribe(inbox, cb=take)
    try:
        while len(found) < count:
            asked = len(found)
            done.clear()
            batch = min(FETCH_BATCH, count - asked)
            request = {"batch": batch, "expires": int(api.timeout * _NANOS)}
            await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{api.stream}.{consumer}", json.dumps(request).encode(), inbox)
            try:
                async with asyncio.timeout(api.timeout):  # not wait_for: on 3.11 it may drop the caller's cancel
                    await done.wait()
            except TimeoutError:
                break
            if len(found) < asked + batch:
                break  # ended early: lagging, or a subject out of place; the caller reads the rest by subject
    except (nats.errors.Error, OSError) as err:
        log.info("stream %s: consumer read stopped (%s); reading the rest by subject", api.stream, err)
    finally:
        with contextlib.suppress(nats.errors.Error):
            await subscription.unsubscribe()
    return found
