"""Exceptions of the runjournal client: one class per server reason.

Every refusal from the server is a gRPC status carrying a ``google.rpc.ErrorInfo``
detail (domain ``runjournal.dev``) whose ``reason`` is a stable upper-case word.
``from_rpc_error`` maps that reason to a class, never the message text, so code
can ``except RunClaimedError`` and read ``err.claim_token`` without parsing.

The reason classes and their typed properties are generated
(``runjournal._reason_errors``) from the one table of each reason's metadata
keys and their types (``runjournal.error_metadata``, the table the server
builds its ErrorInfo with), on the bases of ``runjournal._error_base``; they
are imported from here.

A status without an ErrorInfo did not come from the journal logic: it is a
transport failure (``UnavailableError``, ``DeadlineExceededError``), an
authentication layer in front of the server (``UnauthenticatedError``,
``PermissionDeniedError``) or something else (``StatusError``). A reason this
client does not know (a newer server) is ``UnknownReasonError``.
"""

from __future__ import annotations

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from runjournal._error_base import RunJournalError, StatusError
from runjournal._reason_errors import *  # noqa: F403  (every reason's class, re-exported)
from runjournal._reason_errors import REASON_ERRORS, PermissionDeniedError, UnauthenticatedError
from runjournal._reason_errors import __all__ as _REASON_NAMES

ERROR_DOMAIN = "runjournal.dev"
"""The ``ErrorInfo.domain`` of every runjournal refusal."""

_STATUS_DETAILS_KEY = "grpc-status-details-bin"


class UnknownReasonError(RunJournalError):
    """A runjournal reason this client does not know (a newer server)."""


# --- statuses without an ErrorInfo: not from the journal logic ----------------


class UnavailableError(StatusError):
    """UNAVAILABLE without a reason: the server could not be reached."""


class DeadlineExceededError(StatusError):
    """DEADLINE_EXCEEDED: no answer within the call's deadline."""


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


TRANSPORT_CODES = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED)
"""The codes of a failure the journal logic never answered, when the status carries no ErrorInfo.

CANCELLED among them: this client never sees its own cancellations as a status
(asyncio raises ``CancelledError``; a blocking call cannot be cancelled), so a
CANCELLED is the server's or the connection's: gRPC's stop cancels the calls
it queued at SIGTERM, a server past its shutdown grace cancels those still
running, and a connection lost under a call ends it so.
"""


def is_retryable(err: grpc.RpcError) -> bool:
    """True for a transport-level UNAVAILABLE, DEADLINE_EXCEEDED or CANCELLED carrying no ErrorInfo.

    A status with an ErrorInfo (STORAGE_UNAVAILABLE, RUN_LOCKED, ...) is an
    answer from the server, and the caller decides what to do about it.
    """
    return err.code() in TRANSPORT_CODES and error_info(err) is None


__all__ = [
    "CODE_ERRORS",
    "ERROR_DOMAIN",
    "DeadlineExceededError",
    "RunJournalError",
    "StatusError",
    "UnavailableError",
    "UnknownReasonError",
    "error_info",
    "from_rpc_error",
    "is_retryable",
    *_REASON_NAMES,
]
