"""Starting runjournal on a 3-node NATS cluster that is still forming, or electing a leader.

Real nats-servers on loopback (``cluster.py``), real ``runjournal serve``
processes; every process is ended by its PID.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.conftest import new_stream_target
from tests.durability.cluster import NatsCluster, nats_cluster  # noqa: F401  (the fixture)
from tests.servers import ServerProcess

pytestmark = [pytest.mark.jetstream, pytest.mark.timeout(240)]

FORMING = "the NATS cluster is not ready yet"


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
