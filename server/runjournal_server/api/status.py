"""The only place that knows gRPC status codes: how every call that fails ends.

A domain error becomes a ``google.rpc.Status`` whose code comes from one table
and whose ``ErrorInfo`` carries the stable reason and the error's metadata, as
``runjournal.error_metadata.ERROR_METADATA`` declares it for that reason. The
two failures that are not refusals end without a reason (``abort``): a stream
the server's shutdown ends, UNAVAILABLE, and anything unexpected, INTERNAL
without its details (they go to the server log, never to the caller).
"""

from __future__ import annotations

import logging
from typing import NoReturn

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from runjournal.error_metadata import metadata_problems
from runjournal_server.core.errors import JournalError, Reason
from runjournal_server.runs.events import EventsClosedError

log = logging.getLogger(__name__)

ERROR_DOMAIN = "runjournal.dev"

SHUTTING_DOWN = "the server is shutting down: watch again (from the last seq received) through another server"
"""Ends Watch and WatchRuns streams at shutdown: UNAVAILABLE without a reason, which clients resume."""

INTERNAL_ERROR = "internal error; see the server log"
"""All a caller learns of an unexpected failure: its details may hold what the caller must not see."""

STATUS_CODES: dict[Reason, grpc.StatusCode] = {
    Reason.INVALID_ARGUMENT: grpc.StatusCode.INVALID_ARGUMENT,
    Reason.INVALID_RECORD: grpc.StatusCode.INVALID_ARGUMENT,
    Reason.RECORD_TOO_LARGE: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Reason.RESPONSE_TOO_LARGE: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Reason.RUN_NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    Reason.RUN_EXISTS: grpc.StatusCode.ALREADY_EXISTS,
    Reason.SEQ_GAP: grpc.StatusCode.FAILED_PRECONDITION,
    Reason.SEQ_CONFLICT: grpc.StatusCode.ABORTED,
    Reason.RUN_CLAIMED: grpc.StatusCode.FAILED_PRECONDITION,
    Reason.RUN_LOCKED: grpc.StatusCode.UNAVAILABLE,
    Reason.VERSION_MISMATCH: grpc.StatusCode.FAILED_PRECONDITION,
    Reason.CORRUPT_JOURNAL: grpc.StatusCode.DATA_LOSS,
    Reason.RESUME_REFUSED: grpc.StatusCode.FAILED_PRECONDITION,
    Reason.ALREADY_ANSWERED: grpc.StatusCode.ALREADY_EXISTS,
    Reason.NOT_DEFERRED: grpc.StatusCode.FAILED_PRECONDITION,
    Reason.STORAGE_FULL: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Reason.STORAGE_UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
    Reason.UNAUTHENTICATED: grpc.StatusCode.UNAUTHENTICATED,
    Reason.PERMISSION_DENIED: grpc.StatusCode.PERMISSION_DENIED,
    Reason.ALREADY_DECIDED: grpc.StatusCode.ALREADY_EXISTS,
    Reason.CALL_NOT_PENDING: grpc.StatusCode.FAILED_PRECONDITION,
    Reason.TASK_NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    Reason.TASK_CONFLICT: grpc.StatusCode.ALREADY_EXISTS,
    Reason.ALREADY_COMPLETED: grpc.StatusCode.ALREADY_EXISTS,
    Reason.RUN_DELETED: grpc.StatusCode.NOT_FOUND,
    Reason.LAST_SEQ_MISMATCH: grpc.StatusCode.FAILED_PRECONDITION,
    Reason.TASK_DELETED: grpc.StatusCode.NOT_FOUND,
    Reason.TOO_MANY_CALLS: grpc.StatusCode.RESOURCE_EXHAUSTED,
}


def status_code(reason: Reason) -> grpc.StatusCode:
    """The gRPC code for a reason."""
    return STATUS_CODES[reason]


def to_status(err: JournalError) -> grpc.Status:
    """A grpc.Status with an ErrorInfo detail, ready for ``context.abort_with_status``."""
    code = STATUS_CODES[err.reason]
    # A refusal still goes out with its reason; metadata breaking the table is
    # left out (``err.metadata``) and logged as the server bug it is.
    for problem in metadata_problems(err.reason, err.typed_metadata):
        log.error("error metadata breaks ERROR_METADATA: %s", problem)
    info = error_details_pb2.ErrorInfo(reason=str(err.reason), domain=ERROR_DOMAIN, metadata=dict(err.metadata))
    details = []
    for message in (info, *err.details):
        detail = any_pb2.Any()
        detail.Pack(message)
        details.append(detail)
    status = status_pb2.Status(code=getattr(code_pb2, code.name), message=err.message, details=details)
    return rpc_status.to_status(status)


async def abort(context: grpc.aio.ServicerContext, err: Exception, method: str) -> NoReturn:
    """End the call ``method`` because of ``err``.

    A refusal (``JournalError``) ends with its rich status. A stream the
    server's shutdown ends (``EventsClosedError``) ends UNAVAILABLE without a
    reason, which clients resume elsewhere as after a transport failure.
    Anything else is a server bug: logged with its traceback, and answered
    INTERNAL without its details.
    """
    if isinstance(err, JournalError):
        await context.abort_with_status(to_status(err))
    elif isinstance(err, EventsClosedError):
        await context.abort(grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN)
    else:
        log.error("unexpected failure in %s", method, exc_info=err)
        await context.abort(grpc.StatusCode.INTERNAL, INTERNAL_ERROR)
    raise AssertionError("unreachable")  # abort always raises
