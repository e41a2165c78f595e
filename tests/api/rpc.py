"""Helpers for API tests: read the ErrorInfo of a failed call, look at journals on disk."""

from __future__ import annotations

import uuid
from pathlib import Path

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status


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


def journal_bytes(data_dir: Path, run_id: str) -> bytes:
    path = data_dir / f"{run_id}.jsonl"
    return path.read_bytes() if path.exists() else b""
