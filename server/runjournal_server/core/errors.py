"""The one error vocabulary of the server.

Every refusal is a ``JournalError`` subclass carrying a stable ``Reason`` and the
numbers a client needs, one class per reason. Only ``api/status.py`` knows which
gRPC code a reason maps to; everything else raises these. Driver exceptions
(OSError, nats errors) are translated at the backend edge with ``raise ... from err``.

The classes are the journal's refusals, raised from the core up. The two that
speak of tokens (UNAUTHENTICATED, PERMISSION_DENIED) are raised only by the
token checks and are defined beside them, in ``api/auth.py``: the core knows
no tokens. Their reasons are here with every other.

Messages say what happened and what to do next; clients branch on the reason,
never on the text. Each reason's metadata keys and their types are pinned in
``runjournal.error_metadata.ERROR_METADATA`` (shared with the Python client):
constructors pass typed values (int, str, list of str) and ``metadata``
renders them as that table says.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from google.protobuf.message import Message

from runjournal.error_metadata import render_metadata


class Reason(enum.StrEnum):
    """Stable ``google.rpc.ErrorInfo.reason`` values."""

    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    INVALID_RECORD = "INVALID_RECORD"
    RECORD_TOO_LARGE = "RECORD_TOO_LARGE"
    RESPONSE_TOO_LARGE = "RESPONSE_TOO_LARGE"
    RUN_NOT_FOUND = "RUN_NOT_FOUND"
    RUN_EXISTS = "RUN_EXISTS"
    SEQ_GAP = "SEQ_GAP"
    SEQ_CONFLICT = "SEQ_CONFLICT"
    RUN_CLAIMED = "RUN_CLAIMED"
    RUN_LOCKED = "RUN_LOCKED"
    VERSION_MISMATCH = "VERSION_MISMATCH"
    CORRUPT_JOURNAL = "CORRUPT_JOURNAL"
    RESUME_REFUSED = "RESUME_REFUSED"
    ALREADY_ANSWERED = "ALREADY_ANSWERED"
    NOT_DEFERRED = "NOT_DEFERRED"
    STORAGE_FULL = "STORAGE_FULL"
    STORAGE_UNAVAILABLE = "STORAGE_UNAVAILABLE"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    ALREADY_DECIDED = "ALREADY_DECIDED"
    CALL_NOT_PENDING = "CALL_NOT_PENDING"
    TASK_NOT_FOUND = "TASK_NOT_FOUND"
    TASK_CONFLICT = "TASK_CONFLICT"
    ALREADY_COMPLETED = "ALREADY_COMPLETED"
    RUN_DELETED = "RUN_DELETED"
    LAST_SEQ_MISMATCH = "LAST_SEQ_MISMATCH"
    TASK_DELETED = "TASK_DELETED"
    TOO_MANY_CALLS = "TOO_MANY_CALLS"


class JournalError(Exception):
    """Base of every domain error: a reason, a message and typed metadata.

    ``details`` are extra protobuf messages sent beside the ErrorInfo (e.g. the
    stored task a refused completion lost to).
    """

    reason: Reason

    def __init__(self, message: str, **metadata: object) -> None:
        super().__init__(message)
        self.message = message
        self._metadata = {k: v for k, v in metadata.items() if v is not None}
        self.details: list[Message] = []

    @property
    def typed_metadata(self) -> Mapping[str, object]:
        """The metadata as typed values (int, str, list of str), before rendering."""
        return dict(self._metadata)

    @property
    def metadata(self) -> Mapping[str, str]:
        """The ErrorInfo metadata as text, as ErrorInfo requires: the keys ``ERROR_METADATA`` declares."""
        return render_metadata(self.reason, self._metadata)

    def annotate(self, **metadata: object) -> None:
        """Add metadata known only where the error is caught (e.g. the batch ``index``)."""
        self._metadata.update({k: v for k, v in metadata.items() if v is not None})


class InvalidArgumentError(JournalError):
    """A request field is malformed (``field`` names it)."""

    reason = Reason.INVALID_ARGUMENT

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}", field=field)
        self.field = field


class InvalidRecordError(JournalError):
    """A record breaks its schema or the run's folded state."""

    reason = Reason.INVALID_RECORD

    def __init__(self, field: str, problem: str, *, seq: int | None = None) -> None:
        where = f"record seq {seq}: " if seq is not None else ""
        super().__init__(f"{where}{field}: {problem}", field=field, seq=seq)
        self.field = field


class RecordTooLargeError(JournalError):
    """An encoded record exceeds the configured maximum record size."""

    reason = Reason.RECORD_TOO_LARGE

    def __init__(self, size: int, limit: int, *, seq: int | None = None) -> None:
        super().__init__(
            f"record of {size} bytes exceeds the maximum record size of {limit} bytes; "
            "store large content elsewhere and reference it",
            size=size,
            limit=limit,
            seq=seq,
        )


