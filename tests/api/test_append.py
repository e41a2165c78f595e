"""Append and AppendBatch over real gRPC: the append rule, claim tokens, validation."""

from __future__ import annotations

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from tests.api.rpc import journal_bytes, new_run_id, reason
from tests.support import builders as b


def create(stub, run_id: str, **meta_fields) -> None:
    stub.Append(pb.AppendRequest(run_id=run_id, record=b.meta(run_id=run_id, **meta_fields)))


def append(stub, run_id: str, record, token: int = 1) -> pb.AppendResponse:
    return stub.Append(pb.AppendRequest(run_id=run_id, claim_token=token, record=record))


def test_run_is_created_by_its_meta_and_appends_advance(stub):
    run_id = new_run_id()
    response = stub.Append(pb.AppendRequest(run_id=run_id, record=b.meta(run_id=run_id)))
    assert (response.seq, response.duplicate, response.last_seq) == (1, False, 1)
    response = append(stub, run_id, b.assistant(2, 1, ["c1"]))
    assert (response.seq, response.last_seq) == (2, 2)


def test_retried_acknowledged_append_is_a_duplicate_and_writes_nothing(stub, journal_server):
    run_id = new_run_id()
    create(stub, run_id)
    append(stub, run_id, b.assistant(2, 1, ["c1"]))
    before = journal_bytes(journal_server, run_id)
    response = append(stub, run_id, b.assistant(2, 1, ["c1"]))
    assert response.duplicate and response.last_seq == 2
    assert journal_bytes(journal_server, run_id) == before


def test_different_body_at_an_occupied_seq_is_a_conflict_and_writes_nothing(stub, journal_server):
    run_id = new_run_id()
    create(stub, run_id)
    append(stub, run_id, b.assistant(2, 1, ["c1"]))
    before = journal_bytes(journal_server, run_id)
    with pytest.raises(grpc.RpcError) as caught:
        append(stub, run_id, b.assistant(2, 1, ["c2"]))
    assert caught.value.code() == grpc.StatusCode.ABORTED
    assert reason(caught.value) == "SEQ_CONFLICT"
    assert journal_bytes(journal_server, run_id) == before


def test_gap_is_refused_with_last_seq_and_writes_nothing(stub, journal_server):
    run_id = new_run_id()
    create(stub, run_id)
    before = journal_bytes(journal_server, run_id)
    with pytest.raises(grpc.RpcError) as caught:
        append(stub, run_id, b.assistant(3, 1))
    assert reason(caught.value) == "SEQ_GAP"
    from tests.api.rpc import error_info

    assert error_info(caught.value).metadata["last_seq"] == "1"
    assert journal_bytes(journal_server, run_id) == before


def test_second_creator_with_a_different_meta_gets_run_exists(stub):
    run_id = new_run_id()
    create(stub, run_id)
    with pytest.raises(grpc.RpcError) as caught:
        create(stub, run_id, prompt="another prompt")
    assert reason(caught.value) == "RUN_EXISTS"
    assert stub.Append(pb.AppendRequest(run_id=run_id, record=b.meta(run_id=run_id))).duplicate


def test_append_to_a_missing_run_is_not_found(stub):
    with pytest.raises(grpc.RpcError) as caught:
        append(stub, new_run_id(), b.assistant(2, 1))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert reason(caught.value) == "RUN_NOT_FOUND"


def test_record_that_breaks_the_run_state_is_invalid_and_writes_nothing(stub, journal_server):
    run_id = new_run_id()
    create(stub, run_id)
    append(stub, run_id, b.assistant(2, 1, ["c1"]))
    before = journal_bytes(journal_server, run_id)
    for bad in (b.result(3, "nope"), b.assistant(3, 2), b.meta(3, run_id=run_id)):
        with pytest.raises(grpc.RpcError) as caught:
            append(stub, run_id, bad)
        assert reason(caught.value) == "INVALID_RECORD", bad
    assert journal_bytes(journal_server, run_id) == before
    assert append(stub, run_id, b.result(3, "c1")).seq == 3


