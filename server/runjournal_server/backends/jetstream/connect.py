"""The NATS connection: options from the server's settings, reconnect behaviour, the server's version."""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import nats.errors
from nats.aio.client import Client
from nats.aio.msg import Msg

from runjournal_server.backends.jetstream.config import StreamConfigError

CONNECT_TIMEOUT_SECONDS = 10.0
"""How long ``start`` keeps trying to reach a NATS server before refusing to start."""
RECONNECT_WAIT_SECONDS = 1.0
PING_INTERVAL_SECONDS = 1
MAX_OUTSTANDING_PINGS = 1
"""A node that answers no ping for one interval is hung: the connection is dropped, within 1 to 2 s, and
another URL tried. A node frozen with its sockets open (SIGSTOP, a paused VM, a stalled machine) closes
nothing, so without pings nothing notices: nats-py's defaults (every 120 s, two missed) take 4 to 6
minutes, during which every request of this replica times out.

It also keeps stale reads out (docs/jetstream-backend.md, "Failover"): a frozen stream leader is replaced
by an election no sooner than 3 s after it froze (NATS raft: heartbeats every 1 s, election timeouts of
4 to 9 s), and when it resumes it still answers as leader until it hears of the new term. Dropping its
connection before anyone else can lead, and trusting no reply across a reconnect (``GuardedClient``),
means this replica never takes such an answer: a read that would have said "nothing after seq N" about
a record another replica had stored under the new leader (a SEQ_GAP refused to a correct worker) fails
as STORAGE_UNAVAILABLE instead, which the worker retries. The cost of the short interval: a healthy node
that cannot answer a ping for a second (a long GC pause, a starved machine) is left too, and the requests
in flight on it are answered STORAGE_UNAVAILABLE."""


class GuardedClient(Client):
    """A nats-py client that trusts a reply only on the connection its request went out on.

    nats-py keeps a request waiting across a reconnect, and its reply inbox is
    subscribed again on the new connection, so a reply can arrive from the
    node the request was sent to long after this replica left it: a node that
    was hung, and may have resumed as a leader that has since been replaced,
    answering from a store that lacks what the new leader acknowledged. Such a
    reply is dropped and the request reported as unanswered (nats' own
    timeout), which a read turns into STORAGE_UNAVAILABLE and a write settles
    by reading back (``publish.py``).
    """

    async def request(
        self,
        subject: str,
        payload: bytes = b"",
        timeout: float = 0.5,
        old_style: bool = False,
        headers: dict[str, Any] | None = None,
    ) -> Msg:
        sent_on = self.stats["reconnects"]
        reply = await super().request(subject, payload, timeout=timeout, old_style=old_style, headers=headers)
        if self.stats["reconnects"] != sent_on:
            raise nats.errors.TimeoutError
        return reply


def nats_connect_options(
    *,
    creds_file: Path | None = None,
    tls_ca_file: Path | None = None,
    tls_cert_file: Path | None = None,
    tls_key_file: Path | None = None,
    user: str | None = None,
    password: str | None = None,
    token: str | None = None,
) -> dict[str, Any]:
    """nats-py connect options from the server's settings: credentials file, TLS, user/password or token."""
    options: dict[str, Any] = {}
    if creds_file is not None:
        options["user_credentials"] = str(creds_file)
    if tls_ca_file is not None or tls_cert_file is not None:
        context = ssl.create_default_context(cafile=str(tls_ca_file) if tls_ca_file else None)
        if tls_cert_file is not None:
            context.load_cert_chain(str(tls_cert_file), str(tls_key_file) if tls_key_file else None)
        options["tls"] = context
    if user:
        options["user"] = user
        options["password"] = password or ""
    if token:
        options["token"] = token
    return options


def client_options(
    servers: Sequence[str],
    *,
    request_timeout_seconds: float,
    on_error: Callable[[Exception], Awaitable[None]],
    on_disconnect: Callable[[], Awaitable[None]],
    on_reconnect: Callable[[], Awaitable[None]],
    connect_options: Mapping[str, Any],
) -> dict[str, Any]:
    """nats-py ``connect`` arguments: reconnect forever, one second apart, leave a hung node, report each change."""
    return {
        "servers": list(servers),
        "name": "runjournal",
        "connect_timeout": max(1, round(request_timeout_seconds)),
        "allow_reconnect": True,
        "max_reconnect_attempts": -1,
        "reconnect_time_wait": RECONNECT_WAIT_SECONDS,
        "ping_interval": PING_INTERVAL_SECONDS,
        "max_outstanding_pings": MAX_OUTSTANDING_PINGS,
        "error_cb": on_error,
        "disconnected_cb": on_disconnect,
        "reconnected_cb": on_reconnect,
        **connect_options,
    }


def server_version(nc: Client) -> str:
    """The connected server's version as text (``2.12.3``, ``2.13.0-beta.1``)."""
    version = nc.connected_server_version
    try:
        text = f"{version.major}.{version.minor}.{version.patch}"
        return f"{text}-{version.prerelease}" if version.prerelease else text
    except ValueError as err:
        raise StreamConfigError(f"the NATS server reports an unreadable version ({err})") from err
