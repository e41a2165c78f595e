"""The asyncio runjournal client (``grpc.aio``).

The same calls, requests, deadlines, retry rule and errors as
``runjournal.client.JournalClient``; only the waiting differs. Create it inside
the event loop that will use it.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import grpc
import grpc.aio

from runjournal import _common
from runjournal._common import DEFAULT_TIMEOUT_SECONDS, RunStatusLike
from runjournal._retry import Attempts, RetryPolicy
from runjournal.errors import AlreadyAnsweredError
from runjournal.v1 import journal_service_pb2, journal_service_pb2_grpc, records_pb2, state_pb2

_Response = TypeVar("_Response")


class AsyncJournalClient:
    """An asyncio client of ``runjournal.v1.JournalService``.

    Arguments as for ``JournalClient``. Use with ``async with``, or await
    ``close``.
    """

    def __init__(
        self,
        address: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        retry: RetryPolicy | None = None,
        metadata: Sequence[tuple[str, str]] = (),
        options: Sequence[tuple[str, Any]] = (),
    ) -> None:
        channel_options = _common.channel_options(options)
        if credentials is None:
            self._channel = grpc.aio.insecure_channel(address, options=channel_options)
        else:
            self._channel = grpc.aio.secure_channel(address, credentials, options=channel_options)
        self._stub = journal_service_pb2_grpc.JournalServiceStub(self._channel)
        self.address = address
        self.timeout = timeout
        self.retry = retry if retry is not None else RetryPolicy()
        self._metadata = tuple(metadata)
        self._rng = random.Random()

    # --- lifecycle ------------------------------------------------------------

    async def close(self) -> None:
        """Closes the channel; calls in flight are cancelled."""
        await self._channel.close()

    async def __aenter__(self) -> AsyncJournalClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # --- RPCs -----------------------------------------------------------------

    async def append(
        self, run_id: str, claim_token: int, record: records_pb2.Record, *, timeout: float | None = None
    ) -> journal_service_pb2.AppendResponse:
        """Appends one record at ``record.seq``; ``duplicate`` in the answer marks a verified retry."""
        request = _common.append_request(run_id, claim_token, record)
        return await self._call(self._stub.Append, request, timeout)

    async def append_batch(
        self,
        run_id: str,
        claim_token: int,
        records: Sequence[records_pb2.Record],
        *,
        timeout: float | None = None,
    ) -> journal_service_pb2.AppendBatchResponse:
        """Appends consecutive records, all or nothing."""
        request = _common.append_batch_request(run_id, claim_token, records)
        return await self._call(self._stub.AppendBatch, request, timeout)

    async def claim(
        self,
        run_id: str,
        worker_id: str,
        fingerprint: records_pb2.Fingerprint,
        force: bool = False,
        host: str | None = None,
        pid: int | None = None,
        reason: str = "",
        *,
        timeout: float | None = None,
    ) -> journal_service_pb2.ClaimResponse:
        """Claims the run for ``worker_id``; ``host``/``pid`` default to this process's."""
        request = _common.claim_request(run_id, worker_id, fingerprint, force=force, host=host, pid=pid, reason=reason)
        return await self._call(self._stub.Claim, request, timeout)

    async def fold(self, run_id: str, as_of_seq: int = 0, *, timeout: float | None = None) -> state_pb2.RunState:
        """The folded state of the run (as of ``as_of_seq``; 0 folds every record)."""
        response = await self._call(self._stub.Fold, _common.fold_request(run_id, as_of_seq), timeout)
        return response.state

    async def answer(
        self,
        run_id: str,
        tool_use_id: str,
        content: Sequence[records_pb2.ContentBlock] | None = None,
        *,
        text: str | None = None,
        is_error: bool = False,
        timeout: float | None = None,
    ) -> int:
        """Answers a deferred call with ``content`` blocks or a ``text``; the result's seq.

        Needs no claim token: the server writes one ordinary remote ``tool_result``.
        As ``JournalClient.answer``, a resent request that finds our own
        earlier answer stored returns its seq.
        """
        request = _common.answer_request(run_id, tool_use_id, content, text, is_error)
        attempts = Attempts(self.retry, self._rng)
        try:
            response = await self._call(self._stub.Answer, request, timeout, attempts)
        except AlreadyAnsweredError as err:
            seq = err.answered_at_seq
            if attempts.made == 1 or seq is None:
                raise
            stored = await self._record_at(run_id, seq, timeout)
            if stored is None or not _common.is_same_answer(stored, request):
                raise
            return seq
        return int(response.seq)

    async def list_runs(
        self,
        page_size: int = 0,
        page_token: str = "",
        status: RunStatusLike = 0,
        labels: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> journal_service_pb2.ListRunsResponse:
        """One page of runs, newest first."""
        request = _common.list_runs_request(page_size, page_token, status, labels)
        return await self._call(self._stub.ListRuns, request, timeout)

    async def iter_runs(
        self,
        page_size: int = 0,
        status: RunStatusLike = 0,
        labels: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> AsyncIterator[state_pb2.RunSummary]:
        """Every run matching the filters, across all pages (one call per page)."""
        token = ""
        while True:
            page = await self.list_runs(page_size, token, status, labels, timeout=timeout)
            for summary in page.runs:
                yield summary
            token = page.next_page_token
            if not token:
                return

    async def read(
        self, run_id: str, from_seq: int = 0, *, timeout: float | None = None
    ) -> AsyncGenerator[tuple[records_pb2.Record, bytes], None]:
        """The run's stored records from ``from_seq``, each with its stored line.

        A transport failure mid-stream resumes from the record after the last
        one yielded (within the retry policy), so no record is yielded twice.
        ``timeout`` bounds each attempt's whole stream.
        """
        attempts = Attempts(self.retry, self._rng)
        next_seq = from_seq
        while True:
            call = self._stub.Read(
                _common.read_request(run_id, next_seq),
                timeout=self._deadline(timeout),
                metadata=self._metadata,
            )
            try:
                async for response in call:
                    next_seq = response.record.seq + 1
                    yield response.record, response.stored_line
                return
            except grpc.RpcError as err:
                delay = attempts.delay_after(err)
            finally:
                call.cancel()
            await asyncio.sleep(delay)

    # --- plumbing -------------------------------------------------------------

    def _deadline(self, timeout: float | None) -> float:
        return self.timeout if timeout is None else timeout

    async def _record_at(self, run_id: str, seq: int, timeout: float | None) -> records_pb2.Record | None:
        records = self.read(run_id, seq, timeout=timeout)
        try:
            async for record, _ in records:
                return record if record.seq == seq else None
            return None
        finally:
            await records.aclose()

    async def _call(
        self,
        method: Callable[..., Awaitable[_Response]],
        request: Any,
        timeout: float | None,
        attempts: Attempts | None = None,
    ) -> _Response:
        attempts = attempts if attempts is not None else Attempts(self.retry, self._rng)
        while True:
            try:
                return await method(request, timeout=self._deadline(timeout), metadata=self._metadata)
            except grpc.RpcError as err:
                delay = attempts.delay_after(err)
            await asyncio.sleep(delay)
