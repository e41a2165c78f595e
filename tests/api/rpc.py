"""Helpers for API tests: read the ErrorInfo of a failed call, look at journals on disk."""

from __future__ import annotations

import uuid

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from runjournal.v1 import journal_service_pb2, journal_service_pb2_grpc
from tests.servers import ServerProcess


def error_info(err: grpc.RpcError) -> error_details_pb2.ErrorInfo:
    """The ErrorInfo detail every refusal carries (fails the test when missing)."""
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    assert status is not None, f"no rich status on {err!r}"
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            return info
    raise AssertionError(f"no ErrorInfo on {err!r}")


def reason(err: grpc.RpcError) -> str:
    return error_info(err).reason


def new_run_id(prefix: str = "run") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def journal_bytes(server: ServerProcess, run_id: str) -> bytes:
    """What the backend holds for the run: the raw file on the file backend (a partial
    write would show), the stored records through ``Read`` on JetStream; b"" when absent."""
    if server.backend == "file":
        path = server.data_dir / f"{run_id}.jsonl"
        return path.read_bytes() if path.exists() else b""
    with grpc.insecure_channel(server.address) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        try:
            return b"".join(r.stored_line + b"\n" for r in stub.Read(journal_service_pb2.ReadRequest(run_id=run_id)))
        except grpc.RpcError as err:
            if reason(err) == "RUN_NOT_FOUND":
                return b""
            raise
