"""Claim (resume gate, claim tokens) and Answer over real gRPC."""

from __future__ import annotations

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import records_pb2, state_pb2
from tests.api.rpc import error_info, journal_bytes, new_run_id, reason
from tests.support import builders as b


def claim(stub, run_id: str, worker: str = "worker-2", force: bool = False, **fp_fields) -> pb.ClaimResponse:
    return stub.Claim(
        pb.ClaimRequest(
            run_id=run_id, worker_id=worker, host="h", pid=7, fingerprint=b.fingerprint(**fp_fields), force=force
        )
    )


def crashed_mid_turn(stub) -> str:
    """meta, an assistant turn with two calls, one result; then the worker 'crashes'."""
    run_id = new_run_id()
    batch = [b.meta(run_id=run_id), b.assistant(2, 1, ["c1", "c2"]), b.result(3, "c1")]
    stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, records=batch))
    return run_id


def test_second_worker_claims_a_run_crashed_mid_turn_and_finishes_the_batch(stub):
    run_id = crashed_mid_turn(stub)
    response = claim(stub, run_id)
    assert response.claim_token == 4 and response.last_seq == 4
    pending = response.state.pending
    assert [c.tool_use.id for c in pending.calls] == ["c1", "c2"]
    assert [c.answered for c in pending.calls] == [True, False]
    assert response.gate.allowed and not response.gate.differences
    assert "c2" in response.resume_reminder
    # The first worker still believes it holds the run: refused at its next append.
    with pytest.raises(grpc.RpcError) as caught:
        stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.result(4, "c2")))
    assert reason(caught.value) == "RUN_CLAIMED"
    assert error_info(caught.value).metadata["claimed_by"] == "worker-2"
    assert error_info(caught.value).metadata["claim_token"] == "4"
    # The new holder's first record lands right after its claim.
    landed = stub.Append(pb.AppendRequest(run_id=run_id, claim_token=4, record=b.result(5, "c2")))
    assert landed.seq == 5
    state = stub.Fold(pb.FoldRequest(run_id=run_id)).state
    assert not state.HasField("pending")
    assert state.last_seq == 5 and state.claim_token == 4


def test_resume_with_a_changed_provider_is_refused_even_when_forced(stub, journal_server):
    run_id = crashed_mid_turn(stub)
    before = journal_bytes(journal_server, run_id)
    for force in (False, True):
        with pytest.raises(grpc.RpcError) as caught:
            claim(stub, run_id, provider="other", force=force)
        assert reason(caught.value) == "RESUME_REFUSED"
        assert "provider" in caught.value.details()
    assert journal_bytes(journal_server, run_id) == before


def test_changed_model_is_refused_unless_forced_and_forcing_writes_reconfigure(stub, journal_server):
    run_id = crashed_mid_turn(stub)
    before = journal_bytes(journal_server, run_id)
    with pytest.raises(grpc.RpcError) as caught:
        claim(stub, run_id, model="claude-y")
    assert reason(caught.value) == "RESUME_REFUSED"
    assert journal_bytes(journal_server, run_id) == before
    response = claim(stub, run_id, model="claude-y", force=True)
    assert response.gate.reconfigured and response.gate.forced
    assert response.claim_token == 4 and response.last_seq == 5
    assert response.state.effective_fingerprint.model == "claude-y"
    kinds = [r.record.WhichOneof("payload") for r in stub.Read(pb.ReadRequest(run_id=run_id, from_seq=4))]
    assert kinds == ["claim", "reconfigure"]
    # Later resumes compare against the reconfigured fingerprint.
    assert not claim(stub, run_id, model="claude-y").gate.differences


def test_changed_budget_is_allowed_and_recorded(stub):
    run_id = crashed_mid_turn(stub)
    response = claim(stub, run_id, max_tokens=1234)
    assert response.gate.allowed and response.gate.reconfigured
    [difference] = response.gate.differences
    assert difference.field == "max_tokens"
    assert difference.field_class == state_pb2.FIELD_CLASS_BUDGET and not difference.blocks
    assert response.state.effective_fingerprint.max_tokens == 1234


