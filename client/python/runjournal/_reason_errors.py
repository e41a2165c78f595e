# GENERATED from testdata/error_metadata.json by scripts/generate.py: do not edit by hand.
# Edit client/python/runjournal/error_metadata.py and run `python scripts/generate.py`; CI fails when this file differs.
"""Every server reason's exception class, with a typed property for each of its ErrorInfo metadata keys.

Written from ``testdata/error_metadata.json`` (the table of ``runjournal.error_metadata``) on the
bases of ``runjournal._error_base``; ``runjournal.errors`` is where code imports them from.
"""

from __future__ import annotations

from runjournal._error_base import RunJournalError, StatusError, StoredTaskDetail


class AlreadyAnsweredError(RunJournalError):
    """ALREADY_ANSWERED: the call has a result already, at ``answered_at_seq``."""

    REASON = "ALREADY_ANSWERED"

    @property
    def answered_at_seq(self) -> int | None:
        """Metadata ``answered_at_seq`` (int): every ALREADY_ANSWERED carries it."""
        return self._int("answered_at_seq")


class AlreadyCompletedError(StoredTaskDetail):
    """ALREADY_COMPLETED: the task has an outcome already; the first one stands.

    The refusal carries the stored task, with the outcome that won, among its details.
    """

    REASON = "ALREADY_COMPLETED"


class AlreadyDecidedError(RunJournalError):
    """ALREADY_DECIDED: the call has an operator's decision already, at ``decided_at_seq``."""

    REASON = "ALREADY_DECIDED"

    @property
    def decided_at_seq(self) -> int | None:
        """Metadata ``decided_at_seq`` (int): every ALREADY_DECIDED carries it."""
        return self._int("decided_at_seq")


class CallNotPendingError(RunJournalError):
    """CALL_NOT_PENDING: the call is not in the run's pending batch, so it cannot be decided."""

    REASON = "CALL_NOT_PENDING"


class CorruptJournalError(RunJournalError):
    """CORRUPT_JOURNAL: the stored journal is damaged at ``line`` and/or ``seq``."""

    REASON = "CORRUPT_JOURNAL"

    @property
    def line(self) -> int | None:
        """Metadata ``line`` (int): None when the refusal has none."""
        return self._int("line")


class InvalidArgumentError(RunJournalError):
    """INVALID_ARGUMENT: a request field is malformed; ``field`` names it."""

    REASON = "INVALID_ARGUMENT"

    @property
    def field(self) -> str | None:
        """Metadata ``field`` (str): every INVALID_ARGUMENT carries it."""
        return self._str("field")


class InvalidRecordError(RunJournalError):
    """INVALID_RECORD: the record breaks its schema or the run's state; ``field`` names what is wrong."""

    REASON = "INVALID_RECORD"

    @property
    def field(self) -> str | None:
        """Metadata ``field`` (str): every INVALID_RECORD carries it."""
        return self._str("field")


class LastSeqMismatchError(RunJournalError):
    """LAST_SEQ_MISMATCH: DeleteRun's ``expected_last_seq`` is not the run's last seq (``last_seq``); nothing was
    deleted. Something was appended after the caller looked: look at the run again before deleting it.
    """

    REASON = "LAST_SEQ_MISMATCH"

    @property
    def expected_last_seq(self) -> int | None:
        """Metadata ``expected_last_seq`` (int): every LAST_SEQ_MISMATCH carries it."""
        return self._int("expected_last_seq")


class NotDeferredError(RunJournalError):
    """NOT_DEFERRED: the call does not wait for this write: Answer needs a call deferred for an answer, Approve one
    deferred for a decision (``needs_approval``); a call never deferred waits for its worker.
    """

    REASON = "NOT_DEFERRED"


class PermissionDeniedError(StatusError):
    """PERMISSION_DENIED: the token may not touch this run or task (outside its id prefixes), or the call needs a
    scope the token lacks (``scope``, e.g. "operator" for Answer and Approve). ``principal`` is the token's name
    as the server knows it.
    """

    REASON = "PERMISSION_DENIED"

    @property
    def principal(self) -> str | None:
        """Metadata ``principal`` (str): every PERMISSION_DENIED carries it."""
        return self._str("principal")

    @property
    def scope(self) -> str | None:
        """Metadata ``scope`` (str): None when the refusal has none."""
        return self._str("scope")


class RecordTooLargeError(RunJournalError):
    """RECORD_TOO_LARGE: the encoded record (``size`` bytes) exceeds the server's maximum record size (``limit``)."""

    REASON = "RECORD_TOO_LARGE"

    @property
    def limit(self) -> int | None:
        """Metadata ``limit`` (int): every RECORD_TOO_LARGE carries it."""
        return self._int("limit")

    @property
    def size(self) -> int | None:
        """Metadata ``size`` (int): every RECORD_TOO_LARGE carries it."""
        return self._int("size")


class ResponseTooLargeError(RunJournalError):
    """RESPONSE_TOO_LARGE: the folded state (``size`` bytes) would not fit in one response (``limit``); fold again
    with a conversation_from, to get only the messages the caller lacks.
    """

    REASON = "RESPONSE_TOO_LARGE"

    @property
    def limit(self) -> int | None:
        """Metadata ``limit`` (int): every RESPONSE_TOO_LARGE carries it."""
        return self._int("limit")

    @property
    def size(self) -> int | None:
        """Metadata ``size`` (int): every RESPONSE_TOO_LARGE carries it."""
        return self._int("size")


class ResumeRefusedError(RunJournalError):
    """RESUME_REFUSED: the resume gate refused the claim; ``fields`` lists the fingerprint fields that refused it."""

    REASON = "RESUME_REFUSED"

    @property
    def fields(self) -> list[str]:
        """Metadata ``fields`` (list): every RESUME_REFUSED carries it."""
        return self._list("fields")


