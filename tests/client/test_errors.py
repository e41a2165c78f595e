"""The client raises one class per server reason, chosen by ErrorInfo, never by text."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2

import runjournal
from runjournal import errors
from runjournal._retry import RESENT_REASONS
from runjournal.v1 import task_service_pb2 as tpb
from runjournal_server.api.status import STATUS_CODES
from runjournal_server.core.errors import Reason
from tests.client.conftest import FAST_RETRY
from tests.client.fake_journal import (
    FakeServer,
    abort_plain,
    abort_with_reason,
    abort_with_rewritten_message,
)
from tests.client.flavours import Flavour

# reason -> (metadata the server sends, typed properties the client must expose)
REASON_CASES: dict[str, tuple[dict[str, str], dict[str, Any]]] = {
    "INVALID_ARGUMENT": ({"field": "run_id"}, {"field": "run_id"}),
    "INVALID_RECORD": ({"field": "payload.iteration", "seq": "3"}, {"field": "payload.iteration", "seq": 3}),
    "RECORD_TOO_LARGE": (
        {"size": "2000000", "limit": "1048576", "seq": "4"},
        {"size": 2_000_000, "limit": 1_048_576, "seq": 4},
    ),
    "RESPONSE_TOO_LARGE": (
        {"run_id": "r1", "size": "70000000", "limit": "67108864"},
        {"run_id": "r1", "size": 70_000_000, "limit": 67_108_864},
    ),
    "RUN_NOT_FOUND": ({"run_id": "r1"}, {"run_id": "r1"}),
    "RUN_EXISTS": ({"run_id": "r1", "last_seq": "6"}, {"run_id": "r1", "last_seq": 6}),
    "SEQ_GAP": ({"run_id": "r1", "seq": "9", "last_seq": "5"}, {"seq": 9, "last_seq": 5}),
    "SEQ_CONFLICT": ({"run_id": "r1", "seq": "4", "last_seq": "5"}, {"seq": 4, "last_seq": 5}),
    "RUN_CLAIMED": (
        {"run_id": "r1", "claim_token": "4", "claimed_by": "worker-2"},
        {"claim_token": 4, "claimed_by": "worker-2"},
    ),
    "RUN_LOCKED": ({"run_id": "r1"}, {"run_id": "r1"}),
    "VERSION_MISMATCH": (
        {"found_version": "2", "expected_version": "1"},
        {"found_version": 2, "expected_version": 1},
    ),
    "CORRUPT_JOURNAL": ({"run_id": "r1", "line": "7", "seq": "6"}, {"line": 7, "seq": 6}),
    "RESUME_REFUSED": ({"fields": "provider,model"}, {"fields": ["provider", "model"]}),
    "ALREADY_ANSWERED": (
        {"tool_use_id": "c2", "answered_at_seq": "11"},
        {"tool_use_id": "c2", "answered_at_seq": 11},
    ),
    "NOT_DEFERRED": ({"tool_use_id": "c1"}, {"tool_use_id": "c1"}),
    "ALREADY_DECIDED": (
        {"run_id": "r1", "tool_use_id": "c3", "decided_at_seq": "12"},
        {"run_id": "r1", "tool_use_id": "c3", "decided_at_seq": 12},
    ),
    "CALL_NOT_PENDING": ({"run_id": "r1", "tool_use_id": "c4"}, {"run_id": "r1", "tool_use_id": "c4"}),
    "TASK_NOT_FOUND": ({"task_id": "t1"}, {"task_id": "t1"}),
    "TASK_CONFLICT": ({"task_id": "t2"}, {"task_id": "t2"}),
    # Without the stored task among the status details there is nothing to unpack.
    "ALREADY_COMPLETED": ({"task_id": "t3"}, {"task_id": "t3", "stored_task": None}),
    "STORAGE_FULL": ({"run_id": "r1"}, {"run_id": "r1"}),
    "STORAGE_UNAVAILABLE": ({"run_id": "r1"}, {"run_id": "r1"}),
    "UNAUTHENTICATED": ({}, {}),
    "PERMISSION_DENIED": ({"run_id": "r1"}, {"run_id": "r1"}),
    "RUN_DELETED": ({"run_id": "r1", "last_seq": "9"}, {"run_id": "r1", "last_seq": 9}),
    "LAST_SEQ_MISMATCH": (
        {"run_id": "r1", "last_seq": "10", "expected_last_seq": "9"},
        {"run_id": "r1", "last_seq": 10, "expected_last_seq": 9},
    ),
    "TASK_DELETED": ({"task_id": "t4"}, {"task_id": "t4"}),
    "TOO_MANY_CALLS": ({"budget": "calls", "limit": "128"}, {"budget": "calls", "limit": 128}),
}


def _class_name(reason: str) -> str:
    return "".join(word.capitalize() for word in reason.split("_")) + "Error"


def test_every_server_reason_has_a_client_class_named_after_it() -> None:
    assert set(errors.REASON_ERRORS) == {str(reason) for reason in Reason}
    assert set(REASON_CASES) == set(errors.REASON_ERRORS)
    for reason, cls in errors.REASON_ERRORS.items():
        assert cls.__name__ == _class_name(reason)
        assert reason == cls.REASON
        assert getattr(runjournal, cls.__name__) is cls


@pytest.mark.parametrize("reason", sorted(REASON_CASES))
def test_each_reason_is_raised_as_its_class_with_typed_numbers_and_is_not_retried_but_storage_unavailable(
    fake: FakeServer, client: runjournal.JournalClient, reason: str
) -> None:
    metadata, expected = REASON_CASES[reason]
    code = STATUS_CODES[Reason(reason)]
    attempts = FAST_RETRY.max_attempts if reason in RESENT_REASONS else 1
    fake.journal.fail_next("Fold", *[abort_with_reason(reason, code, metadata)] * attempts)

    with pytest.raises(errors.REASON_ERRORS[reason]) as caught:
        client.fold("r1")

    err = caught.value
    assert err.reason == reason
    assert err.code == code
    assert err.metadata == metadata
    assert err.message == f"{reason} happened"
    for name, value in expected.items():
        assert getattr(err, name) == value, name
    assert isinstance(err.__cause__, grpc.RpcError)
    # UNAVAILABLE with a reason (RUN_LOCKED) is an answer, not a transport failure; STORAGE_UNAVAILABLE alone
    # says "nothing was acknowledged, retry the same request", and is resent until the attempts are spent.
    assert len(fake.journal.requests("Fold")) == attempts


async def test_the_async_client_maps_reasons_the_same_way(fake: FakeServer, flavour: Flavour) -> None:
    fake.journal.fail_next(
        "Append",
        abort_with_reason("RUN_CLAIMED", grpc.StatusCode.FAILED_PRECONDITION, {"claim_token": "8", "claimed_by": "w9"}),
    )
    async with flavour.AsyncJournalClient(fake.address) as client:
        with pytest.raises(runjournal.RunClaimedError) as caught:
            await client.append("r1", 1, runjournal.note_record("x"))
    assert (caught.value.claim_token, caught.value.claimed_by) == (8, "w9")


def test_a_batch_refusal_names_the_refused_record(fake: FakeServer, client: runjournal.JournalClient) -> None:
    fake.journal.fail_next(
        "AppendBatch",
        abort_with_reason("INVALID_RECORD", grpc.StatusCode.INVALID_ARGUMENT, {"index": "2", "seq": "5"}),
    )
    with pytest.raises(runjournal.InvalidRecordError) as caught:
        client.append_batch("r1", 1, [runjournal.note_record("x")])
    assert caught.value.index == 2 and caught.value.seq == 5


def test_a_reason_unknown_to_this_client_keeps_its_reason_and_code(
    fake: FakeServer, client: runjournal.JournalClient
) -> None:
    fake.journal.fail_next("Fold", abort_with_reason("RUN_ON_FIRE", grpc.StatusCode.FAILED_PRECONDITION, {"heat": "9"}))
    with pytest.raises(runjournal.UnknownReasonError) as caught:
        client.fold("r1")
    assert caught.value.reason == "RUN_ON_FIRE"
    assert caught.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert caught.value.metadata == {"heat": "9"}


def test_an_error_info_from_another_domain_is_not_read_as_a_runjournal_reason(
    fake: FakeServer, client: runjournal.JournalClient
) -> None:
    fake.journal.fail_next(
        "Fold",
        abort_with_reason("SEQ_GAP", grpc.StatusCode.PERMISSION_DENIED, {}, domain="mesh.example.com"),
    )
    with pytest.raises(runjournal.PermissionDeniedError) as caught:
        client.fold("r1")
    assert not isinstance(caught.value, runjournal.SeqGapError)


def test_a_message_rewritten_on_the_way_still_maps_by_reason(
    fake: FakeServer, client: runjournal.JournalClient
) -> None:
    fake.journal.fail_next(
        "Fold",
        abort_with_rewritten_message("SEQ_GAP", grpc.StatusCode.FAILED_PRECONDITION, {"last_seq": "3"}),
    )
    with pytest.raises(runjournal.SeqGapError) as caught:
        client.fold("r1")
    assert caught.value.last_seq == 3
    assert caught.value.message == "rewritten by a proxy"


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        (grpc.StatusCode.UNAUTHENTICATED, runjournal.UnauthenticatedError),
        (grpc.StatusCode.PERMISSION_DENIED, runjournal.PermissionDeniedError),
        (grpc.StatusCode.INTERNAL, runjournal.StatusError),
        (grpc.StatusCode.UNIMPLEMENTED, runjournal.StatusError),
    ],
)
def test_statuses_without_error_info_map_by_code_and_are_not_retried(
    fake: FakeServer, client: runjournal.JournalClient, code: grpc.StatusCode, cls: type[Exception]
) -> None:
    fake.journal.fail_next("Fold", abort_plain(code))
    with pytest.raises(cls) as caught:
        client.fold("r1")
    assert type(caught.value) is cls
    assert caught.value.code == code and caught.value.reason == ""  # type: ignore[attr-defined]
    assert len(fake.journal.requests("Fold")) == 1


def test_malformed_numbers_in_metadata_read_as_none() -> None:
    err = runjournal.SeqGapError("m", reason="SEQ_GAP", metadata={"last_seq": "many"})
    assert err.last_seq is None and err.seq is None


def _stored_task() -> tpb.Task:
    task = tpb.Task(task_id="t1", request_json='{"q":1}', state=tpb.TASK_STATE_FAILED)
    task.outcome.failure.code = "timeout"
    task.outcome.completed_at.FromSeconds(1_700_000_000)
    return task


def test_already_completed_carries_the_stored_task_from_the_status_details(
    fake: FakeServer, client: runjournal.JournalClient
) -> None:
    stored = _stored_task()
    # Another detail before the task: the client looks for the Task, not at a position.
    other = error_details_pb2.ErrorInfo(reason="NOISE", domain="elsewhere.example")
    fake.tasks.fail_next(
        "GetTask",
        abort_with_reason(
            "ALREADY_COMPLETED", grpc.StatusCode.ALREADY_EXISTS, {"task_id": "t1"}, details=[other, stored]
        ),
    )
    with pytest.raises(runjournal.AlreadyCompletedError) as caught:
        client.tasks.get("t1")
    assert caught.value.stored_task == stored
    assert caught.value.task_id == "t1"
    assert len(caught.value.details) == 2  # the ErrorInfo is not repeated among the details


async def test_the_async_task_client_maps_already_completed_with_its_task(fake: FakeServer, flavour: Flavour) -> None:
    stored = _stored_task()
    fake.tasks.fail_next(
        "CompleteTask",
        abort_with_reason("ALREADY_COMPLETED", grpc.StatusCode.ALREADY_EXISTS, {"task_id": "t1"}, details=[stored]),
    )
    async with flavour.AsyncTaskClient(fake.address) as tasks:
        with pytest.raises(runjournal.AlreadyCompletedError) as caught:
            await tasks.complete("t1", failure=("timeout", ""))
    assert caught.value.stored_task == stored
