"""Approvals, the inbox, tasks and their commands against a real server process over real gRPC."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping

import pytest

import runjournal
from runjournal import JournalClient
from runjournal.v1 import records_pb2, state_pb2
from runjournal.v1 import task_service_pb2 as tpb
from tests.client.flavours import Flavour
from tests.servers import ServerProcess

FINGERPRINT = runjournal.make_fingerprint(
    provider="anthropic",
    model="claude-test",
    system_prompt="be careful",
    thinking_mode="off",
    tools=[{"name": "deploy", "input_schema": {"type": "object"}}, {"name": "ask", "input_schema": {"type": "object"}}],
)
DECISION = state_pb2.WAITING_FOR_DECISION
ANSWER = state_pb2.WAITING_FOR_ANSWER


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def client(journal_server: ServerProcess, flavour: Flavour) -> Iterator[JournalClient]:
    with flavour.JournalClient(journal_server.address) as journal_client:
        yield journal_client


def waiting_run(
    flavour: Flavour, client: JournalClient, *, calls: int = 2, task_id: str = ""
) -> tuple[str, dict[str, str]]:
    """A suspended run whose turn asks for ``calls`` calls: c1 (and c3, c4, ...) wait for a decision, c2 for an answer.

    Returns the run id and a label unique to it, to read the shared server's inbox through.
    """
    run_id = new_id("approve")
    label = {"inbox-test": run_id}
    run = flavour.Run.create(client, run_id, FINGERPRINT, "ship it", labels=label, task_id=task_id)
    names = {f"c{i}": "ask" if i == 2 else "deploy" for i in range(1, calls + 1)}
    run.assistant(1, [runjournal.tool_use_block(call, name, {"n": call}) for call, name in names.items()], "tool_use")
    for call in names:
        if call == "c2":
            run.deferral(call, "which customers to notify?", "ops")
        else:
            run.deferral(call, "production deploy", "on-call", needs_approval=True)
    run.terminal("suspended", "waiting for people")
    return run_id, label


def waiting(runs: list[state_pb2.RunSummary]) -> list[tuple[str, str, int]]:
    return [(run.run_id, call.tool_use_id, call.waiting_for) for run in runs for call in run.waiting_calls]


def test_approve_takes_a_call_out_of_the_inbox_and_a_second_decision_is_refused(
    client: JournalClient, flavour: Flavour
) -> None:
    run_id, label = waiting_run(flavour, client)

    (summary,) = client.inbox(labels=label)
    assert [
        (c.tool_use_id, c.tool_name, c.waiting_for, c.deferral_seq, c.reason, c.expected_answerer)
        for c in summary.waiting_calls
    ] == [
        ("c1", "deploy", DECISION, 3, "production deploy", "on-call"),
        ("c2", "ask", ANSWER, 4, "which customers to notify?", "ops"),
    ]
    assert summary.run_id == run_id and summary.status == state_pb2.RUN_STATUS_SUSPENDED

    with pytest.raises(runjournal.CallNotPendingError) as not_pending:
        client.approve(run_id, "c9", "approved", "alice")
    assert not_pending.value.tool_use_id == "c9"

    seq = client.approve(run_id, "c1", "approved", "alice", "the window is open")
    assert seq == 6
    assert waiting(list(client.inbox(labels=label))) == [(run_id, "c2", ANSWER)]

    with pytest.raises(runjournal.AlreadyDecidedError) as decided:
        client.approve(run_id, "c1", "denied", "bob")
    assert (decided.value.decided_at_seq, decided.value.tool_use_id, decided.value.run_id) == (seq, "c1", run_id)
    # Not a transport retry: the identical decision sent again is refused too.
    with pytest.raises(runjournal.AlreadyDecidedError):
        client.approve(run_id, "c1", "approved", "alice", "the window is open")

    call = client.fold(run_id).pending.calls[0]
    assert (call.decision, call.approval_seq, call.approval.approver, call.approval.reason) == (
        records_pb2.DECISION_APPROVED,
        seq,
        "alice",
        "the window is open",
    )
    assert not call.waiting_for_person

    assert client.answer(run_id, "c2", text="everyone") == 7
    assert list(client.inbox(labels=label)) == []

    # The worker runs the approved call; the decision is spent with it.
    worker = flavour.Run.claim(client, run_id, "worker-2", FINGERPRINT)
    assert worker.state is not None and worker.state.pending.calls[0].decision == records_pb2.DECISION_APPROVED
    worker.tool_result("c1", "deployed")
    with pytest.raises(runjournal.AlreadyAnsweredError) as answered:
        client.approve(run_id, "c1", "denied", "bob")
    assert answered.value.answered_at_seq == worker.last_seq


def test_the_fold_says_what_each_pending_call_waits_for(client: JournalClient, flavour: Flavour) -> None:
    run_id, _ = waiting_run(flavour, client, calls=4)  # c1, c3, c4 wait for a decision, c2 for an answer

    def waits() -> list[tuple[str, int, bool]]:
        calls = client.fold(run_id).pending.calls
        return [(c.tool_use.id, c.waiting_for, c.waiting_for_person) for c in calls]

    assert waits() == [("c1", DECISION, True), ("c2", ANSWER, True), ("c3", DECISION, True), ("c4", DECISION, True)]
    client.approve(run_id, "c1", "approved", "alice")
    client.approve(run_id, "c3", "denied", "alice")
    client.answer(run_id, "c2", text="everyone")
    worker, nothing = state_pb2.WAITING_FOR_WORKER, state_pb2.WAITING_FOR_NOTHING
    assert waits() == [("c1", worker, False), ("c2", nothing, False), ("c3", worker, False), ("c4", DECISION, True)]


async def test_async_approve_and_inbox(journal_server: ServerProcess, flavour: Flavour) -> None:
    async with flavour.AsyncJournalClient(journal_server.address) as client:
        run_id = new_id("approve")
        label = {"inbox-test": run_id}
        run = await flavour.AsyncRun.create(client, run_id, FINGERPRINT, "go", labels=label)
        await run.assistant(1, [runjournal.tool_use_block("c1", "deploy", {})], "tool_use")
        await run.deferral("c1", "risky", "on-call", needs_approval=True)
        assert [(s.run_id, [c.waiting_for for c in s.waiting_calls]) async for s in client.inbox(labels=label)] == [
            (run_id, [DECISION])
        ]
        assert await client.approve(run_id, "c1", records_pb2.DECISION_DENIED, "alice", "not today") == 4
        assert [s async for s in client.inbox(labels=label)] == []
        with pytest.raises(runjournal.AlreadyDecidedError) as caught:
            await client.approve(run_id, "c1", "denied", "alice", "not today")
        assert caught.value.decided_at_seq == 4


def test_runs_are_listed_by_task(client: JournalClient, flavour: Flavour) -> None:
    task_id = new_id("task")
    run_id, _ = waiting_run(flavour, client, task_id=task_id)
    other, _ = waiting_run(flavour, client, task_id=new_id("task"))
    assert [s.run_id for s in client.iter_runs(task_id=task_id)] == [run_id]
    assert [s.run_id for s in client.inbox(task_id=task_id)] == [run_id]
    assert other not in {s.run_id for s in client.iter_runs(task_id=task_id)}


# --- tasks --------------------------------------------------------------------


def test_submit_is_idempotent_a_different_request_conflicts_and_listing_filters(client: JournalClient) -> None:
    tasks = client.tasks
    task_id = new_id("task")
    labels = {"task-test": task_id}

    task, created = tasks.submit(task_id, {"q": "lisbon", "n": 1}, labels)
    assert created and task.state == tpb.TASK_STATE_SUBMITTED
    assert task.request_json == '{"n":1,"q":"lisbon"}'
    again, created_again = tasks.submit(task_id, {"n": 1, "q": "lisbon"}, labels)
    assert not created_again and again == task == tasks.get(task_id)
    same_text, _ = tasks.submit(task_id, request_json='{"n":1,"q":"lisbon"}', labels=labels)
    assert same_text == task

    with pytest.raises(runjournal.TaskConflictError) as conflict:
        tasks.submit(task_id, {"q": "porto"}, labels)
    assert conflict.value.task_id == task_id
    with pytest.raises(runjournal.TaskConflictError):
        tasks.submit(task_id, {"n": 1, "q": "lisbon"}, {**labels, "extra": "x"})
    missing = new_id("task")
    with pytest.raises(runjournal.TaskNotFoundError) as not_found:
        tasks.get(missing)
    assert not_found.value.task_id == missing
    with pytest.raises(runjournal.TaskNotFoundError):
        tasks.complete(missing, 1)

    assert list(tasks.iter(labels=labels, state="submitted")) == [task]
    done = tasks.complete(task_id, failure=("no_flights", "nothing on that day"))
    assert done.state == tpb.TASK_STATE_FAILED and done.outcome.failure.code == "no_flights"
    assert done.request_json == task.request_json and done.HasField("outcome") and done.outcome.HasField("completed_at")
    assert list(tasks.iter(labels=labels, state="submitted")) == []
    assert list(tasks.iter(page_size=1, labels=labels, state="failed")) == [done] == [tasks.get(task_id)]


async def test_eight_concurrent_completions_have_one_winner_and_every_loser_sees_it(
    journal_server: ServerProcess, flavour: Flavour
) -> None:
    task_id = new_id("race")
    clients = [flavour.AsyncTaskClient(journal_server.address) for _ in range(8)]
    try:
        await clients[0].submit(task_id, {"question": "who wins?"})

        async def complete(index: int) -> tpb.Task | runjournal.AlreadyCompletedError:
            tasks = clients[index]
            try:
                if index % 2:
                    return await tasks.complete(task_id, failure=("crashed", f"worker {index}"))
                return await tasks.complete(task_id, {"winner": index})
            except runjournal.AlreadyCompletedError as err:
                return err

        results = await asyncio.gather(*(complete(i) for i in range(8)))
        stored = await clients[0].get(task_id)
    finally:
        await asyncio.gather(*(c.close() for c in clients))

    winners = [r for r in results if isinstance(r, tpb.Task)]
    losers = [r for r in results if isinstance(r, runjournal.AlreadyCompletedError)]
    assert len(winners) == 1 and len(losers) == 7
    assert winners[0] == stored and stored.state in (tpb.TASK_STATE_SUCCEEDED, tpb.TASK_STATE_FAILED)
    for loser in losers:
        assert loser.stored_task == stored
        assert loser.task_id == task_id


# --- the commands for people ----------------------------------------------------


def runjournal_cli(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "runjournal", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env=dict(env) if env is not None else None,
        check=False,
    )


@pytest.mark.parametrize("flavour", ["sync"], indirect=True)  # the commands are under test, not the client
def test_inbox_and_approve_from_the_command_line(
    client: JournalClient, journal_server: ServerProcess, flavour: Flavour
) -> None:
    address = ("--address", journal_server.address)
    run_id, label = waiting_run(flavour, client, calls=4)
    label_arg = ("--label", "inbox-test=" + label["inbox-test"])

    inbox = runjournal_cli("inbox", *label_arg, *address)
    assert inbox.returncode == 0, inbox.stderr
    rows = [line.split() for line in inbox.stdout.splitlines() if line.startswith(run_id)]
    assert [row[:5] for row in rows] == [
        [run_id, "c1", "deploy", "decision", "on-call"],
        [run_id, "c2", "ask", "answer", "ops"],
        [run_id, "c3", "deploy", "decision", "on-call"],
        [run_id, "c4", "deploy", "decision", "on-call"],
    ]
    assert " ".join(rows[0]).endswith("production deploy")
    assert " ".join(rows[1]).endswith("which customers to notify?")

    denied = runjournal_cli(
        "approve", run_id, "c1", "--deny", "--reason", "not on a Friday", "--approver", "carol", *address
    )
    assert denied.returncode == 0, denied.stderr
    assert denied.stdout.strip() == f"denied c1 in run {run_id} at seq 8 (by carol)"
    env = {k: v for k, v in os.environ.items() if k != "USER"}
    by_user = runjournal_cli("approve", run_id, "c3", "--approve", *address, env={**env, "USER": "dora"})
    by_default = runjournal_cli("approve", run_id, "c4", "--approve", *address, env=env)
    assert by_user.returncode == by_default.returncode == 0, by_user.stderr + by_default.stderr
    calls = {call.tool_use.id: call for call in client.fold(run_id).pending.calls}
    assert [(calls[c].decision, calls[c].approval.approver, calls[c].approval.reason) for c in ("c1", "c3", "c4")] == [
        (records_pb2.DECISION_DENIED, "carol", "not on a Friday"),
        (records_pb2.DECISION_APPROVED, "dora", ""),
        (records_pb2.DECISION_APPROVED, "cli", ""),
    ]

    again = runjournal_cli("approve", run_id, "c1", "--approve", *address)
    assert again.returncode == 1
    assert again.stderr.startswith("runjournal: ALREADY_DECIDED: ") and "seq 8" in again.stderr
    assert "Traceback" not in again.stderr
    unknown = runjournal_cli("approve", run_id, "c9", "--deny", *address)
    assert unknown.returncode == 1 and unknown.stderr.startswith("runjournal: CALL_NOT_PENDING: ")
    neither = runjournal_cli("approve", run_id, "c2", *address)
    assert neither.returncode == 2 and "--approve" in neither.stderr

    shown = runjournal_cli("runs", "show", run_id, *address)
    assert shown.returncode == 0, shown.stderr
    assert "denied at seq 8 by carol: not on a Friday" in shown.stdout
    assert "waiting for a person:" in shown.stdout
    assert "c2 ask: waits for an answer from ops: which customers to notify?" in shown.stdout
    assert f"runjournal answer {run_id} c2" in shown.stdout
    assert "c1 deploy: waits for" not in shown.stdout

    remaining = runjournal_cli("inbox", *label_arg, *address)
    assert [line.split()[:4] for line in remaining.stdout.splitlines() if line.startswith(run_id)] == [
        [run_id, "c2", "ask", "answer"]
    ]
    client.answer(run_id, "c2", text="everyone")
    empty = runjournal_cli("inbox", *label_arg, *address)
    assert empty.returncode == 0 and empty.stdout.strip() == "nothing waits for a person"
    shown = runjournal_cli("runs", "show", run_id, *address)
    assert "waiting for a person:" not in shown.stdout


@pytest.mark.parametrize("flavour", ["sync"], indirect=True)
def test_runs_list_by_task_from_the_command_line(
    client: JournalClient, journal_server: ServerProcess, flavour: Flavour
) -> None:
    task_id = new_id("task")
    run_id, _ = waiting_run(flavour, client, task_id=task_id)
    waiting_run(flavour, client, task_id=new_id("task"))  # another task's run, not listed
    listed = runjournal_cli("runs", "list", "--task", task_id, "--address", journal_server.address)
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()[1:]] == [run_id]
    bad = runjournal_cli("inbox", "--label", "no-equals-sign", "--address", journal_server.address)
    assert bad.returncode == 2 and "expected KEY=VALUE" in bad.stderr
