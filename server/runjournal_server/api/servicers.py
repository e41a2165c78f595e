"""The gRPC servicer: convert the request, call ``runs``, convert back.

No ordering rules and no status codes live here: domain errors become statuses
in ``api/status.py``; anything unexpected is logged and answered INTERNAL without
its details.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import DecodeError
from google.protobuf.message_factory import GetMessageClass

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc as pb_grpc
from runjournal.v1 import records_pb2
from runjournal.v1 import task_service_pb2 as tpb
from runjournal.v1 import task_service_pb2_grpc as tpb_grpc
from runjournal_server.api.auth import ANY_SCOPE, UNRESTRICTED, Access, Scope, TokenTable
from runjournal_server.api.status import to_status
from runjournal_server.api.watch import read_response, watch_run
from runjournal_server.api.watch_runs import watch_runs
from runjournal_server.core.errors import InvalidArgumentError, JournalError, Reason
from runjournal_server.core.schema import timestamp_problem
from runjournal_server.listing.filter import RunFilter
from runjournal_server.listing.pages import RunListing
from runjournal_server.observability.observer import NO_OBSERVER, Observer
from runjournal_server.runs.events import EventsClosedError
from runjournal_server.runs.runs import RecordReader, Runs
from runjournal_server.tasks import Tasks

log = logging.getLogger(__name__)

Response = TypeVar("Response")


def _unary(
    needs: frozenset[Scope],
) -> Callable[
    [Callable[[Any, Any, grpc.aio.ServicerContext, Access], Awaitable[Response]]],
    Callable[[Any, Any, grpc.aio.ServicerContext], Awaitable[Response]],
]:
    """Authorize (the token must hold one of ``needs``), then turn domain errors into rich statuses."""

    def wrap(
        method: Callable[[Any, Any, grpc.aio.ServicerContext, Access], Awaitable[Response]],
    ) -> Callable[[Any, Any, grpc.aio.ServicerContext], Awaitable[Response]]:
        @functools.wraps(method)
        async def handler(self: _Authorizing, request: Any, context: grpc.aio.ServicerContext) -> Response:
            try:
                return await method(self, request, context, self.authorize(request, context, needs))
            except JournalError as err:
                await context.abort_with_status(to_status(err))
            except Exception:
                log.exception("unexpected failure in %s", method.__name__)
                await context.abort(grpc.StatusCode.INTERNAL, "internal error; see the server log")
            raise AssertionError("unreachable")  # abort always raises

        return handler

    return wrap


def _streaming(
    needs: frozenset[Scope],
) -> Callable[
    [Callable[[Any, Any, grpc.aio.ServicerContext, Access], AsyncIterator[bytes]]],
    Callable[[Any, Any, grpc.aio.ServicerContext], AsyncIterator[bytes]],
]:
    """``_unary`` for server-streaming calls: authorize, stream, and end with a rich status on a refusal.

    A stream the server's shutdown ends (``EventsClosedError``) ends UNAVAILABLE
    without a reason, which clients resume elsewhere as after a transport failure.
    """

    def wrap(
        method: Callable[[Any, Any, grpc.aio.ServicerContext, Access], AsyncIterator[bytes]],
    ) -> Callable[[Any, Any, grpc.aio.ServicerContext], AsyncIterator[bytes]]:
        @functools.wraps(method)
        async def handler(self: _Authorizing, request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
            try:
                access = self.authorize(request, context, needs)
                async with contextlib.aclosing(method(self, request, context, access)) as items:  # type: ignore[type-var]
                    async for item in items:
                        yield item
            except JournalError as err:
                await context.abort_with_status(to_status(err))
            except EventsClosedError:
                await context.abort(grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN)
            except Exception:
                log.exception("unexpected failure in %s", method.__name__)
                await context.abort(grpc.StatusCode.INTERNAL, "internal error; see the server log")

        return handler

    return wrap


# The scope each kind of call needs with token auth on (see api/auth.py): reading
# is open to either scope, since an operator must see what it decides.
_READS = ANY_SCOPE
_WRITES = frozenset({Scope.WORKER})
_DECIDES = frozenset({Scope.OPERATOR})


SHUTTING_DOWN = "the server is shutting down: watch again (from the last seq received) through another server"
"""Ends Watch and WatchRuns streams at shutdown: UNAVAILABLE without a reason, which clients resume."""


@dataclass(frozen=True)
class MalformedRequest:
    """A request whose bytes did not parse as its message (bad wire format, invalid UTF-8, nesting too deep)."""

    type_name: str
    problem: str


def _lenient(message_class: Any) -> Callable[[bytes], Any]:
    def parse(data: bytes) -> Any:
        try:
            return message_class.FromString(data)
        except DecodeError as err:
            return MalformedRequest(message_class.DESCRIPTOR.full_name, str(err).rpartition(": ")[2])

    return parse


def add_to_server(servicer: object, service: ServiceDescriptor, server: grpc.aio.Server) -> None:
    """Register ``servicer`` for ``service`` with request parsing that cannot fail.

    The generated ``add_*_to_server`` parses with ``FromString``, and gRPC
    answers a request that does not parse with UNKNOWN and no ErrorInfo. Here
    such a request reaches the handler as a ``MalformedRequest``, refused by
    ``authorize`` with INVALID_ARGUMENT like any other bad field.
    """
    handlers = {}
    for method in service.methods:
        request_class = GetMessageClass(method.input_type)
        factory = (
            grpc.unary_stream_rpc_method_handler if method.server_streaming else grpc.unary_unary_rpc_method_handler
        )
        handlers[method.name] = factory(
            getattr(servicer, method.name),
            request_deserializer=_lenient(request_class),
            response_serializer=_serialize,
        )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service.full_name, handlers),))
    server.add_registered_method_handlers(service.full_name, handlers)


class _Authorizing:
    """Token checks shared by the servicers."""

    def __init__(self, tokens: TokenTable | None) -> None:
        self._tokens = tokens

    def authorize(self, request: Any, context: grpc.aio.ServicerContext, needs: frozenset[Scope]) -> Access:
        """The caller's access; with tokens configured, its prefixes bound every run or task id it names,
        and it must hold one of the scopes the call ``needs``.

        Every handler calls this first, so it also refuses a request whose bytes
        did not parse (see ``add_to_server``), once the caller is authenticated.
        """
        if self._tokens is None:
            access = UNRESTRICTED
        else:
            access = self._tokens.authenticate(context.invocation_metadata() or ())
        if isinstance(request, MalformedRequest):
            raise InvalidArgumentError("request", f"the bytes are not a valid {request.type_name}: {request.problem}")
        if self._tokens is None:
            return access
        if getattr(request, "run_id", ""):
            access.check_run(request.run_id)
        if getattr(request, "new_run_id", ""):
            access.check_run(request.new_run_id)  # ForkRun writes a second run: both are the tenant's
        if getattr(request, "task_id", ""):
            access.check_task(request.task_id)
        access.check_scope(needs, getattr(request, "run_id", None))
        return access


class JournalServicer(_Authorizing, pb_grpc.JournalServiceServicer):
    """JournalService over ``Runs`` (the journal operations) and ``RunListing`` (the listing rule)."""

    def __init__(
        self, runs: Runs, listing: RunListing, tokens: TokenTable | None = None, observer: Observer = NO_OBSERVER
    ) -> None:
        super().__init__(tokens)
        self._runs = runs
        self._listing = listing
        self._observer = observer

    @_unary(_WRITES)
    async def Append(
        self, request: pb.AppendRequest, context: grpc.aio.ServicerContext, access: Access
    ) -> pb.AppendResponse:
        access.check_appended([request.record], request.run_id)
        outcome = await self._runs.append(request.run_id, request.claim_token, [request.record])
        return pb.AppendResponse(seq=outcome.first_seq, duplicate=outcome.duplicates == 1, last_seq=outcome.last_seq)

    @_unary(_WRITES)
    async def AppendBatch(
        self, request: pb.AppendBatchRequest, context: grpc.aio.ServicerContext, access: Access
    ) -> pb.AppendBatchResponse:
        access.check_appended(request.records, request.run_id)
        try:
            outcome = await self._runs.append(request.run_id, request.claim_token, list(request.records))
        except JournalError as err:
            err.annotate(index=refused_index(err, request.records))
            raise
        return pb.AppendBatchResponse(
            first_seq=outcome.first_seq, duplicates=outcome.duplicates, last_seq=outcome.last_seq
        )

    @_unary(_WRITES)
    async def Claim(
        self, request: pb.ClaimRequest, context: grpc.aio.ServicerContext, access: Access
    ) -> pb.ClaimResponse:
        outcome = await self._runs.claim(
            request.run_id,
            worker_id=request.worker_id,
            host=request.host,
            pid=request.pid,
            reason=request.reason,
            fingerprint=request.fingerprint,
            force=request.force,
            conversation_from=request.conversation_from,
        )
        return pb.ClaimResponse(
            claim_token=outcome.claim_token,
            last_seq=outcome.last_seq,
            state=outcome.state,
            gate=outcome.gate,
            resume_reminder=outcome.resume_reminder,
        )

    @_unary(_WRITES)
    async def ForkRun(
        self, request: pb.ForkRunRequest, context: grpc.aio.ServicerContext, access: Access
    ) -> pb.ForkRunResponse:
        fork = await self._runs.fork(request.run_id, request.at_seq, request.new_run_id)
        return pb.ForkRunResponse(run_id=request.new_run_id, last_seq=fork.records[-1].seq, forked_from=fork.origin)

    @_unary(_READS)
    async def Fold(self, request: pb.FoldRequest, context: grpc.aio.ServicerContext, access: Access) -> pb.FoldResponse:
        response = pb.FoldResponse()
        # Filled in place: a long run's conversation is copied once, not twice.
        await self._runs.fold(
            request.run_id, request.as_of_seq, conversation_from=request.conversation_from, into=response.state
        )
        return response

    @_unary(_DECIDES)
    async def Answer(
        self, request: pb.AnswerRequest, context: grpc.aio.ServicerContext, access: Access
    ) -> pb.AnswerResponse:
        seq = await self._runs.answer(
            request.run_id,
            request.tool_use_id,
            list(request.content),
            request.is_error,
            answered_by=access.principal or "",
        )
        return pb.AnswerResponse(seq=seq)

    @_unary(_DECIDES)
    async def Approve(
        self, request: pb.ApproveRequest, context: grpc.aio.ServicerContext, access: Access
    ) -> pb.ApproveResponse:
        approver = access.approver(request.approver, request.run_id)
        seq = await self._runs.approve(request.run_id, request.tool_use_id, request.decision, approver, request.reason)
        return pb.ApproveResponse(seq=seq)

    @_unary(_DECIDES)
    async def DeleteRun(
        self, request: pb.DeleteRunRequest, context: grpc.aio.ServicerContext, access: Access
    ) -> pb.DeleteRunResponse:
        deletion = await self._runs.delete(request.run_id, request.expected_last_seq)
        return pb.DeleteRunResponse(
            last_seq=deletion.tombstone.last_seq, deleted=deletion.deleted, erased=deletion.erased
        )

    @_unary(_READS)
    async def ListRuns(
        self, request: pb.ListRunsRequest, context: grpc.aio.ServicerContext, access: Access
    ) -> pb.ListRunsResponse:
        runs, token = await self._listing.page(
            page_size=request.page_size, page_token=request.page_token, where=_run_filter(request, access)
        )
        return pb.ListRunsResponse(runs=runs, next_page_token=token)

    @_streaming(_READS)
    async def Read(
        self, request: pb.ReadRequest, context: grpc.aio.ServicerContext, access: Access
    ) -> AsyncIterator[bytes]:
        with self._observer.reading():
            async with contextlib.aclosing(self._runs.read(request.run_id, request.from_seq)) as reader:
                while (item := await _next_read_item(reader)) is not None:
                    yield item

    @_streaming(_READS)
    async def Watch(
        self, request: pb.WatchRequest, context: grpc.aio.ServicerContext, access: Access
    ) -> AsyncIterator[bytes]:
        with self._observer.watching("Watch"):
            async with contextlib.aclosing(watch_run(self._runs, request.run_id, request.after_seq)) as items:
                async for item in items:
                    yield item

    @_streaming(_READS)
    async def WatchRuns(
        self, request: pb.WatchRunsRequest, context: grpc.aio.ServicerContext, access: Access
    ) -> AsyncIterator[bytes]:
        with self._observer.watching("WatchRuns"):
            async with contextlib.aclosing(
                watch_runs(self._runs.events, self._listing, _run_filter(request, access))
            ) as items:
                async for item in items:
                    yield item


def _run_filter(request: pb.ListRunsRequest | pb.WatchRunsRequest, access: Access) -> RunFilter:
    """The filters of ListRuns and WatchRuns (the same fields), within the token's prefixes."""
    return RunFilter(
        status=request.status,
        labels=dict(request.labels),
        waiting_for_person=request.waiting_for_person,
        task_id=request.task_id,
        parent_run_id=request.parent_run_id,
        stopped_before=_seconds_or_none(request, "stopped_before"),
        run_id_prefixes=access.run_id_prefixes,
    )


