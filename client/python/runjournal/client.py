"""The synchronous runjournal client.

A thin layer over the generated stub: every call has a deadline, transport
failures (UNAVAILABLE / DEADLINE_EXCEEDED with no ErrorInfo) are retried with
the same request (see ``_retry``), and every failure is raised as a
``runjournal.errors`` class chosen by the server's ErrorInfo reason.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import grpc

from runjournal import _common
from runjournal._common import DEFAULT_TIMEOUT_SECONDS, RunStatusLike
from runjournal._retry import Attempts, RetryPolicy
from runjournal.errors import AlreadyAnsweredError
from runjournal.v1 import journal_service_pb2, journal_service_pb2_grpc, records_pb2, state_pb2

_Response = TypeVar("_Response")


class JournalClient:
    """A synchronous client of ``runjournal.v1.JournalService``.

    ``address`` is ``host:port``. Without ``credentials`` the channel is
    insecure (plaintext); with them it is a TLS channel. ``timeout`` is the
    deadline of each attempt, in seconds; every method can override it.
    ``metadata`` is sent with every call (e.g. an authorization header).
    Use as a context manager, or call ``close``.
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
            self._channel = grpc.insecure_channel(address, options=channel_options)
        else:
            self._channel = grpc.secure_channel(address, credentials, options=channel_options)
        self._stub = journal_service_pb2_grpc.JournalServiceStub(self._channel)
        self.address = address
        self.timeout = timeout
        self.retry = retry if retry is not None else RetryPolicy()
        self._metadata = tuple(metadata)
        self._rng = random.Random()

    # --- lifecycle ------------------------------------------------------------

    def close(self) -> None:
        """Closes the channel; calls in flight are cancelled."""
        self._channel.close()

    def __enter__(self) -> JournalClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- RPCs -----------------------------------------------------------------

    def append(
        self, run_id: str, claim_token: int, record: records_pb2.Record, *, timeout: float | None = None
    ) -> journal_service_pb2.AppendResponse:
        """Appends one record at ``record.seq``; ``duplicate`` in the answer marks a verified retry."""
        return self._call(self._stub.Append, _common.append_request(run_id, claim_token, record), timeout)

    def append_batch(
        self,
        run_id: str,
        claim_token: int,
        records: Sequence[records_pb2.Record],
        *,
        timeout: float | None = None,
    ) -> journal_service_pb2.AppendBatchResponse:
        """Appends consecutive records, all or nothing."""
        request = _common.append_batch_request(run_id, claim_token, records)
        return self._call(self._stub.AppendBatch, request, timeout)

    def claim(
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
        return self._call(self._stub.Claim, request, timeout)

    def fold(self, run_id: str, as_of_seq: int = 0, *, timeout: float | None = None) -> state_pb2.RunState:
        """The folded state of the run (as of ``as_of_seq``; 0 folds every record)."""
        response = self._call(self._stub.Fold, _common.fold_request(run_id, as_of_seq), timeout)
        return response.state

    def answer(
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
        When a transport failure hid the reply of an attempt that landed, the
        resent request finds the call answered; if the stored result is ours,
        its seq is returned instead of ``AlreadyAnsweredError``.
        """
        request = _common.answer_request(run_id, tool_use_id, content, text, is_error)
        attempts = self._attempts()
        try:
            response = self._call(self._stub.Answer, request, timeout, attempts)
        except AlreadyAnsweredError as err:
            seq = err.answered_at_seq
            if attempts.made == 1 or seq is None:
                raise
            stored = self._record_at(run_id, seq, timeout)
            if stored is None or not _common.is_same_answer(stored, request):
                raise
            return seq
        return int(response.seq)

    def list_runs(
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
        return self._call(self._stub.ListRuns, request, timeout)

    def iter_runs(
        self,
        page_size: int = 0,
        status: RunStatusLike = 0,
        labels: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> Iterator[state_pb2.RunSummary]:
        """Every run matching the filters, across all pages (one call per page)."""
        token = ""
        while True:
            page = self.list_runs(page_size, token, status, labels, timeout=timeout)
            yield from page.runs
            token = page.next_page_token
            if not token:
                return

    def read(
        self, run_id: str, from_seq: int = 0, *, timeout: float | None = None
    ) -> Generator[tuple[records_pb2.Record, bytes], None, None]:
        """The run's stored records from ``from_seq``, each with its stored line.

        A transport failure mid-stream resumes from the record after the last
        one yielded (within the retry policy), so no record is yielded twice.
        ``timeout`` bounds each attempt's whole stream.
        """
        attempts = self._attempts()
        next_seq = from_seq
        while True:
            call = self._stub.Read(
                _common.read_request(run_id, next_seq),
                timeout=self._deadline(timeout),
                metadata=self._metadata,
            )
            try:
                for response in call:
                    next_seq = response.record.seq + 1
                    yield response.record, response.stored_line
                return
            except grpc.RpcError as err:
                delay = attempts.delay_after(err)
            finally:
                call.cancel()
            time.sleep(delay)

    # --- plumbing -------------------------------------------------------------

    def _deadline(self, timeout: float | None) -> float:
        return self.timeout if timeout is None else timeout

    def _attempts(self) -> Attempts:
        return Attempts(self.retry, self._rng)

    def _record_at(self, run_id: str, seq: int, timeout: float | None) -> records_pb2.Record | None:
        records = self.read(run_id, seq, timeout=timeout)
        try:
            for record, _ in records:
                return record if record.seq == seq else None
            return None
        finally:
            records.close()

    def _call(
        self,
        method: Callable[..., _Response],
        request: Any,
        timeout: float | None,
        attempts: Attempts | None = None,
    ) -> _Response:
        attempts = attempts if attempts is not None else self._attempts()
        while True:
            try:
                return method(request, timeout=self._deadline(timeout), metadata=self._metadata)
            except grpc.RpcError as err:
                delay = attempts.delay_after(err)
            time.sleep(delay)
