"""Fold, Read, ListRuns, health and reflection over real gRPC."""

from __future__ import annotations

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import records_pb2, state_pb2
from runjournal_server.core import records
from tests.api.rpc import new_run_id, reason
from tests.support import builders as b


def test_health_reports_serving(journal_server):
    with grpc.insecure_channel(journal_server.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "runjournal.v1.JournalService"):
            response = health.Check(health_pb2.HealthCheckRequest(service=service))
            assert response.status == health_pb2.HealthCheckResponse.SERVING


def test_reflection_lists_the_journal_service(journal_server):
    with grpc.insecure_channel(journal_server.address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        [response] = list(stub.ServerReflectionInfo(iter([request])))
        names = {s.name for s in response.list_services_response.service}
        assert {"runjournal.v1.JournalService", "grpc.health.v1.Health"} <= names


def test_fold_as_of_a_seq_and_read_from_a_seq(stub):
    run_id = new_run_id()
    batch = [b.meta(run_id=run_id), b.assistant(2, 1, ["c1"]), b.result(3, "c1"), b.user(4), b.assistant(5, 2)]
    stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, records=batch))
    assert stub.Fold(pb.FoldRequest(run_id=run_id, as_of_seq=2)).state.HasField("pending")
    full = stub.Fold(pb.FoldRequest(run_id=run_id)).state
    assert full.last_seq == 5 and full.next_iteration == 3 and full.counters.llm_calls == 2
    with pytest.raises(grpc.RpcError) as caught:
        stub.Fold(pb.FoldRequest(run_id=run_id, as_of_seq=9))
    assert reason(caught.value) == "INVALID_ARGUMENT"
    read = list(stub.Read(pb.ReadRequest(run_id=run_id, from_seq=3)))
    assert [r.record.seq for r in read] == [3, 4, 5]
    for response, record in zip(read, batch[2:], strict=True):
        assert response.stored_line == records.encode(record).line
        assert response.record == record


def test_list_runs_newest_first_with_pages_and_filters(stub):
    label = new_run_id("batch")
    created = []
    for index in range(7):
        run_id = new_run_id()
        record = b.meta(run_id=run_id, labels={"batch": label})
        record.meta.created_at.FromSeconds(2_000_000_000 + index)
        stub.Append(pb.AppendRequest(run_id=run_id, record=record))
        created.append(run_id)
    stub.Append(pb.AppendRequest(run_id=created[2], claim_token=1, record=b.assistant(2, 1)))
    stub.Append(
        pb.AppendRequest(
            run_id=created[2],
            claim_token=1,
            record=b.terminal(3, records_pb2.TERMINAL_REASON_COMPLETED, "all done"),
        )
    )
    seen, token = [], ""
    while True:
        page = stub.ListRuns(pb.ListRunsRequest(page_size=3, page_token=token, labels={"batch": label}))
        assert len(page.runs) <= 3
        seen.extend(page.runs)
        token = page.next_page_token
        if not token:
            break
    assert [r.run_id for r in seen] == list(reversed(created))
    completed = stub.ListRuns(pb.ListRunsRequest(labels={"batch": label}, status=state_pb2.RUN_STATUS_COMPLETED)).runs
    assert [(r.run_id, r.terminal_message, r.last_seq) for r in completed] == [(created[2], "all done", 3)]
    with pytest.raises(grpc.RpcError) as caught:
        stub.ListRuns(pb.ListRunsRequest(page_token="garbage!"))
    assert reason(caught.value) == "INVALID_ARGUMENT"
    with pytest.raises(grpc.RpcError) as caught:
        stub.ListRuns(pb.ListRunsRequest(page_size=-1))
    assert reason(caught.value) == "INVALID_ARGUMENT"


def test_read_and_fold_of_a_missing_run_are_not_found(stub):
    for call in (
        lambda: stub.Fold(pb.FoldRequest(run_id="missing-run")),
        lambda: list(stub.Read(pb.ReadRequest(run_id="missing-run"))),
    ):
        with pytest.raises(grpc.RpcError) as caught:
            call()
        assert reason(caught.value) == "RUN_NOT_FOUND"


def test_fold_can_return_only_the_conversation_a_client_lacks(stub):
    run_id = new_run_id()
    batch = [b.meta(run_id=run_id), b.assistant(2, 1, ["c1"]), b.result(3, "c1"), b.user(4), b.assistant(5, 2)]
    stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, records=batch))
    full = stub.Fold(pb.FoldRequest(run_id=run_id)).state
    tail = stub.Fold(pb.FoldRequest(run_id=run_id, conversation_from=len(full.conversation) - 1)).state
    assert (tail.conversation_offset, tail.conversation_size) == (len(full.conversation) - 1, len(full.conversation))
    assert list(tail.conversation) == [full.conversation[-1]]
    assert tail.counters == full.counters and tail.last_seq == full.last_seq
    with pytest.raises(grpc.RpcError) as caught:
        stub.Fold(pb.FoldRequest(run_id=run_id, conversation_from=-1))
    assert reason(caught.value) == "INVALID_ARGUMENT"