class RunClaimedError(RunJournalError):
    """RUN_CLAIMED: another worker claimed the run; this writer must stop.

    ``claim_token`` is the current holder's token, ``claimed_by`` its worker id (may be empty).
    """

    REASON = "RUN_CLAIMED"

    @property
    def claim_token(self) -> int | None:
        """Metadata ``claim_token`` (int): every RUN_CLAIMED carries it."""
        return self._int("claim_token")

    @property
    def claimed_by(self) -> str | None:
        """Metadata ``claimed_by`` (str): every RUN_CLAIMED carries it."""
        return self._str("claimed_by")


class RunDeletedError(RunJournalError):
    """RUN_DELETED: the run was deleted (DeleteRun or retention); its id is never used again.

    ``last_seq`` is its last seq then. A watch of the run ends with it when the run is deleted while watched.
    """

    REASON = "RUN_DELETED"


class RunExistsError(RunJournalError):
    """RUN_EXISTS: a different meta record is already stored for the run id."""

    REASON = "RUN_EXISTS"


class RunLockedError(RunJournalError):
    """RUN_LOCKED: another server process holds the run. Not retried automatically."""

    REASON = "RUN_LOCKED"


class RunNotFoundError(RunJournalError):
    """RUN_NOT_FOUND: no journal exists for the run id."""

    REASON = "RUN_NOT_FOUND"


class SeqConflictError(RunJournalError):
    """SEQ_CONFLICT: a different record is already stored at the seq."""

    REASON = "SEQ_CONFLICT"


class SeqGapError(RunJournalError):
    """SEQ_GAP: the record's seq is beyond the run's last seq (``last_seq``) + 1."""

    REASON = "SEQ_GAP"


class StorageFullError(RunJournalError):
    """STORAGE_FULL: the server's store is full; nothing was written."""

    REASON = "STORAGE_FULL"


class StorageUnavailableError(RunJournalError):
    """STORAGE_UNAVAILABLE: the store failed; resending the same request is safe.

    Not retried automatically: the caller decides whether and when.
    """

    REASON = "STORAGE_UNAVAILABLE"


class TaskConflictError(RunJournalError):
    """TASK_CONFLICT: the task id was already submitted with a different request (or labels)."""

    REASON = "TASK_CONFLICT"


class TaskDeletedError(RunJournalError):
    """TASK_DELETED: the task was deleted; its id is never used again."""

    REASON = "TASK_DELETED"


class TaskNotFoundError(RunJournalError):
    """TASK_NOT_FOUND: no task with this id; ``task_id`` names it."""

    REASON = "TASK_NOT_FOUND"


class TooManyCallsError(RunJournalError):
    """TOO_MANY_CALLS: the server already serves ``limit`` calls of this kind at once (``budget``: "calls" for
    journal and task calls, "health" for health and reflection, "connection" for one connection's share of those);
    nothing was done. Not retried automatically: retry later, or end streams no longer read.
    """

    REASON = "TOO_MANY_CALLS"

    @property
    def budget(self) -> str | None:
        """Metadata ``budget`` (str): every TOO_MANY_CALLS carries it."""
        return self._str("budget")

    @property
    def limit(self) -> int | None:
        """Metadata ``limit`` (int): every TOO_MANY_CALLS carries it."""
        return self._int("limit")


class UnauthenticatedError(StatusError):
    """UNAUTHENTICATED: the call carried no valid bearer token (or a proxy in front of the server refused it)."""

    REASON = "UNAUTHENTICATED"


class VersionMismatchError(RunJournalError):
    """VERSION_MISMATCH: the journal's format version (``found_version``) is not the server's (``expected_version``)."""

    REASON = "VERSION_MISMATCH"

    @property
    def expected_version(self) -> int | None:
        """Metadata ``expected_version`` (int): every VERSION_MISMATCH carries it."""
        return self._int("expected_version")

    @property
    def found_version(self) -> int | None:
        """Metadata ``found_version`` (int): every VERSION_MISMATCH carries it."""
        return self._int("found_version")


REASON_ERRORS: dict[str, type[RunJournalError]] = {
    cls.REASON: cls
    for cls in (
        AlreadyAnsweredError,
        AlreadyCompletedError,
        AlreadyDecidedError,
        CallNotPendingError,
        CorruptJournalError,
        InvalidArgumentError,
        InvalidRecordError,
        LastSeqMismatchError,
        NotDeferredError,
        PermissionDeniedError,
        RecordTooLargeError,
        ResponseTooLargeError,
        ResumeRefusedError,
        RunClaimedError,
        RunDeletedError,
        RunExistsError,
        RunLockedError,
        RunNotFoundError,
        SeqConflictError,
        SeqGapError,
        StorageFullError,
        StorageUnavailableError,
        TaskConflictError,
        TaskDeletedError,
        TaskNotFoundError,
        TooManyCallsError,
        UnauthenticatedError,
        VersionMismatchError,
    )
}
"""Every reason the server reports, with its class."""

__all__ = [
    "REASON_ERRORS",
    "AlreadyAnsweredError",
    "AlreadyCompletedError",
    "AlreadyDecidedError",
    "CallNotPendingError",
    "CorruptJournalError",
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
    "RunLockedError",
    "RunNotFoundError",
    "SeqConflictError",
    "SeqGapError",
    "StorageFullError",
    "StorageUnavailableError",
    "TaskConflictError",
    "TaskDeletedError",
    "TaskNotFoundError",
    "TooManyCallsError",
    "UnauthenticatedError",
    "VersionMismatchError",
]
