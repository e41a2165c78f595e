"""The NATS connection: options from the server's settings, reconnect behaviour, the server's version."""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nats.aio.client import Client

from runjournal_server.backends.jetstream.config import StreamConfigError

CONNECT_TIMEOUT_SECONDS = 10.0
"""How long ``start`` keeps trying to reach a NATS server before refusing to start."""
RECONNECT_WAIT_SECONDS = 1.0
PING_INTERVAL_SECONDS = 2
MAX_OUTSTANDING_PINGS = 2
"""A node that answers no ping for this many intervals is hung: the connection is dropped and another URL
tried. A node frozen with its sockets open (SIGSTOP, a paused VM, a stalled disk under the Go runtime)
closes nothing, so without pings nothing else notices: nats-py's defaults (every 120 s, two missed) take 4
to 6 minutes, during which every request of this replica times out. With these, 4 to 6 s: about one
leader election of the stream, and short enough for a worker's retries within its deadline
(docs/jetstream-backend.md has the figures). A shorter interval risks dropping a healthy node that is
merely slow under load; a reconnect costs little, but each drops the requests in flight."""


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
