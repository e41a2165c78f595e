"""Failover on a 3-node NATS cluster: a replica leaves a hung node, takes no stale "absent" from a leader that
lost its place (hung and replaced, or cut off), and holds an append through the loss of the stream leader.

Real nats-servers on loopback (``cluster.py``), the JetStream backend in
this process; every nats-server is ended by its PID.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from runjournal.v1 import records_pb2
from runjournal_server.backends.jetstream.backend import JetStreamBackend
from runjournal_server.backends.journal import Journal
from runjournal_server.core.errors import StorageUnavailableError
from runjournal_server.core.records import StoredRecord
from runjournal_server.runs.runs import Runs
from tests.conftest import new_stream_target
from tests.durability.cluster import NatsCluster, nats_cluster  # noqa: F401  (the fixture)
from tests.support import builders as b
from tests.support import encoded

pytestmark = [pytest.mark.jetstream, pytest.mark.timeout(240)]

LEAVES_HUNG_NODE_WITHIN_SECONDS = 30.0
"""Long enough for a loaded CI machine (the pings notice a hung node in 1 to 2 s); nats-py's defaults
(a ping every 2 minutes, two missed) would need 4 to 6 minutes."""

APPENDED_WITHIN_SECONDS = 90.0
"""How long a test keeps resending an append the cluster answers STORAGE_UNAVAILABLE (a worker's deadline):
an election takes about 6 s, a cut-off leader notices in about 10 s, a loaded CI machine is slower."""


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
    """Append, asking again while the stream has no leader yet (STORAGE_UNAVAILABLE), as a worker would,
    within a worker's deadline (see ``_until_appended``)."""
    last: StorageUnavailableError | None = None
    try:
        async with asyncio.timeout(APPENDED_WITHIN_SECONDS):
            while True:
                try:
                    await journal.append([record])
                    return
                except StorageUnavailableError as err:
                    last = err
                    await asyncio.sleep(0.2)
    except TimeoutError:
        pytest.fail(f"seq {record.seq} not stored within {APPENDED_WITHIN_SECONDS:g} s; last refusal: {last}")


async def test_the_next_seq_is_not_refused_as_a_gap_by_a_replica_that_was_on_a_hung_leader(
    nats_cluster: NatsCluster,  # noqa: F811
    backend: JetStreamBackend,
) -> None:
    """Replica A talks to the stream leader, which hangs; a new leader takes seq 4 from replica B; A is asked
    for seq 5 and the old leader resumes. A must not take the old leader's word that seq 4 is missing.

    Before the fix A was still connected to the hung leader when the new one was elected, and its catch-up
    read, queued there, was answered by it on resuming: SEQ_GAP to a worker that sent exactly the next seq
    (2 runs in 4 of this scenario), or "temporarily unavailable".
    """
    runs_b = Runs(backend, max_record_bytes=1 << 20, max_open_journals=16)
    leader = nats_cluster.node(await nats_cluster.stream_leader(backend.stream_name))
    others = [node.url for node in nats_cluster.nodes.values() if node is not leader]
    replica_a = JetStreamBackend(
        [leader.url, *others],
        stream=backend.stream_name,
        subject_prefix=backend.subject_prefix,
        connect_options={"dont_randomize": True},  # A connects to the leader first
    )
    await replica_a.start()
    runs_a = Runs(replica_a, max_record_bytes=1 << 20, max_open_journals=16)
    run_id = "next-after-hung-leader"
    try:
        await runs_b.append(run_id, 1, [b.meta(run_id=run_id), b.note(2, "two")])
        await runs_a.append(run_id, 1, [b.note(3, "three")])  # A holds the run, at seq 3
        assert _connected_node(nats_cluster, replica_a) == leader.name
        leader.pause()
        try:
            await nats_cluster.stream_leader(backend.stream_name)  # elected among the two others
            assert _connected_node_or_none(nats_cluster, replica_a) != leader.name, (
                "A still trusts the hung leader while another node leads the stream"
            )
            await _until_appended(runs_b, run_id, b.note(4, "four"))
            appending = asyncio.create_task(_until_appended(runs_a, run_id, b.note(5, "five")))
        finally:
            leader.resume()
        await appending
        records = await replica_a.load(run_id)
        assert [stored.seq for stored in records] == [1, 2, 3, 4, 5]
    finally:
        await runs_a.close()
        await runs_b.close()
        await replica_a.close()


def _connected_node_or_none(cluster: NatsCluster, backend: JetStreamBackend) -> str | None:
    nc = backend._nc
    if nc is None or not nc.is_connected:
        return None
    return _connected_node(cluster, backend)


async def _until_appended(runs: Runs, run_id: str, record: records_pb2.JournalRecord) -> None:
    """Append as a worker does: STORAGE_UNAVAILABLE (nothing acknowledged) is asked again; SEQ_GAP fails the test.

    Within a worker's deadline: a cluster that cannot take the append by then fails the test with the last
    refusal, instead of asking forever.
    """
    last: StorageUnavailableError | None = None
    try:
        async with asyncio.timeout(APPENDED_WITHIN_SECONDS):
            while True:
                try:
                    await runs.append(run_id, 1, [record])
                    return
                except StorageUnavailableError as err:
                    last = err
                    await asyncio.sleep(0.2)
    except TimeoutError:
        pytest.fail(f"seq {record.seq} not appended within {APPENDED_WITHIN_SECONDS:g} s; last refusal: {last}")


async def test_an_append_and_a_creation_wait_through_the_loss_of_the_stream_leader(
    nats_cluster: NatsCluster,  # noqa: F811
    backend: JetStreamBackend,
) -> None:
    """SIGKILL the stream leader: the next append, and a creation, are held until a new leader takes them (about
    6 s), not answered STORAGE_UNAVAILABLE (before: the append at the first publish that got no ack; the creation
    at its first "no responders", which a stream just created also answers for a moment: CI met it on the
    fixture's first creation)."""
    journal = await backend.create_journal("leader-lost", encoded.meta("leader-lost"))
    nats_cluster.node(await nats_cluster.stream_leader(backend.stream_name)).kill()
    created, _ = await asyncio.gather(
        backend.create_journal("created-leaderless", encoded.meta("created-leaderless")),
        journal.append([encoded.note(2, "written across the election")]),
    )
    assert journal.last_seq == 2
    assert [stored.seq for stored in await backend.load("leader-lost")] == [1, 2]
    assert created.last_seq == 1
    assert [stored.line for stored in await backend.load("created-leaderless")] == [
        encoded.meta("created-leaderless").line
    ]


@pytest.mark.parametrize("third_by", ["a", "b"])
async def test_the_next_seq_is_not_refused_by_a_replica_on_a_leader_cut_off_from_the_cluster(
    nats_cluster: NatsCluster,  # noqa: F811
    backend: JetStreamBackend,
    third_by: str,
) -> None:
    """The stream leader's routes stall: it still answers its clients as leader (until it notices, ~10 s later)
    while the two others elect a new one, which takes seq 4 from replica B. Replica A, connected to the cut-off
    leader only, is asked for seq 5: it must not refuse it on the old leader's word (before the barrier: SEQ_GAP,
    "seq 5 would leave a gap after last seq 3"). STORAGE_UNAVAILABLE is fine: nothing written, resent later.

    Seq 3 is stored before the stall by A (A holds the run at seq 3: the old leader says nothing is after it) or
    by B (A holds it at seq 2: the old leader has seq 3 but not 4, so A's catch-up finds seq 3 and stops there;
    before the barrier was asked where a catch-up stops, not only where it finds nothing: the same SEQ_GAP).

    Replica B is connected to the two others only. It once was the fixture's backend, connected to any node:
    on the cut-off one (a third of the runs, and only there) its seq 4 could not land until the routes healed,
    which this test did only after seq 4 was in: the test waited on itself forever (the "hang" it was skipped
    for). And the routes of a "cut-off" leader once leaked (``cluster.py``): B then wrote through it.
    """
    leader = nats_cluster.node(await nats_cluster.stream_leader(backend.stream_name))
    others = tuple(name for name in nats_cluster.nodes if name != leader.name)
    replica_a = JetStreamBackend([leader.url], stream=backend.stream_name, subject_prefix=backend.subject_prefix)
    replica_b = JetStreamBackend(
        [nats_cluster.node(name).url for name in others],
        stream=backend.stream_name,
        subject_prefix=backend.subject_prefix,
    )
    await replica_a.start()
    await replica_b.start()
    runs_a = Runs(replica_a, max_record_bytes=1 << 20, max_open_journals=16)
    runs_b = Runs(replica_b, max_record_bytes=1 << 20, max_open_journals=16)
    run_id = "next-after-cut-off-leader"
    try:
        # Sent as a worker sends: again while STORAGE_UNAVAILABLE (a moment without responders, as a stream just
        # created has, the backend rides through itself: ride_through.py).
        await _until_appended(runs_b, run_id, b.meta(run_id=run_id))
        await _until_appended(runs_b, run_id, b.note(2, "two"))
        await _until_appended(runs_a, run_id, b.note(2, "two"))  # a resent seq 2: A holds the run, at seq 2
        await _until_appended(runs_a if third_by == "a" else runs_b, run_id, b.note(3, "three"))
        nats_cluster.stall(leader.name)
        try:
            await nats_cluster.stream_leader(backend.stream_name, asking=others, other_than=leader.name)
            await _until_appended(runs_b, run_id, b.note(4, "four"))
            with contextlib.suppress(StorageUnavailableError):
                await runs_a.append(run_id, 1, [b.note(5, "five")])
        finally:
            nats_cluster.unstall(leader.name)
        await _until_appended(runs_a, run_id, b.note(5, "five"))
        assert [stored.seq for stored in await replica_a.load(run_id)] == [1, 2, 3, 4, 5]
    finally:
        await runs_a.close()
        await runs_b.close()
        await replica_a.close()
        await replica_b.close()