class ResponseTooLargeError(JournalError):
    """The answer (a folded state) would exceed the largest message the server sends; nothing was written."""

    reason = Reason.RESPONSE_TOO_LARGE

    def __init__(self, run_id: str, size: int, limit: int) -> None:
        super().__init__(
            f"the state of run {run_id!r} needs about {size} bytes, over the largest response of {limit} bytes; "
            "ask with conversation_from (the index of the first message you lack) and page the conversation "
            "with Fold",
            run_id=run_id,
            size=size,
            limit=limit,
        )


class RunNotFoundError(JournalError):
    reason = Reason.RUN_NOT_FOUND

    def __init__(self, run_id: str) -> None:
        super().__init__(
            f"run {run_id!r} does not exist; create it by appending its meta record at seq 1",
            run_id=run_id,
        )


class RunExistsError(JournalError):
    reason = Reason.RUN_EXISTS

    def __init__(self, run_id: str) -> None:
        super().__init__(
            f"run {run_id!r} already exists with a different meta record; pick another run id",
            run_id=run_id,
        )


class SeqGapError(JournalError):
    reason = Reason.SEQ_GAP

    def __init__(self, run_id: str, seq: int, last_seq: int) -> None:
        super().__init__(
            f"run {run_id!r}: seq {seq} would leave a gap after last seq {last_seq}; append seq {last_seq + 1} next",
            run_id=run_id,
            seq=seq,
            last_seq=last_seq,
        )


class SeqConflictError(JournalError):
    reason = Reason.SEQ_CONFLICT

    def __init__(self, run_id: str, seq: int, last_seq: int) -> None:
        super().__init__(
            f"run {run_id!r}: a different record is already stored at seq {seq} (last seq {last_seq}); "
            "fold the run again before writing",
            run_id=run_id,
            seq=seq,
            last_seq=last_seq,
        )


class RunClaimedError(JournalError):
    reason = Reason.RUN_CLAIMED

    def __init__(self, run_id: str, claim_token: int, current_token: int, claimed_by: str) -> None:
        who = f" by {claimed_by!r}" if claimed_by else ""
        super().__init__(
            f"run {run_id!r} was claimed{who} at seq {current_token}; claim token {claim_token} "
            "is no longer valid, stop writing to this run",
            run_id=run_id,
            claim_token=current_token,
            claimed_by=claimed_by,
        )


class RunLockedError(JournalError):
    reason = Reason.RUN_LOCKED

    def __init__(self, run_id: str) -> None:
        super().__init__(
            f"run {run_id!r} is held by another server process on this data directory; "
            "send the request to that server, or retry once it has released the run",
            run_id=run_id,
        )


class VersionMismatchError(JournalError):
    reason = Reason.VERSION_MISMATCH

    def __init__(self, run_id: str, found: int, expected: int, readable: str = "") -> None:
        super().__init__(
            f"run {run_id!r} uses journal format version {found}; this server reads "
            f"{readable or f'only version {expected}'}",
            run_id=run_id,
            found_version=found,
            expected_version=expected,
        )


class CorruptJournalError(JournalError):
    """The stored journal is damaged; ``line`` or ``seq`` says where."""

    reason = Reason.CORRUPT_JOURNAL

    def __init__(self, run_id: str, problem: str, *, line: int | None = None, seq: int | None = None) -> None:
        where = ", ".join(f"{name} {value}" for name, value in (("line", line), ("seq", seq)) if value is not None)
        at = f" at {where}" if where else ""
        super().__init__(
            f"run {run_id!r} has a corrupt journal{at}: {problem}; restore it from a backup",
            run_id=run_id,
            line=line,
            seq=seq,
        )
        self.run_id = run_id
        self.line = line
        self.seq = seq
        self.problem = problem


class ResumeRefusedError(JournalError):
    reason = Reason.RESUME_REFUSED

    def __init__(self, run_id: str, blocking_fields: list[str], hard: bool) -> None:
        hint = "a hard difference cannot be forced" if hard else "pass force to accept the differences"
        super().__init__(
            f"run {run_id!r} cannot be resumed: {', '.join(blocking_fields)} changed; {hint}",
            run_id=run_id,
            fields=list(blocking_fields),
        )


class AlreadyAnsweredError(JournalError):
    reason = Reason.ALREADY_ANSWERED

    def __init__(self, run_id: str, tool_use_id: str, answered_at_seq: int) -> None:
        super().__init__(
            f"run {run_id!r}: call {tool_use_id!r} was already answered at seq {answered_at_seq}; "
            "the first answer stands",
            run_id=run_id,
            tool_use_id=tool_use_id,
            answered_at_seq=answered_at_seq,
        )


