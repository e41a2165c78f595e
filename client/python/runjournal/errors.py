"""Exceptions of the runjournal client: one class per server reason.

Every refusal from the server is a gRPC status carrying a ``google.rpc.ErrorInfo``
detail (domain ``runjournal.dev``) whose ``reason`` is a stable upper-case word.
``from_rpc_error`` maps that reason to a class, never the message text, so code
can ``except RunClaimedError`` and read ``err.claim_token`` without parsing.

Which metadata keys each reason carries, and their types, is pinned in
``runjournal.error_metadata.ERROR_METADATA``, the table the server builds
its ErrorInfo with; the properties here read those keys as those types.

A status without an ErrorInfo did not come from the journal logic: it is a
transport failure (``UnavailableError``, ``DeadlineExceededError``), an
authentication layer in front of the server (``UnauthenticatedError``,
``PermissionDeniedError``) or something else (``StatusError``). A reason this
client does not know (a newer server) is ``UnknownReasonError``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from runjournal.v1 import task_service_pb2

ERROR_DOMAIN = "runjournal.dev"
"""The ``ErrorInfo.domain`` of every runjournal refusal."""

_STATUS_DETAILS_KEY = "grpc-status-details-bin"


class RunJournalError(Exception):
    """Base of every error the client raises.

    ``reason`` is the ErrorInfo reason ("" when the status had none), ``code``
    the gRPC status code, ``metadata`` the ErrorInfo metadata (all values are
    strings) and ``message`` the server's explanation, meant for people.
    ``details`` are the status's other details, packed (e.g. the stored task
    of ``AlreadyCompletedError``).
    """

    REASON: ClassVar[str] = ""
    """The reason a subclass stands for ("" for the classes chosen by code)."""

    def __init__(
        self,
        message: str,
        *,
        code: grpc.StatusCode = grpc.StatusCode.UNKNOWN,
        reason: str = "",
        metadata: Mapping[str, str] | None = None,
        details: Sequence[any_pb2.Any] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = reason
        self.metadata: dict[str, str] = dict(metadata or {})
        self.details: tuple[any_pb2.Any, ...] = tuple(details)

    def __str__(self) -> str:
        label = self.reason or self.code.name
        return f"{label}: {self.message}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(reason={self.reason!r}, code={self.code.name}, "
            f"message={self.message!r}, metadata={self.metadata!r})"
        )

    def _int(self, key: str) -> int | None:
        value = self.metadata.get(key)
        if value is None:
            return None
        try:
            return int(value)
        except ValueError:
            return None

    @property
    def run_id(self) -> str | None:
        """The run the error is about, when the server named one."""
        return self.metadata.get("run_id")

    @property
    def task_id(self) -> str | None:
        """The task the error is about, when the server named one."""
        return self.metadata.get("task_id")

    @property
    def seq(self) -> int | None:
        """The seq the error is about (the refused record, or the damage), when the server named one."""
        return self._int("seq")

    @property
    def last_seq(self) -> int | None:
        """The journal's last seq when the error was decided, when the server named it."""
        return self._int("last_seq")

    @property
    def tool_use_id(self) -> str | None:
        """The tool call the error is about, when the server named one."""
        return self.metadata.get("tool_use_id")

    @property
    def index(self) -> int | None:
        """For ``append_batch``: the 0-based position in the request of the refused record.

        None when the refusal is about the batch or the run rather than one
        record (e.g. ``RunClaimedError``), and for every other call.
        """
        return self._int("index")


# --- errors the server reports with an ErrorInfo reason ---------------------


class InvalidArgumentError(RunJournalError):
    """INVALID_ARGUMENT: a request field is malformed; ``field`` names it."""

    REASON = "INVALID_ARGUMENT"

    @property
    def field(self) -> str | None:
        return self.metadata.get("field")


class InvalidRecordError(RunJournalError):
    """INVALID_RECORD: the record breaks its schema or the run's state."""

    REASON = "INVALID_RECORD"

    @property
    def field(self) -> str | None:
        return self.metadata.get("field")


