# GENERATED from client/python/runjournal/aio.py by scripts/generate.py: do not edit by hand.
# Edit aio.py and run `python scripts/generate.py`; CI fails when this file differs.
"""The synchronous runjournal clients.

A thin layer over the generated stubs: every call has a deadline, transport
failures (UNAVAILABLE / DEADLINE_EXCEEDED with no ErrorInfo) are retried with
the same request (see ``_retry``), and every failure is raised as a
``runjournal.errors`` class chosen by the server's ErrorInfo reason.
``JournalClient`` speaks ``JournalService`` and ``TaskClient`` ``TaskService``;
the two can share one channel (``JournalClient.tasks``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from typing import Any

import grpc

from runjournal import _common
from runjournal._builders import DecisionLike, content_of, meta_record
from runjournal._client_sync import _SyncClient
from runjournal._common import OutOfBandRequest, RunStatusLike, TimeLike
from runjournal._tasks_sync import TaskClient
from runjournal._watching import CaughtUp, RunsItem, RunsResume, WatchedRecord, WatchItem, watch_item
from runjournal.errors import RunJournalError
from runjournal.v1 import journal_service_pb2, journal_service_pb2_grpc, records_pb2, state_pb2

__all__ = ["JournalClient", "TaskClient"]


class JournalClient(_SyncClient):
    """A synchronous client of ``runjournal.v1.JournalService``.

    ``address`` is ``host:port``. Without ``credentials`` the channel is
    insecure (plaintext); with them it is a TLS channel. ``timeout`` is the
    deadline of each attempt, in seconds; every method can override it.
    ``metadata`` is sent with every call (e.g. an authorization header).
    Use as a context manager (``with``), or call ``client.close()``.
    """

    def _bind(self, channel: grpc.Channel) -> None:
        self._stub = journal_service_pb2_grpc.JournalServiceStub(channel)

    @property
    def tasks(self) -> TaskClient:
        """A ``TaskClient`` on this client's channel, with its current timeout, retry policy and metadata.

        The channel stays this client's: closing this client closes it for
        both, closing the task client does nothing.
        """
        return self._sharing(TaskClient)

    # --- RPCs -----------------------------------------------------------------

    def append(
        self, run_id: str, claim_token: int, record: records_pb2.JournalRecord, *, timeout: float | None = None
    ) -> journal_service_pb2.AppendResponse:
        """Appends one record at ``record.seq``; ``duplicate`` in the answer marks a verified retry."""
        request = _common.append_request(run_id, claim_token, record)
        return self._call(self._stub.Append, request, timeout)

    def append_batch(
        self,
        run_id: str,
        claim_token: int,
        records: Sequence[records_pb2.JournalRecord],
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
        uncompacted: bool = False,
        timeout: float | None = None,
    ) -> journal_service_pb2.ClaimResponse:
        """Claims the run for ``worker_id``; ``host``/``pid`` default to this process's.

        ``uncompacted`` returns the whole conversation, as if no compaction had happened.
        """
        request = _common.claim_request(
            run_id, worker_id, fingerprint, force=force, host=host, pid=pid, reason=reason, uncompacted=uncompacted
        )
        return self._call(self._stub.Claim, request, timeout)

    def fold(
        self,
        run_id: str,
        as_of_seq: int = 0,
        *,
        conversation_from: int = 0,
        uncompacted: bool = False,
        timeout: float | None = None,
    ) -> state_pb2.RunState:
        """The folded state of the run (as of ``as_of_seq``; 0 folds every record).

        ``conversation_from`` returns only the conversation from that message
        index on (see ``RunState.conversation_offset``); every message but the
        last is final once seen, so a caller that keeps the conversation asks
        from its last index (and from 0 again when ``compaction_seq`` changed).
        ``uncompacted`` returns the whole conversation, as if no compaction had
        happened; by default a compaction's summary replaces what it covers.
        """
        request = _common.fold_request(run_id, as_of_seq, conversation_from, uncompacted)
        response = self._call(self._stub.Fold, request, timeout)
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
        return self._write_out_of_band(self._stub.Answer, request, timeout)

    def approve(
        self,
        run_id: str,
        tool_use_id: str,
        decision: DecisionLike,
        approver: str,
        reason: str = "",
        *,
        timeout: float | None = None,
    ) -> int:
        """Records an operator's decision ("approved" or "denied") on a pending call; the approval's seq.

        Needs no claim token: the server writes one ``approval`` record; the
        worker then runs an approved call and answers a denied one with an
        error. A call decided already is ``AlreadyDecidedError`` (with
        ``decided_at_seq``), one answered already ``AlreadyAnsweredError``, one
        outside the pending batch ``CallNotPendingError``. As with ``answer``,
        a resent request that finds our own earlier decision returns its seq.

        With token auth on, the call needs a token with the ``operator`` scope
        and the server records the token's name as the approver: pass
        ``approver=""`` (or the token's own name; any other name is
        ``PermissionDeniedError``). ``answer`` likewise needs the operator scope
        and records the token's name as the result's ``answered_by``.
        """
        request = _common.approve_request(run_id, tool_use_id, decision, approver, reason)
        return self._write_out_of_band(self._stub.Approve, request, timeout)

    def list_runs(
        self,
        page_size: int = 0,
        page_token: str = "",
        status: RunStatusLike = 0,
        labels: Mapping[str, str] | None = None,
        *,
        waiting_for_person: bool = False,
        task_id: str = "",
        parent_run_id: str = "",
        stopped_before: TimeLike | None = None,
        spawned_by_run_id: str = "",
        root_run_id: str = "",
        timeout: float | None = None,
    ) -> journal_service_pb2.ListRunsResponse:
        """One page of runs, newest first.

        ``waiting_for_person`` keeps only runs with a call waiting for a person
        (listed in each summary's ``waiting_calls``); ``task_id`` only runs whose
        meta names that task; ``parent_run_id`` only runs forked from that run;
        ``stopped_before`` (an aware ``datetime`` or a ``Timestamp``) only
        stopped runs whose last record was stored before then, what retention
        and ``runjournal gc`` delete; ``spawned_by_run_id`` only the child runs
        that run spawned; ``root_run_id`` that run and every run spawned under it.
        """
        request = _common.list_runs_request(
            page_size,
            page_token,
            status,
            labels,
            waiting_for_person,
            task_id,
            parent_run_id,
            stopped_before,
            spawned_by_run_id,
            root_run_id,
        )
        return self._call(self._stub.ListRuns, request, timeout)

    def iter_runs(
        self,
        page_size: int = 0,
        status: RunStatusLike = 0,
        labels: Mapping[str, str] | None = None,
        *,
        waiting_for_person: bool = False,
        task_id: str = "",
        parent_run_id: str = "",
        stopped_before: TimeLike | None = None,
        spawned_by_run_id: str = "",
        root_run_id: str = "",
        timeout: float | None = None,
    ) -> Iterator[state_pb2.RunSummary]:
        """Every run matching the filters (as ``list_runs``), across all pages (one call per page)."""
        token = ""
        while True:
            page = self.list_runs(
                page_size,
                token,
                status,
                labels,
                waiting_for_person=waiting_for_person,
                task_id=task_id,
                parent_run_id=parent_run_id,
                stopped_before=stopped_before,
                spawned_by_run_id=spawned_by_run_id,
                root_run_id=root_run_id,
                timeout=timeout,
            )
            yield from page.runs
            token = page.next_page_token
            if not token:
                return

    def inbox(
        self,
        labels: Mapping[str, str] | None = None,
        *,
        task_id: str = "",
        page_size: int = 0,
        timeout: float | None = None,
    ) -> Iterator[state_pb2.RunSummary]:
        """The human inbox: every run with a call waiting for a person, newest first.

        Each summary's ``waiting_calls`` names the calls, what each waits for
        (an answer: ``answer``; a decision: ``approve``) and who is expected.
        """
        return self.iter_runs(page_size, labels=labels, waiting_for_person=True, task_id=task_id, timeout=timeout)

    def read(
        self, run_id: str, from_seq: int = 0, *, timeout: float | None = None
    ) -> Generator[tuple[records_pb2.JournalRecord, bytes], None, None]:
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
                    seq, record, line = _common.read_item(response)
                    next_seq = seq + 1
                    yield record, line
                return
            except grpc.RpcError as err:
                delay = attempts.delay_after(err)
            finally:
                call.cancel()
            time.sleep(delay)

    def watch(self, run_id: str, after_seq: int = 0) -> Generator[WatchItem, None, None]:
        """Follows the run: its stored records after ``after_seq``, one ``CaughtUp``, then each new record.

        Yields ``WatchedRecord`` items in seq order, with no gap and no
        duplicate, and ``CaughtUp`` once, when the records stored at the start
        have all been yielded. It never ends by itself: stop iterating (or
        ``aclose()`` it) to cancel the stream. The stream has no deadline.

        A transport failure (UNAVAILABLE or DEADLINE_EXCEEDED without a reason,
        a stream the server ended) watches again from the last seq yielded,
        within the retry policy, whose attempts start over once an item
        arrives: so a watch survives any number of disconnects that are not
        back to back. A refusal is raised and never resumed: ``RunDeletedError``
        also when the run is deleted while watched.
        """
        attempts = self._attempts()
        last_seq = after_seq
        caught_up = False
        while True:
            call = self._stub.Watch(_common.watch_request(run_id, last_seq), metadata=self._metadata)
            try:
                for response in call:
                    attempts = self._attempts()
                    item = watch_item(response)
                    if isinstance(item, WatchedRecord):
                        last_seq = item.seq
                        yield item
                    elif isinstance(item, CaughtUp) and not caught_up:
                        # A resumed stream catches up again; the caller was told once.
                        caught_up = True
                        yield item
                delay = attempts.delay_after_end()
            except grpc.RpcError as err:
                delay = attempts.delay_after(err)
            finally:
                call.cancel()
            time.sleep(delay)

    def watch_runs(
        self,
        status: RunStatusLike = 0,
        labels: Mapping[str, str] | None = None,
        *,
        waiting_for_person: bool = False,
        task_id: str = "",
        parent_run_id: str = "",
    ) -> Generator[RunsItem, None, None]:
        """Follows the listing: every matching run's ``RunSummary``, one ``CaughtUp``, then each change.

        The filters are ``list_runs``'s. A run that changes is yielded again as
        it is now (a slow reader may miss intermediate states, never get a
        stale one); a run that stops matching, or is deleted, is yielded once
        as a ``RunLeft`` message. It never ends by itself, and has no deadline.

        A transport failure watches again, within the retry policy (its
        attempts start over once an item arrives): the resumed stream's
        summaries that equal what was yielded are not repeated, and a run
        yielded before that is not sent again is yielded as ``RunLeft`` with
        ``deleted`` False. ``CaughtUp`` is yielded once.
        """
        request = _common.watch_runs_request(status, labels, waiting_for_person, task_id, parent_run_id)
        attempts = self._attempts()
        shown = RunsResume()
        while True:
            call = self._stub.WatchRuns(request, metadata=self._metadata)
            try:
                for response in call:
                    attempts = self._attempts()
                    yield from shown.items(response)
                delay = attempts.delay_after_end()
            except grpc.RpcError as err:
                delay = attempts.delay_after(err)
            finally:
                call.cancel()
            shown.resuming()
            time.sleep(delay)

    def fork_run(
        self, run_id: str, at_seq: int, new_run_id: str, *, timeout: float | None = None
    ) -> journal_service_pb2.ForkRunResponse:
        """Branches ``run_id`` at ``at_seq`` (0: its last record) into the new run ``new_run_id``.

        The fork's records 2..at_seq are the source's; its meta's
        ``forked_from`` names the source, the seq and the hash of the copied
        prefix; the source is unchanged. When a transport failure hid the reply
        of an attempt that created the fork, the resent request is refused
        RUN_EXISTS; if the new run's meta says it is our fork, that answer is
        returned instead of ``RunExistsError``.
        """
        request = _common.fork_run_request(run_id, at_seq, new_run_id)
        attempts = self._attempts()
        try:
            return self._call(self._stub.ForkRun, request, timeout, attempts)
        except RunJournalError as err:
            if attempts.made == 1 or not _common.fork_landed(err, request):
                raise
            own = _common.own_fork(self._record_at(new_run_id, 1, timeout), request)
            if own is None:
                raise
            return own

    def delete_run(
        self, run_id: str, expected_last_seq: int, *, with_children: bool = False, timeout: float | None = None
    ) -> journal_service_pb2.DeleteRunResponse:
        """Deletes the run if its last seq is still ``expected_last_seq``; ``LastSeqMismatchError`` if not.

        The run id is never used again (``RunDeletedError`` for every later
        call). Deleting a deleted run answers ``deleted`` False with its last
        seq, so a transport retry is safe; after one, ``deleted`` may be False
        even though this call's lost first attempt deleted it. ``erased`` says
        whether the run's bytes are gone already (JetStream erases them in the
        background after the answer; deleting again waits for that). With
        token auth on it needs the ``operator`` scope. A run with child runs
        (``spawn_run``) is refused (``InvalidArgumentError`` naming
        ``with_children``) unless ``with_children``: then the whole tree is
        deleted, children first.
        """
        request = _common.delete_run_request(run_id, expected_last_seq, with_children)
        return self._call(self._stub.DeleteRun, request, timeout)

    def spawn_run(
        self,
        run_id: str,
        tool_use_id: str,
        new_run_id: str,
        fingerprint: records_pb2.Fingerprint,
        prompt_text: str | None = None,
        *,
        prompt_blocks: Sequence[records_pb2.ContentBlock] | None = None,
        labels: Mapping[str, str] | None = None,
        interactive: bool = False,
        reason: str = "",
        timeout: float | None = None,
    ) -> journal_service_pb2.SpawnRunResponse:
        """Delegates call ``tool_use_id`` of run ``run_id``'s pending batch to a new child run ``new_run_id``.

        The parent's call then waits for the child (``WAITING_FOR_CHILD``);
        the child's meta names the parent (``spawned_by``), and its claim
        token is 1: append to it, or let a worker claim it. When the child
        stops (any terminal but ``suspended``) the server answers the call
        with the child's final answer, or an error naming how it stopped,
        exactly once (``wait_for_child``). Spawning again with the same child
        id is a verified duplicate (``duplicate`` true), so a retry is safe;
        another child id for the same call is ``InvalidArgumentError``.
        """
        prompt = content_of(prompt_blocks, prompt_text, what="prompt")
        meta = meta_record(new_run_id, fingerprint, prompt, labels=labels, interactive=interactive)
        request = _common.spawn_run_request(run_id, tool_use_id, new_run_id, meta, reason)
        return self._call(self._stub.SpawnRun, request, timeout)

    def wait_for_child(self, run_id: str, tool_use_id: str) -> records_pb2.ToolResult:
        """Waits, on a watch of the parent, for the result of call ``tool_use_id`` and returns it.

        That is the child's outcome (``answered_by_run_id`` names the child),
        or the answer a person gave first. It returns at once when the result
        is stored already. No deadline: cancel it to stop waiting.
        """
        watch = self.watch(run_id)
        try:
            for item in watch:
                if isinstance(item, WatchedRecord):
                    result = _common.child_result(item.record, tool_use_id)
                    if result is not None:
                        return result
        finally:
            watch.close()
        raise AssertionError("a watch never ends by itself")  # pragma: no cover

    # --- plumbing -------------------------------------------------------------

    def _write_out_of_band(self, method: Callable[..., Any], request: OutOfBandRequest, timeout: float | None) -> int:
        """Sends an Answer or Approve; returns the seq of the record written.

        When a transport failure hid the reply of an attempt that landed, the
        resent request is refused (already answered / decided); if the record
        stored at the refusal's seq is ours, its seq is returned instead.
        """
        attempts = self._attempts()
        try:
            response = self._call(method, request, timeout, attempts)
        except RunJournalError as err:
            seq = _common.landed_seq(err, request)
            if attempts.made == 1 or seq is None:
                raise
            stored = self._record_at(request.run_id, seq, timeout)
            if stored is None or not _common.is_own_write(stored, request):
                raise
            return seq
        return int(response.seq)

    def _record_at(self, run_id: str, seq: int, timeout: float | None) -> records_pb2.JournalRecord | None:
        records = self.read(run_id, seq, timeout=timeout)
        try:
            for record, _ in records:
                return record if record.seq == seq else None
            return None
        finally:
            records.close()
