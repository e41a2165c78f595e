"""Compaction over real gRPC, on both backends (issue 21): an appended record, and every earlier record stays.

Fold and Claim send the compacted conversation and say which compaction is in
force; ``uncompacted`` sends every message; Read, a fork at a seq before and
after the compaction, and the listing all see the journal as stored. Refusals
name what is wrong and change nothing.
"""

from __future__ import annotations

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import records_pb2, state_pb2
from tests.api.rpc import error_info, new_run_id
from tests.support import builders as b


def create(stub, run_id: str, records: list[records_pb2.JournalRecord]) -> None:  # type: ignore[no-untyped-def]
    records[0].meta.run_id = run_id
    stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=records))


def first_texts(state: state_pb2.RunState) -> list[str]:
    return [m.content[0].text.text or m.content[0].WhichOneof("block") for m in state.conversation]


TOOL_TURN = [b.meta(prompt="find flights"), b.assistant(2, 1, ["a"], say="searching"), b.result(3, "a", "3 flights")]


def test_fold_and_claim_send_the_compacted_conversation_and_uncompacted_sends_every_message(stub):
    run_id = new_run_id("compact")
    create(stub, run_id, [*TOOL_TURN, b.compaction(4, 3, "searched: 3 flights"), b.user(5, "book the cheapest")])
    state = stub.Fold(pb.FoldRequest(run_id=run_id)).state
    assert first_texts(state) == ["searched: 3 flights"]
    assert [block.text.text for block in state.conversation[0].content] == ["searched: 3 flights", "book the cheapest"]
    assert (state.compaction_seq, state.compacted_upto_seq, state.uncompacted) == (4, 3, False)
    whole = stub.Fold(pb.FoldRequest(run_id=run_id, uncompacted=True)).state
    assert first_texts(whole) == ["find flights", "searching", "tool_result"]
    assert whole.uncompacted and whole.compaction_seq == 4
    claimed = stub.Claim(pb.ClaimRequest(run_id=run_id, worker_id="w2", fingerprint=b.fingerprint()))
    assert first_texts(claimed.state) == ["searched: 3 flights"]
    assert claimed.state.counters.llm_calls == 1 and claimed.state.next_iteration == 2
    # Nothing was removed: every record is read back as stored.
    assert [item.seq for item in stub.Read(pb.ReadRequest(run_id=run_id))] == [1, 2, 3, 4, 5, 6]


def test_a_compaction_that_splits_a_call_from_its_result_is_refused_naming_it_and_writes_nothing(stub):
    run_id = new_run_id("split")
    create(stub, run_id, [b.meta(), b.assistant(2, 1, ["a", "b"]), b.result(3, "a")])
    with pytest.raises(grpc.RpcError) as caught:
        stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.compaction(4, 3)))
    info = error_info(caught.value)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.reason == "INVALID_RECORD"
    assert "call 'b'" in caught.value.details()
    assert stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.result(4, "b"))).seq == 4


def test_a_format_1_run_refuses_a_compaction_with_a_clear_reason(stub):
    run_id = new_run_id("format1")
    create(stub, run_id, [b.meta(format_version=1), *TOOL_TURN[1:]])
    with pytest.raises(grpc.RpcError) as caught:
        stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.compaction(4, 3)))
    assert error_info(caught.value).reason == "INVALID_RECORD"
    assert "needs journal format 2" in caught.value.details()
    assert stub.Fold(pb.FoldRequest(run_id=run_id)).state.last_seq == 3


def test_a_fork_before_the_compaction_has_none_and_a_fork_after_it_has_it(stub):
    run_id = new_run_id("forked")
    create(stub, run_id, [*TOOL_TURN, b.compaction(4, 3), b.assistant(5, 2, say="done")])
    before, after = new_run_id("before"), new_run_id("after")
    stub.ForkRun(pb.ForkRunRequest(run_id=run_id, at_seq=3, new_run_id=before))
    stub.ForkRun(pb.ForkRunRequest(run_id=run_id, at_seq=5, new_run_id=after))
    assert stub.Fold(pb.FoldRequest(run_id=before)).state.compaction_seq == 0
    forked = stub.Fold(pb.FoldRequest(run_id=after)).state
    assert (forked.compaction_seq, first_texts(forked)) == (4, ["the story so far", "done"])


def test_a_compaction_after_the_terminal_leaves_the_listed_status_and_fold_as_of_sees_before_it(stub):
    run_id = new_run_id("listed")
    create(stub, run_id, [*TOOL_TURN, b.assistant(4, 2, say="done"), b.terminal(5), b.compaction(6, 4)])
    (summary,) = [r for r in stub.ListRuns(pb.ListRunsRequest(page_size=1000)).runs if r.run_id == run_id]
    assert summary.status == state_pb2.RUN_STATUS_COMPLETED and summary.last_seq == 6
    assert stub.Fold(pb.FoldRequest(run_id=run_id, as_of_seq=5)).state.compaction_seq == 0
