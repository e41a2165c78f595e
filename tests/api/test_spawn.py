"""SpawnRun and a child's completion over real gRPC, on both backends (issue 26, items 1-3).

A parent's pending call is delegated to a child run: the parent's deferral
names the child, the child's meta names the parent (written by the server
only), a second spawn for the call is a verified duplicate, and when the
child stops the parent's call gets exactly one result, answered by the child,
unless a person answered it first (then the child gets a note). A run with
children is deleted only as a whole tree.
"""

from __future__ import annotations

from collections.abc import Callable

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc, records_pb2, state_pb2
from tests.api.rpc import error_info, new_run_id
from tests.support import builders as b

JournalStub = journal_service_pb2_grpc.JournalServiceStub


def refused(call: Callable[[], object]) -> tuple[grpc.StatusCode, str, dict[str, str]]:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    info = error_info(caught.value)
    return caught.value.code(), info.reason, dict(info.metadata)


def parent_waiting(stub: JournalStub, calls: tuple[str, ...] = ("c1", "c2")) -> str:
    """A parent run whose turn at seq 2 asks for ``calls``, all pending."""
    run_id = new_run_id("parent")
    journal = [b.meta(run_id=run_id), b.assistant(2, 1, list(calls))]
    stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=journal))
    return run_id


def child_meta(prompt: str = "find the answer") -> records_pb2.Meta:
    meta = b.meta(run_id="", prompt=prompt).meta
    meta.ClearField("created_at")
    return meta


def spawn(stub: JournalStub, parent: str, call: str, child: str, **kw: object) -> pb.SpawnRunResponse:
    request = pb.SpawnRunRequest(run_id=parent, tool_use_id=call, new_run_id=child, meta=child_meta(), reason="go")
    return stub.SpawnRun(request, **kw)  # type: ignore[arg-type]


def fold(stub: JournalStub, run_id: str) -> state_pb2.RunState:
    return stub.Fold(pb.FoldRequest(run_id=run_id)).state


COMPLETED = records_pb2.TERMINAL_REASON_COMPLETED


def finish(stub: JournalStub, child: str, answer: str = "42", reason: int = COMPLETED) -> None:
    """The child's worker (token 1, the spawner's): one final turn, then its terminal."""
    records = [b.assistant(2, 1, say=answer), b.terminal(3, reason, "stopped")]  # type: ignore[arg-type]
    stub.AppendBatch(pb.AppendBatchRequest(run_id=child, claim_token=1, records=records))


def call_of(state: state_pb2.RunState, call: str) -> state_pb2.PendingCall:
    return next(c for c in state.pending.calls if c.tool_use.id == call)


def results(stub: JournalStub, run_id: str) -> list[records_pb2.ToolResult]:
    items = stub.Read(pb.ReadRequest(run_id=run_id))
    return [item.record.tool_result for item in items if item.record.HasField("tool_result")]


def test_spawn_defers_the_parents_call_to_the_child_and_links_the_child_to_it(stub: JournalStub) -> None:
    parent = parent_waiting(stub)
    child = new_run_id("child")
    spawned = spawn(stub, parent, "c1", child)
    assert (spawned.run_id, spawned.last_seq, spawned.deferral_seq, spawned.duplicate) == (child, 1, 3, False)
    assert spawned.spawned_by == records_pb2.SpawnOrigin(run_id=parent, tool_use_id="c1", seq=2, root_run_id=parent)
    pending = call_of(fold(stub, parent), "c1")
    assert pending.waiting_for == state_pb2.WAITING_FOR_CHILD
    assert (pending.child_run_id, pending.waiting_for_person) == (child, False)
    assert pending.child_status == state_pb2.RUN_STATUS_OPEN
    child_state = fold(stub, child)
    assert child_state.meta.spawned_by == spawned.spawned_by
    assert (child_state.claim_token, child_state.last_seq) == (1, 1)
    summary = stub.ListRuns(pb.ListRunsRequest(spawned_by_run_id=parent)).runs
    assert [(s.run_id, s.spawned_by_run_id, s.root_run_id) for s in summary] == [(child, parent, parent)]