def test_claim_records_cannot_be_appended_directly(stub):
    run_id = new_run_id()
    create(stub, run_id)
    with pytest.raises(grpc.RpcError) as caught:
        append(stub, run_id, b.claim(2))
    assert reason(caught.value) == "INVALID_RECORD"


@pytest.mark.parametrize(
    "run_id",
    ["../x", "a.b", "a*", "a>", "", "x" * 129, "run\n", "-leading", "a/b", "a b"],
)
def test_invalid_run_ids_are_refused_everywhere_and_nothing_is_written(stub, journal_server, run_id):
    def snapshot() -> list[str]:
        listed = [r.run_id for r in stub.ListRuns(pb.ListRunsRequest(page_size=1000)).runs]
        if journal_server.backend == "file":
            listed += [p.name for p in journal_server.data_dir.iterdir()]
        return sorted(listed)

    before = snapshot()
    calls = [
        lambda: stub.Append(pb.AppendRequest(run_id=run_id, record=b.meta(run_id="ok"))),
        lambda: stub.Fold(pb.FoldRequest(run_id=run_id)),
        lambda: stub.Answer(pb.AnswerRequest(run_id=run_id, tool_use_id="c")),
        lambda: stub.Claim(pb.ClaimRequest(run_id=run_id, worker_id="w", fingerprint=b.fingerprint())),
        lambda: list(stub.Read(pb.ReadRequest(run_id=run_id))),
    ]
    for call in calls:
        with pytest.raises(grpc.RpcError) as caught:
            call()
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert reason(caught.value) == "INVALID_ARGUMENT"
        assert "run id" in caught.value.details()
    assert snapshot() == before


def test_oversized_record_is_refused_not_truncated(stub, journal_server):
    run_id = new_run_id()
    create(stub, run_id)
    before = journal_bytes(journal_server, run_id)
    big = b.user(2, "x" * (1024 * 1024 + 1))
    with pytest.raises(grpc.RpcError) as caught:
        append(stub, run_id, big)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert reason(caught.value) == "RECORD_TOO_LARGE"
    assert journal_bytes(journal_server, run_id) == before


def test_malformed_record_names_the_field(stub):
    run_id = new_run_id()
    create(stub, run_id)
    bad = b.assistant(2, 1, ["c1"])
    bad.assistant.content[1].tool_use.input_json = "not json"
    with pytest.raises(grpc.RpcError) as caught:
        append(stub, run_id, bad)
    assert reason(caught.value) == "INVALID_RECORD"
    assert "input_json" in caught.value.details()
    with pytest.raises(grpc.RpcError) as caught:
        stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1))
    assert reason(caught.value) == "INVALID_RECORD"


def test_batch_is_all_or_nothing(stub, journal_server):
    run_id = new_run_id()
    create(stub, run_id)
    before = journal_bytes(journal_server, run_id)
    bad_batch = [b.assistant(2, 1, ["c1"]), b.result(3, "c1"), b.result(4, "c1")]
    with pytest.raises(grpc.RpcError) as caught:
        stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=bad_batch))
    assert reason(caught.value) == "INVALID_RECORD"
    assert journal_bytes(journal_server, run_id) == before
    good = [b.assistant(2, 1, ["c1", "c2"]), b.result(3, "c1"), b.result(4, "c2")]
    response = stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=good))
    assert (response.first_seq, response.duplicates, response.last_seq) == (2, 0, 4)
    again = stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=[*good, b.note(5)]))
    assert (again.duplicates, again.last_seq) == (3, 5)


def test_batch_can_create_a_run_and_must_be_consecutive(stub):
    run_id = new_run_id()
    batch = [b.meta(run_id=run_id), b.assistant(2, 1, ["c1"]), b.result(3, "c1")]
    response = stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, records=batch))
    assert response.last_seq == 3
    with pytest.raises(grpc.RpcError) as caught:
        stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=[b.note(4), b.note(6)]))
    assert reason(caught.value) == "INVALID_ARGUMENT"
