"""Deadlines and retries: only transport failures, the identical request, a bounded number of times."""

from __future__ import annotations

import os
import random
import socket

import grpc
import pytest

import runjournal
from runjournal import RetryPolicy
from runjournal._retry import Attempts
from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import records_pb2, state_pb2
from tests.client.conftest import FAST_RETRY
from tests.client.fake_journal import FakeServer, abort_plain, abort_with_reason, outlive_deadline
from tests.client.flavours import Flavour

UNAVAILABLE = abort_plain(grpc.StatusCode.UNAVAILABLE)


def _tool_result(seq: int) -> records_pb2.JournalRecord:
    record = runjournal.tool_result_record("c1", text="result")
    record.seq = seq
    return record


def test_append_retries_unavailable_with_the_identical_request(
    fake: FakeServer, client: runjournal.JournalClient
) -> None:
    fake.journal.fail_next("Append", UNAVAILABLE, UNAVAILABLE)

    response = client.append("r1", 4, _tool_result(7))

    assert response.seq == 7
    sent = [r.SerializeToString(deterministic=True) for r in fake.journal.requests("Append")]
    assert len(sent) == 3
    assert len(set(sent)) == 1
    assert pb.AppendRequest.FromString(sent[0]).record.seq == 7


async def test_async_append_retries_unavailable_with_the_identical_request(fake: FakeServer, flavour: Flavour) -> None:
    fake.journal.fail_next("AppendBatch", UNAVAILABLE, UNAVAILABLE)
    records = [_tool_result(5), _tool_result(6)]
    async with flavour.AsyncJournalClient(fake.address, retry=FAST_RETRY) as client:
        response = await client.append_batch("r1", 4, records)
    assert (response.first_seq, response.last_seq) == (5, 6)
    sent = {r.SerializeToString(deterministic=True) for r in fake.journal.requests("AppendBatch")}
    assert len(fake.journal.requests("AppendBatch")) == 3 and len(sent) == 1


def test_a_cancelled_without_a_reason_is_resent_as_a_server_shutdown_ends_calls(
    fake: FakeServer, client: runjournal.JournalClient
) -> None:
    # gRPC's stop cancels the calls a server had queued at SIGTERM: the write is resent, not surfaced.
    fake.journal.fail_next("Append", abort_plain(grpc.StatusCode.CANCELLED), UNAVAILABLE)

    response = client.append("r1", 4, _tool_result(7))

    assert response.seq == 7
    sent = [r.SerializeToString(deterministic=True) for r in fake.journal.requests("Append")]
    assert len(sent) == 3
    assert len(set(sent)) == 1


def test_a_cancelled_with_a_reason_is_an_answer_and_not_resent(
    fake: FakeServer, client: runjournal.JournalClient
) -> None:
    fake.journal.fail_next("Append", abort_with_reason("RUN_LOCKED", grpc.StatusCode.CANCELLED, {"run_id": "r1"}))

    with pytest.raises(runjournal.RunLockedError):
        client.append("r1", 4, _tool_result(7))
    assert len(fake.journal.requests("Append")) == 1


STORAGE_UNAVAILABLE = abort_with_reason("STORAGE_UNAVAILABLE", grpc.StatusCode.UNAVAILABLE, {"run_id": "r1"})


def test_storage_unavailable_is_resent_with_the_identical_request(
    fake: FakeServer, client: runjournal.JournalClient
) -> None:
    # The server stored nothing ("retry the same request"): a NATS leader change rides through as a slow call.
    fake.journal.fail_next("Append", STORAGE_UNAVAILABLE, STORAGE_UNAVAILABLE)

    response = client.append("r1", 4, _tool_result(7))

    assert response.seq == 7
    sent = [r.SerializeToString(deterministic=True) for r in fake.journal.requests("Append")]
    assert len(sent) == 3
    assert len(set(sent)) == 1


