"""Admission (issue 28, item 1): anonymous health and reflection streams live on a budget of their own, so
no number of them locks authenticated workers out, and the refusals carry a reason.

Before, one ``max_concurrent_rpcs`` counted every call, before auth: 128 anonymous ``Health/Watch``
streams made every authenticated Append fail RESOURCE_EXHAUSTED ("Concurrent RPC limit exceeded!").
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc
from runjournal_server.api.admission import DRAINING, HEALTH_STREAMS_PER_CONNECTION, Admission
from runjournal_server.api.auth import token_sha256
from tests.api.rpc import error_info, new_run_id
from tests.support import builders as b

TOKEN = "a-token-for-the-admission-tests"
METADATA = (("authorization", f"Bearer {TOKEN}"),)
CONNECTIONS = 500
WATCHES_PER_CONNECTION = 4
WORKERS = 8
APPENDS_PER_WORKER = 16
OWN_CONNECTION = [("grpc.use_local_subchannel_pool", 1)]
"""Each channel its own connection (gRPC shares one between channels of the same target by default)."""


def _tokens_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens.toml"
    path.write_text(f'[[tokens]]\nname = "workers"\nsha256 = "{token_sha256(TOKEN)}"\nrun_id_prefixes = [""]\n')
    return path


async def _hold_watch(channel: grpc.aio.Channel) -> tuple[grpc.aio.UnaryStreamCall | None, str]:
    """Open a Health/Watch and wait for its first answer: the held call, or None and the refusal's reason."""
    call = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest())
    try:
        await call.read()
    except grpc.aio.AioRpcError as err:
        if err.code() == grpc.StatusCode.CANCELLED:
            # gRPC Python's own at this scale: a few percent of 2,000 streams opened at once end
            # CANCELLED with no interceptor and no runjournal code at all (a plain health server).
            return None, "CANCELLED"
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err
        return None, error_info(err).reason + "/" + error_info(err).metadata["budget"]
    return call, ""


async def _worker(address: str, index: int) -> int:
    """Create a run and append to it, with no retries: every call must succeed as it is."""
    run_id = new_run_id(f"worker{index}")
    async with grpc.aio.insecure_channel(address, options=OWN_CONNECTION) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        await stub.Append(
            pb.AppendRequest(run_id=run_id, claim_token=1, record=b.meta(run_id=run_id)), metadata=METADATA, timeout=30
        )
        for seq in range(2, APPENDS_PER_WORKER + 2):
            await stub.Append(
                pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(seq, f"step {seq}")),
                metadata=METADATA,
                timeout=30,
            )
        listed = await stub.ListRuns(pb.ListRunsRequest(page_size=1000), metadata=METADATA, timeout=30)
        assert run_id in {summary.run_id for summary in listed.runs}
    return APPENDS_PER_WORKER + 1


async def _flood_and_work(address: str) -> tuple[int, list[str], int]:
    channels = [grpc.aio.insecure_channel(address, options=OWN_CONNECTION) for _ in range(CONNECTIONS)]
    held: list[grpc.aio.UnaryStreamCall] = []
    try:
        opened = await asyncio.gather(
            *(_hold_watch(channel) for channel in channels for _ in range(WATCHES_PER_CONNECTION))
        )
        held = [call for call, _ in opened if call is not None]
        refusals = [why for call, why in opened if call is None]
        done = await asyncio.gather(*(_worker(address, index) for index in range(WORKERS)))
        # Still held while the workers worked: none of them was ended to make room.
        assert all(not call.done() for call in held)
        return sum(done), refusals, len(held)
    finally:
        for call in held:
            call.cancel()
        await asyncio.gather(*(channel.close() for channel in channels))


@pytest.mark.timeout(300)
def test_two_thousand_anonymous_watches_over_500_connections_leave_every_worker_call_served(server_factory, tmp_path):
    server = server_factory(tmp_path / "data", "--auth-tokens-file", str(_tokens_file(tmp_path)))
    appended, refusals, held = asyncio.run(_flood_and_work(server.address))
    assert appended == WORKERS * (APPENDS_PER_WORKER + 1)
    # The anonymous streams got at most what the health budget lets streams hold (32 by default, a quarter
    # kept for Check), and the rest a reasoned refusal.
    assert 0 < held <= 24
    assert len(refusals) == CONNECTIONS * WATCHES_PER_CONNECTION - held
    assert set(refusals) <= {"TOO_MANY_CALLS/health", "TOO_MANY_CALLS/connection", "CANCELLED"}
    assert refusals.count("TOO_MANY_CALLS/health") > CONNECTIONS


async def _watches_on_one_connection(address: str, count: int) -> tuple[int, list[str], bool]:
    async with grpc.aio.insecure_channel(address, options=OWN_CONNECTION) as channel:
        opened = [await _hold_watch(channel) for _ in range(count)]
        held = [call for call, _ in opened if call is not None]
        try:
            check = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=30)
            serving = check.status == health_pb2.HealthCheckResponse.SERVING
            return len(held), [why for call, why in opened if call is None], serving
        finally:
            for call in held:
                call.cancel()


def test_one_connection_holds_only_its_share_of_health_streams_and_check_still_answers(server_factory, tmp_path):
    server = server_factory(tmp_path / "data", "--max-health-rpcs", "64")
    held, refusals, serving = asyncio.run(_watches_on_one_connection(server.address, HEALTH_STREAMS_PER_CONNECTION + 3))
    assert held == HEALTH_STREAMS_PER_CONNECTION
    assert refusals == ["TOO_MANY_CALLS/connection"] * 3
    assert serving  # a Check is not counted in the connection's share of streams


async def _watches_then_check(address: str, budget: int) -> tuple[int, bool]:
    channels = [grpc.aio.insecure_channel(address, options=OWN_CONNECTION) for _ in range(budget)]
    held: list[grpc.aio.UnaryStreamCall] = []
    try:
        opened = await asyncio.gather(*(_hold_watch(channel) for channel in channels))
        held = [call for call, _ in opened if call is not None]
        check = await health_pb2_grpc.HealthStub(channels[0]).Check(health_pb2.HealthCheckRequest(), timeout=30)
        return len(held), check.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        for call in held:
            call.cancel()
        await asyncio.gather(*(channel.close() for channel in channels))


def test_idle_watchers_filling_the_health_budget_leave_room_for_check(server_factory, tmp_path):
    server = server_factory(tmp_path / "data", "--max-health-rpcs", "8")
    held, serving = asyncio.run(_watches_then_check(server.address, 8))
    assert held == 6  # a quarter of the budget is kept for unary calls
    assert serving


async def _a_call_during_the_drain() -> tuple[grpc.StatusCode, str, bool]:
    admission = Admission(None, max_calls=4, max_health_calls=4)
    server = grpc.aio.server(interceptors=[admission])
    health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=30)
            admission.drain()
            try:
                await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=30)
            except grpc.aio.AioRpcError as err:
                has_info = any(key == "grpc-status-details-bin" for key, _ in err.trailing_metadata() or ())
                return err.code(), err.details() or "", has_info
            raise AssertionError("a call during the drain was served")
    finally:
        await server.stop(None)


def test_a_call_arriving_while_the_server_drains_is_refused_unavailable_without_a_reason():
    # The status of a transport failure: every client resends it, here after a restart or elsewhere.
    code, details, has_info = asyncio.run(_a_call_during_the_drain())
    assert code == grpc.StatusCode.UNAVAILABLE
    assert details == DRAINING
    assert not has_info
