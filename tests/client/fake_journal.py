"""A scripted JournalService and TaskService on loopback, for the client's own logic.

They answer like a well-behaved server unless a test queued failures for a
method; they record every request with its deadline and metadata, so tests can
prove what the client sent (the same bytes on every retry, a deadline on every
call). Journal and task semantics are tested against the real server elsewhere.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import Message
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc, records_pb2, state_pb2, task_service_pb2_grpc
from runjournal.v1 import task_service_pb2 as tpb

Action = Callable[[grpc.ServicerContext], None]


@dataclass
class Received:
    method: str
    request: Any
    time_remaining: float | None
    metadata: dict[str, str]


def rich_status(
    reason: str,
    code: grpc.StatusCode,
    metadata: Mapping[str, str],
    *,
    domain: str = "runjournal.dev",
    details: Sequence[Message] = (),
) -> status_pb2.Status:
    """A status with the ErrorInfo first, then ``details`` (as the server sends them)."""
    packed = []
    for message in (error_details_pb2.ErrorInfo(reason=reason, domain=domain, metadata=dict(metadata)), *details):
        detail = any_pb2.Any()
        detail.Pack(message)
        packed.append(detail)
    return status_pb2.Status(code=getattr(code_pb2, code.name), message=f"{reason} happened", details=packed)


def abort_with_reason(
    reason: str,
    code: grpc.StatusCode,
    metadata: Mapping[str, str] | None = None,
    *,
    domain: str = "runjournal.dev",
    details: Sequence[Message] = (),
) -> Action:
    status = rich_status(reason, code, metadata or {}, domain=domain, details=details)

    def act(context: grpc.ServicerContext) -> None:
        context.abort_with_status(rpc_status.to_status(status))

    return act


@dataclass(frozen=True)
class _RewrittenStatus(grpc.Status):  # type: ignore[misc]
    code: grpc.StatusCode
    details: str
    trailing_metadata: tuple[tuple[str, bytes], ...]


def abort_with_rewritten_message(reason: str, code: grpc.StatusCode, metadata: Mapping[str, str]) -> Action:
    """A rich status whose message was changed on the way (as a proxy might)."""
    status = rich_status(reason, code, metadata)

    def act(context: grpc.ServicerContext) -> None:
        trailer = (("grpc-status-details-bin", status.SerializeToString()),)
        context.abort_with_status(_RewrittenStatus(code, "rewritten by a proxy", trailer))

    return act


def abort_plain(code: grpc.StatusCode) -> Action:
    def act(context: grpc.ServicerContext) -> None:
        context.abort(code, f"plain {code.name}")

    return act


def outlive_deadline(context: grpc.ServicerContext) -> None:
    """Answer only after the client's deadline has passed (the call ends first)."""
    ended = threading.Event()
    context.add_callback(ended.set)
    assert ended.wait(timeout=30), "the client's deadline never ended the call"


@dataclass
class Scripted:
    """Records every request; plays the failures a test queued for a method, in order."""

    received: list[Received] = field(default_factory=list)
    failures: dict[str, list[Action]] = field(default_factory=lambda: defaultdict(list))
    lock: threading.Lock = field(default_factory=threading.Lock)
    outages: dict[str, tuple[float, Action]] = field(default_factory=dict)
    """Per method: until when (time.monotonic) every request fails, and how."""

    def fail_next(self, method: str, *actions: Action) -> None:
        self.failures[method].extend(actions)

    def fail_for(self, method: str, seconds: float, action: Action) -> None:
        """Every request of ``method`` fails with ``action`` until ``seconds`` have passed (an outage)."""
        self.outages[method] = (time.monotonic() + seconds, action)

    def requests(self, method: str) -> list[Any]:
        return [r.request for r in self.received if r.method == method]

    def _enter(self, method: str, request: Any, context: grpc.ServicerContext) -> None:
        with self.lock:
            self.received.append(
                Received(method, request, context.time_remaining(), dict(context.invocation_metadata()))
            )
            queued = self.failures[method]
            action = queued.pop(0) if queued else None
            until, outage = self.outages.get(method, (0.0, None))
            if action is None and time.monotonic() < until:
                action = outage
        if action is not None:
            action(context)


