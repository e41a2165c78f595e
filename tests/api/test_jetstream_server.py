"""JetStream-only behaviour of the server: replicas, lost acks, NATS restarts, stream checks."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import grpc
import nats
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from nats.js.api import DiscardPolicy, StreamConfig

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc
from tests.api.rpc import error_info, new_run_id, reason
from tests.conftest import StreamTarget, new_stream_target
from tests.nats_server import AckDroppingProxy, NatsServer, PartitionProxy
from tests.servers import ServerProcess
from tests.support import builders as b

pytestmark = pytest.mark.jetstream


@pytest.fixture
def replicas(nats_server, server_factory, tmp_path):
    """Two runjournal servers on the same stream: replica A and replica B."""
    target = new_stream_target()
    args = target.server_args(nats_server.url)
    return server_factory(tmp_path / "a", *args), server_factory(tmp_path / "b", *args)


def connect(server: ServerProcess) -> tuple[grpc.Channel, journal_service_pb2_grpc.JournalServiceStub]:
    channel = grpc.insecure_channel(server.address)
    return channel, journal_service_pb2_grpc.JournalServiceStub(channel)


def test_a_claim_through_replica_b_fences_the_old_holder_writing_through_replica_a(replicas):
    a, b_server = replicas
    channel_a, via_a = connect(a)
    channel_b, via_b = connect(b_server)
    with channel_a, channel_b:
        run_id = new_run_id()
        via_a.AppendBatch(
            pb.AppendBatchRequest(run_id=run_id, records=[b.meta(run_id=run_id), b.assistant(2, 1, ["c1"])])
        )
        claimed = via_b.Claim(pb.ClaimRequest(run_id=run_id, worker_id="w2", fingerprint=b.fingerprint()))
        assert claimed.claim_token == 3 and claimed.state.pending.calls[0].tool_use.id == "c1"
        with pytest.raises(grpc.RpcError) as caught:  # A's warm state still thinks last_seq is 2
            via_a.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.result(3, "c1")))
        assert reason(caught.value) == "RUN_CLAIMED"
        assert error_info(caught.value).metadata["claimed_by"] == "w2"
        # The new holder may write through either replica; each catches up before deciding.
        assert via_a.Append(pb.AppendRequest(run_id=run_id, claim_token=3, record=b.result(4, "c1"))).seq == 4
        assert via_b.Append(pb.AppendRequest(run_id=run_id, claim_token=3, record=b.note(5))).seq == 5
        assert via_a.Fold(pb.FoldRequest(run_id=run_id)).state.last_seq == 5
        lines_a = [r.stored_line for r in via_a.Read(pb.ReadRequest(run_id=run_id))]
        lines_b = [r.stored_line for r in via_b.Read(pb.ReadRequest(run_id=run_id))]
        assert lines_a == lines_b and len(lines_a) == 5


async def test_concurrent_creators_through_two_replicas_one_wins(replicas):
    a, b_server = replicas
    for _ in range(10):
        run_id = new_run_id()
        async with grpc.aio.insecure_channel(a.address) as ca, grpc.aio.insecure_channel(b_server.address) as cb:
            stubs = [journal_service_pb2_grpc.JournalServiceStub(c) for c in (ca, cb)]
            calls = [
                stub.Append(pb.AppendRequest(run_id=run_id, record=b.meta(run_id=run_id, prompt=f"creator {i}")))
                for i, stub in enumerate(stubs)
            ]
            outcomes = await asyncio.gather(*calls, return_exceptions=True)
        winners = [o for o in outcomes if isinstance(o, pb.AppendResponse)]
        losers = [o for o in outcomes if isinstance(o, grpc.aio.AioRpcError)]
        assert len(winners) == 1 and len(losers) == 1, outcomes
        assert reason(losers[0]) == "RUN_EXISTS"


async def test_a_lost_publish_ack_still_acknowledges_exactly_one_record(nats_server, tmp_path):
    target = new_stream_target()
    proxy = await AckDroppingProxy(nats_server.port).start()
    args = (*target.server_args(proxy.url), "--nats-request-timeout-seconds", "1")
    server = ServerProcess(tmp_path / "data", extra_args=args)
    try:
        await asyncio.to_thread(server.start)  # the proxy needs this loop while the server connects
        run_id = new_run_id()
        async with grpc.aio.insecure_channel(server.address) as channel:
            stub = journal_service_pb2_grpc.JournalServiceStub(channel)
            await stub.Append(pb.AppendRequest(run_id=run_id, record=b.meta(run_id=run_id)))
            proxy.drop_reply_to(f"{target.prefix}.{run_id}.2")
            response = await stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(2)))
            assert proxy.dropped == [f"{target.prefix}.{run_id}.2"]
            assert response.seq == 2 and not response.duplicate
            stored = [r.record.seq async for r in stub.Read(pb.ReadRequest(run_id=run_id))]
            assert stored == [1, 2]
    finally:
        await asyncio.to_thread(server.stop)
        await proxy.close()


def test_nats_restart_loses_no_acknowledged_record_and_outage_appends_fail_unavailable(
    nats_binary, server_factory, tmp_path
):
    nats_server = NatsServer(tmp_path / "nats", nats_binary).start()
    try:
        target = new_stream_target()
        # A 1 s request timeout: an append is published again for 4 of them while NATS is away
        # (ride_through.py), then answered STORAGE_UNAVAILABLE, well within the calls' 20 s deadline.
        args = (*target.server_args(nats_server.url), "--nats-request-timeout-seconds", "1")
        server = server_factory(tmp_path / "data", *args)
        channel, stub = connect(server)
        with channel:
            run_id = new_run_id()
            stub.Append(pb.AppendRequest(run_id=run_id, record=b.meta(run_id=run_id)))
            acknowledged = [1]
            for seq in range(2, 30):
                stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(seq)))
                acknowledged.append(seq)
            health = health_pb2_grpc.HealthStub(channel)
            watch = health.Watch(health_pb2.HealthCheckRequest(service="runjournal.v1.JournalService"), timeout=60)
            serving_updates = (update.status for update in watch)
            assert next(serving_updates) == health_pb2.HealthCheckResponse.SERVING
            nats_server.kill()
            assert next(serving_updates) == health_pb2.HealthCheckResponse.NOT_SERVING
            outage = b.note(30, "during the outage")
            for _ in range(3):
                with pytest.raises(grpc.RpcError) as caught:
                    stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=outage), timeout=20)
                assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
                assert reason(caught.value) == "STORAGE_UNAVAILABLE"
            nats_server.start()  # same store, same port
            # The server reports the store's return through its health check: wait for that, not a clock.
            assert next(serving_updates) == health_pb2.HealthCheckResponse.SERVING
            stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=outage), timeout=20)
            acknowledged.append(30)
            stored = [r.record.seq for r in stub.Read(pb.ReadRequest(run_id=run_id))]
            assert stored == acknowledged
    finally:
        nats_server.stop()


async def _make_stream(url: str, target: StreamTarget, **overrides: object) -> None:
    config = StreamConfig(
        name=target.name,
        subjects=[f"{target.prefix}.>"],
        max_msgs_per_subject=1,
        discard=DiscardPolicy.NEW,
        discard_new_per_subject=True,
        allow_atomic=True,
    )
    for key, value in overrides.items():
        setattr(config, key, value)
    nc = await nats.connect(url)
    try:
        await nc.jetstream().add_stream(config)
    finally:
        await nc.close()


@pytest.mark.parametrize(
    ("overrides", "named_in_message"),
    [
        ({"max_age": 3600.0}, "max_age"),
        ({"max_msgs_per_subject": 5}, "max-msgs-per-subject"),
        ({"discard": DiscardPolicy.OLD, "discard_new_per_subject": False}, "discard"),
    ],
)
def test_a_stream_that_could_lose_records_is_refused_at_start_with_the_fix(
    nats_server, tmp_path, overrides, named_in_message
):
    target = new_stream_target()
    asyncio.run(_make_stream(nats_server.url, target, **overrides))
    args = [a for a in target.server_args(nats_server.url) if a != "--create-stream"]
    done = subprocess.run(
        [sys.executable, "-m", "runjournal_server.cli", "serve", "--listen", "127.0.0.1:0", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert "runjournal listening" not in done.stdout
    assert named_in_message in done.stderr, done.stderr


async def test_a_network_partition_fails_appends_unavailable_and_healing_brings_no_duplicate(nats_server, tmp_path):
    target = new_stream_target()
    proxy = await PartitionProxy(nats_server.port).start()
    args = (*target.server_args(proxy.url), "--nats-request-timeout-seconds", "1")
    server = ServerProcess(tmp_path / "data", extra_args=args)
    try:
        await asyncio.to_thread(server.start)  # the proxy needs this loop while the server connects
        run_id = new_run_id()
        async with grpc.aio.insecure_channel(server.address) as channel:
            stub = journal_service_pb2_grpc.JournalServiceStub(channel)
            await stub.Append(pb.AppendRequest(run_id=run_id, record=b.meta(run_id=run_id)))
            during = pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(2, "sent into the partition"))
            proxy.partition()
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.Append(during, timeout=15)  # the client's deadline is well past the server's 1 s
            assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
            assert reason(caught.value) == "STORAGE_UNAVAILABLE"
            proxy.heal()  # the held-back publish now reaches NATS and is stored
            retried = await _resent_until_answered(stub, during)
            assert (retried.seq, retried.last_seq, retried.duplicate) == (2, 2, True)  # it landed late
            after = await stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(3)))
            assert after.seq == 3
            stored = [r.stored_line async for r in stub.Read(pb.ReadRequest(run_id=run_id))]
            assert len(stored) == 3  # exactly one copy of the record sent into the partition
    finally:
        await asyncio.to_thread(server.stop)
        await proxy.close()


async def _resent_until_answered(
    stub: journal_service_pb2_grpc.JournalServiceStub, request: pb.AppendRequest
) -> pb.AppendResponse:
    """Resend while STORAGE_UNAVAILABLE, as a worker does: a partition longer than the pings' 1-2 s drops the
    connection (connect.py), and the server answers so until it has reconnected."""
    for _ in range(100):
        try:
            return await stub.Append(request, timeout=15)
        except grpc.aio.AioRpcError as err:
            if reason(err) != "STORAGE_UNAVAILABLE":
                raise
        await asyncio.sleep(0.2)
    raise AssertionError("still STORAGE_UNAVAILABLE after 100 resends")
