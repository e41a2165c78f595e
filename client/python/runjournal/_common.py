"""What the sync and asyncio clients share: defaults, channel options, requests.

Each client method builds its request here, so the two clients send the same
bytes for the same arguments and differ only in how they wait.
"""

from __future__ import annotations

import datetime
import enum
import os
import socket
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from google.protobuf import timestamp_pb2

from runjournal._builders import DecisionLike, content_of, decision_value, enum_value
from runjournal.errors import (
    AlreadyAnsweredError,
    AlreadyCompletedError,
    AlreadyDecidedError,
    RunExistsError,
    RunJournalError,
)
from runjournal.fingerprint import canonical_json
from runjournal.v1 import journal_service_pb2, records_pb2, state_pb2, task_service_pb2

DEFAULT_TIMEOUT_SECONDS = 10.0
"""The deadline of every call unless the client or the call says otherwise."""

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The gRPC message limit, matching the server's default (64 MiB)."""

RunStatusLike = int | str
"""A ``RunStatus`` value, or its short name: "open", "completed", "suspended", ..."""
TaskStateLike = int | str
"""A ``TaskState`` value, or its short name: "submitted", "succeeded" or "failed"."""
FailureLike = tuple[str, str] | task_service_pb2.TaskFailure
"""A task failure: a ``(code, message)`` pair, or a ``TaskFailure`` message."""


class _Unset(enum.Enum):
    UNSET = "UNSET"


UNSET: Final = _Unset.UNSET
"""The default of an argument whose every value, None included, means something (a JSON value)."""

OutOfBandRequest = journal_service_pb2.AnswerRequest | journal_service_pb2.ApproveRequest
"""A request that writes one record without a claim token, at a seq the server picks."""


def channel_options(extra: Sequence[tuple[str, Any]] = ()) -> list[tuple[str, Any]]:
    """Channel options: the message limits, then ``extra`` (which may override them)."""
    options: dict[str, Any] = {
        "grpc.max_send_message_length": MAX_MESSAGE_BYTES,
        "grpc.max_receive_message_length": MAX_MESSAGE_BYTES,
    }
    options.update(dict(extra))
    return list(options.items())


def run_status_value(value: RunStatusLike) -> state_pb2.RunStatus:
    return cast(state_pb2.RunStatus, enum_value(state_pb2.RunStatus, "RUN_STATUS_", value))


def append_request(
    run_id: str, claim_token: int, record: records_pb2.JournalRecord
) -> journal_service_pb2.AppendRequest:
    return journal_service_pb2.AppendRequest(run_id=run_id, claim_token=claim_token, record=record)


def append_batch_request(
    run_id: str, claim_token: int, records: Sequence[records_pb2.JournalRecord]
) -> journal_service_pb2.AppendBatchRequest:
    return journal_service_pb2.AppendBatchRequest(run_id=run_id, claim_token=claim_token, records=list(records))


def claim_request(
    run_id: str,
    worker_id: str,
    fingerprint: records_pb2.Fingerprint,
    *,
    force: bool,
    host: str | None,
    pid: int | None,
    reason: str,
    uncompacted: bool = False,
) -> journal_service_pb2.ClaimRequest:
    """A claim request; ``host`` and ``pid`` default to this process's, read at call time."""
    return journal_service_pb2.ClaimRequest(
        run_id=run_id,
        worker_id=worker_id,
        host=socket.gethostname() if host is None else host,
        pid=os.getpid() if pid is None else pid,
        reason=reason,
        fingerprint=fingerprint,
        force=force,
        uncompacted=uncompacted,
    )


def fold_request(
    run_id: str, as_of_seq: int, conversation_from: int = 0, uncompacted: bool = False
) -> journal_service_pb2.FoldRequest:
    return journal_service_pb2.FoldRequest(
        run_id=run_id, as_of_seq=as_of_seq, conversation_from=conversation_from, uncompacted=uncompacted
    )