class RecordTooLargeError(RunJournalError):
    """RECORD_TOO_LARGE: the encoded record exceeds the server's maximum record size."""

    REASON = "RECORD_TOO_LARGE"

    @property
    def size(self) -> int | None:
        return self._int("size")

    @property
    def limit(self) -> int | None:
        return self._int("limit")


class ResponseTooLargeError(RunJournalError):
    """RESPONSE_TOO_LARGE: the folded state would not fit in one response; ask with conversation_from."""

    REASON = "RESPONSE_TOO_LARGE"

    @property
    def size(self) -> int | None:
        return self._int("size")

    @property
    def limit(self) -> int | None:
        return self._int("limit")


class RunNotFoundError(RunJournalError):
    """RUN_NOT_FOUND: no journal exists for the run id."""

    REASON = "RUN_NOT_FOUND"


class RunExistsError(RunJournalError):
    """RUN_EXISTS: a different meta record is already stored for the run id."""

    REASON = "RUN_EXISTS"


class RunDeletedError(RunJournalError):
    """RUN_DELETED: the run was deleted (``delete_run`` or retention); its id is never used again.

    ``last_seq`` is the run's last seq when it was deleted. A watch of the run
    ends with it when the run is deleted while watched.
    """

    REASON = "RUN_DELETED"


class LastSeqMismatchError(RunJournalError):
    """LAST_SEQ_MISMATCH: ``delete_run``'s ``expected_last_seq`` is not the run's last seq; nothing was deleted.

    Something was appended after the caller looked (``last_seq`` is the run's
    now): look at the run again before deleting it.
    """

    REASON = "LAST_SEQ_MISMATCH"

    @property
    def expected_last_seq(self) -> int | None:
        return self._int("expected_last_seq")


class SeqGapError(RunJournalError):
    """SEQ_GAP: the record's seq is beyond ``last_seq + 1``."""

    REASON = "SEQ_GAP"


class SeqConflictError(RunJournalError):
    """SEQ_CONFLICT: a different record is already stored at the seq."""

    REASON = "SEQ_CONFLICT"


class RunClaimedError(RunJournalError):
    """RUN_CLAIMED: another worker claimed the run; this writer must stop.

    ``claim_token`` is the current holder's token, ``claimed_by`` its worker id.
    """

    REASON = "RUN_CLAIMED"

    @property
    def claim_token(self) -> int | None:
        return self._int("claim_token")

    @property
    def claimed_by(self) -> str | None:
        return self.metadata.get("claimed_by")


class RunLockedError(RunJournalError):
    """RUN_LOCKED: another server process holds the run. Not retried automatically."""

    REASON = "RUN_LOCKED"


class VersionMismatchError(RunJournalError):
    """VERSION_MISMATCH: the journal's format version is not the server's."""

    REASON = "VERSION_MISMATCH"

    @property
    def found_version(self) -> int | None:
        return self._int("found_version")

    @property
    def expected_version(self) -> int | None:
        return self._int("expected_version")


class CorruptJournalError(RunJournalError):
    """CORRUPT_JOURNAL: the stored journal is damaged at ``line`` and/or ``seq``."""

    REASON = "CORRUPT_JOURNAL"

    @property
    def line(self) -> int | None:
        return self._int("line")


class ResumeRefusedError(RunJournalError):
    """RESUME_REFUSED: the resume gate refused the claim; ``fields`` lists why."""

    REASON = "RESUME_REFUSED"

    @property
    def fields(self) -> list[str]:
        return [name for name in self.metadata.get("fields", "").split(",") if name]


class AlreadyAnsweredError(RunJournalError):
    """ALREADY_ANSWERED: the call has a result already, at ``answered_at_seq``."""

    REASON = "ALREADY_ANSWERED"

    @property
    def answered_at_seq(self) -> int | None:
        return self._int("answered_at_seq")