_ABOUT_ONE_RECORD = frozenset({Reason.INVALID_RECORD, Reason.RECORD_TOO_LARGE, Reason.SEQ_GAP, Reason.SEQ_CONFLICT})
_BATCH_FIELD = re.compile(r"records\[(\d+)\]")


def refused_index(err: JournalError, batch: Sequence[records_pb2.JournalRecord]) -> int | None:
    """The 0-based position in an AppendBatch request of the record ``err`` refuses; None when it refuses no one record.

    Found from what the error already names, so no rule has to know it runs in
    a batch: the refused record's seq (the batch's seqs are consecutive, or
    it is refused before that matters), seq 1 for RUN_EXISTS (a different
    meta), the ``records[i]`` of a refused request field, or, for a refused
    record field without a seq (``meta.run_id``), the batch's one record of
    that kind. A stale claim token, a damaged journal or a full store concern
    the run, not a record.
    """
    seq: object = None
    if err.reason in _ABOUT_ONE_RECORD:
        seq = err.typed_metadata.get("seq")
        if seq is None:
            return _only_record_of_kind(str(err.typed_metadata.get("field", "")), batch)
    elif err.reason is Reason.RUN_EXISTS:
        seq = 1
    elif err.reason is Reason.INVALID_ARGUMENT:
        found = _BATCH_FIELD.match(str(err.typed_metadata.get("field", "")))
        return int(found.group(1)) if found and int(found.group(1)) < len(batch) else None
    if not isinstance(seq, int) or not batch:
        return None
    index = seq - batch[0].seq
    return index if 0 <= index < len(batch) and batch[index].seq == seq else None


