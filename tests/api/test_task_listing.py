"""ListTasks on the task index (issue 28, item 3): filters and pages as every document says, after a restart
and after a crash, on both backends.

Before, each listing read every task's documents (10,000 tasks: 7.7 s for the first page). Now the index
(``task_index.py``) orders and filters in memory, brought up to date with the store's names before each
listing; these tests hold it to what the documents say, whatever happened to the kept copy.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc

from runjournal.v1 import task_service_pb2 as tpb
from runjournal.v1 import task_service_pb2_grpc
from tests.api.test_listing_index import Servers
from tests.api.test_listing_index import servers as servers  # the fixture, on both backends
from tests.servers import ServerProcess

TASKS = 23
KINDS = ("succeeded", "failed", "submitted")


def _stub(server: ServerProcess) -> Iterator[task_service_pb2_grpc.TaskServiceStub]:
    with grpc.insecure_channel(server.address) as channel:
        yield task_service_pb2_grpc.TaskServiceStub(channel)


def _populate(stub: task_service_pb2_grpc.TaskServiceStub, first: int, count: int) -> None:
    """Tasks ``t-<n>``: every third one succeeds, every third fails, the rest stay submitted; labels by parity."""
    for n in range(first, first + count):
        task_id = f"t-{n:03d}"
        stub.SubmitTask(
            tpb.SubmitTaskRequest(
                task_id=task_id, request_json=f'{{"n":{n}}}', labels={"parity": "odd" if n % 2 else "even"}
            )
        )
        kind = KINDS[n % 3]
        if kind == "succeeded":
            stub.CompleteTask(tpb.CompleteTaskRequest(task_id=task_id, outcome=tpb.TaskOutcome(result_json='"ok"')))
        elif kind == "failed":
            failure = tpb.TaskFailure(code="BROKEN", message="no")
            stub.CompleteTask(tpb.CompleteTaskRequest(task_id=task_id, outcome=tpb.TaskOutcome(failure=failure)))


def _every_page(stub: task_service_pb2_grpc.TaskServiceStub, request: tpb.ListTasksRequest) -> list[tpb.Task]:
    seen: list[tpb.Task] = []
    while True:
        answer = stub.ListTasks(request)
        seen += answer.tasks
        if not answer.next_page_token:
            return seen
        assert len(answer.tasks) == request.page_size
        request = tpb.ListTasksRequest(
            page_size=request.page_size, page_token=answer.next_page_token, state=request.state, labels=request.labels
        )


def _truth(stub: task_service_pb2_grpc.TaskServiceStub, task_ids: list[str]) -> list[tpb.Task]:
    """Every live task read one by one (GetTask), newest first: what any listing must agree with."""
    tasks = []
    for task_id in task_ids:
        try:
            tasks.append(stub.GetTask(tpb.GetTaskRequest(task_id=task_id)).task)
        except grpc.RpcError as err:
            assert err.code() == grpc.StatusCode.NOT_FOUND
    return sorted(tasks, key=lambda t: (t.submitted_at.seconds, t.submitted_at.nanos, t.task_id), reverse=True)


def _check_listings(stub: task_service_pb2_grpc.TaskServiceStub, task_ids: list[str]) -> None:
    truth = _truth(stub, task_ids)
    cases = [
        (tpb.ListTasksRequest(page_size=4), lambda t: True),
        (tpb.ListTasksRequest(page_size=3, state=tpb.TASK_STATE_FAILED), lambda t: t.state == tpb.TASK_STATE_FAILED),
        (
            tpb.ListTasksRequest(page_size=5, state=tpb.TASK_STATE_SUBMITTED),
            lambda t: t.state == tpb.TASK_STATE_SUBMITTED,
        ),
        (tpb.ListTasksRequest(page_size=2, labels={"parity": "odd"}), lambda t: t.labels["parity"] == "odd"),
        (
            tpb.ListTasksRequest(page_size=100, state=tpb.TASK_STATE_SUCCEEDED, labels={"parity": "even"}),
            lambda t: t.state == tpb.TASK_STATE_SUCCEEDED and t.labels["parity"] == "even",
        ),
    ]
    for request, admits in cases:
        listed = _every_page(stub, request)
        assert listed == [t for t in truth if admits(t)], request
    nothing = stub.ListTasks(tpb.ListTasksRequest(labels={"parity": "neither"}))
    assert list(nothing.tasks) == [] and nothing.next_page_token == ""


def test_task_listings_filter_and_page_as_the_documents_say_through_restarts_and_a_crash(servers: Servers) -> None:
    task_ids = [f"t-{n:03d}" for n in range(3 * TASKS)]
    server = servers.start()
    for stub in _stub(server):
        _populate(stub, 0, TASKS)
        stub.DeleteTask(tpb.DeleteTaskRequest(task_id="t-004"))
        _check_listings(stub, task_ids)
    servers.stop()  # a clean stop keeps the index

    server = servers.start()
    for stub in _stub(server):
        _check_listings(stub, task_ids)  # from the kept index (labels read again when a filter needs them)
        _populate(stub, TASKS, TASKS)  # written after the kept index: submitted, completed...
        stub.DeleteTask(tpb.DeleteTaskRequest(task_id="t-007"))  # ...and deleted, then a crash
    servers.kill()

    server = servers.start()
    for stub in _stub(server):
        _check_listings(stub, task_ids)  # the kept index is stale: the names put it right
        _populate(stub, 2 * TASKS, TASKS)
        _check_listings(stub, task_ids)
        listed = _every_page(stub, tpb.ListTasksRequest(page_size=1000))
        assert len(listed) == 3 * TASKS - 2


def test_tasks_written_by_another_process_are_listed(servers: Servers, tmp_path: Path) -> None:
    """Another replica (or a migration) writes the store: the names tell the index, without a restart."""
    server = servers.start()
    other = ServerProcess(servers.data_dir, extra_args=servers.extra).start()
    try:
        for stub in _stub(server):
            _populate(stub, 0, 6)
            assert len(stub.ListTasks(tpb.ListTasksRequest()).tasks) == 6
            for other_stub in _stub(other):
                _populate(other_stub, 6, 6)
                other_stub.DeleteTask(tpb.DeleteTaskRequest(task_id="t-001"))
                other_stub.CompleteTask(
                    tpb.CompleteTaskRequest(task_id="t-002", outcome=tpb.TaskOutcome(result_json="1"))
                )
            _check_listings(stub, [f"t-{n:03d}" for n in range(12)])
    finally:
        assert other.stop() == 0, other.log()


def test_a_damaged_kept_index_is_read_again_from_the_documents(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    server = ServerProcess(data_dir).start()
    for stub in _stub(server):
        _populate(stub, 0, 9)
        stub.ListTasks(tpb.ListTasksRequest())
    assert server.stop() == 0, server.log()
    kept = data_dir / "tasks" / ".index"
    data = bytearray(kept.read_bytes())
    data[-5] ^= 0x01  # a flipped bit in the rows: their CRC no longer matches
    kept.write_bytes(bytes(data))
    server = ServerProcess(data_dir).start()
    try:
        for stub in _stub(server):
            _check_listings(stub, [f"t-{n:03d}" for n in range(9)])
    finally:
        assert server.stop() == 0, server.log()
    assert "task index: the kept index is damaged" in server.log()