class NotDeferredError(RunJournalError):
    """NOT_DEFERRED: the call was never deferred, so it takes no answer."""

    REASON = "NOT_DEFERRED"


class AlreadyDecidedError(RunJournalError):
    """ALREADY_DECIDED: the call has an operator's decision already, at ``decided_at_seq``."""

    REASON = "ALREADY_DECIDED"

    @property
    def decided_at_seq(self) -> int | None:
        return self._int("decided_at_seq")


class CallNotPendingError(RunJournalError):
    """CALL_NOT_PENDING: the call is not in the run's pending batch, so it cannot be decided."""

    REASON = "CALL_NOT_PENDING"


class TaskNotFoundError(RunJournalError):
    """TASK_NOT_FOUND: no task with this id; ``task_id`` names it."""

    REASON = "TASK_NOT_FOUND"


class TaskConflictError(RunJournalError):
    """TASK_CONFLICT: the task id was already submitted with a different request (or labels)."""

    REASON = "TASK_CONFLICT"


class AlreadyCompletedError(RunJournalError):
    """ALREADY_COMPLETED: the task has an outcome already; the first one stands.

    ``stored_task`` is the task with the outcome that won, as the server
    attached it to the refusal.
    """

    REASON = "ALREADY_COMPLETED"

    @property
    def stored_task(self) -> task_service_pb2.Task | None:
        """The stored task (with its winning outcome), or None when the status carried none."""
        for detail in self.details:
            task = task_service_pb2.Task()
            if detail.Unpack(task):  # False when the detail is another message type
                return task
        return None


class TaskDeletedError(RunJournalError):
    """TASK_DELETED: the task was deleted; its id is never used again."""

    REASON = "TASK_DELETED"


class StorageFullError(RunJournalError):
    """STORAGE_FULL: the server's store is full; nothing was written."""

    REASON = "STORAGE_FULL"


class StorageUnavailableError(RunJournalError):
    """STORAGE_UNAVAILABLE: the store failed; resending the same request is safe.

    Not retried automatically: the caller decides whether and when.
    """

    REASON = "STORAGE_UNAVAILABLE"


class UnknownReasonError(RunJournalError):
    """A runjournal reason this client does not know (a newer server)."""


# --- statuses without an ErrorInfo: not from the journal logic ----------------


class StatusError(RunJournalError):
    """A gRPC status without a runjournal ErrorInfo and no more specific class."""


class UnavailableError(StatusError):
    """UNAVAILABLE without a reason: the server could not be reached."""


class DeadlineExceededError(StatusError):
    """DEADLINE_EXCEEDED: no answer within the call's deadline."""


class UnauthenticatedError(StatusError):
    """UNAUTHENTICATED: the call carried no valid bearer token (or was refused by a proxy)."""

    REASON = "UNAUTHENTICATED"


class PermissionDeniedError(StatusError):
    """PERMISSION_DENIED: the token may not touch this run or task (outside its id prefixes), or
    the call needs a scope the token lacks (``scope``, e.g. "operator" for answer and approve).

    ``principal`` is the token's name as the server knows it.
    """

    REASON = "PERMISSION_DENIED"

    @property
    def principal(self) -> str | None:
        return self.metadata.get("principal")

    @property
    def scope(self) -> str | None:
        return self.metadata.get("scope")


REASON_ERRORS: dict[str, type[RunJournalError]] = {
    cls.REASON: cls
    for cls in (
        InvalidArgumentError,
        InvalidRecordError,
        RecordTooLargeError,
        ResponseTooLargeError,
        RunNotFoundError,
        RunExistsError,
        RunDeletedError,
        LastSeqMismatchError,
        SeqGapError,
        SeqConflictError,
        RunClaimedError,
        RunLockedError,
        VersionMismatchError,
        CorruptJournalError,
        ResumeRefusedError,
        AlreadyAnsweredError,
        NotDeferredError,
        AlreadyDecidedError,
        CallNotPendingError,
        TaskNotFoundError,
        TaskConflictError,
        AlreadyCompletedError,
        TaskDeletedError,
        StorageFullError,
        StorageUnavailableError,
        UnauthenticatedError,
        PermissionDeniedError,
    )
}
"""Every reason the server reports, with its class."""

