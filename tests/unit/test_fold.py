"""Fold: one test per rule, refusals that change nothing, and properties over random journals."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runjournal.v1.records_pb2 import (
    ContentBlock,
    ConversationMessage,
    Decision,
    JournalRecord,
    Role,
    StopReason,
    TerminalReason,
    TextBlock,
    ToolResultBlock,
)
from runjournal.v1.state_pb2 import RunState, RunStatus
from runjournal_server.core.errors import VersionMismatchError
from runjournal_server.core.fold import Folder, JournalRuleError, fold, fold_stored
from runjournal_server.core.kinds import READABLE_FORMAT_VERSIONS
from runjournal_server.core.records import FORMAT_VERSION
from tests.support import builders as b
from tests.support.journals import renumbered, stored_journals, valid_journals

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def results_message(*pairs: tuple[str, str]) -> ConversationMessage:
    """The synthetic user message of a committed turn: (call id, result text) in journal order."""
    return ConversationMessage(
        role=Role.ROLE_USER,
        content=[
            ContentBlock(tool_result=ToolResultBlock(tool_use_id=call_id, content=[b.text(say)]))
            for call_id, say in pairs
        ],
    )


def texts(message: ConversationMessage) -> list[str]:
    return [block.text.text for block in message.content if block.HasField("text")]


def refused(folder: Folder, record: JournalRecord) -> JournalRuleError:
    """Apply a record that must be refused; check it changed nothing and return the error."""
    before = folder.state()
    with pytest.raises(JournalRuleError) as info:
        folder.apply(record)
    assert folder.state() == before
    assert folder.last_seq == before.last_seq
    return info.value


# -- position, meta and version ---------------------------------------------


def test_first_record_must_be_meta_at_seq_1() -> None:
    assert refused(Folder(), b.user(1)).seq == 1
    assert "first record must be 'meta'" in refused(Folder(), b.user(1)).detail
    assert "seq 1" in refused(Folder(), b.meta(seq=2)).detail


def test_meta_appears_only_once() -> None:
    folder = fold([b.meta(), b.note(2)])
    error = refused(folder, b.meta(seq=3))
    assert error.seq == 3
    assert "second meta" in error.detail


@pytest.mark.parametrize("version", [min(READABLE_FORMAT_VERSIONS) - 1, max(READABLE_FORMAT_VERSIONS) + 1, 0, 99])
def test_version_newer_and_older_refused(version: int) -> None:
    folder = Folder()
    with pytest.raises(VersionMismatchError) as info:
        folder.apply(b.meta(format_version=version))
    assert info.value.metadata["found_version"] == str(version)
    assert info.value.metadata["expected_version"] == str(FORMAT_VERSION)
    assert "versions 1 and 2" in info.value.message
    assert folder.state() == RunState()


@pytest.mark.parametrize("version", sorted(READABLE_FORMAT_VERSIONS))
def test_every_readable_version_folds(version: int) -> None:
    assert fold([b.meta(format_version=version), b.assistant(2, 1)]).state().last_seq == 2


@pytest.mark.parametrize("seq", [2, 3, 5, 100])
def test_seqs_follow_the_last_by_exactly_one(seq: int) -> None:
    folder = fold([b.meta(), b.note(2), b.note(3)])
    error = refused(folder, b.note(seq))
    assert error.seq == seq
    assert "expected seq 4" in error.detail


def test_record_without_payload_refused() -> None:
    assert "no payload" in refused(fold([b.meta()]), JournalRecord(seq=2)).detail


def test_meta_rebuilds_message_zero_fingerprint_and_claim_token() -> None:
    record = b.meta(prompt="do the thing", fp=b.fingerprint(model="m-1"))
    state = fold([record]).state()
    assert state.run_id == b.RUN_ID
    assert state.meta == record.meta
    assert list(state.conversation) == [ConversationMessage(role=Role.ROLE_USER, content=[b.text("do the thing")])]
    assert state.effective_fingerprint == b.fingerprint(model="m-1")
    assert (state.claim_token, state.claimed_by) == (1, "")
    assert (state.next_iteration, state.last_seq, state.status) == (1, 1, RunStatus.RUN_STATUS_OPEN)
    assert not state.HasField("pending") and not state.HasField("terminal")


def test_empty_folder_has_no_run() -> None:
    folder = Folder()
    assert folder.state() == RunState()
    assert (folder.last_seq, folder.claim_token, folder.run_id, folder.has_pending) == (0, 0, "", False)


def test_unknown_id_skipped_only_when_optional() -> None:
    folder = fold_stored([b.stored(b.meta()), b.unknown(2, optional=True)])
    assert folder.last_seq == 2
    before = folder.state()
    with pytest.raises(JournalRuleError) as info:
        folder.apply_stored(b.unknown(3, "future_thing", optional=False))
    assert info.value.seq == 3 and "future_thing" in info.value.detail
    assert folder.state() == before


def test_unknown_optional_record_still_needs_the_next_seq() -> None:
    folder = fold([b.meta()])
    with pytest.raises(JournalRuleError):
        folder.skip_unknown(3, "future_thing", optional=True)
    with pytest.raises(JournalRuleError):
        Folder().skip_unknown(1, "future_thing", optional=True)
    assert folder.last_seq == 1


# -- assistant ---------------------------------------------------------------


def test_assistant_refused_while_calls_unanswered() -> None:
    folder = fold([b.meta(), b.assistant(2, 1, ["a", "b"]), b.result(3, "a")])
    error = refused(folder, b.assistant(4, 2))
    assert error.seq == 4 and "'b'" in error.detail


def test_assistant_commits_previous_turn_with_results_in_journal_order() -> None:
    first = b.assistant(2, 1, ["a", "b", "c"])
    state = fold(
        [
            b.meta(),
            first,
            b.result(3, "c", "C"),
            b.result(4, "a", "A"),
            b.result(5, "b", "B"),
            b.assistant(6, 2),
        ]
    ).state()
    assert [m.role for m in state.conversation] == [
        Role.ROLE_USER,
        Role.ROLE_ASSISTANT,
        Role.ROLE_USER,
        Role.ROLE_ASSISTANT,
    ]
    assert list(state.conversation[1].content) == list(first.assistant.content)
    assert state.conversation[2] == results_message(("c", "C"), ("a", "A"), ("b", "B"))


def test_assistant_counts_llm_call_tokens_and_resume_position() -> None:
    state = fold(
        [
            b.meta(),
            b.assistant(2, 1, usage=(10, 20, 30, 40)),
            b.assistant(3, 4, usage=(1, 2, 3, 4), stop_reason=StopReason.STOP_REASON_MAX_TOKENS),
        ]
    ).state()
    counters = state.counters
    assert counters.llm_calls == 2
    assert (counters.input_tokens, counters.output_tokens) == (11, 22)
    assert (counters.cache_read_tokens, counters.cache_write_tokens) == (33, 44)
    assert state.next_iteration == 5
    assert state.last_stop_reason == StopReason.STOP_REASON_MAX_TOKENS


@pytest.mark.parametrize("iteration", [0, 2, 1])
def test_iteration_must_increase(iteration: int) -> None:
    folder = fold([b.meta(), b.assistant(2, 2)])
    assert f"iteration {iteration}" in refused(folder, b.assistant(3, iteration)).detail


def test_tool_use_id_reused_across_run_refused() -> None:
    folder = fold([b.meta(), b.assistant(2, 1, ["a"]), b.result(3, "a")])
    assert "'a'" in refused(folder, b.assistant(4, 2, ["b", "a"])).detail


def test_tool_use_id_repeated_within_one_turn_refused() -> None:
    assert "'x'" in refused(fold([b.meta()]), b.assistant(2, 1, ["x", "x"])).detail


def test_turn_without_calls_is_in_conversation_and_leaves_no_pending_batch() -> None:
    turn = b.assistant(2, 1, say="all done")
    state = fold([b.meta(), turn]).state()
    assert list(state.conversation)[1:] == [
        ConversationMessage(role=Role.ROLE_ASSISTANT, content=turn.assistant.content)
    ]
    assert not state.HasField("pending")


def test_consecutive_assistant_turns_without_calls_stay_separate_messages() -> None:
    state = fold([b.meta(), b.assistant(2, 1, say="one"), b.assistant(3, 2, say="two")]).state()
    assert [texts(m) for m in state.conversation[1:]] == [["one"], ["two"]]


# -- user follow-ups ---------------------------------------------------------


def test_follow_up_merges_into_prompt_message() -> None:
    state = fold([b.meta(prompt="p"), b.user(2, "u1")]).state()
    assert len(state.conversation) == 1
    assert texts(state.conversation[0]) == ["p", "u1"]


def test_follow_up_merges_into_results_message() -> None:
    state = fold([b.meta(), b.assistant(2, 1, ["a"]), b.result(3, "a", "A"), b.user(4, "next")]).state()
    assert len(state.conversation) == 3
    merged = state.conversation[2]
    assert merged.role == Role.ROLE_USER
    assert merged.content[0].tool_result.tool_use_id == "a"
    assert merged.content[1] == b.text("next")


def test_consecutive_follow_ups_merge() -> None:
    state = fold([b.meta(prompt="p"), b.assistant(2, 1), b.user(3, "u1"), b.claim(4), b.user(5, "u2")]).state()
    assert [m.role for m in state.conversation] == [Role.ROLE_USER, Role.ROLE_ASSISTANT, Role.ROLE_USER]
    assert texts(state.conversation[2]) == ["u1", "u2"]


def test_follow_up_after_turn_without_calls_is_a_new_user_message() -> None:
    state = fold([b.meta(), b.assistant(2, 1, say="answer"), b.user(3, "thanks")]).state()
    assert [texts(m) for m in state.conversation] == [["hello"], ["answer"], ["thanks"]]


def test_follow_up_refused_while_calls_unanswered() -> None:
    folder = fold([b.meta(), b.assistant(2, 1, ["a"])])
    assert "'a'" in refused(folder, b.user(3)).detail


# -- tool results ------------------------------------------------------------


def test_result_for_call_of_committed_turn_is_corrupt_with_its_seq() -> None:
    folder = fold([b.meta(), b.assistant(2, 1, ["a"]), b.result(3, "a"), b.assistant(4, 2, ["b"])])
    error = refused(folder, b.result(5, "a"))
    assert error.seq == 5 and "committed turn at seq 2" in error.detail


def test_result_for_unknown_call_is_corrupt() -> None:
    folder = fold([b.meta(), b.assistant(2, 1, ["a"])])
    assert "unknown call 'zz'" in refused(folder, b.result(3, "zz")).detail
    assert "unknown call" in refused(fold([b.meta()]), b.result(2, "a")).detail


def test_second_result_for_one_call_is_corrupt_with_its_seq() -> None:
    folder = fold([b.meta(), b.assistant(2, 1, ["a", "b"]), b.result(3, "a")])
    error = refused(folder, b.result(4, "a"))
    assert error.seq == 4
    assert "already answered at seq 3" in error.detail


def test_result_counts_tool_calls_and_remote_calls() -> None:
    state = fold(
        [
            b.meta(),
            b.assistant(2, 1, ["a", "b", "c"]),
            b.result(3, "a", remote=True),
            b.result(4, "b"),
            b.result(5, "c", is_error=True),
        ]
    ).state()
    assert (state.counters.tool_calls, state.counters.remote_tool_calls) == (3, 1)
    assert [block.tool_result.is_error for block in state.conversation[2].content] == [False, False, True]


@pytest.mark.parametrize("reason", [TerminalReason.TERMINAL_REASON_BUDGET, TerminalReason.TERMINAL_REASON_SUSPENDED])
def test_result_after_budget_or_suspend_terminal_answers_pending_batch(
    reason: TerminalReason,
) -> None:
    folder = fold([b.meta(), b.assistant(2, 1, ["a", "b"]), b.result(3, "a"), b.terminal(4, reason)])
    assert folder.state().status != RunStatus.RUN_STATUS_OPEN
    assert folder.has_pending
    folder.apply(b.result(5, "b"))
    state = folder.state()
    assert not folder.has_pending and not state.HasField("pending")
    assert state.conversation[-1] == results_message(("a", "result of a"), ("b", "result of b"))
    assert state.status == RunStatus.RUN_STATUS_OPEN


# -- deferrals and approvals -------------------------------------------------


def test_deferral_marks_call_and_counts() -> None:
    state = fold([b.meta(), b.assistant(2, 1, ["a", "b"]), b.deferral(3, "b", "ask finance")]).state()
    calls = state.pending.calls
    assert (calls[0].deferred, calls[1].deferred) == (False, True)
    assert calls[1].deferral_seq == 3 and calls[1].deferral.reason == "ask finance"
    assert state.counters.deferrals == 1


def test_deferral_twice_for_one_call_refused() -> None:
    folder = fold([b.meta(), b.assistant(2, 1, ["a"]), b.deferral(3, "a")])
    assert "already deferred at seq 3" in refused(folder, b.deferral(4, "a")).detail


def test_deferral_for_answered_call_refused() -> None:
    folder = fold([b.meta(), b.assistant(2, 1, ["a", "b"]), b.result(3, "a")])
    assert "already answered at seq 3" in refused(folder, b.deferral(4, "a")).detail


def test_deferral_for_call_of_committed_turn_refused() -> None:
    folder = fold([b.meta(), b.assistant(2, 1, ["a"]), b.result(3, "a"), b.assistant(4, 2, ["b"])])
    assert "committed turn" in refused(folder, b.deferral(5, "a")).detail


def test_approval_recorded_on_pending_call() -> None:
    state = fold([b.meta(), b.assistant(2, 1, ["a", "b"]), b.approval(3, "b", approved=False)]).state()
    call = state.pending.calls[1]
    assert (call.decision, call.approval_seq) == (Decision.DECISION_DENIED, 3)
    assert call.approval.approver == "alice"
    assert state.pending.calls[0].decision == Decision.DECISION_UNSPECIFIED


def test_approval_spent_once_the_call_has_its_result() -> None:
    folder = fold([b.meta(), b.assistant(2, 1, ["a", "b"]), b.approval(3, "a"), b.result(4, "a")])
    call = folder.state().pending.calls[0]
    assert call.answered and call.result_seq == 4
    assert (call.decision, call.approval_seq, call.HasField("approval")) == (
        Decision.DECISION_UNSPECIFIED,
        0,
        False,
    )
    status = folder.call_status("a")
    assert status is not None and (status.decision, status.approval_seq) == (Decision.DECISION_APPROVED, 3)


def test_second_approval_for_one_call_refused() -> None:
    folder = fold([b.meta(), b.assistant(2, 1, ["a"]), b.approval(3, "a")])
    assert "already has a decision from seq 3" in refused(folder, b.approval(4, "a", approved=False)).detail


def test_approval_for_answered_call_refused() -> None:
    folder = fold([b.meta(), b.assistant(2, 1, ["a", "b"]), b.result(3, "a")])
    assert "already answered" in refused(folder, b.approval(4, "a")).detail


def test_approval_without_a_decision_refused() -> None:
    record = b.approval(3, "a")
    record.approval.decision = Decision.DECISION_UNSPECIFIED
    assert "decision" in refused(fold([b.meta(), b.assistant(2, 1, ["a"])]), record).detail


# -- claims ------------------------------------------------------------------


def test_claim_between_turn_and_results_keeps_pending_batch() -> None:
    journal = [b.meta(), b.assistant(2, 1, ["a", "b"]), b.result(3, "a")]
    without = fold(journal).state()
    with_claim = fold([*journal, b.claim(4, "w9")]).state()
    assert with_claim.pending == without.pending
    assert list(with_claim.conversation) == list(without.conversation)
    folder = fold([*journal, b.claim(4, "w9"), b.result(5, "b")])
    assert folder.state().conversation[-1] == results_message(("a", "result of a"), ("b", "result of b"))


def test_claim_sets_token_and_holder_only() -> None:
    journal = [b.meta(), b.assistant(2, 1, ["a"]), b.terminal(3, TerminalReason.TERMINAL_REASON_SUSPENDED)]
    before = fold(journal).state()
    folder = fold([*journal, b.claim(4, "w1"), b.claim(5, "w2")])
    after = folder.state()
    assert (after.claim_token, after.claimed_by) == (5, "w2")
    assert (folder.claim_token, folder.claimed_by) == (5, "w2")
    after.claim_token, after.claimed_by, after.last_seq = (
        before.claim_token,
        before.claimed_by,
        before.last_seq,
    )
    assert after == before


# -- terminal ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("follower", "status"),
    [
        (lambda seq: b.claim(seq), RunStatus.RUN_STATUS_COMPLETED),
        (lambda seq: b.note(seq), RunStatus.RUN_STATUS_COMPLETED),
        (lambda seq: b.reconfigure(seq, b.fingerprint(model="m2")), RunStatus.RUN_STATUS_COMPLETED),
        (lambda seq: b.user(seq), RunStatus.RUN_STATUS_OPEN),
        (lambda seq: b.assistant(seq, 2), RunStatus.RUN_STATUS_OPEN),
    ],
    ids=["claim", "note", "reconfigure", "user", "assistant"],
)
def test_terminal_describes_run_only_while_last_non_inert(
    follower: Callable[[int], JournalRecord], status: RunStatus
) -> None:
    state = fold([b.meta(), b.assistant(2, 1), b.terminal(3, message="bye"), follower(4)]).state()
    assert state.status == status
    assert state.HasField("terminal") == (status != RunStatus.RUN_STATUS_OPEN)
    if state.HasField("terminal"):
        assert state.terminal.message == "bye"


@pytest.mark.parametrize(
    "follower",
    [b.result(4, "a"), b.deferral(4, "a"), b.approval(4, "a")],
    ids=["result", "deferral", "approval"],
)
def test_answer_deferral_or_approval_after_terminal_reopens_run(follower: JournalRecord) -> None:
    journal = [
        b.meta(),
        b.assistant(2, 1, ["a", "b"]),
        b.terminal(3, TerminalReason.TERMINAL_REASON_SUSPENDED),
    ]
    state = fold([*journal, follower]).state()
    assert state.status == RunStatus.RUN_STATUS_OPEN and not state.HasField("terminal")


def test_unknown_optional_record_is_inert_for_the_terminal() -> None:
    records = [b.meta(), b.assistant(2, 1), b.terminal(3, TerminalReason.TERMINAL_REASON_ERROR)]
    state = fold_stored([*map(b.stored, records), b.unknown(4)]).state()
    assert state.status == RunStatus.RUN_STATUS_ERROR


@pytest.mark.parametrize(
    ("reason", "status"),
    [
        (TerminalReason.TERMINAL_REASON_COMPLETED, RunStatus.RUN_STATUS_COMPLETED),
        (TerminalReason.TERMINAL_REASON_SUSPENDED, RunStatus.RUN_STATUS_SUSPENDED),
        (TerminalReason.TERMINAL_REASON_ERROR, RunStatus.RUN_STATUS_ERROR),
        (TerminalReason.TERMINAL_REASON_BUDGET, RunStatus.RUN_STATUS_BUDGET),
        (TerminalReason.TERMINAL_REASON_MAX_ITERATIONS, RunStatus.RUN_STATUS_MAX_ITERATIONS),
        (TerminalReason.TERMINAL_REASON_CANCELLED, RunStatus.RUN_STATUS_CANCELLED),
    ],
)
def test_terminal_reason_gives_run_status(reason: TerminalReason, status: RunStatus) -> None:
    folder = fold([b.meta(), b.terminal(2, reason)])
    assert folder.state().status == status == folder.status


def test_terminal_without_a_known_reason_refused() -> None:
    assert "reason" in refused(fold([b.meta()]), b.terminal(2, TerminalReason.TERMINAL_REASON_UNSPECIFIED)).detail


def test_next_iteration_survives_trailing_user_and_terminal() -> None:
    state = fold(
        [
            b.meta(),
            b.assistant(2, 3),
            b.user(3),
            b.terminal(4, TerminalReason.TERMINAL_REASON_MAX_ITERATIONS),
            b.claim(5),
        ]
    ).state()
    assert state.next_iteration == 4
    assert state.last_stop_reason == StopReason.STOP_REASON_END_TURN
    assert state.status == RunStatus.RUN_STATUS_MAX_ITERATIONS


# -- reconfigure and note ----------------------------------------------------


def test_reconfigure_replaces_effective_fingerprint() -> None:
    folder = fold([b.meta(), b.reconfigure(2, b.fingerprint(model="m2")), b.reconfigure(3, b.fingerprint(model="m3"))])
    assert folder.state().effective_fingerprint == b.fingerprint(model="m3")
    assert folder.effective_fingerprint == b.fingerprint(model="m3")
    assert folder.state().meta.fingerprint == b.fingerprint()


def test_note_changes_only_last_seq() -> None:
    journal = [b.meta(), b.assistant(2, 1, ["a"]), b.terminal(3, TerminalReason.TERMINAL_REASON_SUSPENDED)]
    before = fold(journal).state()
    after = fold([*journal, b.note(4)]).state()
    assert after.last_seq == 4
    after.last_seq = before.last_seq
    assert after == before


# -- the pending batch -------------------------------------------------------


def test_pending_batch_lists_every_call_in_model_order_with_its_progress() -> None:
    turn = b.assistant(2, 7, ["a", "b", "c"])
    state = fold([b.meta(), turn, b.result(3, "c"), b.deferral(4, "b"), b.approval(5, "a")]).state()
    pending = state.pending
    assert (pending.assistant_seq, pending.iteration) == (2, 7)
    assert pending.assistant == ConversationMessage(role=Role.ROLE_ASSISTANT, content=turn.assistant.content)
    assert [c.tool_use.id for c in pending.calls] == ["a", "b", "c"]
    assert [(c.answered, c.result_seq) for c in pending.calls] == [(False, 0), (False, 0), (True, 3)]
    assert pending.calls[2].result.tool_use_id == "c"
    assert [c.deferred for c in pending.calls] == [False, True, False]
    assert [c.approval_seq for c in pending.calls] == [5, 0, 0]
    assert len(state.conversation) == 1  # the turn is not in the conversation while pending
    assert state.next_iteration == 8


def test_fully_answered_open_turn_is_in_conversation_not_pending() -> None:
    folder = fold([b.meta(), b.assistant(2, 1, ["a"]), b.claim(3), b.result(4, "a")])
    state = folder.state()
    assert not state.HasField("pending") and not folder.has_pending
    assert [m.role for m in state.conversation] == [Role.ROLE_USER, Role.ROLE_ASSISTANT, Role.ROLE_USER]


# -- queries -----------------------------------------------------------------


def test_result_seq_finds_answers_in_committed_and_open_turns() -> None:
    folder = fold(
        [
            b.meta(),
            b.assistant(2, 1, ["a"]),
            b.result(3, "a"),
            b.assistant(4, 2, ["b", "c"]),
            b.result(5, "c"),
        ]
    )
    assert (folder.result_seq("a"), folder.result_seq("c")) == (3, 5)
    assert folder.result_seq("b") is None
    assert folder.result_seq("nope") is None


def test_call_status_reports_turn_deferral_decision_and_answer() -> None:
    folder = fold(
        [
            b.meta(),
            b.assistant(2, 1, ["a"]),
            b.result(3, "a"),
            b.assistant(4, 2, ["b", "c"]),
            b.deferral(5, "b"),
            b.approval(6, "b", approved=False),
        ]
    )
    old, b_status, c_status = folder.call_status("a"), folder.call_status("b"), folder.call_status("c")
    assert old is not None and b_status is not None and c_status is not None
    assert (old.in_open_turn, old.answered, old.result_seq, old.assistant_seq) == (False, True, 3, 2)
    assert (b_status.in_open_turn, b_status.deferred, b_status.deferral_seq) == (True, True, 5)
    assert (b_status.decision, b_status.approval_seq, b_status.answered) == (
        Decision.DECISION_DENIED,
        6,
        False,
    )
    assert (c_status.deferred, c_status.decision, c_status.answered) == (
        False,
        Decision.DECISION_UNSPECIFIED,
        False,
    )
    assert folder.call_status("zz") is None


def test_state_is_a_snapshot_the_caller_may_keep() -> None:
    folder = fold([b.meta(prompt="p"), b.assistant(2, 1, ["a"]), b.result(3, "a")])
    snapshot = folder.state()
    kept = RunState()
    kept.CopyFrom(snapshot)
    folder.apply(b.user(4, "merged later"))
    assert snapshot == kept
    snapshot.conversation[0].content.append(ContentBlock(text=TextBlock(text="caller scribble")))
    snapshot.effective_fingerprint.model = "changed"
    assert texts(folder.state().conversation[0]) == ["p"]
    folder.effective_fingerprint.model = "changed"
    assert folder.state().effective_fingerprint == b.fingerprint()


def test_fold_stored_accepts_stored_records() -> None:
    records = [b.meta(), b.assistant(2, 1, ["a"]), b.result(3, "a")]
    assert fold_stored(map(b.stored, records)).state() == fold(records).state()


# -- refusals change nothing (one case per rule) -----------------------------

_TURN = [b.meta(), b.assistant(2, 1, ["a", "b"])]
REFUSALS = [
    pytest.param([], b.assistant(1, 1), id="first_not_meta"),
    pytest.param([b.meta()], b.meta(seq=2), id="second_meta"),
    pytest.param([b.meta()], b.note(3), id="gap"),
    pytest.param([b.meta(), b.note(2)], b.note(2), id="repeat_seq"),
    pytest.param(_TURN, b.assistant(3, 2), id="assistant_while_unanswered"),
    pytest.param(_TURN, b.user(3), id="user_while_unanswered"),
    pytest.param([b.meta(), b.assistant(2, 5)], b.assistant(3, 5), id="iteration_not_increasing"),
    pytest.param([*_TURN, b.result(3, "a"), b.result(4, "b")], b.assistant(5, 2, ["a"]), id="reused_call_id"),
    pytest.param(_TURN, b.result(3, "zz"), id="result_unknown_call"),
    pytest.param(
        [*_TURN, b.result(3, "a"), b.result(4, "b"), b.assistant(5, 2, ["c"])],
        b.result(6, "a"),
        id="result_committed_turn",
    ),
    pytest.param([*_TURN, b.result(3, "a")], b.result(4, "a"), id="second_result"),
    pytest.param(_TURN, b.deferral(3, "zz"), id="deferral_unknown_call"),
    pytest.param([*_TURN, b.deferral(3, "a")], b.deferral(4, "a"), id="second_deferral"),
    pytest.param([*_TURN, b.result(3, "a")], b.deferral(4, "a"), id="deferral_answered_call"),
    pytest.param([*_TURN, b.approval(3, "a")], b.approval(4, "a"), id="second_approval"),
    pytest.param([*_TURN, b.result(3, "a")], b.approval(4, "a"), id="approval_answered_call"),
    pytest.param([b.meta()], b.terminal(2, TerminalReason.TERMINAL_REASON_UNSPECIFIED), id="terminal_no_reason"),
]


@pytest.mark.parametrize(("journal", "record"), REFUSALS)
def test_refused_record_is_reported_with_its_seq_and_changes_nothing(
    journal: list[JournalRecord], record: JournalRecord
) -> None:
    folder = fold(journal)
    assert refused(folder, record).seq == record.seq
    # The folder still accepts what the journal allows next.
    folder.apply(b.note(folder.last_seq + 1)) if journal else folder.apply(b.meta())


# -- properties over random valid journals -----------------------------------


@PROPERTY
@given(valid_journals())
def test_valid_journals_fold_without_error(records: list[JournalRecord]) -> None:
    state = fold(records).state()
    assert state.last_seq == len(records)
    assert state.counters.llm_calls == sum(r.HasField("assistant") for r in records)
    assert state.counters.tool_calls == sum(r.HasField("tool_result") for r in records)
    assert all(
        a.role != c.role or a.role != Role.ROLE_USER
        for a, c in zip(state.conversation, state.conversation[1:], strict=False)
    )


@PROPERTY
@given(valid_journals())
def test_incremental_fold_equals_batch_fold_at_every_split(records: list[JournalRecord]) -> None:
    expected = fold(records).state()
    for split in range(len(records) + 1):
        folder = fold(records[:split])
        folder.state()
        for record in records[split:]:
            folder.apply(record)
        assert folder.state() == expected


@PROPERTY
@given(stored_journals())
def test_unknown_optional_records_fold_as_if_absent(journal: list[b.Stored]) -> None:
    known = [s.record for s in journal if s.record is not None]
    renumbered_known = [renumbered(r, i) for i, r in enumerate(known, start=1)]
    with_unknown, without = fold_stored(journal).state(), fold(renumbered_known).state()
    assert list(with_unknown.conversation) == list(without.conversation)
    assert with_unknown.counters == without.counters
    assert (with_unknown.status, with_unknown.terminal) == (without.status, without.terminal)
    assert with_unknown.last_seq == len(journal)


@st.composite
def _journal_and_candidate(draw: st.DrawFn) -> tuple[list[JournalRecord], JournalRecord]:
    """A valid journal prefix and a record that may or may not be allowed after it."""
    records = draw(valid_journals())
    prefix = records[: draw(st.integers(1, len(records)))]
    seq = draw(st.sampled_from([len(prefix) + 1, len(prefix) + 1, len(prefix), len(prefix) + 2]))
    call_id = draw(st.sampled_from(["toolu_0", "toolu_1", "toolu_2", "toolu_5", "nope"]))
    make = draw(
        st.sampled_from(
            [
                lambda: b.result(seq, call_id),
                lambda: b.deferral(seq, call_id),
                lambda: b.approval(seq, call_id),
                lambda: b.assistant(seq, draw(st.integers(0, 50)), [call_id]),
                lambda: b.user(seq),
                lambda: b.meta(seq),
                lambda: b.claim(seq),
            ]
        )
    )
    return prefix, make()


@PROPERTY
@given(_journal_and_candidate())
def test_any_refused_record_leaves_state_unchanged(case: tuple[list[JournalRecord], JournalRecord]) -> None:
    prefix, candidate = case
    folder = fold(prefix)
    before = folder.state()
    try:
        folder.apply(candidate)
    except JournalRuleError as err:
        assert err.seq == candidate.seq
        assert folder.state() == before
    else:
        assert folder.last_seq == candidate.seq


@PROPERTY
@given(valid_journals(), st.randoms(use_true_random=False))
def test_shuffled_journals_are_refused_only_by_the_rules(records: list[JournalRecord], random: object) -> None:
    shuffled = [renumbered(r, i) for i, r in enumerate(random.sample(records, len(records)), start=1)]  # type: ignore[attr-defined]
    try:
        fold(shuffled)
    except JournalRuleError as err:
        assert 1 <= err.seq <= len(shuffled)


@given(valid_journals(), st.integers(min_value=0, max_value=60))
def test_conversation_from_returns_the_suffix_with_its_offset_and_size(
    records: list[JournalRecord], start: int
) -> None:
    folder = fold(records)
    full = folder.state()
    part = folder.state(conversation_from=start)
    expected_offset = min(start, len(full.conversation))
    assert list(part.conversation) == list(full.conversation)[expected_offset:]
    assert (part.conversation_offset, part.conversation_size) == (expected_offset, len(full.conversation))
    part.ClearField("conversation")
    full.ClearField("conversation")
    part.conversation_offset = full.conversation_offset
    assert part == full


@given(valid_journals())
def test_every_conversation_message_but_the_last_is_final_once_shown(records: list[JournalRecord]) -> None:
    """What lets a client ask only for the messages it lacks: earlier messages never change."""
    folder = Folder()
    shown: list[object] = []
    for record in records:
        folder.apply(record)
        now = list(folder.state().conversation)
        assert now[: max(len(shown) - 1, 0)] == shown[: max(len(shown) - 1, 0)]
        assert len(now) >= len(shown)  # nothing shown is ever taken back
        shown = now


def test_state_fills_a_message_the_caller_owns() -> None:
    records = [b.meta(), b.assistant(2, 1, ["c1"]), b.result(3, "c1"), b.user(4)]
    owned = RunState()
    returned = fold(records).state(into=owned)
    assert returned is owned and owned == fold(records).state()
