"""Every reason has a gRPC code and travels as an ErrorInfo."""

from __future__ import annotations

import grpc
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from runjournal_server.api.status import ERROR_DOMAIN, STATUS_CODES, to_status
from runjournal_server.core.errors import JournalError, Reason


def every_error_class() -> list[type[JournalError]]:
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