CODE_ERRORS: dict[grpc.StatusCode, type[StatusError]] = {
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.UNAUTHENTICATED: UnauthenticatedError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
}
"""Classes for statuses that carry no ErrorInfo, by code."""


def error_info(err: grpc.RpcError) -> error_details_pb2.ErrorInfo | None:
    """The first ``google.rpc.ErrorInfo`` detail of a failed call, if any."""
    return _split_details(_rich_status(err))[0]


def _split_details(
    status: status_pb2.Status | None,
) -> tuple[error_details_pb2.ErrorInfo | None, list[any_pb2.Any]]:
    """The first ErrorInfo detail of a status, and every other detail (still packed)."""
    info: error_details_pb2.ErrorInfo | None = None
    others: list[any_pb2.Any] = []
    for detail in status.details if status is not None else ():
        if info is None and detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
        else:
            others.append(detail)
    return info, others


def _rich_status(err: grpc.RpcError) -> status_pb2.Status | None:
    try:
        return rpc_status.from_call(err)
    except ValueError:
        # The status message was rewritten on the way (a proxy): the details
        # are still the server's, and the reason is what we branch on.
        pass
    for key, value in err.trailing_metadata() or ():
        if key == _STATUS_DETAILS_KEY:
            return status_pb2.Status.FromString(value)
    return None


def from_rpc_error(err: grpc.RpcError) -> RunJournalError:
    """The client exception for a failed call, chosen by ErrorInfo reason, else by code."""
    code: grpc.StatusCode = err.code()
    message: str = err.details() or ""
    info, details = _split_details(_rich_status(err))
    if info is not None and info.domain == ERROR_DOMAIN:
        cls = REASON_ERRORS.get(info.reason, UnknownReasonError)
        return cls(message, code=code, reason=info.reason, metadata=dict(info.metadata), details=details)
    status_cls = CODE_ERRORS.get(code, StatusError)
    metadata = dict(info.metadata) if info is not None else {}
    reason = info.reason if info is not None else ""
    return status_cls(message or code.name, code=code, reason=reason, metadata=metadata, details=details)


def is_retryable(err: grpc.RpcError) -> bool:
    """True for transport-level UNAVAILABLE / DEADLINE_EXCEEDED carrying no ErrorInfo.

    A status with an ErrorInfo (STORAGE_UNAVAILABLE, RUN_LOCKED, ...) is an
    answer from the server, and the caller decides what to do about it.
    """
    code = err.code()
    if code not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return False
    return error_info(err) is None


__all__ = [
    "CODE_ERRORS",
    "ERROR_DOMAIN",
    "REASON_ERRORS",
    "AlreadyAnsweredError",
    "AlreadyCompletedError",
    "AlreadyDecidedError",
    "CallNotPendingError",
    "CorruptJournalError",
    "DeadlineExceededError",
    "InvalidArgumentError",
    "InvalidRecordError",
    "LastSeqMismatchError",
    "NotDeferredError",
    "PermissionDeniedError",
    "RecordTooLargeError",
    "ResponseTooLargeError",
    "ResumeRefusedError",
    "RunClaimedError",
    "RunDeletedError",
    "RunExistsError",
    "RunJournalError",
    "RunLockedError",
    "RunNotFoundError",
    "SeqConflictError",
    "SeqGapError",
    "StatusError",
    "StorageFullError",
    "StorageUnavailableError",
    "TaskConflictError",
    "TaskDeletedError",
    "TaskNotFoundError",
    "UnauthenticatedError",
    "UnavailableError",
    "UnknownReasonError",
    "VersionMismatchError",
    "error_info",
    "from_rpc_error",
    "is_retryable",
]