async def test_async_storage_unavailable_is_resent_until_the_attempts_are_spent(
    fake: FakeServer, flavour: Flavour
) -> None:
    fake.journal.fail_next("Fold", *[STORAGE_UNAVAILABLE] * 5)
    async with flavour.AsyncJournalClient(fake.address, retry=FAST_RETRY) as client:
        with pytest.raises(runjournal.StorageUnavailableError):
            await client.fold("r1")
    assert len(fake.journal.requests("Fold")) == FAST_RETRY.max_attempts


def test_run_locked_is_an_answer_and_not_resent(fake: FakeServer, client: runjournal.JournalClient) -> None:
    # UNAVAILABLE too, but another server process holds the run for as long as it lives: the caller decides.
    fake.journal.fail_next("Append", abort_with_reason("RUN_LOCKED", grpc.StatusCode.UNAVAILABLE, {"run_id": "r1"}))

    with pytest.raises(runjournal.RunLockedError):
        client.append("r1", 4, _tool_result(7))
    assert len(fake.journal.requests("Append")) == 1


def test_retries_stop_after_max_attempts_with_unavailable_error(
    fake: FakeServer, client: runjournal.JournalClient
) -> None:
    fake.journal.fail_next("Fold", *[UNAVAILABLE] * 5)
    with pytest.raises(runjournal.UnavailableError) as caught:
        client.fold("r1")
    assert caught.value.code == grpc.StatusCode.UNAVAILABLE
    assert len(fake.journal.requests("Fold")) == FAST_RETRY.max_attempts


async def test_async_retries_stop_after_max_attempts(fake: FakeServer, flavour: Flavour) -> None:
    fake.journal.fail_next("Fold", *[abort_plain(grpc.StatusCode.DEADLINE_EXCEEDED)] * 5)
    async with flavour.AsyncJournalClient(fake.address, retry=FAST_RETRY) as client:
        with pytest.raises(runjournal.DeadlineExceededError):
            await client.fold("r1")
    assert len(fake.journal.requests("Fold")) == FAST_RETRY.max_attempts


def test_no_retry_policy_sends_once(fake: FakeServer, flavour: Flavour) -> None:
    fake.journal.fail_next("Fold", UNAVAILABLE)
    with (
        flavour.JournalClient(fake.address, retry=runjournal.NO_RETRY) as client,
        pytest.raises(runjournal.UnavailableError),
    ):
        client.fold("r1")
    assert len(fake.journal.requests("Fold")) == 1


def test_a_call_that_outlives_its_deadline_is_retried_with_a_fresh_deadline(fake: FakeServer, flavour: Flavour) -> None:
    fake.journal.fail_next("Answer", outlive_deadline)
    with flavour.JournalClient(fake.address, retry=FAST_RETRY, timeout=0.5) as client:
        assert client.answer("r1", "c1", text="yes") == 42
    requests = fake.journal.requests("Answer")
    assert len(requests) == 2 and requests[0] == requests[1]


def test_every_call_carries_the_client_deadline_and_metadata(fake: FakeServer, flavour: Flavour) -> None:
    # The server sees the deadline through the grpc-timeout header, rounded up a little.
    fake.journal.pages[""] = pb.ListRunsResponse()
    fake.journal.read_last_seq = 1
    with flavour.JournalClient(fake.address, timeout=3.0, metadata=[("authorization", "Bearer t")]) as client:
        client.append("r1", 1, _tool_result(2))
        client.append_batch("r1", 1, [_tool_result(2)])
        client.claim("r1", "w1", records_pb2.Fingerprint())
        client.fold("r1")
        client.answer("r1", "c1", text="x")
        client.list_runs()
        assert len(list(client.read("r1"))) == 1
        client.fold("r1", timeout=1.0)
    received = fake.journal.received
    assert [r.method for r in received] == [
        "Append", "AppendBatch", "Claim", "Fold", "Answer", "ListRuns", "Read", "Fold",
    ]  # fmt: skip
    for call in received[:-1]:
        assert call.time_remaining is not None and 2.0 < call.time_remaining < 3.5, call.method
        assert call.metadata["authorization"] == "Bearer t"
    assert received[-1].time_remaining is not None and received[-1].time_remaining < 1.5