def _only_record_of_kind(field: str, batch: Sequence[records_pb2.JournalRecord]) -> int | None:
    """For a refusal naming a field (``meta.run_id``) but no seq: the one record of that kind, if only one."""
    kind = field.split(".", 1)[0]
    found = [index for index, record in enumerate(batch) if record.WhichOneof("payload") == kind]
    return found[0] if len(found) == 1 else None


def _seconds_or_none(request: Any, field: str) -> float | None:
    """A request's optional Timestamp as seconds since the epoch (None when unset, or the message has no such
    field); out of range is INVALID_ARGUMENT naming it."""
    if field not in request.DESCRIPTOR.fields_by_name or not request.HasField(field):
        return None
    timestamp = getattr(request, field)
    problem = timestamp_problem(timestamp)
    if problem is not None:
        raise InvalidArgumentError(field, problem)
    return float(timestamp.ToNanoseconds() / 1e9)


def _serialize(response: Any) -> bytes:
    """Serialize a response message; bytes (a response serialized by its handler already) pass as they are."""
    return response if isinstance(response, bytes) else response.SerializeToString()


async def _next_read_item(reader: RecordReader) -> bytes | None:
    """The next Read item, serialized; None at the end.

    Serialized here, and the record dropped before the caller yields: while a
    stalled client holds the stream up, the server keeps only these bytes,
    not the stored line, its decoded record and the response message besides.
    """
    try:
        stored = await anext(reader)
    except StopAsyncIteration:
        return None
    return read_response(stored).SerializeToString()


