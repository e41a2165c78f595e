"""ForkRun, DeleteRun, DeleteTask and the new ListRuns filters: what the clients send and how they retry."""

from __future__ import annotations

import datetime

import grpc
import pytest

from runjournal import JournalClient, TaskClient
from runjournal.errors import LastSeqMismatchError, RunExistsError, TaskDeletedError
from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import records_pb2
from tests.client.conftest import FAST_RETRY
from tests.client.fake_journal import FakeServer, abort_plain, abort_with_reason
from tests.client.flavours import Flavour


@pytest.fixture
def tasks(fake: FakeServer, flavour: Flavour) -> TaskClient:
    return flavour.TaskClient(fake.address, retry=FAST_RETRY, timeout=5.0)


def _fork_meta(source: str, seq: int) -> records_pb2.JournalRecord:
    origin = records_pb2.ForkOrigin(run_id=source, seq=seq, prefix_sha256="cd" * 32)
    return records_pb2.JournalRecord(seq=1, meta=records_pb2.Meta(run_id="fork-1", forked_from=origin))


def test_fork_run_sends_the_source_the_seq_and_the_new_id(fake: FakeServer, client: JournalClient) -> None:
    answer = client.fork_run("run-1", 4, "fork-1")
    assert fake.journal.requests("ForkRun") == [pb.ForkRunRequest(run_id="run-1", at_seq=4, new_run_id="fork-1")]
    assert (answer.run_id, answer.last_seq, answer.forked_from.run_id) == ("fork-1", 4, "run-1")


def test_a_resent_fork_that_finds_its_own_fork_returns_it(fake: FakeServer, client: JournalClient) -> None:
    fake.journal.fail_next(
        "ForkRun",
        abort_plain(grpc.StatusCode.UNAVAILABLE),
        abort_with_reason("RUN_EXISTS", grpc.StatusCode.ALREADY_EXISTS, {"run_id": "fork-1"}),
    )
    fake.journal.read_last_seq = 1
    fake.journal.stored[1] = _fork_meta("run-1", 4)

    answer = client.fork_run("run-1", 4, "fork-1")

    assert (answer.run_id, answer.last_seq, answer.forked_from.seq) == ("fork-1", 4, 4)
    assert answer.forked_from.prefix_sha256 == "cd" * 32
    assert len(fake.journal.requests("ForkRun")) == 2


@pytest.mark.parametrize(
    "meta",
    [
        _fork_meta("another-run", 4),
        _fork_meta("run-1", 3),
        records_pb2.JournalRecord(seq=1, meta=records_pb2.Meta(run_id="fork-1")),
    ],
    ids=["other-source", "other-seq", "not-a-fork"],
)
def test_a_resent_fork_that_finds_another_run_is_run_exists(
    fake: FakeServer, client: JournalClient, meta: records_pb2.JournalRecord
) -> None:
    fake.journal.fail_next(
        "ForkRun",
        abort_plain(grpc.StatusCode.UNAVAILABLE),
        abort_with_reason("RUN_EXISTS", grpc.StatusCode.ALREADY_EXISTS, {"run_id": "fork-1"}),
    )
    fake.journal.read_last_seq = 1
    fake.journal.stored[1] = meta
    with pytest.raises(RunExistsError):
        client.fork_run("run-1", 4, "fork-1")


def test_a_first_fork_told_run_exists_raises_without_looking(fake: FakeServer, client: JournalClient) -> None:
    fake.journal.fail_next(
        "ForkRun", abort_with_reason("RUN_EXISTS", grpc.StatusCode.ALREADY_EXISTS, {"run_id": "fork-1"})
    )
    with pytest.raises(RunExistsError):
        client.fork_run("run-1", 4, "fork-1")
    assert fake.journal.requests("Read") == []


def test_delete_run_sends_the_expected_last_seq_and_is_resent_unchanged(
    fake: FakeServer, client: JournalClient
) -> None:
    fake.journal.fail_next("DeleteRun", abort_plain(grpc.StatusCode.UNAVAILABLE))
    answer = client.delete_run("run-1", 7)
    assert answer.deleted and answer.last_seq == 7
    assert fake.journal.requests("DeleteRun") == [pb.DeleteRunRequest(run_id="run-1", expected_last_seq=7)] * 2


def test_last_seq_mismatch_is_raised_with_both_seqs_and_not_retried(fake: FakeServer, client: JournalClient) -> None:
    metadata = {"run_id": "run-1", "last_seq": "8", "expected_last_seq": "7"}
    fake.journal.fail_next(
        "DeleteRun", abort_with_reason("LAST_SEQ_MISMATCH", grpc.StatusCode.FAILED_PRECONDITION, metadata)
    )
    with pytest.raises(LastSeqMismatchError) as caught:
        client.delete_run("run-1", 7)
    assert (caught.value.last_seq, caught.value.expected_last_seq) == (8, 7)
    assert len(fake.journal.requests("DeleteRun")) == 1


def test_delete_task_answers_whether_it_deleted(fake: FakeServer, tasks: TaskClient) -> None:
    assert tasks.delete("t1") is True
    fake.tasks.fail_next("DeleteTask", abort_with_reason("TASK_DELETED", grpc.StatusCode.NOT_FOUND, {"task_id": "t2"}))
    with pytest.raises(TaskDeletedError):
        tasks.delete("t2")


def test_list_runs_sends_the_parent_and_stopped_before_filters(fake: FakeServer, client: JournalClient) -> None:
    fake.journal.pages[""] = pb.ListRunsResponse()
    when = datetime.datetime(2026, 11, 1, 12, 0, tzinfo=datetime.UTC)
    list(client.iter_runs(parent_run_id="run-1", stopped_before=when))
    (request,) = fake.journal.requests("ListRuns")
    assert request.parent_run_id == "run-1"
    assert request.stopped_before.ToDatetime(tzinfo=datetime.UTC) == when


def test_a_naive_stopped_before_is_refused_before_anything_is_sent(fake: FakeServer, client: JournalClient) -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        client.list_runs(stopped_before=datetime.datetime(2026, 11, 1))
    assert fake.journal.requests("ListRuns") == []
