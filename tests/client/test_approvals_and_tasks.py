"""Approve, the inbox and the task client against the fake: what is sent, and the retry rules."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import grpc
import grpc.aio
import pytest

import runjournal
from runjournal import AsyncJournalClient, JournalClient, TaskClient
from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import records_pb2, state_pb2
from runjournal.v1 import task_service_pb2 as tpb
from tests.client.conftest import FAST_RETRY
from tests.client.fake_journal import Action, FakeServer, abort_plain, abort_with_reason
from tests.client.flavours import Flavour

UNAVAILABLE = abort_plain(grpc.StatusCode.UNAVAILABLE)


# --- approve ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        ("approved", records_pb2.DECISION_APPROVED),
        ("denied", records_pb2.DECISION_DENIED),
        ("DECISION_DENIED", records_pb2.DECISION_DENIED),
        (records_pb2.DECISION_APPROVED, records_pb2.DECISION_APPROVED),
    ],
)
def test_approve_sends_the_decision_by_name_or_value(
    fake: FakeServer, client: JournalClient, decision: str | int, expected: int
) -> None:
    assert client.approve("r1", "c1", decision, "alice", "looks safe") == 43
    (request,) = fake.journal.requests("Approve")
    assert (request.run_id, request.tool_use_id, request.decision, request.approver, request.reason) == (
        "r1",
        "c1",
        expected,
        "alice",
        "looks safe",
    )


def test_an_unknown_decision_is_refused_before_anything_is_sent(fake: FakeServer, client: JournalClient) -> None:
    with pytest.raises(ValueError, match="approved, denied"):
        client.approve("r1", "c1", "maybe", "alice")
    assert fake.journal.requests("Approve") == []


def _decided(fake: FakeServer, seq: int, approver: str, *, first: Sequence[Action] = (UNAVAILABLE,)) -> None:
    """The call's decision is stored at ``seq``; the next Approves fail ``first`` then ALREADY_DECIDED."""
    fake.journal.read_last_seq = seq
    fake.journal.stored[seq] = records_pb2.JournalRecord(
        seq=seq,
        approval=records_pb2.Approval(
            tool_use_id="c1", decision=records_pb2.DECISION_APPROVED, approver=approver, reason="ok"
        ),
    )
    already = abort_with_reason(
        "ALREADY_DECIDED", grpc.StatusCode.ALREADY_EXISTS, {"tool_use_id": "c1", "decided_at_seq": str(seq)}
    )
    fake.journal.fail_next("Approve", *first, already)


def test_a_resent_approve_that_finds_its_own_first_attempt_returns_that_seq(
    fake: FakeServer, client: JournalClient
) -> None:
    _decided(fake, 8, "alice")
    assert client.approve("r1", "c1", "approved", "alice", "ok") == 8
    sent = fake.journal.requests("Approve")
    assert len(sent) == 2 and sent[0] == sent[1]
    assert [r.from_seq for r in fake.journal.requests("Read")] == [8]


async def test_async_resent_approve_that_finds_its_own_first_attempt_returns_that_seq(
    fake: FakeServer, flavour: Flavour
) -> None:
    _decided(fake, 9, "alice")
    async with flavour.AsyncJournalClient(fake.address, retry=FAST_RETRY) as client:
        assert await client.approve("r1", "c1", "approved", "alice", "ok") == 9


@pytest.mark.parametrize(
    ("decision", "approver", "reason"),
    [("denied", "alice", "ok"), ("approved", "bob", "ok"), ("approved", "alice", "other reason")],
)
def test_a_resent_approve_that_finds_another_decision_is_already_decided(
    fake: FakeServer, client: JournalClient, decision: str, approver: str, reason: str
) -> None:
    _decided(fake, 8, "alice")
    with pytest.raises(runjournal.AlreadyDecidedError) as caught:
        client.approve("r1", "c1", decision, approver, reason)
    assert (caught.value.decided_at_seq, caught.value.tool_use_id) == (8, "c1")


def test_a_first_approve_told_already_decided_raises_without_looking(fake: FakeServer, client: JournalClient) -> None:
    _decided(fake, 8, "alice", first=())
    with pytest.raises(runjournal.AlreadyDecidedError):
        client.approve("r1", "c1", "approved", "alice", "ok")
    assert fake.journal.requests("Read") == []