@dataclass
class FakeJournal(Scripted, journal_service_pb2_grpc.JournalServiceServicer):  # type: ignore[misc]
    claim_response: pb.ClaimResponse = field(default_factory=pb.ClaimResponse)
    fold_state: state_pb2.RunState = field(default_factory=state_pb2.RunState)
    pages: dict[str, pb.ListRunsResponse] = field(default_factory=dict)
    read_last_seq: int = 0
    read_breaks: set[int] = field(default_factory=set)
    """Seqs before which a Read stream fails UNAVAILABLE (each once)."""
    stored: dict[int, records_pb2.JournalRecord] = field(default_factory=dict)
    """Records Read streams at their seqs, instead of made-up notes."""

    def Append(self, request: pb.AppendRequest, context: grpc.ServicerContext) -> pb.AppendResponse:
        self._enter("Append", request, context)
        return pb.AppendResponse(seq=request.record.seq, last_seq=request.record.seq)

    def AppendBatch(self, request: pb.AppendBatchRequest, context: grpc.ServicerContext) -> pb.AppendBatchResponse:
        self._enter("AppendBatch", request, context)
        first = request.records[0].seq
        return pb.AppendBatchResponse(first_seq=first, last_seq=first + len(request.records) - 1)

    def Claim(self, request: pb.ClaimRequest, context: grpc.ServicerContext) -> pb.ClaimResponse:
        self._enter("Claim", request, context)
        return self.claim_response

    def Fold(self, request: pb.FoldRequest, context: grpc.ServicerContext) -> pb.FoldResponse:
        self._enter("Fold", request, context)
        return pb.FoldResponse(state=self.fold_state)

    def Answer(self, request: pb.AnswerRequest, context: grpc.ServicerContext) -> pb.AnswerResponse:
        self._enter("Answer", request, context)
        return pb.AnswerResponse(seq=42)

    def Approve(self, request: pb.ApproveRequest, context: grpc.ServicerContext) -> pb.ApproveResponse:
        self._enter("Approve", request, context)
        return pb.ApproveResponse(seq=43)

    def ListRuns(self, request: pb.ListRunsRequest, context: grpc.ServicerContext) -> pb.ListRunsResponse:
        self._enter("ListRuns", request, context)
        return self.pages[request.page_token]

    def Read(self, request: pb.ReadRequest, context: grpc.ServicerContext) -> Iterator[pb.ReadResponse]:
        self._enter("Read", request, context)
        for seq in range(max(request.from_seq, 1), self.read_last_seq + 1):
            if seq in self.read_breaks:
                self.read_breaks.discard(seq)
                context.abort(grpc.StatusCode.UNAVAILABLE, "connection reset")
            record = self.stored.get(seq) or records_pb2.JournalRecord(
                seq=seq, optional=True, note=records_pb2.Note(text=f"n{seq}")
            )
            yield pb.ReadResponse(record=record, stored_line=f"line {seq}".encode())

    def ForkRun(self, request: pb.ForkRunRequest, context: grpc.ServicerContext) -> pb.ForkRunResponse:
        self._enter("ForkRun", request, context)
        origin = records_pb2.ForkOrigin(run_id=request.run_id, seq=request.at_seq, prefix_sha256="ab" * 32)
        return pb.ForkRunResponse(run_id=request.new_run_id, last_seq=request.at_seq, forked_from=origin)

    def DeleteRun(self, request: pb.DeleteRunRequest, context: grpc.ServicerContext) -> pb.DeleteRunResponse:
        self._enter("DeleteRun", request, context)
        return pb.DeleteRunResponse(last_seq=request.expected_last_seq, deleted=True)


@dataclass
class FakeTasks(Scripted, task_service_pb2_grpc.TaskServiceServicer):  # type: ignore[misc]
    """Accepts every submission and completion, echoing the request back as the stored task."""

    stored: dict[str, tpb.Task] = field(default_factory=dict)
    """Tasks GetTask returns, by id."""
    pages: dict[str, tpb.ListTasksResponse] = field(default_factory=dict)

    def SubmitTask(self, request: tpb.SubmitTaskRequest, context: grpc.ServicerContext) -> tpb.SubmitTaskResponse:
        self._enter("SubmitTask", request, context)
        task = tpb.Task(
            task_id=request.task_id,
            request_json=request.request_json,
            labels=request.labels,
            state=tpb.TASK_STATE_SUBMITTED,
        )
        return tpb.SubmitTaskResponse(task=task, created=True)

    def CompleteTask(self, request: tpb.CompleteTaskRequest, context: grpc.ServicerContext) -> tpb.CompleteTaskResponse:
        self._enter("CompleteTask", request, context)
        task = tpb.Task(task_id=request.task_id, outcome=request.outcome)
        task.state = tpb.TASK_STATE_SUCCEEDED if request.outcome.HasField("result_json") else tpb.TASK_STATE_FAILED
        task.outcome.completed_at.FromSeconds(1_800_000_000)
        return tpb.CompleteTaskResponse(task=task)

    def GetTask(self, request: tpb.GetTaskRequest, context: grpc.ServicerContext) -> tpb.GetTaskResponse:
        self._enter("GetTask", request, context)
        return tpb.GetTaskResponse(task=self.stored[request.task_id])

    def ListTasks(self, request: tpb.ListTasksRequest, context: grpc.ServicerContext) -> tpb.ListTasksResponse:
        self._enter("ListTasks", request, context)
        return self.pages[request.page_token]

    def DeleteTask(self, request: tpb.DeleteTaskRequest, context: grpc.ServicerContext) -> tpb.DeleteTaskResponse:
        self._enter("DeleteTask", request, context)
        return tpb.DeleteTaskResponse(deleted=True)


@dataclass
class FakeServer:
    journal: FakeJournal
    tasks: FakeTasks
    address: str
    server: grpc.Server


def start_fake_server() -> FakeServer:
    journal = FakeJournal()
    tasks = FakeTasks()
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=8),
        options=[("grpc.max_send_message_length", 64 * 1024 * 1024)],
    )
    journal_service_pb2_grpc.add_JournalServiceServicer_to_server(journal, server)
    task_service_pb2_grpc.add_TaskServiceServicer_to_server(tasks, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return FakeServer(journal, tasks, f"127.0.0.1:{port}", server)
