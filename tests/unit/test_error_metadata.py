"""The server's ErrorInfo metadata keeps ``runjournal.error_metadata.ERROR_METADATA`` (issue 10, item 15).

Walks every reason: each error class, built the ways the server builds it,
travels with exactly the keys the table declares (every always-present one,
no undeclared one), each value parsing as its declared type.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from runjournal.error_metadata import ERROR_METADATA, INDEX, metadata_problems, parse_metadata
from runjournal.v1 import task_service_pb2 as tpb
from runjournal_server.api import auth
from runjournal_server.api.status import to_status
from runjournal_server.core import errors as e
from runjournal_server.core.errors import JournalError, Reason

# Reason -> the ways the server builds that error (every optional key both present and absent).
EXAMPLES: dict[Reason, list[Callable[[], JournalError]]] = {
    Reason.INVALID_ARGUMENT: [lambda: e.InvalidArgumentError("run_id", "bad")],
    Reason.INVALID_RECORD: [
        lambda: e.InvalidRecordError("note.text", "bad", seq=3),
        lambda: e.InvalidRecordError("meta.run_id", "bad"),
    ],
    Reason.RECORD_TOO_LARGE: [lambda: e.RecordTooLargeError(10, 5, seq=2), lambda: e.RecordTooLargeError(10, 5)],
    Reason.RESPONSE_TOO_LARGE: [lambda: e.ResponseTooLargeError("r", 10, 5)],
    Reason.RUN_NOT_FOUND: [lambda: e.RunNotFoundError("r")],
    Reason.RUN_EXISTS: [lambda: e.RunExistsError("r")],
    Reason.SEQ_GAP: [lambda: e.SeqGapError("r", 5, 2)],
    Reason.SEQ_CONFLICT: [lambda: e.SeqConflictError("r", 2, 3)],
    Reason.RUN_CLAIMED: [lambda: e.RunClaimedError("r", 1, 3, "w2"), lambda: e.RunClaimedError("r", 1, 3, "")],
    Reason.RUN_LOCKED: [lambda: e.RunLockedError("r")],
    Reason.VERSION_MISMATCH: [lambda: e.VersionMismatchError("r", 2, 1)],
    Reason.CORRUPT_JOURNAL: [
        lambda: e.CorruptJournalError("r", "torn", line=3, seq=2),
        lambda: e.CorruptJournalError("r", "torn"),
    ],
    Reason.RESUME_REFUSED: [lambda: e.ResumeRefusedError("r", ["provider", "model"], True)],
    Reason.ALREADY_ANSWERED: [lambda: e.AlreadyAnsweredError("r", "c1", 4)],
    Reason.NOT_DEFERRED: [lambda: e.NotDeferredError("r", "c1", "was never deferred")],
    Reason.STORAGE_FULL: [lambda: e.StorageFullError("r", "ENOSPC"), lambda: e.StorageFullError("t", "x", what="task")],
    Reason.STORAGE_UNAVAILABLE: [
        lambda: e.StorageUnavailableError("r", "EIO"),
        lambda: e.StorageUnavailableError(None, "EIO"),
        lambda: e.StorageUnavailableError("t", "EIO", what="task"),
    ],
    Reason.UNAUTHENTICATED: [auth.UnauthenticatedError],
    Reason.PERMISSION_DENIED: [
        lambda: auth.PermissionDeniedError("team-a", run_id="team-b-1"),
        lambda: auth.PermissionDeniedError("team-a", task_id="team-b-t"),
        lambda: auth.PermissionDeniedError("worker", run_id="team-a-1", scope="operator"),
    ],
    Reason.ALREADY_DECIDED: [lambda: e.AlreadyDecidedError("r", "c1", 5)],
    Reason.CALL_NOT_PENDING: [lambda: e.CallNotPendingError("r", "c1")],
    Reason.TASK_NOT_FOUND: [lambda: e.TaskNotFoundError("t")],
    Reason.TASK_CONFLICT: [lambda: e.TaskConflictError("t")],
    Reason.ALREADY_COMPLETED: [lambda: e.AlreadyCompletedError("t", tpb.Task(task_id="t"))],
    Reason.RUN_DELETED: [lambda: e.RunDeletedError("r", 7)],
    Reason.LAST_SEQ_MISMATCH: [lambda: e.LastSeqMismatchError("r", 7, 5)],
    Reason.TASK_DELETED: [lambda: e.TaskDeletedError("t")],
    Reason.TOO_MANY_CALLS: [lambda: e.TooManyCallsError("calls", 128), lambda: e.TooManyCallsError("connection", 4)],
}

CASES = [(reason, index) for reason, builds in EXAMPLES.items() for index in range(len(builds))]


def sent_metadata(err: JournalError) -> dict[str, str]:
    """The ErrorInfo metadata exactly as the status carries it on the wire."""
    status = to_status(err)
    decoded = status_pb2.Status.FromString(dict(status.trailing_metadata)[rpc_status.GRPC_DETAILS_METADATA_KEY])
    info = error_details_pb2.ErrorInfo()
    assert decoded.details[0].Unpack(info)
    return dict(info.metadata)


def test_the_table_names_exactly_the_server_reasons() -> None:
    assert set(ERROR_METADATA) == {str(reason) for reason in Reason}
    assert set(EXAMPLES) == set(Reason)


@pytest.mark.parametrize(("reason", "index"), CASES)
def test_every_reason_travels_with_exactly_its_declared_keys_and_types(reason: Reason, index: int) -> None:
    err = EXAMPLES[reason][index]()
    assert err.reason is reason
    assert metadata_problems(reason, err.typed_metadata) == []
    metadata = sent_metadata(err)
    declared = ERROR_METADATA[reason]
    assert set(metadata) <= set(declared), "undeclared keys"
    assert {k for k, key in declared.items() if key.always} <= set(metadata), "missing always-present keys"
    for name, text in metadata.items():
        assert parse_metadata(declared[name].type, text) is not None, name


@pytest.mark.parametrize("reason", [r for r in Reason if INDEX in ERROR_METADATA[r]])
def test_a_batch_refusal_about_one_record_carries_its_index(reason: Reason) -> None:
    err = EXAMPLES[reason][0]()
    err.annotate(index=3)
    assert sent_metadata(err)[INDEX] == "3"


def test_a_list_travels_comma_joined() -> None:
    assert sent_metadata(e.ResumeRefusedError("r", ["provider", "model"], True))["fields"] == "provider,model"


def test_an_undeclared_key_is_never_sent_and_is_logged_as_a_server_bug(caplog: pytest.LogCaptureFixture) -> None:
    err = e.RunNotFoundError("r")
    err.annotate(index=1)  # RUN_NOT_FOUND is about the run, never about one record
    assert metadata_problems(err.reason, err.typed_metadata) == ["RUN_NOT_FOUND: undeclared metadata key 'index'"]
    with caplog.at_level(logging.ERROR, logger="runjournal_server.api.status"):
        assert sent_metadata(err) == {"run_id": "r"}
    assert "undeclared metadata key 'index'" in caplog.text


def test_a_missing_always_present_key_is_logged_as_a_server_bug(caplog: pytest.LogCaptureFixture) -> None:
    err = e.SeqGapError("r", 3, 2)
    del err._metadata["last_seq"]  # as a careless new raise site would build it
    with caplog.at_level(logging.ERROR, logger="runjournal_server.api.status"):
        assert sent_metadata(err) == {"run_id": "r", "seq": "3"}
    assert "missing metadata 'last_seq'" in caplog.text


def test_a_value_of_the_wrong_type_is_never_sent() -> None:
    err = e.SeqGapError("r", 3, 2)
    err.annotate(run_id=7, seq=True)  # bool is an int in Python, but never a seq
    assert metadata_problems(err.reason, err.typed_metadata) == [
        "SEQ_GAP: metadata 'run_id' must be str, got 7",
        "SEQ_GAP: metadata 'seq' must be int, got True",
    ]
    assert sent_metadata(err) == {"last_seq": "2"}