def test_a_resent_approve_told_already_answered_raises_without_looking(fake: FakeServer, client: JournalClient) -> None:
    # The answer of a call is never an approval, so there is nothing of ours to find.
    answered = abort_with_reason(
        "ALREADY_ANSWERED", grpc.StatusCode.ALREADY_EXISTS, {"tool_use_id": "c1", "answered_at_seq": "5"}
    )
    fake.journal.fail_next("Approve", UNAVAILABLE, answered)
    with pytest.raises(runjournal.AlreadyAnsweredError):
        client.approve("r1", "c1", "approved", "alice")
    assert fake.journal.requests("Read") == []


def test_call_not_pending_is_not_retried(fake: FakeServer, client: JournalClient) -> None:
    fake.journal.fail_next(
        "Approve", abort_with_reason("CALL_NOT_PENDING", grpc.StatusCode.FAILED_PRECONDITION, {"tool_use_id": "c7"})
    )
    with pytest.raises(runjournal.CallNotPendingError) as caught:
        client.approve("r1", "c7", "denied", "alice")
    assert caught.value.tool_use_id == "c7"
    assert len(fake.journal.requests("Approve")) == 1


# --- listing and the inbox ------------------------------------------------------


def test_list_runs_sends_the_person_and_task_filters(fake: FakeServer, client: JournalClient) -> None:
    fake.journal.pages[""] = pb.ListRunsResponse()
    client.list_runs(status="open", waiting_for_person=True, task_id="t9")
    client.list_runs()
    with_filters, without = fake.journal.requests("ListRuns")
    assert (with_filters.waiting_for_person, with_filters.task_id, with_filters.status) == (
        True,
        "t9",
        state_pb2.RUN_STATUS_OPEN,
    )
    assert (without.waiting_for_person, without.task_id) == (False, "")


def test_inbox_pages_through_the_runs_waiting_for_a_person(fake: FakeServer, client: JournalClient) -> None:
    waiting = state_pb2.WaitingCall(tool_use_id="c1", waiting_for=state_pb2.WAITING_FOR_DECISION)
    fake.journal.pages = {
        "": pb.ListRunsResponse(runs=[state_pb2.RunSummary(run_id="a", waiting_calls=[waiting])], next_page_token="p"),
        "p": pb.ListRunsResponse(runs=[state_pb2.RunSummary(run_id="b")]),
    }
    runs = list(client.inbox(labels={"team": "x"}, task_id="t1", page_size=1))
    assert [r.run_id for r in runs] == ["a", "b"]
    assert runs[0].waiting_calls[0] == waiting
    requests = fake.journal.requests("ListRuns")
    assert [r.page_token for r in requests] == ["", "p"]
    for request in requests:
        assert request.waiting_for_person and request.task_id == "t1" and request.page_size == 1
        assert dict(request.labels) == {"team": "x"}


async def test_async_inbox_filters_by_waiting_for_person(fake: FakeServer, flavour: Flavour) -> None:
    fake.journal.pages[""] = pb.ListRunsResponse(runs=[state_pb2.RunSummary(run_id="a")])
    async with flavour.AsyncJournalClient(fake.address) as client:
        assert [r.run_id async for r in client.inbox()] == ["a"]
    (request,) = fake.journal.requests("ListRuns")
    assert request.waiting_for_person and request.status == state_pb2.RUN_STATUS_UNSPECIFIED


def test_a_deferral_may_ask_for_a_decision(fake: FakeServer, client: JournalClient, flavour: Flavour) -> None:
    run = flavour.Run.create(client, "r1", records_pb2.Fingerprint(provider="p", model="m"), "go")
    run.deferral("c1", "production deploy", "on-call", needs_approval=True)
    run.deferral("c2", "ask", "ops")
    first, second = (r.record.deferral for r in fake.journal.requests("Append")[1:])
    assert (first.tool_use_id, first.needs_approval, first.expected_answerer) == ("c1", True, "on-call")
    assert (second.tool_use_id, second.needs_approval) == ("c2", False)


# --- tasks --------------------------------------------------------------------