def answer_request(
    run_id: str,
    tool_use_id: str,
    content: Sequence[records_pb2.ContentBlock] | None,
    text: str | None,
    is_error: bool,
) -> journal_service_pb2.AnswerRequest:
    return journal_service_pb2.AnswerRequest(
        run_id=run_id,
        tool_use_id=tool_use_id,
        content=content_of(content, text, what="answer"),
        is_error=is_error,
    )


def approve_request(
    run_id: str, tool_use_id: str, decision: DecisionLike, approver: str, reason: str
) -> journal_service_pb2.ApproveRequest:
    return journal_service_pb2.ApproveRequest(
        run_id=run_id,
        tool_use_id=tool_use_id,
        decision=decision_value(decision),
        approver=approver,
        reason=reason,
    )


def landed_seq(err: RunJournalError, request: OutOfBandRequest) -> int | None:
    """Where an earlier attempt of ``request`` may have landed, when ``err`` is the refusal it would cause.

    Answer and Approve are not deduplicated by seq like Append: when an
    attempt's reply is lost and the resent request is refused because the
    call is already answered (decided), the record at this seq tells "our
    first attempt landed" from "someone else was first" (``is_own_write``).
    """
    if isinstance(request, journal_service_pb2.AnswerRequest) and isinstance(err, AlreadyAnsweredError):
        return err.answered_at_seq
    if isinstance(request, journal_service_pb2.ApproveRequest) and isinstance(err, AlreadyDecidedError):
        return err.decided_at_seq
    return None


def is_own_write(stored: records_pb2.JournalRecord, request: OutOfBandRequest) -> bool:
    """True when ``stored`` is the record the server writes for ``request``."""
    if isinstance(request, journal_service_pb2.AnswerRequest):
        return is_same_answer(stored, request)
    return is_same_approval(stored, request)


def is_same_approval(stored: records_pb2.JournalRecord, request: journal_service_pb2.ApproveRequest) -> bool:
    """True when ``stored`` is the approval record the server writes for ``request``.

    A request with no approver (token auth on: the server records the token's
    name, which this client does not know) matches any approver.
    """
    if stored.WhichOneof("payload") != "approval":
        return False
    approval = stored.approval
    same_approver = not request.approver or approval.approver == request.approver
    return same_approver and (approval.tool_use_id, approval.decision, approval.reason) == (
        request.tool_use_id,
        request.decision,
        request.reason,
    )


def is_same_answer(stored: records_pb2.JournalRecord, request: journal_service_pb2.AnswerRequest) -> bool:
    """True when ``stored`` is the tool_result the server writes for ``request``.

    Answer is not deduplicated by seq like Append: when an attempt's reply is
    lost and the resent request finds the call answered, the stored result is
    compared with ours to tell "our first attempt landed" from "someone else
    answered first".
    """
    if stored.WhichOneof("payload") != "tool_result":
        return False
    result = stored.tool_result
    return (
        result.tool_use_id == request.tool_use_id
        and list(result.content) == list(request.content)
        and result.is_error == request.is_error
    )


TimeLike = datetime.datetime | timestamp_pb2.Timestamp
"""A point in time: an aware ``datetime`` (a naive one is refused), or a ``Timestamp`` message."""


def timestamp_of(value: TimeLike) -> timestamp_pb2.Timestamp:
    if isinstance(value, timestamp_pb2.Timestamp):
        return value
    if value.tzinfo is None:
        # A naive datetime is local time to some and UTC to others: retention deletes by it, so say which.
        raise ValueError("stopped_before must be timezone-aware (e.g. datetime.now(timezone.utc))")
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(value.astimezone(datetime.UTC))
    return stamp


def list_runs_request(
    page_size: int,
    page_token: str,
    status: RunStatusLike,
    labels: Mapping[str, str] | None,
    waiting_for_person: bool = False,
    task_id: str = "",
    parent_run_id: str = "",
    stopped_before: TimeLike | None = None,
    spawned_by_run_id: str = "",
    root_run_id: str = "",
) -> journal_service_pb2.ListRunsRequest:
    request = journal_service_pb2.ListRunsRequest(
        spawned_by_run_id=spawned_by_run_id,
        root_run_id=root_run_id,
        page_size=page_size,
        page_token=page_token,
        status=run_status_value(status),
        labels=dict(labels or {}),
        waiting_for_person=waiting_for_person,
        task_id=task_id,
        parent_run_id=parent_run_id,
    )
    if stopped_before is not None:
        request.stopped_before.CopyFrom(timestamp_of(stopped_before))
    return request