def test_changed_tools_block_only_while_a_batch_is_pending(stub):
    run_id = crashed_mid_turn(stub)
    with pytest.raises(grpc.RpcError) as caught:
        claim(stub, run_id, tools_sha256="c" * 64)
    assert reason(caught.value) == "RESUME_REFUSED"
    done = claim(stub, run_id)
    stub.Append(pb.AppendRequest(run_id=run_id, claim_token=done.claim_token, record=b.result(5, "c2")))
    assert claim(stub, run_id, tools_sha256="c" * 64).gate.allowed


def test_claim_of_a_missing_run_is_not_found(stub):
    with pytest.raises(grpc.RpcError) as caught:
        claim(stub, new_run_id())
    assert reason(caught.value) == "RUN_NOT_FOUND"


def test_claim_needs_a_worker_id(stub):
    run_id = crashed_mid_turn(stub)
    with pytest.raises(grpc.RpcError) as caught:
        claim(stub, run_id, worker="")
    assert reason(caught.value) == "INVALID_ARGUMENT"


def deferred_run(stub) -> str:
    run_id = new_run_id()
    batch = [
        b.meta(run_id=run_id),
        b.assistant(2, 1, ["c1", "c2"]),
        b.result(3, "c1"),
        b.deferral(4, "c2"),
        b.terminal(5, reason=records_pb2.TERMINAL_REASON_SUSPENDED),
    ]
    stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, records=batch))
    return run_id


def test_deferral_answered_once_writes_one_tool_result(stub, journal_server):
    run_id = deferred_run(stub)
    before = journal_bytes(journal_server, run_id)
    answer = stub.Answer(pb.AnswerRequest(run_id=run_id, tool_use_id="c2", content=[b.text("42")]))
    assert answer.seq == 6
    added = journal_bytes(journal_server, run_id)[len(before) :]
    assert added.count(b"\n") == 1 and b"runjournal.v1.tool_result" in added
    state = stub.Fold(pb.FoldRequest(run_id=run_id)).state
    assert not state.HasField("pending")
    assert state.status == state_pb2.RUN_STATUS_OPEN  # answered after the suspend: open again
    assert state.counters.remote_tool_calls == 1


def test_answering_twice_reports_the_first_answer_and_writes_nothing(stub, journal_server):
    run_id = deferred_run(stub)
    first = stub.Answer(pb.AnswerRequest(run_id=run_id, tool_use_id="c2", content=[b.text("42")]))
    before = journal_bytes(journal_server, run_id)
    with pytest.raises(grpc.RpcError) as caught:
        stub.Answer(pb.AnswerRequest(run_id=run_id, tool_use_id="c2", content=[b.text("43")]))
    assert reason(caught.value) == "ALREADY_ANSWERED"
    assert error_info(caught.value).metadata["answered_at_seq"] == str(first.seq)
    # A call answered by the worker itself is also "already answered", not "not deferred".
    with pytest.raises(grpc.RpcError) as caught:
        stub.Answer(pb.AnswerRequest(run_id=run_id, tool_use_id="c1", content=[b.text("x")]))
    assert reason(caught.value) == "ALREADY_ANSWERED"
    assert error_info(caught.value).metadata["answered_at_seq"] == "3"
    assert journal_bytes(journal_server, run_id) == before


def test_never_deferred_call_is_refused_and_writes_nothing(stub, journal_server):
    run_id = crashed_mid_turn(stub)
    before = journal_bytes(journal_server, run_id)
    for call_id in ("c2", "no-such-call"):
        with pytest.raises(grpc.RpcError) as caught:
            stub.Answer(pb.AnswerRequest(run_id=run_id, tool_use_id=call_id, content=[b.text("x")]))
        assert reason(caught.value) == "NOT_DEFERRED"
    assert journal_bytes(journal_server, run_id) == before
