"""runjournal: thin Python clients for the runjournal gRPC journal server.

``JournalClient`` (sync) and ``AsyncJournalClient`` (asyncio) mirror the RPCs
of ``runjournal.v1.JournalService`` with deadlines, retries of transport
failures only, and one exception class per server reason (``runjournal.errors``).
``TaskClient`` and ``AsyncTaskClient`` do the same for ``TaskService``.
``Run`` and ``AsyncRun`` are handles for workers that track the claim token and
the next seq. The generated messages live in ``runjournal.v1``.

Modules: ``aio`` (the asyncio clients; ``client`` and each ``_*_sync`` are
generated from them and their ``_*_aio`` parts), ``run`` (the worker handles;
``_run_base`` what they share), ``_builders`` (records and blocks),
``_common`` (requests and answers shared by both clients), ``_retry``,
``_watching``, ``fingerprint``; ``errors`` (one exception per reason: the
bases in ``_error_base``, the reason classes in ``_reason_errors``, generated
from the table of ``error_metadata``); for people ``cli``, ``lifecycle_cli``,
``server_commands``, ``_cli_support``, ``render`` (text views), ``web/`` (the
browser inbox), ``export_otel`` (the GenAI export; its spans in ``genai_spans``).
"""

from runjournal._builders import (
    FORMAT_VERSION,
    approval_record,
    assistant_record,
    compaction_record,
    deferral_record,
    meta_record,
    note_record,
    opaque_block,
    redacted_thinking_block,
    terminal_record,
    text_block,
    thinking_block,
    tool_result_record,
    tool_use_block,
    user_record,
)
from runjournal._common import DEFAULT_TIMEOUT_SECONDS, MAX_MESSAGE_BYTES
from runjournal._retry import NO_RETRY, RetryPolicy
from runjournal._watching import CaughtUp, WatchedRecord
from runjournal.aio import AsyncJournalClient, AsyncTaskClient
from runjournal.client import JournalClient, TaskClient
from runjournal.errors import (
    AlreadyAnsweredError,
    AlreadyCompletedError,
    AlreadyDecidedError,
    CallNotPendingError,
    CorruptJournalError,
    DeadlineExceededError,
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
    RunJournalError,
    RunLockedError,
    RunNotFoundError,
    SeqConflictError,
    SeqGapError,
    StatusError,
    StorageFullError,
    StorageUnavailableError,
    TaskConflictError,
    TaskDeletedError,
    TaskNotFoundError,
    TooManyCallsError,
    UnauthenticatedError,
    UnavailableError,
    UnknownReasonError,
    VersionMismatchError,
    from_rpc_error,
)
from runjournal.fingerprint import canonical_json, make_fingerprint, system_prompt_sha256, tools_sha256
from runjournal.run import AsyncRun, Run

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "FORMAT_VERSION",
    "MAX_MESSAGE_BYTES",
    "NO_RETRY",
    "AlreadyAnsweredError",
    "AlreadyCompletedError",
    "AlreadyDecidedError",
    "AsyncJournalClient",
    "AsyncRun",
    "AsyncTaskClient",
    "CallNotPendingError",
    "CaughtUp",
    "CorruptJournalError",
    "DeadlineExceededError",
    "InvalidArgumentError",
    "InvalidRecordError",
    "JournalClient",
    "LastSeqMismatchError",
    "NotDeferredError",
    "PermissionDeniedError",
    "RecordTooLargeError",
    "ResponseTooLargeError",
    "ResumeRefusedError",
    "RetryPolicy",
    "Run",
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
    "TaskClient",
    "TaskConflictError",
    "TaskDeletedError",
    "TaskNotFoundError",
    "TooManyCallsError",
    "UnauthenticatedError",
    "UnavailableError",
    "UnknownReasonError",
    "VersionMismatchError",
    "WatchedRecord",
    "approval_record",
    "assistant_record",
    "canonical_json",
    "compaction_record",
    "deferral_record",
    "from_rpc_error",
    "make_fingerprint",
    "meta_record",
    "note_record",
    "opaque_block",
    "redacted_thinking_block",
    "system_prompt_sha256",
    "terminal_record",
    "text_block",
    "thinking_block",
    "tool_result_record",
    "tool_use_block",
    "tools_sha256",
    "user_record",
]
