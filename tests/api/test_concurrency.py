"""Many clients at once: every acknowledged record present, in order, none duplicated."""

from __future__ import annotations

import asyncio

import grpc

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc
from runjournal_server.core import records
from tests.api.rpc import journal_bytes, new_run_id
from tests.support import builders as b

CLIENTS = 32
APPENDS_PER_CLIENT = 200


async def test_32_clients_append_200_records_each_to_32_runs(journal_server):
    prefix = new_run_id("load")
    run_ids = [f"{prefix}-{i}" for i in range(CLIENTS)]
    acknowledged: dict[str, list[bytes]] = {r: [] for r in run_ids}

    async def worker(run_id: str) -> None:
        async with grpc.aio.insecure_channel(journal_server.address) as channel:
            stub = journal_service_pb2_grpc.JournalServiceStub(channel)
            meta = b.meta(run_id=run_id)
            await stub.Append(pb.AppendRequest(run_id=run_id, record=meta))
            acknowledged[run_id].append(records.encode(meta).line)
            for seq in range(2, APPENDS_PER_CLIENT + 2):
                record = b.note(seq, f"{run_id} record {seq}")
                response = await stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=record))
                assert response.seq == seq and not response.duplicate
                acknowledged[run_id].append(records.encode(record).line)

    await asyncio.gather(*(worker(r) for r in run_ids))
    for run_id in run_ids:
        lines = journal_bytes(journal_server, run_id).split(b"\n")
        assert lines[-1] == b""
        assert lines[:-1] == acknowledged[run_id]


async def test_concurrent_appends_of_the_same_seq_store_exactly_one(journal_server):
    run_id = new_run_id("race")
    async with grpc.aio.insecure_channel(journal_server.address) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        await stub.Append(pb.AppendRequest(run_id=run_id, record=b.meta(run_id=run_id)))
        attempts = [
            stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(2, f"writer {i}")))
            for i in range(16)
        ]
        outcomes = await asyncio.gather(*attempts, return_exceptions=True)
    winners = [o for o in outcomes if isinstance(o, pb.AppendResponse)]
    assert len(winners) == 1
    assert all(isinstance(o, grpc.aio.AioRpcError) for o in outcomes if o not in winners)
    assert len(journal_bytes(journal_server, run_id).split(b"\n")) == 3
