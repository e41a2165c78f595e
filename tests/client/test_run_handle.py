"""The run handle places records at the right seq with the right token (against the fake)."""

from __future__ import annotations

import asyncio
import datetime

import grpc
import pytest

import runjournal
from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import records_pb2, state_pb2
from tests.client.conftest import FAST_RETRY
from tests.client.fake_journal import FakeServer, abort_with_reason
from tests.client.flavours import Flavour

FINGERPRINT = records_pb2.Fingerprint(provider="anthropic", model="m")


def _appended(fake: FakeServer) -> list[tuple[int, int, str]]:
    """(claim_token, seq, payload kind) of every appended record, in order."""
    out = []
    for received in fake.journal.received:
        if received.method == "Append":
            records = [received.request.record]
        elif received.method == "AppendBatch":
            records = list(received.request.records)
        else:
            continue
        out += [(received.request.claim_token, r.seq, r.WhichOneof("payload")) for r in records]
    return out


def test_create_appends_meta_at_seq_one_and_continues_with_token_one(
    fake: FakeServer, client: runjournal.JournalClient, flavour: Flavour
) -> None:
    run = flavour.Run.create(client, "r1", FINGERPRINT, "do the thing", labels={"team": "x"}, task_id="t1")

    assert (run.claim_token, run.next_seq, run.state, run.gate) == (1, 2, None, None)
    meta = fake.journal.requests("Append")[0].record
    assert meta.meta.prompt == [runjournal.text_block("do the thing")]
    assert (meta.meta.run_id, meta.meta.task_id, dict(meta.meta.labels)) == ("r1", "t1", {"team": "x"})
    assert meta.meta.fingerprint == FINGERPRINT
    age = datetime.datetime.now(datetime.UTC) - meta.meta.created_at.ToDatetime(tzinfo=datetime.UTC)
    assert datetime.timedelta(0) <= age < datetime.timedelta(seconds=60)

    assert run.assistant(1, [runjournal.tool_use_block("c1", "ls", {})], "tool_use") == 2
    assert run.tool_result("c1", "ok") == 3
    assert run.note("half way", {"pct": 50}) == 4
    assert _appended(fake) == [(1, 1, "meta"), (1, 2, "assistant"), (1, 3, "tool_result"), (1, 4, "note")]


def test_claim_continues_after_the_servers_last_seq_with_the_claim_token(
    fake: FakeServer, client: runjournal.JournalClient, flavour: Flavour
) -> None:
    fake.journal.claim_response = pb.ClaimResponse(
        claim_token=7,
        last_seq=8,
        state=state_pb2.RunState(run_id="r1", next_iteration=3),
        gate=state_pb2.GateReport(allowed=True, reconfigured=True),
        resume_reminder="you were resumed",
    )
    run = flavour.Run.claim(client, "r1", "worker-2", FINGERPRINT, force=True)

    assert (run.claim_token, run.next_seq, run.last_seq) == (7, 9, 8)
    assert run.state is not None and run.state.next_iteration == 3
    assert run.gate is not None and run.gate.reconfigured
    assert run.resume_reminder == "you were resumed"
    request = fake.journal.requests("Claim")[0]
    assert (request.worker_id, request.force) == ("worker-2", True)

    last = run.batch([runjournal.tool_result_record("c2", text="ok"), runjournal.terminal_record("completed")])
    assert last == 10 and run.next_seq == 11
    assert _appended(fake) == [(7, 9, "tool_result"), (7, 10, "terminal")]
    assert len(fake.journal.requests("AppendBatch")) == 1


def test_a_refused_append_does_not_advance_and_the_same_call_resends_the_same_record(
    fake: FakeServer, client: runjournal.JournalClient, flavour: Flavour
) -> None:
    run = flavour.Run.create(client, "r1", FINGERPRINT, "go")
    fake.journal.fail_next("Append", abort_with_reason("STORAGE_FULL", grpc.StatusCode.RESOURCE_EXHAUSTED))

    with pytest.raises(runjournal.StorageFullError):
        run.user("more please")
    assert run.next_seq == 2
    assert run.user("more please") == 2

    first, second = fake.journal.requests("Append")[1:]
    assert first.SerializeToString(deterministic=True) == second.SerializeToString(deterministic=True)


def test_a_claimed_run_raises_run_claimed_with_the_new_holder(
    fake: FakeServer, client: runjournal.JournalClient, flavour: Flavour
) -> None:
    run = flavour.Run.create(client, "r1", FINGERPRINT, "go")
    fake.journal.fail_next(
        "Append",
        abort_with_reason("RUN_CLAIMED", grpc.StatusCode.FAILED_PRECONDITION, {"claim_token": "5", "claimed_by": "w2"}),
    )
    with pytest.raises(runjournal.RunClaimedError) as caught:
        run.terminal("error", "boom")
    assert (caught.value.claim_token, caught.value.claimed_by) == (5, "w2")


def test_a_record_that_already_carries_another_seq_is_refused_before_sending(
    fake: FakeServer, client: runjournal.JournalClient, flavour: Flavour
) -> None:
    run = flavour.Run.create(client, "r1", FINGERPRINT, "go")
    placed = runjournal.note_record("x")
    placed.seq = 9
    with pytest.raises(ValueError, match="seq 9"):
        run.append(placed)
    with pytest.raises(ValueError, match="at least one"):
        run.batch([])
    assert len(fake.journal.requests("Append")) == 1


def test_fold_refreshes_the_handles_state(fake: FakeServer, client: runjournal.JournalClient, flavour: Flavour) -> None:
    run = flavour.Run.create(client, "r1", FINGERPRINT, prompt_blocks=[runjournal.text_block("go")])
    fake.journal.fold_state = state_pb2.RunState(run_id="r1", last_seq=1)
    assert run.fold().last_seq == 1
    assert run.state is not None and run.state.run_id == "r1"


async def test_async_run_places_concurrent_appends_at_distinct_seqs(fake: FakeServer, flavour: Flavour) -> None:
    async with flavour.AsyncJournalClient(fake.address, retry=FAST_RETRY) as client:
        run = await flavour.AsyncRun.create(client, "r1", FINGERPRINT, "go")
        seqs = await asyncio.gather(*(run.note(f"n{i}") for i in range(5)))
        last = await run.batch([runjournal.user_record("more"), runjournal.terminal_record("completed")])
    assert sorted(seqs) == [2, 3, 4, 5, 6]
    assert last == 8 and run.next_seq == 9
    assert sorted(seq for _, seq, _ in _appended(fake)) == list(range(1, 9))
    assert {token for token, _, _ in _appended(fake)} == {1}


async def test_async_claim_exposes_state_gate_and_reminder(fake: FakeServer, flavour: Flavour) -> None:
    fake.journal.claim_response = pb.ClaimResponse(claim_token=3, last_seq=3, resume_reminder="r")
    async with flavour.AsyncJournalClient(fake.address) as client:
        run = await flavour.AsyncRun.claim(client, "r1", "w", FINGERPRINT, reason="crash")
        assert await run.deferral("c1", "ask a person", "ops") == 4
    assert (run.claim_token, run.resume_reminder) == (3, "r")
    assert fake.journal.requests("Claim")[0].reason == "crash"
    assert _appended(fake) == [(3, 4, "deferral")]