def read_request(run_id: str, from_seq: int) -> journal_service_pb2.ReadRequest:
    return journal_service_pb2.ReadRequest(run_id=run_id, from_seq=from_seq)


def read_item(response: journal_service_pb2.ReadResponse) -> tuple[int, records_pb2.JournalRecord, bytes]:
    """A Read item's seq, its record (placed at that seq) and its stored line.

    The seq comes from ``response.seq``: a record of a kind the server cannot
    decode may arrive without its own seq, and resuming from ``record.seq``
    would repeat the run from the start. ``record.seq`` stands in only for a
    server older than the ``seq`` field.
    """
    seq = response.seq or response.record.seq
    record = response.record
    if not record.seq:
        record.seq = seq
    return seq, record, response.stored_line


# --- watching -----------------------------------------------------------------


def watch_request(run_id: str, after_seq: int) -> journal_service_pb2.WatchRequest:
    return journal_service_pb2.WatchRequest(run_id=run_id, after_seq=after_seq)


def watch_runs_request(
    status: RunStatusLike,
    labels: Mapping[str, str] | None,
    waiting_for_person: bool,
    task_id: str,
    parent_run_id: str,
    spawned_by_run_id: str = "",
    root_run_id: str = "",
) -> journal_service_pb2.WatchRunsRequest:
    return journal_service_pb2.WatchRunsRequest(
        spawned_by_run_id=spawned_by_run_id,
        root_run_id=root_run_id,
        status=run_status_value(status),
        labels=dict(labels or {}),
        waiting_for_person=waiting_for_person,
        task_id=task_id,
        parent_run_id=parent_run_id,
    )


def fork_run_request(run_id: str, at_seq: int, new_run_id: str) -> journal_service_pb2.ForkRunRequest:
    return journal_service_pb2.ForkRunRequest(run_id=run_id, at_seq=at_seq, new_run_id=new_run_id)


def fork_landed(err: RunJournalError, request: journal_service_pb2.ForkRunRequest) -> bool:
    """True when ``err`` is the refusal a resent ForkRun meets if its first attempt created the fork."""
    return isinstance(err, RunExistsError) and err.run_id == request.new_run_id


def own_fork(
    meta: records_pb2.JournalRecord | None, request: journal_service_pb2.ForkRunRequest
) -> journal_service_pb2.ForkRunResponse | None:
    """The answer our lost first attempt got, when ``meta`` (record 1 of the new run) says it made the fork."""
    if meta is None or meta.WhichOneof("payload") != "meta" or not meta.meta.HasField("forked_from"):
        return None
    origin = meta.meta.forked_from
    if origin.run_id != request.run_id or (request.at_seq and origin.seq != request.at_seq):
        return None
    return journal_service_pb2.ForkRunResponse(run_id=request.new_run_id, last_seq=origin.seq, forked_from=origin)


def delete_run_request(
    run_id: str, expected_last_seq: int, with_children: bool = False
) -> journal_service_pb2.DeleteRunRequest:
    return journal_service_pb2.DeleteRunRequest(
        run_id=run_id, expected_last_seq=expected_last_seq, with_children=with_children
    )


def spawn_run_request(
    run_id: str, tool_use_id: str, new_run_id: str, meta: records_pb2.JournalRecord, reason: str
) -> journal_service_pb2.SpawnRunRequest:
    """A SpawnRun request from a built meta record; its creation time is left to the server."""
    child = records_pb2.Meta()
    child.CopyFrom(meta.meta)
    child.run_id = ""
    child.ClearField("created_at")
    return journal_service_pb2.SpawnRunRequest(
        run_id=run_id, tool_use_id=tool_use_id, new_run_id=new_run_id, meta=child, reason=reason
    )


