"""TaskService, Approve and the human inbox over real gRPC."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import records_pb2, state_pb2, task_service_pb2_grpc
from runjournal.v1 import task_service_pb2 as tpb
from tests.api.rpc import error_info, journal_bytes, new_run_id, reason
from tests.support import builders as b


@pytest.fixture
def tasks(journal_server):
    with grpc.insecure_channel(journal_server.address) as channel:
        yield task_service_pb2_grpc.TaskServiceStub(channel)


def stored_task(err: grpc.RpcError) -> tpb.Task:
    status = rpc_status.from_call(err)
    for detail in status.details:
        if detail.Is(tpb.Task.DESCRIPTOR):
            task = tpb.Task()
            detail.Unpack(task)
            return task
    raise AssertionError("no stored task attached")


def test_submit_is_idempotent_and_a_different_request_conflicts(tasks):
    task_id = new_run_id("task")
    first = tasks.SubmitTask(tpb.SubmitTaskRequest(task_id=task_id, request_json='{"q": 1}', labels={"k": "v"}))
    assert first.created and first.task.state == tpb.TASK_STATE_SUBMITTED
    again = tasks.SubmitTask(tpb.SubmitTaskRequest(task_id=task_id, request_json='{"q": 1}', labels={"k": "v"}))
    assert not again.created
    assert again.task.submitted_at == first.task.submitted_at  # nothing rewritten
    with pytest.raises(grpc.RpcError) as caught:
        tasks.SubmitTask(tpb.SubmitTaskRequest(task_id=task_id, request_json='{"q": 2}'))
    assert reason(caught.value) == "TASK_CONFLICT"
    with pytest.raises(grpc.RpcError) as caught:
        tasks.SubmitTask(tpb.SubmitTaskRequest(task_id=task_id + "x", request_json="not json"))
    assert reason(caught.value) == "INVALID_ARGUMENT"


async def test_concurrent_completions_have_one_winner_and_losers_get_the_stored_outcome(journal_server):
    async with grpc.aio.insecure_channel(journal_server.address) as channel:
        stub = task_service_pb2_grpc.TaskServiceStub(channel)
        for round_number in range(50):
            task_id = new_run_id(f"race{round_number}")
            await stub.SubmitTask(tpb.SubmitTaskRequest(task_id=task_id, request_json="{}"))
            outcomes = [
                tpb.TaskOutcome(result_json=f'{{"worker": {i}}}')
                if i % 2
                else tpb.TaskOutcome(failure=tpb.TaskFailure(code="E", message=f"worker {i} failed"))
                for i in range(8)
            ]
            calls = [stub.CompleteTask(tpb.CompleteTaskRequest(task_id=task_id, outcome=o)) for o in outcomes]
            answers = await asyncio.gather(*calls, return_exceptions=True)
            winners = [a for a in answers if isinstance(a, tpb.CompleteTaskResponse)]
            assert len(winners) == 1, answers
            stored = (await stub.GetTask(tpb.GetTaskRequest(task_id=task_id))).task
            assert stored == winners[0].task
            for loser in (a for a in answers if a is not winners[0]):
                assert isinstance(loser, grpc.aio.AioRpcError)
                assert reason(loser) == "ALREADY_COMPLETED"
                assert stored_task(loser) == stored


def test_list_tasks_by_state_and_label(tasks):
    label = new_run_id("suite")
    ids = [new_run_id("lt") for _ in range(3)]
    for task_id in ids:
        tasks.SubmitTask(tpb.SubmitTaskRequest(task_id=task_id, request_json="[]", labels={"suite": label}))
    tasks.CompleteTask(tpb.CompleteTaskRequest(task_id=ids[1], outcome=tpb.TaskOutcome(result_json="42")))
    listed = tasks.ListTasks(tpb.ListTasksRequest(labels={"suite": label})).tasks
    assert [t.task_id for t in listed] == list(reversed(ids))
    done = tasks.ListTasks(tpb.ListTasksRequest(labels={"suite": label}, state=tpb.TASK_STATE_SUCCEEDED)).tasks
    assert [t.task_id for t in done] == [ids[1]]
    with pytest.raises(grpc.RpcError) as caught:
        tasks.CompleteTask(tpb.CompleteTaskRequest(task_id="never-submitted", outcome=tpb.TaskOutcome(result_json="1")))
    assert reason(caught.value) == "TASK_NOT_FOUND"


def awaiting_run(stub, *, needs_approval: bool, task_id: str = "") -> str:
    run_id = new_run_id("inbox")
    deferral = b.deferral(3, "c2")
    deferral.deferral.needs_approval = needs_approval
    batch = [
        b.meta(run_id=run_id, task_id=task_id),
        b.assistant(2, 1, ["c1", "c2"]),
        deferral,
        b.result(4, "c1"),
        b.terminal(5, records_pb2.TERMINAL_REASON_SUSPENDED, "waiting"),
    ]
    stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, records=batch))
    return run_id


def inbox(stub) -> dict[str, state_pb2.RunSummary]:
    return {r.run_id: r for r in stub.ListRuns(pb.ListRunsRequest(waiting_for_person=True, page_size=1000)).runs}


def test_runs_waiting_for_an_answer_or_a_decision_are_in_the_inbox_until_handled(stub):
    answer_run = awaiting_run(stub, needs_approval=False)
    decide_run = awaiting_run(stub, needs_approval=True)
    waiting = inbox(stub)
    assert [(c.tool_use_id, c.waiting_for) for c in waiting[answer_run].waiting_calls] == [
        ("c2", state_pb2.WAITING_FOR_ANSWER)
    ]
    assert [(c.tool_use_id, c.waiting_for) for c in waiting[decide_run].waiting_calls] == [
        ("c2", state_pb2.WAITING_FOR_DECISION)
    ]
    pending = stub.Fold(pb.FoldRequest(run_id=decide_run)).state.pending
    assert [c.waiting_for_person for c in pending.calls] == [False, True]
    stub.Answer(pb.AnswerRequest(run_id=answer_run, tool_use_id="c2", content=[b.text("ok")]))
    approved = stub.Approve(
        pb.ApproveRequest(run_id=decide_run, tool_use_id="c2", decision=records_pb2.DECISION_APPROVED, approver="alice")
    )
    assert approved.seq == 6
    waiting = inbox(stub)
    assert answer_run not in waiting and decide_run not in waiting
    state = stub.Fold(pb.FoldRequest(run_id=decide_run)).state
    assert state.pending.calls[1].decision == records_pb2.DECISION_APPROVED


def test_approving_twice_or_an_answered_call_is_refused_and_writes_nothing(stub, journal_server):
    run_id = awaiting_run(stub, needs_approval=True)

    def approve(call_id: str) -> pb.ApproveResponse:
        return stub.Approve(
            pb.ApproveRequest(run_id=run_id, tool_use_id=call_id, decision=records_pb2.DECISION_DENIED, approver="bob")
        )

    first = approve("c2")
    before = journal_bytes(journal_server, run_id)
    with pytest.raises(grpc.RpcError) as caught:
        approve("c2")
    assert reason(caught.value) == "ALREADY_DECIDED"
    assert error_info(caught.value).metadata["decided_at_seq"] == str(first.seq)
    with pytest.raises(grpc.RpcError) as caught:
        approve("c1")
    assert reason(caught.value) == "ALREADY_ANSWERED"
    assert error_info(caught.value).metadata["answered_at_seq"] == "4"
    with pytest.raises(grpc.RpcError) as caught:
        approve("no-such-call")
    assert reason(caught.value) == "CALL_NOT_PENDING"
    with pytest.raises(grpc.RpcError) as caught:
        stub.Approve(pb.ApproveRequest(run_id=run_id, tool_use_id="c2", approver="bob"))
    assert reason(caught.value) == "INVALID_ARGUMENT"
    assert journal_bytes(journal_server, run_id) == before


def test_list_runs_by_task(stub):
    task_id = new_run_id("for-task")
    run_id = awaiting_run(stub, needs_approval=False, task_id=task_id)
    awaiting_run(stub, needs_approval=False)
    assert [r.run_id for r in stub.ListRuns(pb.ListRunsRequest(task_id=task_id)).runs] == [run_id]


def test_task_info_detail_type_is_task(tasks):
    # ErrorInfo stays the first detail, so generic clients find the reason where they expect it.
    task_id = new_run_id("detail")
    tasks.SubmitTask(tpb.SubmitTaskRequest(task_id=task_id, request_json="{}"))
    tasks.CompleteTask(tpb.CompleteTaskRequest(task_id=task_id, outcome=tpb.TaskOutcome(result_json="1")))
    with pytest.raises(grpc.RpcError) as caught:
        tasks.CompleteTask(tpb.CompleteTaskRequest(task_id=task_id, outcome=tpb.TaskOutcome(result_json="2")))
    details = rpc_status.from_call(caught.value).details
    assert details[0].Is(error_details_pb2.ErrorInfo.DESCRIPTOR) and details[1].Is(tpb.Task.DESCRIPTOR)
    assert stored_task(caught.value).outcome.result_json == "1"


def test_acknowledged_submissions_and_completions_survive_sigkill(server_factory, tmp_path):
    data_dir = tmp_path / "data"
    server = server_factory(data_dir)
    acknowledged = {}
    with grpc.insecure_channel(server.address) as channel:
        stub = task_service_pb2_grpc.TaskServiceStub(channel)
        for index in range(40):
            task_id = f"kill-{index}"
            stub.SubmitTask(tpb.SubmitTaskRequest(task_id=task_id, request_json=f'{{"n": {index}}}'))
            acknowledged[task_id] = None
            if index % 3 == 0:
                response = stub.CompleteTask(
                    tpb.CompleteTaskRequest(task_id=task_id, outcome=tpb.TaskOutcome(result_json=str(index)))
                )
                acknowledged[task_id] = response.task.outcome
    server.kill()
    server = server_factory(data_dir)
    with grpc.insecure_channel(server.address) as channel:
        stub = task_service_pb2_grpc.TaskServiceStub(channel)
        for task_id, outcome in acknowledged.items():
            task = stub.GetTask(tpb.GetTaskRequest(task_id=task_id)).task
            if outcome is None:
                assert task.state == tpb.TASK_STATE_SUBMITTED
            else:
                assert task.state == tpb.TASK_STATE_SUCCEEDED and task.outcome == outcome
    assert not [p for p in (data_dir / "tasks").iterdir() if p.name.startswith(".tmp-")]
