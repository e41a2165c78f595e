"""JournalService: convert the request, call ``runs`` or the listing, convert back.

Each handler is a few lines. No ordering rule lives here (those are in
``runs/``), no status code (``api/status.py``) and no token check beyond what
``api/handlers.py`` does first and ``api/auth.py`` says about records only the
server writes, and who an answer or approval names.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from grpc.aio import ServicerContext

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc as pb_grpc
from runjournal_server.api.auth import Access, TokenTable
from runjournal_server.api.handlers import DECIDES, READS, WRITES, Authorizing, streaming, unary
from runjournal_server.api.watch import read_response, watch_run
from runjournal_server.api.watch_runs import watch_runs
from runjournal_server.core.errors import InvalidArgumentError
from runjournal_server.core.schema import timestamp_problem
from runjournal_server.listing.filter import RunFilter
from runjournal_server.listing.pages import RunListing
from runjournal_server.observability.observer import NO_OBSERVER, Observer
from runjournal_server.runs.reading import RecordReader
from runjournal_server.runs.requests import indexing_refusals
from runjournal_server.runs.runs import Runs


class JournalServicer(Authorizing, pb_grpc.JournalServiceServicer):
    """JournalService over ``Runs`` (the journal operations) and ``RunListing`` (the listing rule)."""

    def __init__(
        self, runs: Runs, listing: RunListing, tokens: TokenTable | None = None, observer: Observer = NO_OBSERVER
    ) -> None:
        super().__init__(tokens)
        self._runs = runs
        self._listing = listing
        self._observer = observer

    @unary(WRITES)
    async def Append(self, request: pb.AppendRequest, context: ServicerContext, access: Access) -> pb.AppendResponse:
        access.check_appended([request.record], request.run_id)
        outcome = await self._runs.append(request.run_id, request.claim_token, [request.record])
        return pb.AppendResponse(seq=outcome.first_seq, duplicate=outcome.duplicates == 1, last_seq=outcome.last_seq)

    @unary(WRITES)
    async def AppendBatch(
        self, request: pb.AppendBatchRequest, context: ServicerContext, access: Access
    ) -> pb.AppendBatchResponse:
        access.check_appended(request.records, request.run_id)
        with indexing_refusals(request.records):
            outcome = await self._runs.append(request.run_id, request.claim_token, list(request.records))
        return pb.AppendBatchResponse(
            first_seq=outcome.first_seq, duplicates=outcome.duplicates, last_seq=outcome.last_seq
        )

    @unary(WRITES)
    async def Claim(self, request: pb.ClaimRequest, context: ServicerContext, access: Access) -> pb.ClaimResponse:
        outcome = await self._runs.claim(
            request.run_id,
            worker_id=request.worker_id,
            host=request.host,
            pid=request.pid,
            reason=request.reason,
            fingerprint=request.fingerprint,
            force=request.force,
            conversation_from=request.conversation_from,
            uncompacted=request.uncompacted,
        )
        return pb.ClaimResponse(
            claim_token=outcome.claim_token,
            last_seq=outcome.last_seq,
            state=outcome.state,
            gate=outcome.gate,
            resume_reminder=outcome.resume_reminder,
        )

    @unary(WRITES)
    async def ForkRun(self, request: pb.ForkRunRequest, context: ServicerContext, access: Access) -> pb.ForkRunResponse:
        fork = await self._runs.fork(request.run_id, request.at_seq, request.new_run_id)
        return pb.ForkRunResponse(run_id=request.new_run_id, last_seq=fork.records[-1].seq, forked_from=fork.origin)

    @unary(READS)
    async def Fold(self, request: pb.FoldRequest, context: ServicerContext, access: Access) -> pb.FoldResponse:
        response = pb.FoldResponse()
        # Filled in place: a long run's conversation is copied once, not twice.
        await self._runs.fold(
            request.run_id,
            request.as_of_seq,
            conversation_from=request.conversation_from,
            uncompacted=request.uncompacted,
            into=response.state,
        )
        return response

    @unary(DECIDES)
    async def Answer(self, request: pb.AnswerRequest, context: ServicerContext, access: Access) -> pb.AnswerResponse:
        seq = await self._runs.answer(
            request.run_id,
            request.tool_use_id,
            list(request.content),
            request.is_error,
            answered_by=access.principal or "",
        )
        return pb.AnswerResponse(seq=seq)

    @unary(DECIDES)
    async def Approve(self, request: pb.ApproveRequest, context: ServicerContext, access: Access) -> pb.ApproveResponse:
        approver = access.approver(request.approver, request.run_id)
        seq = await self._runs.approve(request.run_id, request.tool_use_id, request.decision, approver, request.reason)
        return pb.ApproveResponse(seq=seq)

    @unary(DECIDES)
    async def DeleteRun(
        self, request: pb.DeleteRunRequest, context: ServicerContext, access: Access
    ) -> pb.DeleteRunResponse:
        deletion = await self._runs.delete(
            request.run_id, request.expected_last_seq, with_children=request.with_children
        )
        return pb.DeleteRunResponse(
            last_seq=deletion.tombstone.last_seq, deleted=deletion.deleted, erased=deletion.erased
        )

    @unary(WRITES)
    async def SpawnRun(
        self, request: pb.SpawnRunRequest, context: ServicerContext, access: Access
    ) -> pb.SpawnRunResponse:
        spawned = await self._runs.spawn(
            request.run_id, request.tool_use_id, request.new_run_id, request.meta, request.reason
        )
        return pb.SpawnRunResponse(
            run_id=request.new_run_id,
            last_seq=spawned.child_last_seq,
            spawned_by=spawned.origin,
            deferral_seq=spawned.deferral_seq,
            duplicate=spawned.duplicate,
        )

    @unary(READS)
    async def ListRuns(
        self, request: pb.ListRunsRequest, context: ServicerContext, access: Access
    ) -> pb.ListRunsResponse:
        runs, token = await self._listing.page(
            page_size=request.page_size, page_token=request.page_token, where=_run_filter(request, access)
        )
        return pb.ListRunsResponse(runs=runs, next_page_token=token)

    @streaming(READS)
    async def Read(self, request: pb.ReadRequest, context: ServicerContext, access: Access) -> AsyncIterator[bytes]:
        with self._observer.reading():
            async with contextlib.aclosing(self._runs.read(request.run_id, request.from_seq)) as reader:
                while (item := await _next_read_item(reader)) is not None:
                    yield item

    @streaming(READS)
    async def Watch(self, request: pb.WatchRequest, context: ServicerContext, access: Access) -> AsyncIterator[bytes]:
        with self._observer.watching("Watch"):
            async with contextlib.aclosing(watch_run(self._runs, request.run_id, request.after_seq)) as items:
                async for item in items:
                    yield item

    @streaming(READS)
    async def WatchRuns(
        self, request: pb.WatchRunsRequest, context: ServicerContext, access: Access
    ) -> AsyncIterator[bytes]:
        with self._observer.watching("WatchRuns"):
            where = _run_filter(request, access)
            async with contextlib.aclosing(watch_runs(self._runs.events, self._listing, where)) as items:
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
        spawned_by_run_id=request.spawned_by_run_id,
        root_run_id=request.root_run_id,
        stopped_before=_seconds_or_none(request, "stopped_before"),
        run_id_prefixes=access.run_id_prefixes,
    )


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