def test_default_deadline_is_ten_seconds(fake: FakeServer, flavour: Flavour) -> None:
    with flavour.JournalClient(fake.address) as client:
        client.fold("r1")
    remaining = fake.journal.received[0].time_remaining
    assert runjournal.DEFAULT_TIMEOUT_SECONDS == 10.0
    assert remaining is not None and 9.0 < remaining < 10.5


def test_read_resumes_after_the_last_record_it_yielded(fake: FakeServer, client: runjournal.JournalClient) -> None:
    fake.journal.read_last_seq = 6
    fake.journal.read_breaks = {4}

    got = [(record.seq, line) for record, line in client.read("r1", 2)]

    assert got == [(seq, f"line {seq}".encode()) for seq in range(2, 7)]
    assert [r.from_seq for r in fake.journal.requests("Read")] == [2, 4]


async def test_async_read_resumes_after_the_last_record_it_yielded(fake: FakeServer, flavour: Flavour) -> None:
    fake.journal.read_last_seq = 5
    fake.journal.read_breaks = {2, 5}
    async with flavour.AsyncJournalClient(fake.address, retry=FAST_RETRY) as client:
        got = [record.seq async for record, _ in client.read("r1")]
    assert got == [1, 2, 3, 4, 5]
    assert [r.from_seq for r in fake.journal.requests("Read")] == [0, 2, 5]


def test_claim_sends_this_host_and_pid_by_default(fake: FakeServer, client: runjournal.JournalClient) -> None:
    fingerprint = records_pb2.Fingerprint(provider="anthropic", model="m")
    client.claim("r1", "w1", fingerprint, force=True, reason="crash")
    client.claim("r1", "w1", fingerprint, host="h", pid=7)
    first, second = fake.journal.requests("Claim")
    assert (first.host, first.pid, first.force, first.reason) == (
        socket.gethostname(),
        os.getpid(),
        True,
        "crash",
    )
    assert first.fingerprint == fingerprint and first.worker_id == "w1"
    assert (second.host, second.pid, second.force) == ("h", 7, False)


def test_iter_runs_follows_page_tokens_with_the_same_filters(
    fake: FakeServer, client: runjournal.JournalClient
) -> None:
    summary = state_pb2.RunSummary
    fake.journal.pages = {
        "": pb.ListRunsResponse(runs=[summary(run_id="a"), summary(run_id="b")], next_page_token="p2"),
        "p2": pb.ListRunsResponse(runs=[summary(run_id="c")], next_page_token=""),
    }
    ids = [run.run_id for run in client.iter_runs(page_size=2, status="suspended", labels={"team": "x"})]
    assert ids == ["a", "b", "c"]
    requests = fake.journal.requests("ListRuns")
    assert [r.page_token for r in requests] == ["", "p2"]
    for request in requests:
        assert request.page_size == 2
        assert request.status == state_pb2.RUN_STATUS_SUSPENDED
        assert dict(request.labels) == {"team": "x"}


def test_responses_above_grpc_default_4_mib_are_received(fake: FakeServer, client: runjournal.JournalClient) -> None:
    big = "x" * (5 * 1024 * 1024)
    fake.journal.fold_state = state_pb2.RunState(run_id="r1", claimed_by=big)
    assert len(client.fold("r1").claimed_by) == len(big)


def test_backoff_grows_exponentially_with_jitter_up_to_the_cap() -> None:
    policy = RetryPolicy(initial_backoff_seconds=0.1, max_backoff_seconds=1.0, multiplier=2.0)
    rng = random.Random(7)
    for retry_number, cap in [(1, 0.1), (2, 0.2), (3, 0.4), (4, 0.8), (5, 1.0), (12, 1.0)]:
        delays = {policy.backoff_seconds(retry_number, rng) for _ in range(50)}
        assert all(cap / 2 <= d <= cap for d in delays), (retry_number, delays)
        assert len(delays) > 1  # jittered, not a fixed schedule