class TaskServicer(_Authorizing, tpb_grpc.TaskServiceServicer):
    """TaskService over ``Tasks``."""

    def __init__(self, tasks: Tasks, tokens: TokenTable | None = None) -> None:
        super().__init__(tokens)
        self._tasks = tasks

    @_unary(_WRITES)
    async def SubmitTask(
        self, request: tpb.SubmitTaskRequest, context: grpc.aio.ServicerContext, access: Access
    ) -> tpb.SubmitTaskResponse:
        task, created = await self._tasks.submit(request.task_id, request.request_json, dict(request.labels))
        return tpb.SubmitTaskResponse(task=task, created=created)

    @_unary(_WRITES)
    async def CompleteTask(
        self, request: tpb.CompleteTaskRequest, context: grpc.aio.ServicerContext, access: Access
    ) -> tpb.CompleteTaskResponse:
        return tpb.CompleteTaskResponse(task=await self._tasks.complete(request.task_id, request.outcome))

    @_unary(_READS)
    async def GetTask(
        self, request: tpb.GetTaskRequest, context: grpc.aio.ServicerContext, access: Access
    ) -> tpb.GetTaskResponse:
        return tpb.GetTaskResponse(task=await self._tasks.get(request.task_id))

    @_unary(_READS)
    async def ListTasks(
        self, request: tpb.ListTasksRequest, context: grpc.aio.ServicerContext, access: Access
    ) -> tpb.ListTasksResponse:
        tasks, token = await self._tasks.list(
            page_size=request.page_size,
            page_token=request.page_token,
            state=request.state,
            labels=dict(request.labels),
            task_id_prefixes=access.run_id_prefixes,
        )
        return tpb.ListTasksResponse(tasks=tasks, next_page_token=token)

    @_unary(_DECIDES)
    async def DeleteTask(
        self, request: tpb.DeleteTaskRequest, context: grpc.aio.ServicerContext, access: Access
    ) -> tpb.DeleteTaskResponse:
        return tpb.DeleteTaskResponse(deleted=await self._tasks.delete(request.task_id))