@pytest.fixture
def tasks(fake: FakeServer, flavour: Flavour) -> Iterator[TaskClient]:
    with flavour.TaskClient(fake.address, retry=FAST_RETRY, timeout=5.0) as task_client:
        yield task_client


def test_submit_sends_the_request_as_canonical_json(fake: FakeServer, tasks: TaskClient) -> None:
    task, created = tasks.submit("t1", {"b": [1.0, 2.5], "a": "é"}, {"team": "x"})
    assert created and task.state == tpb.TASK_STATE_SUBMITTED
    tasks.submit("t2", None)
    tasks.submit("t3", request_json='{"z": 1,  "a": 2}')
    sent = fake.tasks.requests("SubmitTask")
    assert [r.request_json for r in sent] == ['{"a":"é","b":[1,2.5]}', "null", '{"z": 1,  "a": 2}']
    assert dict(sent[0].labels) == {"team": "x"} and task.request_json == sent[0].request_json


@pytest.mark.parametrize("kwargs", [{}, {"request": {"a": 1}, "request_json": "{}"}])
def test_submit_takes_exactly_one_of_request_and_request_json(
    fake: FakeServer, tasks: TaskClient, kwargs: dict[str, object]
) -> None:
    with pytest.raises(ValueError, match="exactly one of request and request_json"):
        tasks.submit("t1", **kwargs)  # type: ignore[arg-type]
    assert fake.tasks.requests("SubmitTask") == []


def test_submit_is_resent_unchanged_after_a_transport_failure(fake: FakeServer, tasks: TaskClient) -> None:
    fake.tasks.fail_next("SubmitTask", UNAVAILABLE, UNAVAILABLE)
    task, _ = tasks.submit("t1", {"q": 1})
    assert task.task_id == "t1"
    sent = {r.SerializeToString(deterministic=True) for r in fake.tasks.requests("SubmitTask")}
    assert len(fake.tasks.requests("SubmitTask")) == 3 and len(sent) == 1


def test_task_conflict_is_raised_and_not_retried(fake: FakeServer, tasks: TaskClient) -> None:
    fake.tasks.fail_next(
        "SubmitTask", abort_with_reason("TASK_CONFLICT", grpc.StatusCode.ALREADY_EXISTS, {"task_id": "t1"})
    )
    with pytest.raises(runjournal.TaskConflictError) as caught:
        tasks.submit("t1", {"q": 2})
    assert caught.value.task_id == "t1"
    assert len(fake.tasks.requests("SubmitTask")) == 1


def test_complete_sends_a_result_or_a_failure(fake: FakeServer, tasks: TaskClient) -> None:
    done = tasks.complete("t1", {"answer": 42})
    assert done.state == tpb.TASK_STATE_SUCCEEDED
    tasks.complete("t2", result_json="[1, 2]")
    failed = tasks.complete("t3", failure=("timeout", "gave up after 3 tries"))
    assert failed.state == tpb.TASK_STATE_FAILED
    tasks.complete("t4", failure=tpb.TaskFailure(code="bad_input"))
    outcomes = [r.outcome for r in fake.tasks.requests("CompleteTask")]
    assert [o.WhichOneof("kind") for o in outcomes] == ["result_json", "result_json", "failure", "failure"]
    assert (outcomes[0].result_json, outcomes[1].result_json) == ('{"answer":42}', "[1, 2]")
    assert (outcomes[2].failure.code, outcomes[2].failure.message) == ("timeout", "gave up after 3 tries")
    assert outcomes[3].failure.code == "bad_input"
    assert not any(o.HasField("completed_at") for o in outcomes)  # the server sets it


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"result": 1, "result_json": "1"},
        {"result": 1, "failure": ("c", "m")},
        {"result_json": "1", "failure": ("c", "m")},
    ],
)
def test_complete_takes_exactly_one_outcome(fake: FakeServer, tasks: TaskClient, kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="exactly one of result"):
        tasks.complete("t1", **kwargs)  # type: ignore[arg-type]
    assert fake.tasks.requests("CompleteTask") == []


def _completed(task_id: str, *, result_json: str | None = None, failure: tuple[str, str] | None = None) -> tpb.Task:
    task = tpb.Task(task_id=task_id, request_json="{}")
    if failure is not None:
        task.state = tpb.TASK_STATE_FAILED
        task.outcome.failure.code, task.outcome.failure.message = failure
    else:
        task.state = tpb.TASK_STATE_SUCCEEDED
        task.outcome.result_json = result_json or ""
    task.outcome.completed_at.FromSeconds(1_700_000_123)
    return task


