"""What the sync and asyncio clients share: defaults, channel options, requests.

Each client method builds its request here, so the two clients send the same
bytes for the same arguments and differ only in how they wait.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence
from typing import Any, cast

from runjournal._builders import content_of, enum_value
from runjournal.v1 import journal_service_pb2, records_pb2, state_pb2

DEFAULT_TIMEOUT_SECONDS = 10.0
"""The deadline of every call unless the client or the call says otherwise."""

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The gRPC message limit, matching the server's default (64 MiB)."""

RunStatusLike = int | str
"""A ``RunStatus`` value, or its short name: "open", "completed", "suspended", ..."""


def channel_options(extra: Sequence[tuple[str, Any]] = ()) -> list[tuple[str, Any]]:
    """Channel options: the message limits, then ``extra`` (which may override them)."""
    options: dict[str, Any] = {
        "grpc.max_send_message_length": MAX_MESSAGE_BYTES,
        "grpc.max_receive_message_length": MAX_MESSAGE_BYTES,
    }
    options.update(dict(extra))
    return list(options.items())


def run_status_value(value: RunStatusLike) -> state_pb2.RunStatus:
    return cast(state_pb2.RunStatus, enum_value(state_pb2.RunStatus, "RUN_STATUS_", value))


def append_request(run_id: str, claim_token: int, record: records_pb2.Record) -> journal_service_pb2.AppendRequest:
    return journal_service_pb2.AppendRequest(run_id=run_id, claim_token=claim_token, record=record)


def append_batch_request(
    run_id: str, claim_token: int, records: Sequence[records_pb2.Record]
) -> journal_service_pb2.AppendBatchRequest:
    return journal_service_pb2.AppendBatchRequest(run_id=run_id, claim_token=claim_token, records=list(records))


def claim_request(
    run_id: str,
    worker_id: str,
    fingerprint: records_pb2.Fingerprint,
    *,
    force: bool,
    host: str | None,
    pid: int | None,
    reason: str,
) -> journal_service_pb2.ClaimRequest:
    """A claim request; ``host`` and ``pid`` default to this process's, read at call time."""
    return journal_service_pb2.ClaimRequest(
        run_id=run_id,
        worker_id=worker_id,
        host=socket.gethostname() if host is None else host,
        pid=os.getpid() if pid is None else pid,
        reason=reason,
        fingerprint=fingerprint,
        force=force,
    )


def fold_request(run_id: str, as_of_seq: int) -> journal_service_pb2.FoldRequest:
    return journal_service_pb2.FoldRequest(run_id=run_id, as_of_seq=as_of_seq)


def answer_request(
    run_id: str,
    tool_use_id: str,
    content: Sequence[records_pb2.ContentBlock] | None,
    text: str | None,
    is_error: bool,
) -> journal_service_pb2.AnswerRequest:
    return journal_service_pb2.AnswerRequest(
        run_id=run_id,
        tool_use_id=tool_use_id,
        content=content_of(content, text, what="answer"),
        is_error=is_error,
    )


def is_same_answer(stored: records_pb2.Record, request: journal_service_pb2.AnswerRequest) -> bool:
    """True when ``stored`` is the tool_result the server writes for ``request``.

    Answer is not deduplicated by seq like Append: when an attempt's reply is
    lost and the resent request finds the call answered, the stored result is
    compared with ours to tell "our first attempt landed" from "someone else
    answered first".
    """
    if stored.WhichOneof("payload") != "tool_result":
        return False
    result = stored.tool_result
    return (
        result.tool_use_id == request.tool_use_id
        and list(result.content) == list(request.content)
        and result.is_error == request.is_error
    )


def list_runs_request(
    page_size: int, page_token: str, status: RunStatusLike, labels: Mapping[str, str] | None
) -> journal_service_pb2.ListRunsRequest:
    return journal_service_pb2.ListRunsRequest(
        page_size=page_size,
        page_token=page_token,
        status=run_status_value(status),
        labels=dict(labels or {}),
    )


def read_request(run_id: str, from_seq: int) -> journal_service_pb2.ReadRequest:
    return journal_service_pb2.ReadRequest(run_id=run_id, from_seq=from_seq)
