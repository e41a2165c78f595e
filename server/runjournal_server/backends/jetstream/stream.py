"""The journal stream as ``start`` finds it: read, created when asked and missing, checked, warned about.

The rules a stream must keep are ``config.py``'s (pure); this module asks
the server for the stream's configuration (one request), creates the stream
with ``config.stream_config`` when asked to and it is missing (another
replica creating it at the same moment is fine: theirs is checked), and
turns the problems into one ``StreamConfigError`` that names each fix.
What is allowed but weaker is logged: fewer than three replicas,
``deny_delete`` (DeleteRun and retention then refuse), and a NATS server
that does not sync every write (``sync_interval`` other than ``always``),
where that can be read: a client reads it only through the system
account's ``$SYS.REQ.SERVER.PING.VARZ`` (a user of the system account, or
an account importing that service, as deploy/ shows), so otherwise the log
says it cannot be checked.

A cluster that is still forming answers for a while with refusals that are
not about the stream: "no suitable peers for placement" (10005) right after
its meta leader appears and before it knows every peer, "JetStream system
temporarily unavailable" (10008) during a leader election, or nothing at all.
Those are asked again, ``FORMING_RETRY_SECONDS`` apart, for up to
``FORMING_WAIT_SECONDS``, so replicas started together with their NATS
cluster (a compose file, a Helm release) start instead of exiting on a
configuration error; only then is the last refusal reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import nats.errors
from nats.aio.client import Client
from nats.aio.msg import Msg

from runjournal_server.backends.jetstream.api import (
    ERR_STREAM_NAME_IN_USE,
    ERR_STREAM_NOT_FOUND,
    ApiError,
    JetStreamApi,
    NoAnswerError,
    NotDeliveredError,
)
from runjournal_server.backends.jetstream.config import (
    StreamConfigError,
    format_problems,
    stream_config,
    stream_problems,
)
from runjournal_server.backends.jetstream.layout import Layout
from runjournal_server.core.errors import StorageUnavailableError

log = logging.getLogger("runjournal_server.backends.jetstream")

VARZ_PING = "$SYS.REQ.SERVER.PING.VARZ"
VARZ_FIRST_REPLY_SECONDS = 1.0
VARZ_MORE_REPLIES_SECONDS = 0.5
"""Every server of the cluster answers the ping; how long their answers are collected."""

ERR_NO_SUITABLE_PEERS = 10005
ERR_CLUSTER_NOT_AVAILABLE = 10008
FORMING_CODES = frozenset({ERR_NO_SUITABLE_PEERS, ERR_CLUSTER_NOT_AVAILABLE})
"""JetStream refusals of a cluster still forming or electing (see the module docstring)."""
FORMING_WAIT_SECONDS = 60.0
FORMING_RETRY_SECONDS = 0.5

T = TypeVar("T")


async def checked_stream(
    api: JetStreamApi, layout: Layout, *, create: bool, replicas: int, max_message_bytes: int
) -> Mapping[str, Any]:
    """The stream's configuration, checked to keep runs of up to ``max_message_bytes`` under ``layout``.

    Raises ``StreamConfigError`` (what to fix) or ``StorageUnavailableError`` (the server cannot be asked).
    """
    config = await while_forming(api.stream, lambda: _config(api, layout, create=create, replicas=replicas))
    problems = stream_problems(config, prefix=layout.prefix, max_record_bytes=max_message_bytes)
    if problems:
        raise StreamConfigError(format_problems(api.stream, problems))
    if config.get("deny_delete"):
        log.warning(
            "stream %s denies message deletes (deny_delete, which cannot be lifted): DeleteRun and retention "
            "will refuse; migrate the runs to a stream created by this version to delete runs",
            api.stream,
        )
    await warn_unless_synced(api)
    if int(config.get("num_replicas") or 1) < 3:
        log.warning(
            "stream %s has %s replica(s): an acknowledged record survives the loss of a NATS server only "
            "with 3 or more",
            api.stream,
            config.get("num_replicas") or 1,
        )
    return config


async def _config(api: JetStreamApi, layout: Layout, *, create: bool, replicas: int) -> Mapping[str, Any]:
    """The stream's configuration, creating the stream first when asked to and it is missing."""
    try:
        info = await api.stream_info()
    except ApiError as err:
        if err.err_code != ERR_STREAM_NOT_FOUND:
            raise StorageUnavailableError(None, f"reading stream {api.stream}: {err}") from err
        if not create:
            raise StreamConfigError(
                f"stream {api.stream!r} does not exist: start with --create-stream to create it, or create it "
                f"with subjects '{layout.prefix}.>' as docs/jetstream-backend.md shows"
            ) from err
        info = await _create(api, layout, replicas)
    except (NotDeliveredError, NoAnswerError) as err:
        raise StorageUnavailableError(None, f"reading stream {api.stream}: {err} (is JetStream on?)") from err
    return info.get("config") or {}