def _already_completed(stored: tpb.Task) -> Action:
    return abort_with_reason(
        "ALREADY_COMPLETED", grpc.StatusCode.ALREADY_EXISTS, {"task_id": stored.task_id}, details=[stored]
    )


@pytest.mark.parametrize(
    ("stored", "kwargs"),
    [
        (_completed("t1", result_json='{"answer":42}'), {"result": {"answer": 42}}),
        (_completed("t1", failure=("timeout", "late")), {"failure": ("timeout", "late")}),
    ],
)
def test_a_resent_completion_that_finds_its_own_outcome_returns_the_stored_task(
    fake: FakeServer, tasks: TaskClient, stored: tpb.Task, kwargs: dict[str, object]
) -> None:
    fake.tasks.fail_next("CompleteTask", UNAVAILABLE, _already_completed(stored))
    assert tasks.complete("t1", **kwargs) == stored  # type: ignore[arg-type]
    sent = fake.tasks.requests("CompleteTask")
    assert len(sent) == 2 and sent[0] == sent[1]


async def test_async_resent_completion_that_finds_its_own_outcome_returns_the_stored_task(
    fake: FakeServer, flavour: Flavour
) -> None:
    stored = _completed("t1", result_json='"yes"')
    fake.tasks.fail_next("CompleteTask", UNAVAILABLE, _already_completed(stored))
    async with flavour.AsyncTaskClient(fake.address, retry=FAST_RETRY) as tasks:
        assert await tasks.complete("t1", "yes") == stored


@pytest.mark.parametrize(
    "stored",
    [
        _completed("t1", result_json='{"answer":41}'),
        _completed("t1", failure=("timeout", "late")),
        _completed("t1", result_json=""),
    ],
)
def test_a_resent_completion_that_finds_another_outcome_is_already_completed(
    fake: FakeServer, tasks: TaskClient, stored: tpb.Task
) -> None:
    fake.tasks.fail_next("CompleteTask", UNAVAILABLE, _already_completed(stored))
    with pytest.raises(runjournal.AlreadyCompletedError) as caught:
        tasks.complete("t1", {"answer": 42})
    assert caught.value.stored_task == stored


def test_a_first_completion_told_already_completed_lost_even_with_the_same_outcome(
    fake: FakeServer, tasks: TaskClient
) -> None:
    stored = _completed("t1", result_json='{"answer":42}')
    fake.tasks.fail_next("CompleteTask", _already_completed(stored))
    with pytest.raises(runjournal.AlreadyCompletedError) as caught:
        tasks.complete("t1", {"answer": 42})
    assert caught.value.stored_task == stored


def test_a_resent_completion_refused_without_a_stored_task_raises(fake: FakeServer, tasks: TaskClient) -> None:
    bare = abort_with_reason("ALREADY_COMPLETED", grpc.StatusCode.ALREADY_EXISTS, {"task_id": "t1"})
    fake.tasks.fail_next("CompleteTask", UNAVAILABLE, bare)
    with pytest.raises(runjournal.AlreadyCompletedError) as caught:
        tasks.complete("t1", {"answer": 42})
    assert caught.value.stored_task is None


def test_get_and_iter_with_state_and_labels(fake: FakeServer, tasks: TaskClient) -> None:
    fake.tasks.stored["t1"] = _completed("t1", result_json="1")
    assert tasks.get("t1") == fake.tasks.stored["t1"]
    fake.tasks.fail_next("GetTask", abort_with_reason("TASK_NOT_FOUND", grpc.StatusCode.NOT_FOUND, {"task_id": "t9"}))
    with pytest.raises(runjournal.TaskNotFoundError):
        tasks.get("t9")
    fake.tasks.pages = {
        "": tpb.ListTasksResponse(tasks=[tpb.Task(task_id="a"), tpb.Task(task_id="b")], next_page_token="p2"),
        "p2": tpb.ListTasksResponse(tasks=[tpb.Task(task_id="c")]),
    }
    assert [t.task_id for t in tasks.iter(page_size=2, state="failed", labels={"team": "x"})] == ["a", "b", "c"]
    requests = fake.tasks.requests("ListTasks")
    assert [r.page_token for r in requests] == ["", "p2"]
    for request in requests:
        assert (request.page_size, request.state, dict(request.labels)) == (2, tpb.TASK_STATE_FAILED, {"team": "x"})
    with pytest.raises(ValueError, match="submitted, succeeded, failed"):
        tasks.list(state="running")


