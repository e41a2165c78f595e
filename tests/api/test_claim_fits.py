"""A Claim (or Fold) whose answer would not fit in one response is refused before anything is written.

Before this rule, the claim record was written and then the answer failed to
send: nobody held a valid token. Now the refusal is RESPONSE_TOO_LARGE with
the size and the limit, the journal is unchanged, and ``conversation_from``
gets a small answer (the conversation is then paged with Fold).
"""

from __future__ import annotations

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc
from tests.api.rpc import error_info, journal_bytes, new_run_id, reason
from tests.support import builders as b

RECORD_LIMIT = 64 * 1024
MESSAGE_LIMIT = RECORD_LIMIT + 96 * 1024
TURNS = 8
TURN_CHARS = 40 * 1024  # 8 turns of 40 KiB: a conversation over twice the largest response


@pytest.fixture
def small_server(server_factory):
    return server_factory(None, "--max-record-bytes", str(RECORD_LIMIT), "--max-message-bytes", str(MESSAGE_LIMIT))


def long_run(stub) -> str:
    run_id = new_run_id("long")
    stub.Append(pb.AppendRequest(run_id=run_id, record=b.meta(run_id=run_id)))
    for iteration in range(1, TURNS + 1):
        seq = iteration + 1
        turn = b.assistant(seq, iteration, say="y" * TURN_CHARS)
        stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=turn))
    return run_id


def test_claim_whose_state_would_not_fit_is_refused_and_writes_nothing(small_server):
    with grpc.insecure_channel(small_server.address) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        run_id = long_run(stub)
        before = journal_bytes(small_server, run_id)
        claim = pb.ClaimRequest(run_id=run_id, worker_id="w2", fingerprint=b.fingerprint())
        with pytest.raises(grpc.RpcError) as caught:
            stub.Claim(claim)
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert reason(caught.value) == "RESPONSE_TOO_LARGE"
        info = error_info(caught.value)
        assert int(info.metadata["size"]) > int(info.metadata["limit"]) == MESSAGE_LIMIT
        assert journal_bytes(small_server, run_id) == before

        # Asking for the last message only fits; the token it returns works.
        claim.conversation_from = TURNS
        claimed = stub.Claim(claim)
        assert claimed.claim_token == TURNS + 2
        assert claimed.state.conversation_offset == TURNS
        token = claimed.claim_token
        landed = stub.Append(pb.AppendRequest(run_id=run_id, claim_token=token, record=b.note(token + 1)))
        assert landed.last_seq == token + 1


def test_fold_whose_state_would_not_fit_is_refused_with_the_same_reason(small_server):
    with grpc.insecure_channel(small_server.address) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        run_id = long_run(stub)
        with pytest.raises(grpc.RpcError) as caught:
            stub.Fold(pb.FoldRequest(run_id=run_id))
        assert reason(caught.value) == "RESPONSE_TOO_LARGE"
        tail = stub.Fold(pb.FoldRequest(run_id=run_id, conversation_from=TURNS)).state
        assert tail.last_seq == TURNS + 1
