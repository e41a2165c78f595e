"""WatchRuns (issue 13, item 2) over a real server on both backends: the matching summaries, one caught_up,
then a fresh summary on each change (created, status, waiting for a person, claimed) and ``left`` once for
a run that stops matching; within the token's prefixes only.

Each test filters on a label of its own, so the runs of other tests on the session server stay out.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc as pb_grpc
from runjournal.v1 import records_pb2, state_pb2
from runjournal_server.api.auth import token_sha256
from tests.api.rpc import new_run_id, reason
from tests.conftest import new_stream_target
from tests.servers import ServerProcess
from tests.support import builders as b

JournalStub = pb_grpc.JournalServiceStub
Events = Iterator[pb.WatchRunsResponse]


@pytest.fixture
def label() -> dict[str, str]:
    return {"watch-test": uuid.uuid4().hex[:12]}


def create(stub: JournalStub, run_id: str, labels: dict[str, str], *more: records_pb2.JournalRecord) -> int:
    records = [b.meta(run_id=run_id, labels=labels), *more]
    return stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=records)).last_seq


def append(stub: JournalStub, run_id: str, record: records_pb2.JournalRecord, token: int = 1) -> None:
    stub.Append(pb.AppendRequest(run_id=run_id, claim_token=token, record=record))


def caught_up(call: Events) -> list[state_pb2.RunSummary]:
    """The summaries before caught_up."""
    found = []
    for item in call:
        if item.WhichOneof("event") == "caught_up":
            return found
        assert item.WhichOneof("event") == "run", item
        found.append(item.run)
    raise AssertionError("the stream ended before caught_up")


def next_run(call: Events) -> state_pb2.RunSummary:
    item = next(call)
    assert item.WhichOneof("event") == "run", item
    return item.run


def next_left(call: Events) -> pb.RunLeft:
    item = next(call)
    assert item.WhichOneof("event") == "left", item
    return item.left


def test_watch_runs_sends_the_matching_runs_then_caught_up_then_a_created_run(
    stub: JournalStub, label: dict[str, str]
) -> None:
    older, newer = new_run_id("wr"), new_run_id("wr")
    create(stub, older, label)
    create(stub, newer, label, b.note(2))
    create(stub, new_run_id("other"), {"watch-test": "someone-else"})
    call = stub.WatchRuns(pb.WatchRunsRequest(labels=label))
    try:
        listed = caught_up(call)
        listing = stub.ListRuns(pb.ListRunsRequest(labels=label)).runs
        assert [s.run_id for s in listed] == [s.run_id for s in listing]
        assert {s.run_id for s in listed} == {older, newer}
        created = new_run_id("wr")
        create(stub, created, label)
        summary = next_run(call)
        assert (summary.run_id, summary.status, summary.last_seq) == (created, state_pb2.RUN_STATUS_OPEN, 1)
        assert summary.labels == label
    finally:
        call.cancel()


def test_a_status_change_and_a_claim_send_the_new_summary(stub: JournalStub, label: dict[str, str]) -> None:
    run_id = new_run_id("wr")
    create(stub, run_id, label, b.assistant(2, 1))
    call = stub.WatchRuns(pb.WatchRunsRequest(labels=label))
    try:
        assert [s.last_seq for s in caught_up(call)] == [2]
        claimed = stub.Claim(pb.ClaimRequest(run_id=run_id, worker_id="worker-9", fingerprint=b.fingerprint()))
        assert next_run(call).last_seq == claimed.last_seq
        append(stub, run_id, b.terminal(claimed.last_seq + 1), claimed.claim_token)
        summary = next_run(call)
        assert (summary.status, summary.last_seq) == (state_pb2.RUN_STATUS_COMPLETED, claimed.last_seq + 1)
        assert summary.terminal_message == "done"
    finally:
        call.cancel()


def test_a_run_that_starts_waiting_for_a_person_joins_the_inbox_and_leaves_when_answered(
    stub: JournalStub, label: dict[str, str]
) -> None:
    run_id = new_run_id("wr")
    create(stub, run_id, label)
    call = stub.WatchRuns(pb.WatchRunsRequest(labels=label, waiting_for_person=True))
    try:
        assert caught_up(call) == []
        append(stub, run_id, b.assistant(2, 1, ["call-1"]))
        append(stub, run_id, b.deferral(3, "call-1"))
        summary = next_run(call)
        assert (summary.run_id, [w.tool_use_id for w in summary.waiting_calls]) == (run_id, ["call-1"])
        stub.Answer(pb.AnswerRequest(run_id=run_id, tool_use_id="call-1", content=[b.text("yes")]))
        assert next_left(call) == pb.RunLeft(run_id=run_id, deleted=False)
    finally:
        call.cancel()


def test_a_run_that_stops_matching_is_sent_as_left_once_and_not_again(stub: JournalStub, label: dict[str, str]) -> None:
    stopping, staying = new_run_id("wr"), new_run_id("wr")
    create(stub, stopping, label)
    create(stub, staying, label)
    call = stub.WatchRuns(pb.WatchRunsRequest(labels=label, status=state_pb2.RUN_STATUS_OPEN))
    try:
        assert {s.run_id for s in caught_up(call)} == {stopping, staying}
        append(stub, stopping, b.terminal(2))
        assert next_left(call) == pb.RunLeft(run_id=stopping, deleted=False)
        append(stub, stopping, b.note(3))  # still not matching: nothing is sent for it
        append(stub, staying, b.note(2))
        assert next_run(call).run_id == staying
    finally:
        call.cancel()


def test_a_slow_reader_gets_the_newest_summary_never_a_stale_one(stub: JournalStub, label: dict[str, str]) -> None:
    """Twenty appends while the client reads nothing: what it then reads only moves forward, to the last seq."""
    run_id = new_run_id("wr")
    create(stub, run_id, label)
    call = stub.WatchRuns(pb.WatchRunsRequest(labels=label))
    try:
        assert len(caught_up(call)) == 1
        for seq in range(2, 22):
            append(stub, run_id, b.note(seq))
        seen = [next_run(call).last_seq]
        while seen[-1] != 21:
            seen.append(next_run(call).last_seq)
        assert seen == sorted(set(seen)), seen  # coalesced perhaps, never older, never twice
    finally:
        call.cancel()


def test_watch_runs_refuses_an_unknown_status(stub: JournalStub) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        next(stub.WatchRuns(pb.WatchRunsRequest(status=99)))
    assert reason(raised.value) == "INVALID_ARGUMENT"


def test_watch_runs_shows_only_the_runs_within_the_tokens_prefixes(
    server_factory: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(
        "".join(
            f'[[tokens]]\nname = "{team}"\nsha256 = "{token_sha256("secret-" + team)}"\nrun_id_prefixes = ["{team}-"]\n'
            for team in ("team-a", "team-b")
        )
    )
    server = server_factory(tmp_path / "data", "--auth-tokens-file", str(tokens))
    bearer_a = (("authorization", "Bearer secret-team-a"),)
    bearer_b = (("authorization", "Bearer secret-team-b"),)
    with grpc.insecure_channel(server.address) as channel:
        stub = JournalStub(channel)
        mine, theirs = new_run_id("team-a"), new_run_id("team-b")
        stub.Append(pb.AppendRequest(run_id=mine, record=b.meta(run_id=mine)), metadata=bearer_a)
        stub.Append(pb.AppendRequest(run_id=theirs, record=b.meta(run_id=theirs)), metadata=bearer_b)
        call = stub.WatchRuns(pb.WatchRunsRequest(), metadata=bearer_a)
        try:
            assert [s.run_id for s in caught_up(call)] == [mine]
            stub.Append(pb.AppendRequest(run_id=theirs, claim_token=1, record=b.note(2)), metadata=bearer_b)
            stub.Append(pb.AppendRequest(run_id=mine, claim_token=1, record=b.note(2)), metadata=bearer_a)
            summary = next_run(call)  # team-b's change came first and was not sent
            assert (summary.run_id, summary.last_seq) == (mine, 2)
        finally:
            call.cancel()
        with pytest.raises(grpc.RpcError) as raised:
            next(stub.WatchRuns(pb.WatchRunsRequest()))
        assert reason(raised.value) == "UNAUTHENTICATED"


@pytest.mark.jetstream
def test_runs_created_and_changed_through_another_replica_reach_watch_runs(
    nats_server, server_factory: Callable[..., ServerProcess], tmp_path: Path, label: dict[str, str]
) -> None:
    args = new_stream_target().server_args(nats_server.url)
    a, b_server = server_factory(tmp_path / "a", *args), server_factory(tmp_path / "b", *args)
    with grpc.insecure_channel(a.address) as channel_a, grpc.insecure_channel(b_server.address) as channel_b:
        via_a, via_b = JournalStub(channel_a), JournalStub(channel_b)
        call = via_b.WatchRuns(pb.WatchRunsRequest(labels=label))
        try:
            assert caught_up(call) == []
            run_id = new_run_id("wr")
            create(via_a, run_id, label)
            created = next_run(call)
            assert (created.run_id, created.status, created.last_seq) == (run_id, state_pb2.RUN_STATUS_OPEN, 1)
            append(via_a, run_id, b.terminal(2))
            summary = next_run(call)
            assert (summary.run_id, summary.status, summary.last_seq) == (run_id, state_pb2.RUN_STATUS_COMPLETED, 2)
        finally:
            call.cancel()


def test_a_deleted_run_is_sent_as_left_deleted(stub: JournalStub, label: dict[str, str]) -> None:
    run_id = new_run_id("wr")
    last = create(stub, run_id, label)
    call = stub.WatchRuns(pb.WatchRunsRequest(labels=label))
    try:
        assert [s.run_id for s in caught_up(call)] == [run_id]
        stub.DeleteRun(pb.DeleteRunRequest(run_id=run_id, expected_last_seq=last))
        assert next_left(call) == pb.RunLeft(run_id=run_id, deleted=True)
    finally:
        call.cancel()


def test_a_fork_appears_to_a_watch_of_its_parents_forks(stub: JournalStub, label: dict[str, str]) -> None:
    source = new_run_id("wr")
    create(stub, source, label, b.note(2), b.note(3))
    call = stub.WatchRuns(pb.WatchRunsRequest(parent_run_id=source))
    try:
        assert caught_up(call) == []
        fork = new_run_id("wr")
        stub.ForkRun(pb.ForkRunRequest(run_id=source, at_seq=2, new_run_id=fork))
        summary = next_run(call)
        assert (summary.run_id, summary.parent_run_id, summary.last_seq) == (fork, source, 2)
    finally:
        call.cancel()
