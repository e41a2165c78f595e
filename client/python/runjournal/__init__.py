"""runjournal: thin Python clients for the runjournal gRPC journal server.

``JournalClient`` (sync) and ``AsyncJournalClient`` (asyncio) mirror the RPCs
of ``runjournal.v1.JournalService`` with deadlines, retries of transport
failures only, and one exception class per server reason (``runjournal.errors``).
``Run`` and ``AsyncRun`` are handles for workers that track the claim token and
the next seq. The generated messages live in ``runjournal.v1``.
"""

from runjournal._builders import (
    FORMAT_VERSION,
    approval_record,
    assistant_record,
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
from runjournal.aio import AsyncJournalClient
from runjournal.client import JournalClient
from runjournal.errors import (
    AlreadyAnsweredError,
    CorruptJournalError,
    DeadlineExceededError,
    InvalidArgumentError,
    InvalidRecordError,
    NotDeferredError,
    PermissionDeniedError,
    RecordTooLargeError,
    ResumeRefusedError,
    RunClaimedError,
    RunExistsError,
    RunJournalError,
    RunLockedError,
    RunNotFoundError,
    SeqConflictError,
    SeqGapError,
    StatusError,
    StorageFullError,
    StorageUnavailableError,
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
    "AsyncJournalClient",
    "AsyncRun",
    "CorruptJournalError",
    "DeadlineExceededError",
    "InvalidArgumentError",
    "InvalidRecordError",
    "JournalClient",
    "NotDeferredError",
    "PermissionDeniedError",
    "RecordTooLargeError",
    "ResumeRefusedError",
    "RetryPolicy",
    "Run",
    "RunClaimedError",
    "RunExistsError",
    "RunJournalError",
    "RunLockedError",
    "RunNotFoundError",
    "SeqConflictError",
    "SeqGapError",
    "StatusError",
    "StorageFullError",
    "StorageUnavailableError",
    "UnauthenticatedError",
    "UnavailableError",
    "UnknownReasonError",
    "VersionMismatchError",
    "approval_record",
    "assistant_record",
    "canonical_json",
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