def test_a_grandchild_names_the_root_and_the_root_filter_finds_the_tree(stub: JournalStub) -> None:
    parent = parent_waiting(stub)
    child = new_run_id("child")
    spawn(stub, parent, "c1", child)
    stub.Append(pb.AppendRequest(run_id=child, claim_token=1, record=b.assistant(2, 1, ["g1"])))
    grandchild = new_run_id("grandchild")
    assert spawn(stub, child, "g1", grandchild).spawned_by.root_run_id == parent
    tree = stub.ListRuns(pb.ListRunsRequest(root_run_id=parent)).runs
    assert sorted(s.run_id for s in tree) == sorted([parent, child, grandchild])


def test_spawning_again_for_the_call_is_a_verified_duplicate_never_a_second_child(stub: JournalStub) -> None:
    parent = parent_waiting(stub)
    child = new_run_id("child")
    first = spawn(stub, parent, "c1", child)
    again = spawn(stub, parent, "c1", child)
    assert (again.duplicate, again.deferral_seq, again.spawned_by) == (True, first.deferral_seq, first.spawned_by)
    other = new_run_id("other")
    code, reason, meta = refused(lambda: spawn(stub, parent, "c1", other))
    assert (code, reason, meta["field"]) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT", "new_run_id")
    assert refused(lambda: fold(stub, other))[1] == "RUN_NOT_FOUND"
    assert fold(stub, parent).last_seq == 3  # nothing written by either


def test_spawn_refusals_write_nothing(stub: JournalStub) -> None:
    parent = parent_waiting(stub)
    taken = parent_waiting(stub)
    assert refused(lambda: spawn(stub, parent, "nope", new_run_id("c")))[1] == "CALL_NOT_PENDING"
    assert refused(lambda: spawn(stub, parent, "c1", taken))[1] == "RUN_EXISTS"
    bad = pb.SpawnRunRequest(run_id=parent, tool_use_id="c1", new_run_id=new_run_id("c"), meta=child_meta())
    bad.meta.spawned_by.run_id = "someone"
    assert refused(lambda: stub.SpawnRun(bad))[2]["field"] == "meta.spawned_by"
    bad.meta.ClearField("spawned_by")
    bad.meta.format_version = 1
    assert refused(lambda: stub.SpawnRun(bad))[2]["field"] == "meta.format_version"
    assert fold(stub, parent).last_seq == 2


def test_a_worker_cannot_append_the_links_only_the_server_writes(stub: JournalStub) -> None:
    parent = parent_waiting(stub)
    deferral = b.deferral(3, "c1")
    deferral.deferral.child_run_id = "elsewhere"
    _, reason, meta = refused(lambda: stub.Append(pb.AppendRequest(run_id=parent, claim_token=1, record=deferral)))
    assert (reason, meta["field"]) == ("INVALID_RECORD", "deferral.child_run_id")
    result = b.result(3, "c1", remote=True)
    result.tool_result.answered_by_run_id = "elsewhere"
    _, reason, meta = refused(lambda: stub.Append(pb.AppendRequest(run_id=parent, claim_token=1, record=result)))
    assert (reason, meta["field"]) == ("INVALID_RECORD", "tool_result.answered_by_run_id")


def test_a_completed_child_answers_the_parents_call_once_with_its_final_answer(stub: JournalStub) -> None:
    parent = parent_waiting(stub)
    child = new_run_id("child")
    spawn(stub, parent, "c1", child)
    finish(stub, child, "the answer is 42")
    answered = call_of(fold(stub, parent), "c1")
    assert answered.answered and answered.result.answered_by_run_id == child
    assert (answered.result.remote, answered.result.is_error) == (True, False)
    assert [c.text.text for c in answered.result.content] == ["the answer is 42"]
    finish(stub, child, "the answer is 42")  # a retried terminal (a duplicate) delivers nothing more
    assert len(results(stub, parent)) == 1


