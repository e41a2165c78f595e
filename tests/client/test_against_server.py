"""The client and run handles against a real server process over real gRPC."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import runjournal
from runjournal import JournalClient
from runjournal.v1 import state_pb2
from tests.client.flavours import Flavour
from tests.servers import ServerProcess

ROOT = Path(__file__).resolve().parents[2]
FINGERPRINT = runjournal.make_fingerprint(
    provider="anthropic",
    model="claude-test",
    system_prompt="be brief",
    thinking_mode="off",
    tools=[{"name": "search", "input_schema": {"type": "object"}}],
)


def new_run_id() -> str:
    return f"client-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def client(journal_server: ServerProcess, flavour: Flavour) -> Iterator[JournalClient]:
    """A client of the real session server (this module's tests need no fake), of each flavour in turn."""
    with flavour.JournalClient(journal_server.address) as journal_client:
        yield journal_client


def _two_calls() -> list[runjournal.v1.records_pb2.ContentBlock]:
    return [
        runjournal.text_block("looking"),
        runjournal.tool_use_block("c1", "search", {"q": "a"}),
        runjournal.tool_use_block("c2", "search", {"q": "b"}),
    ]


def test_run_handle_creates_appends_and_is_refused_once_another_worker_claims(
    client: JournalClient, flavour: Flavour
) -> None:
    run_id = new_run_id()
    first = flavour.Run.create(client, run_id, FINGERPRINT, "find a and b")
    assert first.assistant(1, _two_calls(), "tool_use", {"input_tokens": 10, "output_tokens": 5}) == 2
    assert first.tool_result("c1", "found a") == 3

    second = flavour.Run.claim(client, run_id, "worker-2", FINGERPRINT)

    assert (second.claim_token, second.next_seq) == (4, 5)
    assert second.state is not None
    assert [call.answered for call in second.state.pending.calls] == [True, False]
    with pytest.raises(runjournal.RunClaimedError) as caught:
        first.tool_result("c2", "found b, late")
    assert (caught.value.claim_token, caught.value.claimed_by) == (4, "worker-2")
    assert first.next_seq == 4  # a refused record does not move the handle

    assert second.batch([runjournal.tool_result_record("c2", text="found b"), runjournal.note_record("done")]) == 6
    assert second.assistant(2, [runjournal.text_block("a and b")], "end_turn") == 7
    assert second.terminal("completed", "ok") == 8
    state = second.fold()
    assert state.status == state_pb2.RUN_STATUS_COMPLETED
    assert (state.last_seq, state.claim_token, state.claimed_by) == (8, 4, "worker-2")
    assert state.counters.llm_calls == 2 and state.counters.input_tokens == 10


async def test_async_run_handle_against_the_server(journal_server: ServerProcess, flavour: Flavour) -> None:
    run_id = new_run_id()
    async with flavour.AsyncJournalClient(journal_server.address) as client:
        first = await flavour.AsyncRun.create(client, run_id, FINGERPRINT, "find a and b")
        await first.assistant(1, _two_calls(), "tool_use")
        second = await flavour.AsyncRun.claim(client, run_id, "worker-2", FINGERPRINT)
        with pytest.raises(runjournal.RunClaimedError):
            await first.tool_result("c1", "late")
        assert await second.tool_result("c1", "a") == 4
        assert await second.deferral("c2", "ask a person", "ops") == 5
        assert await second.terminal("suspended", "waiting") == 6
        assert await client.answer(run_id, "c2", text="b, says ops") == 7
        state = await client.fold(run_id)
        records = [record.seq async for record, _ in client.read(run_id, from_seq=5)]
    assert state.status == state_pb2.RUN_STATUS_OPEN and not state.HasField("pending")
    assert records == [5, 6, 7]


def test_answer_is_refused_twice_and_for_calls_never_deferred(client: JournalClient, flavour: Flavour) -> None:
    run_id = new_run_id()
    run = flavour.Run.create(client, run_id, FINGERPRINT, "go")
    run.assistant(1, _two_calls(), "tool_use")
    run.tool_result("c1", "a")
    run.deferral("c2", "needs a person", "ops")

    with pytest.raises(runjournal.NotDeferredError):
        client.answer(run_id, "c9", text="?")
    seq = client.answer(run_id, "c2", text="b")
    with pytest.raises(runjournal.AlreadyAnsweredError) as caught:
        client.answer(run_id, "c2", text="b again")
    assert caught.value.answered_at_seq == seq == 5
    with pytest.raises(runjournal.AlreadyAnsweredError) as caught:
        client.answer(run_id, "c1", text="a again")
    assert caught.value.answered_at_seq == 3


def test_creating_again_is_a_duplicate_with_the_same_meta_and_run_exists_otherwise(
    client: JournalClient, flavour: Flavour
) -> None:
    run_id = new_run_id()
    moment = datetime.datetime(2026, 5, 1, 12, 0, tzinfo=datetime.UTC)
    flavour.Run.create(client, run_id, FINGERPRINT, "go", created_at=moment)
    again = flavour.Run.create(client, run_id, FINGERPRINT, "go", created_at=moment)
    assert again.next_seq == 2
    with pytest.raises(runjournal.RunExistsError):
        flavour.Run.create(client, run_id, FINGERPRINT, "go", created_at=moment + datetime.timedelta(seconds=1))


def test_raw_appends_report_gaps_and_conflicts_with_the_last_seq(client: JournalClient, flavour: Flavour) -> None:
    run_id = new_run_id()
    flavour.Run.create(client, run_id, FINGERPRINT, "go").note("one")
    gap = runjournal.note_record("far")
    gap.seq = 9
    with pytest.raises(runjournal.SeqGapError) as caught:
        client.append(run_id, 1, gap)
    assert (caught.value.seq, caught.value.last_seq) == (9, 2)
    conflict = runjournal.note_record("not one")
    conflict.seq = 2
    with pytest.raises(runjournal.SeqConflictError) as conflicted:
        client.append(run_id, 1, conflict)
    assert conflicted.value.last_seq == 2
    with pytest.raises(runjournal.RunNotFoundError):
        client.fold(new_run_id())


def test_resume_with_another_model_is_refused_unless_forced(client: JournalClient, flavour: Flavour) -> None:
    run_id = new_run_id()
    flavour.Run.create(client, run_id, FINGERPRINT, "go")
    other = runjournal.v1.records_pb2.Fingerprint()
    other.CopyFrom(FINGERPRINT)
    other.model = "claude-other"
    with pytest.raises(runjournal.ResumeRefusedError) as caught:
        flavour.Run.claim(client, run_id, "w2", other)
    assert "model" in caught.value.fields
    forced = flavour.Run.claim(client, run_id, "w2", other, force=True)
    assert forced.gate is not None and forced.gate.allowed and forced.gate.reconfigured


def test_read_returns_the_stored_lines_and_listing_filters_by_label(client: JournalClient, flavour: Flavour) -> None:
    run_id = new_run_id()
    label = {"client-test": uuid.uuid4().hex[:8]}
    run = flavour.Run.create(client, run_id, FINGERPRINT, "go", labels=label)
    run.note("progress", {"step": 1})
    run.terminal("suspended", "later")

    stored = list(client.read(run_id))
    assert [record.seq for record, _ in stored] == [1, 2, 3]
    assert all(b"\n" not in line and json.loads(line) for _, line in stored)
    assert b"runjournal.v1.note" in stored[1][1]

    listed = list(client.iter_runs(page_size=1, labels=label))
    assert [(s.run_id, s.status) for s in listed] == [(run_id, state_pb2.RUN_STATUS_SUSPENDED)]
    assert list(client.iter_runs(labels=label, status="completed")) == []


def test_the_worked_example_runs_to_completion(journal_server: ServerProcess) -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "worked_example.py"), "--address", journal_server.address],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "UNEXPECTED" not in result.stdout + result.stderr
    assert "refused: RUN_CLAIMED" in result.stdout
    assert "runjournal answer worked-example-" in result.stdout
    assert "runjournal approve worked-example-" in result.stdout
    assert "a second decision is refused: ALREADY_DECIDED" in result.stdout
    assert "tool_result for call_deploy: worker-c ran the approved call" in result.stdout
    assert result.stdout.rstrip().endswith("completed")


def test_the_worked_example_exits_non_zero_when_the_server_is_unreachable(tmp_path: Path) -> None:
    # Nothing listens on port 1; the client gives up after its retries and the script reports it.
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "worked_example.py"), "--address", "127.0.0.1:1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "UNEXPECTED server error: UnavailableError" in result.stderr
