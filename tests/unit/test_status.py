"""Every reason has a gRPC code and travels as an ErrorInfo; a failure that is no refusal ends without one."""

from __future__ import annotations

import logging
from typing import NoReturn

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from runjournal_server.api import auth  # noqa: F401  (defines the access refusals every_error_class must find)
from runjournal_server.api.status import ERROR_DOMAIN, INTERNAL_ERROR, SHUTTING_DOWN, STATUS_CODES, abort, to_status
from runjournal_server.core import errors as e
from runjournal_server.core.errors import JournalError, Reason
from runjournal_server.runs.events import EventsClosedError


def every_error_class() -> list[type[JournalError]]:
    """Every subclass loaded: ``core.errors``'s and ``api.auth``'s (the access refusals), both imported above."""
    found, pending = [], list(JournalError.__subclasses__())
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def test_every_reason_has_a_status_code():
    assert set(STATUS_CODES) == set(Reason)
    assert grpc.StatusCode.OK not in STATUS_CODES.values()


def test_every_reason_has_exactly_one_error_class():
    reasons = [cls.reason for cls in every_error_class()]
    assert sorted(reasons) == sorted(Reason)


def test_status_carries_reason_domain_and_metadata():
    class Probe(JournalError):
        reason = Reason.SEQ_GAP

    status = to_status(Probe("seq 5 would leave a gap", run_id="r", last_seq=3))
    assert status.code == grpc.StatusCode.FAILED_PRECONDITION
    details = dict(status.trailing_metadata)
    decoded = status_pb2.Status.FromString(details[rpc_status.GRPC_DETAILS_METADATA_KEY])
    info = error_details_pb2.ErrorInfo()
    assert decoded.details[0].Unpack(info)
    assert (info.reason, info.domain) == ("SEQ_GAP", ERROR_DOMAIN)
    assert dict(info.metadata) == {"run_id": "r", "last_seq": "3"}


class AbortedError(Exception):
    """What the recording context raises, as gRPC's abort does."""


class RecordingContext:
    """The two ways a servicer context ends a call, recorded instead of sent."""

    def __init__(self) -> None:
        self.ended: list[tuple[grpc.StatusCode, str, tuple[tuple[str, str | bytes], ...]]] = []

    async def abort_with_status(self, status: grpc.Status) -> NoReturn:
        self.ended.append((status.code, status.details, tuple(status.trailing_metadata)))
        raise AbortedError

    async def abort(self, code: grpc.StatusCode, details: str = "") -> NoReturn:
        self.ended.append((code, details, ()))
        raise AbortedError


async def ended_by(err: Exception) -> tuple[grpc.StatusCode, str, tuple[tuple[str, str | bytes], ...]]:
    context = RecordingContext()
    with pytest.raises(AbortedError):
        await abort(context, err, "Append")  # type: ignore[arg-type]
    [ending] = context.ended
    return ending


async def test_a_refusal_ends_with_its_rich_status() -> None:
    err = e.RunNotFoundError("r")
    expected = to_status(err)
    assert await ended_by(err) == (expected.code, expected.details, tuple(expected.trailing_metadata))


async def test_a_stream_the_shutdown_ends_is_unavailable_without_a_reason() -> None:
    assert await ended_by(EventsClosedError()) == (grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN, ())


async def test_an_unexpected_failure_is_internal_and_logged_never_sent(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="runjournal_server.api.status"):
        ending = await ended_by(KeyError("secret-token-value"))
    assert ending == (grpc.StatusCode.INTERNAL, INTERNAL_ERROR, ())
    assert "unexpected failure in Append" in caplog.text and "secret-token-value" in caplog.text