@pytest.mark.parametrize(
    "kwargs",
    [{"max_attempts": 0}, {"budget_seconds": -1.0}, {"initial_backoff_seconds": -1.0}, {"multiplier": 0.5}],
)
def test_retry_policy_refuses_nonsense(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


# --- the time budget (issue 23: ride through a NATS leader change) ------------

OUTAGE_SECONDS = 3.0
"""Longer than five attempts' backoff (at most 1.5 s), shorter than the default budget (20 s)."""


def test_default_policy_rides_through_seconds_of_storage_unavailable(fake: FakeServer, flavour: Flavour) -> None:
    # A JetStream leader change answers STORAGE_UNAVAILABLE for seconds; a worker's append is only slow.
    fake.journal.fail_for("Append", OUTAGE_SECONDS, STORAGE_UNAVAILABLE)
    with flavour.JournalClient(fake.address) as client:
        response = client.append("r1", 4, _tool_result(7))
    assert response.seq == 7
    sent = {r.SerializeToString(deterministic=True) for r in fake.journal.requests("Append")}
    assert len(fake.journal.requests("Append")) > 5 and len(sent) == 1


async def test_async_default_policy_rides_through_seconds_of_unavailable(fake: FakeServer, flavour: Flavour) -> None:
    fake.journal.fail_for("Fold", OUTAGE_SECONDS, UNAVAILABLE)
    async with flavour.AsyncJournalClient(fake.address) as client:
        await client.fold("r1")
    assert len(fake.journal.requests("Fold")) > 5


def test_read_resumes_through_seconds_of_storage_unavailable(fake: FakeServer, flavour: Flavour) -> None:
    fake.journal.read_last_seq = 3
    fake.journal.fail_for("Read", OUTAGE_SECONDS, STORAGE_UNAVAILABLE)
    with flavour.JournalClient(fake.address) as client:
        seqs = [record.seq for record, _line in client.read("r1")]
    assert seqs == [1, 2, 3]


def test_a_budget_shorter_than_the_outage_surfaces_storage_unavailable(fake: FakeServer, flavour: Flavour) -> None:
    fake.journal.fail_for("Append", 30.0, STORAGE_UNAVAILABLE)
    short = RetryPolicy(budget_seconds=0.3, initial_backoff_seconds=0.01, max_backoff_seconds=0.02)
    with flavour.JournalClient(fake.address, retry=short) as client, pytest.raises(runjournal.StorageUnavailableError):
        client.append("r1", 4, _tool_result(7))
    assert len(fake.journal.requests("Append")) > 1  # resent while the budget lasted, then surfaced


@pytest.mark.parametrize(
    ("reason", "code", "error"),
    [
        ("SEQ_GAP", grpc.StatusCode.FAILED_PRECONDITION, runjournal.RunJournalError),
        ("RUN_LOCKED", grpc.StatusCode.UNAVAILABLE, runjournal.RunLockedError),
    ],
)
def test_a_reason_that_is_an_answer_is_never_resent_by_the_default_policy(
    fake: FakeServer, flavour: Flavour, reason: str, code: grpc.StatusCode, error: type[Exception]
) -> None:
    fake.journal.fail_for("Append", 30.0, abort_with_reason(reason, code, {"run_id": "r1"}))
    with flavour.JournalClient(fake.address) as client, pytest.raises(error):
        client.append("r1", 4, _tool_result(7))
    assert len(fake.journal.requests("Append")) == 1


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _storage_unavailable_error() -> grpc.RpcError:
    class _Err(grpc.RpcError):
        def code(self) -> grpc.StatusCode:
            return grpc.StatusCode.UNAVAILABLE

        def details(self) -> str:
            return "plain"

        def trailing_metadata(self) -> tuple[tuple[str, str | bytes], ...]:
            return ()

    return _Err()


def test_the_budget_not_a_count_ends_the_resends() -> None:
    clock = _Clock()
    attempts = Attempts(RetryPolicy(budget_seconds=20.0), random.Random(1), clock)
    err = _storage_unavailable_error()
    for _ in range(50):  # fifty quick failures within the first second: all resent
        assert attempts.delay_after(err) <= 1.0
    clock.now += 18.5
    assert attempts.delay_after(err) <= 1.0  # a resend that starts before 20 s is made
    clock.now += 1.5
    with pytest.raises(runjournal.UnavailableError):
        attempts.delay_after(err)  # one that would start after 20 s is not


def test_the_budget_counts_from_the_first_failure_so_a_long_healthy_stream_gets_a_whole_one() -> None:
    clock = _Clock()
    attempts = Attempts(RetryPolicy(), random.Random(1), clock)  # made when the stream last delivered an item
    clock.now += 60.0
    assert attempts.delay_after(_storage_unavailable_error()) <= 1.0


def test_max_attempts_still_caps_the_count_within_the_budget() -> None:
    attempts = Attempts(RetryPolicy(max_attempts=3), random.Random(1), _Clock())
    err = _storage_unavailable_error()
    attempts.delay_after(err)
    attempts.delay_after(err)
    with pytest.raises(runjournal.UnavailableError):
        attempts.delay_after(err)


def test_default_policy_covers_a_leader_change_and_notices_recovery_within_a_second() -> None:
    policy = RetryPolicy()
    assert (policy.budget_seconds, policy.max_attempts) == (20.0, None)
    assert (policy.initial_backoff_seconds, policy.max_backoff_seconds, policy.multiplier) == (0.1, 1.0, 2.0)


def _answered(fake: FakeServer, seq: int, text: str) -> None:
    """The call's answer is stored at ``seq``; a resent Answer is told ALREADY_ANSWERED there."""
    fake.journal.read_last_seq = seq
    fake.journal.stored[seq] = records_pb2.JournalRecord(
        seq=seq,
        tool_result=records_pb2.ToolResult(tool_use_id="c1", content=[runjournal.text_block(text)], remote=True),
    )
    already = abort_with_reason(
        "ALREADY_ANSWERED", grpc.StatusCode.ALREADY_EXISTS, {"tool_use_id": "c1", "answered_at_seq": str(seq)}
    )
    fake.journal.fail_next("Answer", UNAVAILABLE, already)


def test_a_resent_answer_that_finds_its_own_first_attempt_returns_that_seq(
    fake: FakeServer, client: runjournal.JournalClient
) -> None:
    _answered(fake, 5, "yes")
    assert client.answer("r1", "c1", text="yes") == 5
    assert [r.from_seq for r in fake.journal.requests("Read")] == [5]


async def test_async_resent_answer_that_finds_its_own_first_attempt_returns_that_seq(
    fake: FakeServer, flavour: Flavour
) -> None:
    _answered(fake, 6, "yes")
    async with flavour.AsyncJournalClient(fake.address, retry=FAST_RETRY) as client:
        assert await client.answer("r1", "c1", text="yes") == 6


def test_a_resent_answer_that_finds_someone_elses_answer_is_already_answered(
    fake: FakeServer, client: runjournal.JournalClient
) -> None:
    _answered(fake, 5, "no")
    with pytest.raises(runjournal.AlreadyAnsweredError) as caught:
        client.answer("r1", "c1", text="yes")
    assert caught.value.answered_at_seq == 5


def test_a_first_attempt_told_already_answered_raises_without_looking(
    fake: FakeServer, client: runjournal.JournalClient
) -> None:
    _answered(fake, 5, "yes")
    fake.journal.failures["Answer"].pop(0)  # no transport failure: the first reply is the refusal
    with pytest.raises(runjournal.AlreadyAnsweredError):
        client.answer("r1", "c1", text="yes")
    assert fake.journal.requests("Read") == []
