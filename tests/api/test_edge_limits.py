"""Limits at the edge, before auth: the receive limit follows the record and batch limits, and
the number of calls in flight is capped, so strangers cannot make the server hold memory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc
from runjournal.v1 import records_pb2 as records_pb
from runjournal_server.api.auth import token_sha256
from tests.api.rpc import error_info, new_run_id
from tests.servers import ServerProcess
from tests.support import builders as b

KIB = 1024
MIB = 1024 * KIB
TOKEN = "a-token-for-the-edge-tests"
# gRPC's own refusal of a message over the receive limit (no ErrorInfo: the server never saw it).
SIZE_LIMIT_TEXT = "larger than max"
LARGE_CHANNEL = [("grpc.max_send_message_length", 256 * MIB), ("grpc.max_receive_message_length", 256 * MIB)]


def _tokens_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens.toml"
    path.write_text(f'[[tokens]]\nname = "edge"\nsha256 = "{token_sha256(TOKEN)}"\nrun_id_prefixes = [""]\n')
    return path


def _note(seq: int, chars: int) -> records_pb.JournalRecord:
    return records_pb.JournalRecord(seq=seq, optional=True, note=records_pb.Note(text="n" * chars))


@pytest.fixture
def stub_for(server_factory, tmp_path) -> Iterator:
    """A stub on a fresh authenticated server started with ``args``."""
    channels: list[grpc.Channel] = []

    def make(*args: str) -> journal_service_pb2_grpc.JournalServiceStub:
        server: ServerProcess = server_factory(
            tmp_path / "data", "--auth-tokens-file", str(_tokens_file(tmp_path)), *args
        )
        channel = grpc.insecure_channel(server.address, options=LARGE_CHANNEL)
        channels.append(channel)
        return journal_service_pb2_grpc.JournalServiceStub(channel)

    yield make
    for channel in channels:
        channel.close()


def _assert_refused_at_receive(call) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, caught.value
    assert SIZE_LIMIT_TEXT in caught.value.details()


def test_an_append_over_the_record_and_batch_limits_is_refused_at_receive(stub_for):
    # 64 KiB records and the default batch bound: an 8 MiB request can be nothing legitimate, so
    # gRPC refuses it before the server reads it.
    stub = stub_for("--max-record-bytes", str(64 * KIB))
    request = pb.AppendRequest(run_id=new_run_id(), claim_token=1, record=_note(2, 8 * MIB))
    _assert_refused_at_receive(lambda: stub.Append(request, metadata=(("authorization", f"Bearer {TOKEN}"),)))


def test_an_unauthenticated_append_is_refused_before_its_request_is_read(stub_for):
    # Admission (api/admission.py) refuses a journal call without a valid token from its metadata
    # alone: the 8 MiB request is never received (it used to be received whole, then UNAUTHENTICATED).
    stub = stub_for("--max-record-bytes", str(64 * KIB))
    request = pb.AppendRequest(run_id=new_run_id(), claim_token=1, record=_note(2, 8 * MIB))
    with pytest.raises(grpc.RpcError) as caught:
        stub.Append(request, metadata=(("authorization", "Bearer not-a-token"),), timeout=30)
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED, caught.value
    assert error_info(caught.value).reason == "UNAUTHENTICATED"


def test_a_batch_over_max_batch_bytes_is_refused_at_receive_and_one_within_it_is_not(stub_for):
    # (Above 1 MiB: the receive limit also lets a maximal task document in.)
    stub = stub_for("--max-record-bytes", str(64 * KIB), "--max-batch-bytes", str(2 * MIB))
    run_id = new_run_id()
    within = [_note(seq, 60 * KIB) for seq in range(2, 32)]  # 30 x 60 KiB: under 2 MiB
    over = [_note(seq, 60 * KIB) for seq in range(2, 62)]  # 60 x 60 KiB: well over 2 MiB + slack
    metadata = (("authorization", f"Bearer {TOKEN}"),)
    stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.meta(run_id=run_id)), metadata=metadata)
    _assert_refused_at_receive(
        lambda: stub.AppendBatch(
            pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=over), metadata=metadata, timeout=30
        )
    )
    answer = stub.AppendBatch(
        pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=within), metadata=metadata, timeout=30
    )
    assert answer.last_seq == 31


def _stalled_read(stub: journal_service_pb2_grpc.JournalServiceStub, run_id: str, metadata) -> grpc.Future:
    """A Read of a large run whose first record has arrived and that is then never consumed:
    the server's handler is running, blocked on flow control."""
    stream = stub.Read(pb.ReadRequest(run_id=run_id), metadata=metadata, timeout=60)
    next(stream)
    return stream


def test_calls_beyond_max_concurrent_rpcs_are_refused_resource_exhausted(stub_for):
    stub = stub_for("--max-concurrent-rpcs", "2")
    metadata = (("authorization", f"Bearer {TOKEN}"),)
    run_id = new_run_id()
    stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.meta(run_id=run_id)), metadata=metadata)
    for seq in range(2, 26):  # ~24 MiB: far more than the flow-control windows hold
        stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=_note(seq, 1000 * KIB)), metadata=metadata)
    readers = [_stalled_read(stub, run_id, metadata) for _ in range(2)]
    with pytest.raises(grpc.RpcError) as caught:
        stub.Fold(pb.FoldRequest(run_id=run_id), metadata=metadata, timeout=30)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, caught.value
    assert error_info(caught.value).reason == "TOO_MANY_CALLS"
    assert dict(error_info(caught.value).metadata) == {"budget": "calls", "limit": "2"}
    for reader in readers:
        reader.cancel()
    assert _fold_once_a_slot_is_free(stub, run_id, metadata).state.last_seq == 25


def _fold_once_a_slot_is_free(stub, run_id: str, metadata, attempts: int = 500) -> pb.FoldResponse:
    """A cancelled call frees its slot when the server notices the cancel, which the client
    cannot observe: retry the refusal a bounded number of times."""
    for _ in range(attempts):
        try:
            return stub.Fold(pb.FoldRequest(run_id=run_id), metadata=metadata, timeout=30)
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.RESOURCE_EXHAUSTED or error_info(err).reason != "TOO_MANY_CALLS":
                raise
    raise AssertionError(f"still RESOURCE_EXHAUSTED after {attempts} attempts: the cancelled calls kept their slots")