def child_result(record: records_pb2.JournalRecord, tool_use_id: str) -> records_pb2.ToolResult | None:
    """The result of call ``tool_use_id`` when ``record`` is it (the child's outcome, or a person's answer)."""
    if record.HasField("tool_result") and record.tool_result.tool_use_id == tool_use_id:
        return record.tool_result
    return None


# --- tasks --------------------------------------------------------------------


def task_state_value(value: TaskStateLike) -> task_service_pb2.TaskState:
    return cast(task_service_pb2.TaskState, enum_value(task_service_pb2.TaskState, "TASK_STATE_", value))


def json_text(value: Any, text: str | None, *, what: str) -> str:
    """A JSON value given either as a Python value (serialised canonically) or as JSON text; exactly one."""
    if (value is UNSET) == (text is None):
        raise ValueError(f"pass exactly one of {what} and {what}_json")
    if text is not None:
        return text
    return canonical_json(value)


def failure_of(failure: FailureLike) -> task_service_pb2.TaskFailure:
    if isinstance(failure, task_service_pb2.TaskFailure):
        return failure
    code, message = failure
    return task_service_pb2.TaskFailure(code=code, message=message)


def submit_task_request(
    task_id: str, request: Any, request_json: str | None, labels: Mapping[str, str] | None
) -> task_service_pb2.SubmitTaskRequest:
    return task_service_pb2.SubmitTaskRequest(
        task_id=task_id,
        request_json=json_text(request, request_json, what="request"),
        labels=dict(labels or {}),
    )


def complete_task_request(
    task_id: str, result: Any, result_json: str | None, failure: FailureLike | None
) -> task_service_pb2.CompleteTaskRequest:
    """A completion with a result (a value or JSON text) or a failure; exactly one of the three."""
    if failure is None:
        outcome = task_service_pb2.TaskOutcome(result_json=json_text(result, result_json, what="result"))
    elif result is UNSET and result_json is None:
        outcome = task_service_pb2.TaskOutcome(failure=failure_of(failure))
    else:
        raise ValueError("pass exactly one of result, result_json and failure")
    return task_service_pb2.CompleteTaskRequest(task_id=task_id, outcome=outcome)


def get_task_request(task_id: str) -> task_service_pb2.GetTaskRequest:
    return task_service_pb2.GetTaskRequest(task_id=task_id)


def list_tasks_request(
    page_size: int, page_token: str, state: TaskStateLike, labels: Mapping[str, str] | None
) -> task_service_pb2.ListTasksRequest:
    return task_service_pb2.ListTasksRequest(
        page_size=page_size,
        page_token=page_token,
        state=task_state_value(state),
        labels=dict(labels or {}),
    )


def delete_task_request(task_id: str) -> task_service_pb2.DeleteTaskRequest:
    return task_service_pb2.DeleteTaskRequest(task_id=task_id)


def is_same_outcome(stored: task_service_pb2.Task, request: task_service_pb2.CompleteTaskRequest) -> bool:
    """True when the stored task's outcome is the one ``request`` sends (``completed_at`` aside)."""
    if stored.task_id != request.task_id or not stored.HasField("outcome"):
        return False
    theirs = task_service_pb2.TaskOutcome()
    theirs.CopyFrom(stored.outcome)
    theirs.ClearField("completed_at")
    ours = task_service_pb2.TaskOutcome()
    ours.CopyFrom(request.outcome)
    ours.ClearField("completed_at")
    return theirs == ours


def own_completion(
    err: AlreadyCompletedError, request: task_service_pb2.CompleteTaskRequest
) -> task_service_pb2.Task | None:
    """The stored task when the refused completion is ours (an earlier attempt landed), else None.

    Only meaningful after a transport retry: a first attempt refused
    ALREADY_COMPLETED lost to someone else, whatever the outcome says.
    """
    stored = err.stored_task
    if stored is None or not is_same_outcome(stored, request):
        return None
    return stored