class NotDeferredError(JournalError):
    reason = Reason.NOT_DEFERRED

    def __init__(self, run_id: str, tool_use_id: str, problem: str) -> None:
        """``problem`` says what the call waits for instead, and what the caller may do."""
        super().__init__(
            f"run {run_id!r}: call {tool_use_id!r} {problem}",
            run_id=run_id,
            tool_use_id=tool_use_id,
        )


class StorageFullError(JournalError):
    reason = Reason.STORAGE_FULL

    def __init__(self, run_id: str, detail: str, *, what: str = "run") -> None:
        super().__init__(
            f"{what} {run_id!r}: the store is full ({detail}); nothing was written, retry once space is freed",
            **{f"{what}_id": run_id},
        )


class StorageUnavailableError(JournalError):
    reason = Reason.STORAGE_UNAVAILABLE

    def __init__(self, run_id: str | None, detail: str, *, what: str = "run") -> None:
        subject = f"{what} {run_id!r}: " if run_id else ""
        super().__init__(
            f"{subject}the store failed ({detail}); nothing was acknowledged, retry the same request",
            **{f"{what}_id": run_id},
        )


class AlreadyDecidedError(JournalError):
    reason = Reason.ALREADY_DECIDED

    def __init__(self, run_id: str, tool_use_id: str, decided_at_seq: int) -> None:
        super().__init__(
            f"run {run_id!r}: call {tool_use_id!r} already has a decision at seq {decided_at_seq}; "
            "the first decision stands",
            run_id=run_id,
            tool_use_id=tool_use_id,
            decided_at_seq=decided_at_seq,
        )


class CallNotPendingError(JournalError):
    reason = Reason.CALL_NOT_PENDING

    def __init__(self, run_id: str, tool_use_id: str) -> None:
        super().__init__(
            f"run {run_id!r}: call {tool_use_id!r} is not in the run's pending batch; "
            "only a call of the unfinished last turn can be decided",
            run_id=run_id,
            tool_use_id=tool_use_id,
        )


class TaskNotFoundError(JournalError):
    reason = Reason.TASK_NOT_FOUND

    def __init__(self, task_id: str) -> None:
        super().__init__(f"task {task_id!r} does not exist; submit it first", task_id=task_id)


class TaskConflictError(JournalError):
    reason = Reason.TASK_CONFLICT

    def __init__(self, task_id: str) -> None:
        super().__init__(
            f"task {task_id!r} was already submitted with a different request; use a new task id",
            task_id=task_id,
        )


class AlreadyCompletedError(JournalError):
    """A second completion; ``details`` carries the stored task with the outcome that won."""

    reason = Reason.ALREADY_COMPLETED

    def __init__(self, task_id: str, stored_task: Message) -> None:
        super().__init__(
            f"task {task_id!r} is already completed; the first outcome stands and is attached",
            task_id=task_id,
        )
        self.details.append(stored_task)


class RunDeletedError(JournalError):
    """The run was deleted; its tombstone keeps the id from being used again."""

    reason = Reason.RUN_DELETED

    def __init__(self, run_id: str, last_seq: int) -> None:
        super().__init__(
            f"run {run_id!r} was deleted (at last seq {last_seq}); its id is never used again",
            run_id=run_id,
            last_seq=last_seq,
        )


class LastSeqMismatchError(JournalError):
    """DeleteRun's expected last seq is not the run's: something was appended after the caller looked."""

    reason = Reason.LAST_SEQ_MISMATCH

    def __init__(self, run_id: str, last_seq: int, expected_last_seq: int) -> None:
        super().__init__(
            f"run {run_id!r} is at seq {last_seq}, not the expected {expected_last_seq}; look again before deleting",
            run_id=run_id,
            last_seq=last_seq,
            expected_last_seq=expected_last_seq,
        )


class TaskDeletedError(JournalError):
    reason = Reason.TASK_DELETED

    def __init__(self, task_id: str) -> None:
        super().__init__(f"task {task_id!r} was deleted; its id is never used again", task_id=task_id)


class TooManyCallsError(JournalError):
    """The server holds as many calls of this kind as it admits at once (``api/admission.py``); nothing was done."""

    reason = Reason.TOO_MANY_CALLS

    def __init__(self, budget: str, limit: int) -> None:
        held = {
            "calls": f"{limit} journal and task calls (max_concurrent_rpcs)",
            "health": f"{limit} health and reflection calls (max_health_rpcs)",
            "connection": f"{limit} health and reflection streams on this connection",
        }.get(budget, f"{limit} {budget} calls")
        super().__init__(
            f"the server already serves {held}; nothing was done: retry later, or end streams no longer read",
            budget=budget,
            limit=limit,
        )