def test_a_child_that_fails_answers_with_an_error_naming_its_reason(stub: JournalStub) -> None:
    parent = parent_waiting(stub)
    child = new_run_id("child")
    spawn(stub, parent, "c1", child)
    finish(stub, child, reason=records_pb2.TERMINAL_REASON_ERROR)
    (result,) = results(stub, parent)
    assert result.is_error and "(error): stopped" in result.content[0].text.text


def test_a_suspended_child_does_not_answer_yet(stub: JournalStub) -> None:
    parent = parent_waiting(stub)
    child = new_run_id("child")
    spawn(stub, parent, "c1", child)
    finish(stub, child, reason=records_pb2.TERMINAL_REASON_SUSPENDED)
    assert results(stub, parent) == []
    waiting = call_of(fold(stub, parent), "c1")
    assert (waiting.waiting_for, waiting.child_status) == (state_pb2.WAITING_FOR_CHILD, state_pb2.RUN_STATUS_SUSPENDED)


def test_a_call_a_person_answered_first_keeps_its_answer_and_the_child_gets_a_note(stub: JournalStub) -> None:
    parent = parent_waiting(stub)
    child = new_run_id("child")
    spawn(stub, parent, "c1", child)
    text = records_pb2.ContentBlock(text=records_pb2.TextBlock(text="a person said so"))
    stub.Answer(pb.AnswerRequest(run_id=parent, tool_use_id="c1", content=[text]))
    finish(stub, child)
    (result,) = results(stub, parent)
    assert (result.content[0].text.text, result.answered_by_run_id) == ("a person said so", "")
    child_records = list(stub.Read(pb.ReadRequest(run_id=child)))
    assert child_records[-1].record.HasField("note") and "not delivered" in child_records[-1].record.note.text
    finish(stub, child)  # told again: the note is not repeated
    assert len(list(stub.Read(pb.ReadRequest(run_id=child)))) == len(child_records)


def test_a_parent_with_children_is_deleted_only_with_its_whole_tree(stub: JournalStub) -> None:
    parent = parent_waiting(stub)
    child, grandchild = new_run_id("child"), new_run_id("grandchild")
    spawn(stub, parent, "c1", child)
    stub.Append(pb.AppendRequest(run_id=child, claim_token=1, record=b.assistant(2, 1, ["g1"])))
    spawn(stub, child, "g1", grandchild)
    last = fold(stub, parent).last_seq
    code, _, meta = refused(lambda: stub.DeleteRun(pb.DeleteRunRequest(run_id=parent, expected_last_seq=last)))
    assert (code, meta["field"]) == (grpc.StatusCode.INVALID_ARGUMENT, "with_children")
    assert fold(stub, child).last_seq == 3  # nothing deleted
    deleted = stub.DeleteRun(pb.DeleteRunRequest(run_id=parent, expected_last_seq=last, with_children=True))
    assert deleted.deleted
    for run_id in (parent, child, grandchild):
        assert refused(lambda run_id=run_id: fold(stub, run_id))[1] == "RUN_DELETED"


def test_a_fork_of_a_parent_waits_for_a_person_not_for_the_sources_child(stub: JournalStub) -> None:
    parent = parent_waiting(stub)
    child = new_run_id("child")
    spawn(stub, parent, "c1", child)
    forked = new_run_id("fork")
    stub.ForkRun(pb.ForkRunRequest(run_id=parent, at_seq=0, new_run_id=forked))
    copied = call_of(fold(stub, forked), "c1")
    assert (copied.waiting_for, copied.child_run_id) == (state_pb2.WAITING_FOR_ANSWER, "")
    finish(stub, child)
    assert len(results(stub, parent)) == 1 and results(stub, forked) == []
    fork_last = fold(stub, forked).last_seq
    assert stub.DeleteRun(pb.DeleteRunRequest(run_id=forked, expected_last_seq=fork_last)).deleted