async def _create(api: JetStreamApi, layout: Layout, replicas: int) -> dict[str, Any]:
    config = stream_config(api.stream, layout.prefix, replicas=replicas)
    try:
        info = await api.create_stream(config)
    except ApiError as err:
        if err.err_code != ERR_STREAM_NAME_IN_USE:
            raise StreamConfigError(f"creating stream {api.stream!r} failed: {err}") from err
        info = await api.stream_info()  # another replica created it first: check theirs
    except (NotDeliveredError, NoAnswerError) as err:
        raise StorageUnavailableError(None, f"creating stream {api.stream}: {err}") from err
    log.info("created stream %s for subjects %s.>", api.stream, layout.prefix)
    return info


async def while_forming(stream: str, step: Callable[[], Awaitable[T]], wait_seconds: float = FORMING_WAIT_SECONDS) -> T:
    """``step()``, asked again while the cluster answers as one still forming (see the module docstring)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_seconds
    while True:
        try:
            return await step()
        except (StreamConfigError, StorageUnavailableError) as err:
            cause = err.__cause__
            forming = isinstance(cause, NoAnswerError) or (
                isinstance(cause, ApiError) and cause.err_code in FORMING_CODES
            )
            if not forming or loop.time() >= deadline:
                raise
            log.warning("stream %s: the NATS cluster is not ready yet (%s); asking again", stream, cause)
        await asyncio.sleep(FORMING_RETRY_SECONDS)


async def warn_unless_synced(api: JetStreamApi) -> list[str]:
    """Warn about each NATS server that does not sync every write; the names of those servers.

    Asked of every server at once (a ping of their varz); when none answers
    (the connection's account cannot reach the system account's service),
    the log says it cannot be checked.
    """
    nc = api.connection
    try:
        # One request first: "no responders" at once where the service is out of reach (the usual case).
        await nc.request(VARZ_PING, b"", timeout=VARZ_FIRST_REPLY_SECONDS)
        replies = await _every_reply(nc, VARZ_PING)
    except (nats.errors.Error, OSError, TimeoutError):
        replies = []
    if not replies:
        log.info(
            "cannot read the NATS servers' sync_interval over this connection (it needs %s of the system "
            "account); make sure every server sets sync_interval: always (docs/jetstream-backend.md)",
            VARZ_PING,
        )
        return []
    unsynced = []
    for reply in replies:
        name = str((reply.get("server") or {}).get("name") or "?")
        jetstream = (reply.get("data") or {}).get("jetstream") or {}
        if jetstream and (jetstream.get("config") or {}).get("sync_always") is not True:
            unsynced.append(name)
    for name in sorted(unsynced):
        log.warning(
            "NATS server %s does not sync every write (sync_interval is not always): a record it acknowledged "
            "could be lost in a power loss; set sync_interval: always in its jetstream block",
            name,
        )
    return sorted(unsynced)


async def _every_reply(nc: Client, subject: str) -> list[dict[str, Any]]:
    """The JSON replies of every server to one ping of ``subject``, collected for a moment after the first."""
    replies: list[dict[str, Any]] = []

    async def take(msg: Msg) -> None:
        with contextlib.suppress(ValueError, TypeError):
            reply = json.loads(msg.data)
            if isinstance(reply, dict):
                replies.append(reply)

    inbox = nc.new_inbox()
    subscription = await nc.subscribe(inbox, cb=take)
    try:
        await nc.publish(subject, b"", reply=inbox)
        await asyncio.sleep(VARZ_MORE_REPLIES_SECONDS)  # every server answers the ping; no count to wait for
    finally:
        await subscription.unsubscribe()
    return replies
