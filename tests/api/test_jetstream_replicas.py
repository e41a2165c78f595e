"""JetStream at the API: two replicas answer from every acknowledged record, stray messages
in a run's subjects are CORRUPT_JOURNAL, and a creation batch is stored whole or not at all.

Two ``runjournal serve`` processes on one stream are replica A and replica B;
a stray message is published with a plain nats-py client, as anyone with
publish rights on the stream could.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import grpc
import nats
import pytest

import tests.nats_server as nats_server_module
from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc, state_pb2
from runjournal_server.backends.jetstream.config import HEADER_ALLOWANCE_BYTES, stream_config
from tests.api.rpc import error_info, new_run_id, reason
from tests.conftest import StreamTarget, new_stream_target
from tests.nats_server import NatsServer
from tests.servers import ServerProcess
from tests.support import builders as b

pytestmark = [pytest.mark.jetstream, pytest.mark.timeout(90)]


@pytest.fixture
def target() -> StreamTarget:
    return new_stream_target()


@pytest.fixture
def replicas(nats_server, server_factory, tmp_path, target):
    """Two runjournal servers on the same stream: replica A and replica B."""
    args = target.server_args(nats_server.url)
    return server_factory(tmp_path / "a", *args), server_factory(tmp_path / "b", *args)


def connect(server: ServerProcess) -> tuple[grpc.Channel, journal_service_pb2_grpc.JournalServiceStub]:
    channel = grpc.insecure_channel(server.address)
    return channel, journal_service_pb2_grpc.JournalServiceStub(channel)


def read_seqs(stub: journal_service_pb2_grpc.JournalServiceStub, run_id: str, from_seq: int = 0) -> list[int]:
    return [item.seq for item in stub.Read(pb.ReadRequest(run_id=run_id, from_seq=from_seq))]


async def publish_raw(url: str, subject: str, data: bytes) -> None:
    nc = await nats.connect(url)
    try:
        reply = await nc.request(subject, data, timeout=10)
        assert "error" not in json.loads(reply.data), reply.data
    finally:
        await nc.close()


# ---------------------------------------------------------------- item 10: fresh answers through every replica


def test_read_through_a_replica_shows_records_written_through_the_other(replicas):
    """A replica reads what the store holds, not only up to its own warm last_seq (it once stopped there)."""
    a, b_server = replicas
    channel_a, via_a = connect(a)
    channel_b, via_b = connect(b_server)
    with channel_a, channel_b:
        run_id = new_run_id()
        via_a.Append(pb.AppendRequest(run_id=run_id, record=b.meta(run_id=run_id)))
        via_a.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(2)))  # A holds the run warm at 2
        for seq in (3, 4, 5):
            via_b.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(seq)))
        assert read_seqs(via_a, run_id) == [1, 2, 3, 4, 5]
        assert read_seqs(via_a, run_id, from_seq=4) == [4, 5]
        assert read_seqs(via_b, run_id) == [1, 2, 3, 4, 5]


def test_fold_through_a_replica_reflects_records_written_through_the_other(replicas):
    a, b_server = replicas
    channel_a, via_a = connect(a)
    channel_b, via_b = connect(b_server)
    with channel_a, channel_b:
        run_id = new_run_id()
        via_a.AppendBatch(
            pb.AppendBatchRequest(run_id=run_id, records=[b.meta(run_id=run_id), b.assistant(2, 1, ["c1"])])
        )
        assert via_a.Fold(pb.FoldRequest(run_id=run_id)).state.last_seq == 2  # warm on A
        via_b.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.result(3, "c1")))
        via_b.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.assistant(4, 2)))
        state = via_a.Fold(pb.FoldRequest(run_id=run_id)).state
        assert state.last_seq == 4
        assert not state.HasField("pending")  # c1's result, written through B, answered the call
        assert via_a.Fold(pb.FoldRequest(run_id=run_id, as_of_seq=3)).state.last_seq == 3


def test_a_retry_through_the_other_replica_is_reported_as_a_duplicate(replicas):
    """The first attempt landed through A; B, warm at the seq before, retries it: duplicate=true, one copy."""
    a, b_server = replicas
    channel_a, via_a = connect(a)
    channel_b, via_b = connect(b_server)
    with channel_a, channel_b:
        run_id = new_run_id()
        via_a.Append(pb.AppendRequest(run_id=run_id, record=b.meta(run_id=run_id)))
        via_b.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(2)))  # B holds the run warm at 2
        request = pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(3, "sent twice"))
        first = via_a.Append(request)
        assert (first.seq, first.duplicate) == (3, False)
        retried = via_b.Append(request)
        assert (retried.seq, retried.last_seq, retried.duplicate) == (3, 3, True)
        batch = pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=[b.note(4), b.note(5)])
        assert via_b.AppendBatch(batch).duplicates == 0
        again = via_a.AppendBatch(batch)  # A is warm at 3: the whole batch is already there
        assert (again.first_seq, again.duplicates, again.last_seq) == (4, 2, 5)
        assert read_seqs(via_b, run_id) == [1, 2, 3, 4, 5]


# ---------------------------------------------------------------- item 11: stray messages


def test_a_stray_message_in_a_run_is_corrupt_journal_in_read_fold_and_the_listing(nats_server, replicas, target):
    a, b_server = replicas
    channel_a, via_a = connect(a)
    channel_b, via_b = connect(b_server)
    with channel_a, channel_b:
        run_id = new_run_id()
        via_a.AppendBatch(pb.AppendBatchRequest(run_id=run_id, records=[b.meta(run_id=run_id), b.note(2), b.note(3)]))
        stray = f"{target.prefix}.{run_id}.x"
        asyncio.run(publish_raw(nats_server.url, stray, b"not a record"))
        via_a.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(4)))  # the fence lets it land
        for call in (
            lambda: read_seqs(via_b, run_id),
            lambda: via_b.Fold(pb.FoldRequest(run_id=run_id)),
            lambda: read_seqs(via_a, run_id),
        ):
            with pytest.raises(grpc.RpcError) as caught:
                call()
            assert reason(caught.value) == "CORRUPT_JOURNAL"
            assert stray in caught.value.details()
        listed = {s.run_id: s for s in via_b.ListRuns(pb.ListRunsRequest()).runs}
        assert listed[run_id].status == state_pb2.RUN_STATUS_CORRUPT
        assert stray in listed[run_id].corruption


def test_a_message_on_a_gap_subject_is_corrupt_journal_naming_it_not_storage_unavailable(nats_server, replicas, target):
    """Before: seq 4 landed beside the stray ``.5``, then every append of seq 5 failed STORAGE_UNAVAILABLE."""
    a, _ = replicas
    channel, via_a = connect(a)
    with channel:
        run_id = new_run_id()
        via_a.AppendBatch(pb.AppendBatchRequest(run_id=run_id, records=[b.meta(run_id=run_id), b.note(2), b.note(3)]))
        stray = f"{target.prefix}.{run_id}.5"
        asyncio.run(publish_raw(nats_server.url, stray, b"not a record"))
        via_a.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(4)))
        with pytest.raises(grpc.RpcError) as caught:
            via_a.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(5)))
        assert reason(caught.value) == "CORRUPT_JOURNAL", caught.value.details()
        assert stray in caught.value.details()
        assert error_info(caught.value).metadata["run_id"] == run_id


# ---------------------------------------------------------------- item 9: creation batches


async def _stream_with_room_for(url: str, target: StreamTarget, messages: int) -> None:
    config = {**stream_config(target.name, target.prefix, replicas=1), "max_msgs": messages}
    nc = await nats.connect(url)
    try:
        reply = await nc.request(f"$JS.API.STREAM.CREATE.{target.name}", json.dumps(config).encode(), timeout=10)
        assert "error" not in json.loads(reply.data), reply.data
    finally:
        await nc.close()


def test_a_creation_batch_that_cannot_be_stored_whole_leaves_no_run(nats_server, server_factory, tmp_path, target):
    """A creation batch goes to the store whole (it once left a listed run with only its meta)."""
    asyncio.run(_stream_with_room_for(nats_server.url, target, 3))
    server = server_factory(tmp_path / "a", *target.server_args(nats_server.url))
    channel, stub = connect(server)
    with channel:
        run_id = new_run_id()
        batch = [b.meta(run_id=run_id), *(b.note(seq) for seq in range(2, 6))]  # 5 records, room for 3
        with pytest.raises(grpc.RpcError) as caught:
            stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, records=batch))
        assert reason(caught.value) == "STORAGE_FULL"
        assert run_id not in {s.run_id for s in stub.ListRuns(pb.ListRunsRequest()).runs}
        with pytest.raises(grpc.RpcError) as missing:
            read_seqs(stub, run_id)
        assert reason(missing.value) == "RUN_NOT_FOUND"
        created = stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, records=batch[:3]))
        assert (created.first_seq, created.last_seq) == (1, 3)
        retried = stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, records=batch[:3]))
        assert (retried.duplicates, retried.last_seq) == (3, 3)  # a retry of the creation is a verified duplicate


# ---------------------------------------------------------------- item 20: a nats-server with its default max_payload


@pytest.fixture
def default_nats_server(nats_binary, tmp_path, monkeypatch):
    """A nats-server with its default max_payload (1 MB), otherwise as the test helper starts it."""
    monkeypatch.setattr(nats_server_module, "MAX_PAYLOAD", "1MB")
    server = NatsServer(tmp_path / "nats-default", nats_binary).start()
    yield server
    server.stop()


def test_serve_starts_on_a_default_nats_server_with_the_record_limit_it_carries(
    default_nats_server, server_factory, tmp_path, target
):
    """Unset, max_record_bytes is the backend's limit: a default nats-server (max_payload 1 MB) carries it."""
    server = server_factory(tmp_path / "a", *target.server_args(default_nats_server.url))
    assert "max_payload" in server.log()
    channel, stub = connect(server)
    with channel:
        run_id = new_run_id()
        stub.Append(pb.AppendRequest(run_id=run_id, record=b.meta(run_id=run_id)))
        limit = (1 << 20) - HEADER_ALLOWANCE_BYTES
        fits = b.note(2, "n" * (limit - 400))
        assert stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=fits)).seq == 2
        with pytest.raises(grpc.RpcError) as caught:
            stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(3, "n" * limit)))
        assert reason(caught.value) == "RECORD_TOO_LARGE"  # refused by the limit, not failed by NATS


def test_serve_refuses_an_explicit_record_limit_a_default_nats_server_cannot_carry(default_nats_server, target):
    """Set explicitly, even to the default's value: the server must not lower a limit the user asked for.

    (A server that starts instead never exits: the timeout fails the test.)
    """
    args = [*target.server_args(default_nats_server.url), "--max-record-bytes", str(1 << 20)]
    done = subprocess.run(
        [sys.executable, "-m", "runjournal_server.cli", "serve", "--listen", "127.0.0.1:0", *args],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert "max_payload" in done.stderr, done.stderr