async def test_async_iter_pages(fake: FakeServer, flavour: Flavour) -> None:
    fake.tasks.pages = {
        "": tpb.ListTasksResponse(tasks=[tpb.Task(task_id="a")], next_page_token="p2"),
        "p2": tpb.ListTasksResponse(tasks=[tpb.Task(task_id="b")]),
    }
    async with flavour.AsyncTaskClient(fake.address) as tasks:
        assert [t.task_id async for t in tasks.iter(state="submitted")] == ["a", "b"]
        assert (await tasks.list()).next_page_token == "p2"


def test_tasks_share_the_journal_clients_channel_settings_and_lifetime(fake: FakeServer) -> None:
    with JournalClient(fake.address, timeout=3.0, metadata=[("authorization", "Bearer t")]) as client:
        with client.tasks as tasks:
            tasks.submit("t1", {})
        # Closing the borrowed task client left the channel open for both.
        client.fold("r1")
        client.tasks.complete("t1", 1)
    submit, fold, complete = fake.tasks.received[0], fake.journal.received[0], fake.tasks.received[1]
    for call in (submit, fold, complete):
        assert call.metadata["authorization"] == "Bearer t"
        assert call.time_remaining is not None and 2.0 < call.time_remaining < 3.5
    with pytest.raises(ValueError, match="closed channel"):
        client.tasks.get("t1")


async def test_async_tasks_share_the_journal_clients_channel_settings_and_lifetime(fake: FakeServer) -> None:
    # The asyncio twin of the test above; only the error of a closed channel is grpc.aio's own.
    async with AsyncJournalClient(fake.address, timeout=3.0, metadata=[("authorization", "Bearer t")]) as client:
        async with client.tasks as tasks:
            await tasks.submit("t1", {})
        # Closing the borrowed task client left the channel open for both.
        await client.fold("r1")
        await client.tasks.complete("t1", 1)
    submit, fold, complete = fake.tasks.received[0], fake.journal.received[0], fake.tasks.received[1]
    for call in (submit, fold, complete):
        assert call.metadata["authorization"] == "Bearer t"
        assert call.time_remaining is not None and 2.0 < call.time_remaining < 3.5
    with pytest.raises(grpc.aio.UsageError, match="closed"):
        await client.tasks.get("t1")


async def test_async_tasks_share_the_journal_clients_channel(fake: FakeServer, flavour: Flavour) -> None:
    async with flavour.AsyncJournalClient(fake.address, metadata=[("x-team", "a")]) as client:
        async with client.tasks as tasks:
            await tasks.submit("t1", [1, 2])
        await client.fold("r1")
        assert client.tasks.retry is client.retry
    assert fake.tasks.received[0].metadata["x-team"] == "a"
    assert fake.tasks.requests("SubmitTask")[0].request_json == "[1,2]"


def test_task_calls_carry_the_deadline_and_metadata(fake: FakeServer, flavour: Flavour) -> None:
    fake.tasks.stored["t1"] = tpb.Task(task_id="t1")
    fake.tasks.pages[""] = tpb.ListTasksResponse()
    with flavour.TaskClient(fake.address, timeout=3.0, metadata=[("authorization", "Bearer t")]) as tasks:
        tasks.submit("t1", {})
        tasks.complete("t1", 1)
        tasks.get("t1")
        tasks.list()
        tasks.get("t1", timeout=1.0)
    received = fake.tasks.received
    assert [r.method for r in received] == ["SubmitTask", "CompleteTask", "GetTask", "ListTasks", "GetTask"]
    for call in received[:-1]:
        assert call.time_remaining is not None and 2.0 < call.time_remaining < 3.5, call.method
        assert call.metadata["authorization"] == "Bearer t"
    assert received[-1].time_remaining is not None and received[-1].time_remaining < 1.5
