"""Failover on a 3-node NATS cluster: a replica leaves a hung node, and keeps appending through another.

Real nats-servers on loopback (``cluster.py``), the JetStream backend in
this process; every nats-server is ended by its PID.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from runjournal_server.backends.jetstream.backend import JetStreamBackend
from runjournal_server.backends.journal import Journal
from runjournal_server.core.errors import StorageUnavailableError
from runjournal_server.core.records import StoredRecord
from tests.conftest import new_stream_target
from tests.durability.cluster import NatsCluster, nats_cluster  # noqa: F401  (the fixture)
from tests.support import encoded

pytestmark = [pytest.mark.jetstream, pytest.mark.timeout(240)]

LEAVES_HUNG_NODE_WITHIN_SECONDS = 30.0
"""Long enough for a loaded CI machine (the pings notice a hung node in 4 to 6 s); nats-py's defaults
(a ping every 2 minutes, two missed) would need 4 to 6 minutes."""


@pytest.fixture
async def backend(nats_cluster: NatsCluster) -> AsyncIterator[JetStreamBackend]:  # noqa: F811
    await nats_cluster.start()
    target = new_stream_target()
    started = JetStreamBackend(
        nats_cluster.urls, stream=target.name, subject_prefix=target.prefix, create_stream=True, replicas=3
    )
    await started.start()
    try:
        yield started
    finally:
        await started.close()


def _connected_node(cluster: NatsCluster, backend: JetStreamBackend) -> str:
    assert backend._nc is not None and backend._nc.connected_url is not None
    port = backend._nc.connected_url.port
    (name,) = [node.name for node in cluster.nodes.values() if node.client_port == port]
    return name


async def test_a_replica_leaves_a_hung_node_and_appends_through_another(
    nats_cluster: NatsCluster,  # noqa: F811
    backend: JetStreamBackend,
) -> None:
    """SIGSTOP the node the replica is connected to: it reconnects elsewhere while the node is still hung."""
    journal = await backend.create_journal("hung-node", encoded.meta("hung-node"))
    hung = nats_cluster.node(_connected_node(nats_cluster, backend))
    reconnected = asyncio.Event()

    async def health(up: bool) -> None:
        if up:
            reconnected.set()

    backend.health_listener = health
    hung.pause()
    try:
        async with asyncio.timeout(LEAVES_HUNG_NODE_WITHIN_SECONDS):
            await reconnected.wait()
        assert _connected_node(nats_cluster, backend) != hung.name
        # Still hung: the stream goes on with the two others (a new leader if the hung node led it).
        await nats_cluster.stream_leader(backend.stream_name)
        await _append_until_stored(journal, encoded.note(2, "written while a node hangs"))
    finally:
        hung.resume()
    assert journal.last_seq == 2


async def _append_until_stored(journal: Journal, record: StoredRecord) -> None:
    """Append, asking again while the stream has no leader yet (STORAGE_UNAVAILABLE), as a worker would."""
    while True:
        try:
            await journal.append([record])
            return
        except StorageUnavailableError:
            await asyncio.sleep(0.2)
