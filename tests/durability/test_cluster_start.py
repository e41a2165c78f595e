"""Starting runjournal on a 3-node NATS cluster that is still forming, or electing a leader.

Real nats-servers on loopback (``cluster.py``), real ``runjournal serve``
processes; every process is ended by its PID.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from runjournal_server.backends.jetstream.backend import JetStreamBackend
from runjournal_server.listing.filter import RunFilter
from runjournal_server.listing.pages import RunListing
from runjournal_server.runs.runs import Runs
from tests.conftest import new_stream_target
from tests.durability.cluster import NatsCluster, nats_cluster  # noqa: F401  (the fixture)
from tests.servers import ServerProcess
from tests.support import builders as b

pytestmark = [pytest.mark.jetstream, pytest.mark.timeout(240)]

FORMING = "the NATS cluster is not ready yet"
INDEX_ON_WITHIN_SECONDS = 60.0
"""The rebuild waits for the feed, asking every 2 s; a bound so that the old behaviour (off for good) fails."""


async def _logged(server: ServerProcess, text: str) -> bool:
    """Until the server's log holds ``text`` (True) or its process ended (False)."""
    while True:
        if server.stderr_path is not None and server.stderr_path.exists() and text in server.stderr_path.read_text():
            return True
        if server.process is not None and server.process.poll() is not None:
            return False
        await asyncio.sleep(0.05)


async def test_create_stream_with_3_replicas_waits_for_the_third_node(
    nats_cluster: NatsCluster,  # noqa: F811
    tmp_path: Path,
) -> None:
    """Two of three nodes up: the meta leader exists but an R3 stream has no room (10005) until the third joins."""
    await nats_cluster.start(("n1", "n2"))
    target = new_stream_target()
    server = ServerProcess(
        tmp_path / "data",
        extra_args=(*target.server_args(",".join(nats_cluster.urls)), "--replicas", "3"),
    )
    starting = asyncio.create_task(asyncio.to_thread(server.start))
    try:
        assert await _logged(server, FORMING), f"runjournal gave up on the forming cluster:\n{server.log()}"
        await asyncio.to_thread(nats_cluster.node("n3").start)
        await starting
        assert "created stream" in server.log()
        assert await nats_cluster.stream_leader(target.name) in ("n1", "n2", "n3")
    finally:
        await asyncio.gather(starting, return_exceptions=True)
        if server.process is not None and server.process.poll() is None:
            assert server.stop() == 0, server.log()


async def test_the_listing_index_comes_on_after_a_start_the_stream_could_not_answer(
    nats_cluster: NatsCluster,  # noqa: F811
) -> None:
    """The listing starts while two of three nodes are down (no leader anywhere); once they are back and the feed
    follows the stream, the index is rebuilt and used, instead of staying off until the next restart."""
    await nats_cluster.start()
    target = new_stream_target()
    backend = JetStreamBackend(
        nats_cluster.urls, stream=target.name, subject_prefix=target.prefix, create_stream=True, replicas=3
    )
    await backend.start()
    runs = Runs(backend, max_record_bytes=1 << 20, max_open_journals=16)
    listing = RunListing.of(runs)
    try:
        await runs.append("before-the-election", 1, [b.meta(run_id="before-the-election")])
        assert backend._nc is not None and backend._nc.connected_url is not None
        others = [node for node in nats_cluster.nodes.values() if node.client_port != backend._nc.connected_url.port]
        for node in others:
            node.kill()
        # Until the survivor knows it leads nothing (it may answer as leader for a few seconds): JetStream
        # then answers "temporarily unavailable" (10008), and where the news stands cannot be read.
        await nats_cluster.wait_leaderless(target.name)
        await listing.start()
        assert not listing.upkeep.ready
        for node in others:
            await asyncio.to_thread(node.start)
        await nats_cluster.wait_healthy()
        await nats_cluster.stream_leader(target.name)
        await backend.follow(runs.events.stored, runs.events.deleted)
        async with asyncio.timeout(INDEX_ON_WITHIN_SECONDS):
            await listing.upkeep.wait_repaired()
        assert listing.upkeep.ready and await listing.upkeep.trusted()
        page, _ = await listing.page(page_size=10, page_token="", where=RunFilter())
        assert [summary.run_id for summary in page] == ["before-the-election"]
    finally:
        await listing.close()
        await runs.close()
        await backend.close()
