"""What the backend says at start about the NATS servers it was given: their version and whether they sync.

A real nats-server on loopback whose account imports the system account's
varz ping (so a client can read ``sync_interval``), once without and once with
``sync_interval: always``; every process is ended by its PID.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from runjournal_server.backends.jetstream.backend import JetStreamBackend
from runjournal_server.backends.jetstream.stream import warn_unless_synced
from tests.conftest import new_stream_target

pytestmark = [pytest.mark.jetstream, pytest.mark.timeout(120)]

_CLIENT_PORT = re.compile(rb"Listening for client connections on [^\s:]+:(\d+)")


def _config(store: Path, *, sync_always: bool) -> str:
    sync = "sync_interval: always" if sync_always else ""
    return f"""
server_name: settings-check
listen: 127.0.0.1:-1
max_payload: 8MB
jetstream {{ store_dir: {json.dumps(str(store))}
  {sync} }}
accounts {{
  SYS: {{ users: [{{user: sys, password: sys}}], exports: [{{service: "$SYS.REQ.SERVER.PING.VARZ"}}] }}
  APP: {{
    jetstream: enabled
    users: [{{user: app, password: app}}]
    imports: [{{service: {{account: SYS, subject: "$SYS.REQ.SERVER.PING.VARZ"}}}}]
  }}
}}
system_account: SYS
"""


@pytest.fixture(params=[False, True], ids=["sync-default", "sync-always"])
def readable_server(request: pytest.FixtureRequest, tmp_path: Path, nats_binary: Path) -> Iterator[tuple[str, bool]]:
    """A nats-server whose app account can read varz; its URL (as user app) and whether it syncs every write."""
    sync_always: bool = request.param
    config = tmp_path / "nats.conf"
    config.write_text(_config(tmp_path / "store", sync_always=sync_always))
    process = subprocess.Popen(
        [str(nats_binary), "-c", str(config)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    port: list[int] = []
    ready = threading.Event()

    def watch() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            if found := _CLIENT_PORT.search(line):
                port.append(int(found.group(1)))
            if b"Server is ready" in line:
                ready.set()
        ready.set()

    threading.Thread(target=watch, daemon=True).start()
    try:
        assert ready.wait(20) and port, "nats-server did not start"
        yield f"nats://app:app@127.0.0.1:{port[0]}", sync_always
    finally:
        os.kill(process.pid, signal.SIGTERM)
        process.wait(20)


async def test_a_server_that_does_not_sync_every_write_is_named_at_start(
    readable_server: tuple[str, bool], caplog: pytest.LogCaptureFixture
) -> None:
    url, sync_always = readable_server
    target = new_stream_target()
    backend = JetStreamBackend([url], stream=target.name, subject_prefix=target.prefix, create_stream=True)
    with caplog.at_level(logging.INFO, logger="runjournal_server.backends.jetstream"):
        await backend.start()
    try:
        messages = [record.getMessage() for record in caplog.records]
        unsynced = [message for message in messages if "does not sync every write" in message]
        if sync_always:
            assert unsynced == []
        else:
            assert len(unsynced) == 1 and "settings-check" in unsynced[0]
        assert any("1 replica(s)" in message for message in messages)  # and the replica warning
    finally:
        await backend.close()


async def test_where_sync_interval_cannot_be_read_the_log_says_so(
    nats_server: object, caplog: pytest.LogCaptureFixture
) -> None:
    """The test server runs without accounts: the varz ping has no responder, answered at once."""
    target = new_stream_target()
    backend = JetStreamBackend(
        [nats_server.url],  # type: ignore[attr-defined]
        stream=target.name,
        subject_prefix=target.prefix,
        create_stream=True,
    )
    await backend.start()
    try:
        with caplog.at_level(logging.INFO, logger="runjournal_server.backends.jetstream"):
            assert await warn_unless_synced(backend._api) == []
        assert any("cannot read the NATS servers' sync_interval" in record.getMessage() for record in caplog.records)
    finally:
        await backend.close()
