"""Compaction in the fold (core/compaction.py): the summary replaces what it covers, and nothing else changes.

The property: for any valid journal and any point where a compaction is
allowed, the conversation folded after the compaction is the summary, then
the messages of the records after ``upto_seq`` (a leading user message merged
into the summary's, as the fold merges); the uncompacted conversation, the
counters, the resume position, the pending batch and the claim are those of
the same journal without it; and no tool result is without its call.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runjournal.v1.records_pb2 import ContentBlock, ConversationMessage, JournalRecord, OpaqueBlock, Role
from runjournal.v1.state_pb2 import RunState, RunStatus
from runjournal_server.core.compaction import append_user
from runjournal_server.core.errors import InvalidRecordError
from runjournal_server.core.fold import Folder, JournalRuleError, fold
from runjournal_server.core.schema import validate
from tests.support import builders as b
from tests.support.journals import valid_journals

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TURN = [b.meta(prompt="p"), b.assistant(2, 1, ["a", "b"]), b.result(3, "a"), b.result(4, "b")]
"""A prompt and one fully answered turn of two calls: messages [prompt, assistant, results]."""


def refused(folder: Folder, record: JournalRecord) -> str:
    before = folder.state(uncompacted=True)
    with pytest.raises(JournalRuleError) as info:
        folder.apply(record)
    assert folder.state(uncompacted=True) == before
    return info.value.detail


def texts(state: RunState) -> list[list[str]]:
    return [[block.text.text or block.WhichOneof("block") or "" for block in m.content] for m in state.conversation]


# -- the conversation it leaves ------------------------------------------------


def test_the_summary_replaces_what_it_covers_and_the_rest_follows() -> None:
    folder = fold([*TURN, b.assistant(5, 2, say="later"), b.compaction(6, 4, "so far")])
    state = folder.state()
    assert texts(state) == [["so far"], ["later"]]
    assert (state.compaction_seq, state.compacted_upto_seq, state.uncompacted) == (6, 4, False)
    whole = folder.state(uncompacted=True)
    assert len(whole.conversation) == 4 and whole.uncompacted
    assert whole.conversation[0].content[0].text.text == "p"


def test_records_after_the_compaction_extend_both_conversations() -> None:
    folder = fold([*TURN, b.compaction(5, 4, "so far"), b.user(6, "and now?"), b.assistant(7, 2, ["c"])])
    folder.apply(b.result(8, "c"))
    compacted, whole = folder.state(), folder.state(uncompacted=True)
    # The follow-up merges into the summary's user message, as it merged into the results message.
    assert texts(compacted) == [["so far", "and now?"], ["turn 2", "tool_use"], ["tool_result"]]
    assert len(whole.conversation) == 5
    assert texts(whole)[2] == ["tool_result", "tool_result", "and now?"]


def test_a_compaction_changes_no_counter_position_claim_or_status() -> None:
    journal = [*TURN, b.claim(5), b.terminal(6)]
    without = fold(journal).state()
    folder = fold([*journal, b.compaction(7, 4)])
    with_it = folder.state()
    assert with_it.counters == without.counters
    assert (with_it.next_iteration, with_it.claim_token, with_it.claimed_by) == (2, 5, "worker-2")
    assert with_it.status == RunStatus.RUN_STATUS_COMPLETED  # inert: a stopped run stays stopped
    assert with_it.terminal == without.terminal


def test_a_fully_answered_open_turn_inside_the_summary_is_not_shown_again() -> None:
    folder = fold([*TURN, b.compaction(5, 4)])
    assert texts(folder.state()) == [["the story so far"]]
    folder.apply(b.user(6, "next"))  # commits the covered turn: not into the compacted conversation
    assert texts(folder.state()) == [["the story so far", "next"]]


def test_a_pending_batch_after_the_point_is_kept_whole() -> None:
    folder = fold([*TURN, b.user(5, "more"), b.assistant(6, 2, ["c", "d"]), b.result(7, "c"), b.compaction(8, 5)])
    state = folder.state()
    assert [call.tool_use.id for call in state.pending.calls] == ["c", "d"]
    assert texts(state) == [["the story so far"]]
    folder.apply(b.result(9, "d"))
    assert texts(folder.state())[1:] == [["turn 2", "tool_use", "tool_use"], ["tool_result", "tool_result"]]


def test_a_newer_compaction_replaces_the_one_in_force() -> None:
    folder = fold([*TURN, b.compaction(5, 4, "first"), b.user(6, "more"), b.assistant(7, 2)])
    folder.apply(b.compaction(8, 7, "second"))
    assert texts(folder.state()) == [["second"]]
    assert folder.state().compaction_seq == 8


def test_conversation_from_counts_in_the_compacted_conversation() -> None:
    folder = fold([*TURN, b.compaction(5, 2 - 1), b.assistant(6, 2, say="a"), b.assistant(7, 3, say="b")])
    state = folder.state(conversation_from=3)
    assert (state.conversation_offset, state.conversation_size) == (3, 5)
    assert texts(state) == [["a"], ["b"]]


def test_an_assistant_summary_keeps_its_role_and_a_provider_block_verbatim() -> None:
    block = ContentBlock(opaque=OpaqueBlock(provider="anthropic", type="compaction", json='{"content":"S"}'))
    folder = fold([*TURN, b.compaction(5, 4, [block], role=Role.ROLE_ASSISTANT), b.user(6, "go on")])
    state = folder.state()
    assert [m.role for m in state.conversation] == [Role.ROLE_ASSISTANT, Role.ROLE_USER]
    assert state.conversation[0].content[0].opaque.json == '{"content":"S"}'


def test_a_copy_is_independent_of_its_original_after_a_compaction() -> None:
    folder = fold([*TURN, b.compaction(5, 4)])
    twin = folder.copy()
    twin.apply(b.user(6, "only in the twin"))
    assert texts(folder.state()) == [["the story so far"]]
    assert texts(twin.state()) == [["the story so far", "only in the twin"]]


# -- refusals, each naming what is wrong -----------------------------------------


def test_a_format_1_run_refuses_a_compaction_and_says_why() -> None:
    folder = fold([b.meta(format_version=1), b.assistant(2, 1)])
    assert "needs journal format 2" in refused(folder, b.compaction(3, 2))


def test_a_point_between_a_call_and_its_result_is_refused_naming_the_call() -> None:
    folder = fold(TURN)
    detail = refused(folder, b.compaction(5, 3))
    assert "call 'b'" in detail and "at seq 4" in detail


def test_a_point_after_an_unanswered_call_is_refused_naming_it() -> None:
    folder = fold([b.meta(), b.assistant(2, 1, ["a", "b"]), b.result(3, "a")])
    assert "call 'b'" in refused(folder, b.compaction(4, 3))
    assert "does not have yet" in refused(folder, b.compaction(4, 3))


def test_a_point_inside_a_merged_user_message_is_refused() -> None:
    folder = fold([b.meta(prompt="p"), b.user(2, "more"), b.user(3, "and more")])
    assert "inside the user message built from seqs 1..3" in refused(folder, b.compaction(4, 2))
    folder.apply(b.compaction(4, 3))


def test_a_point_beyond_the_journal_or_below_the_one_in_force_is_refused() -> None:
    folder = fold([*TURN, b.compaction(5, 4)])
    assert "beyond the journal's last seq" in refused(folder, b.compaction(6, 6))
    assert "below the compaction in force" in refused(folder, b.compaction(6, 1))


@pytest.mark.parametrize(
    "summary", ["", "   ", [ContentBlock(opaque=OpaqueBlock(provider="x", type="y", json="null"))]]
)
def test_an_empty_summary_is_refused_before_it_is_folded(summary: str | list[ContentBlock]) -> None:
    with pytest.raises(InvalidRecordError):
        validate(b.compaction(5, 4, summary))


# -- the property ----------------------------------------------------------------------


@st.composite
def journals_and_points(draw: st.DrawFn) -> tuple[list[JournalRecord], int]:
    """A valid format-2 journal and a point where a compaction appended now is allowed (0: there is none)."""
    journal = draw(valid_journals())
    folder = fold(journal)
    allowed = [upto for upto in range(1, len(journal) + 1) if fold_allows(folder, upto)]
    return journal, draw(st.sampled_from(allowed)) if allowed else 0


def fold_allows(folder: Folder, upto: int) -> bool:
    trial = folder.copy()
    try:
        trial.apply(b.compaction(folder.last_seq + 1, upto))
    except JournalRuleError:
        return False
    return True


@PROPERTY
@given(journals_and_points())
def test_the_compacted_conversation_is_the_summary_then_what_came_after(case: tuple[list[JournalRecord], int]) -> None:
    journal, upto = case
    if not upto:
        return
    without = fold(journal)
    at_point = fold(journal[:upto])
    folder = fold(journal)
    folder.apply(b.compaction(len(journal) + 1, upto, "S"))
    whole = without.state()
    prefix = at_point.state().conversation
    assert list(whole.conversation[: len(prefix)]) == list(prefix)  # the point cut between messages
    expected = [ConversationMessage(role=Role.ROLE_USER, content=[b.text("S")])]
    for message in whole.conversation[len(prefix) :]:
        if message.role == Role.ROLE_USER:
            append_user(expected, message.content)
        else:
            expected.append(message)
    state = folder.state()
    assert list(state.conversation) == expected
    uncompacted = folder.state(uncompacted=True)
    assert list(uncompacted.conversation) == list(whole.conversation)
    for field in ("counters", "next_iteration", "last_stop_reason", "pending", "claim_token", "status"):
        assert getattr(state, field) == getattr(whole, field), field
    asked: set[str] = set()
    for message in state.conversation:
        for block in message.content:
            if block.HasField("tool_use"):
                asked.add(block.tool_use.id)
            if block.HasField("tool_result"):
                assert block.tool_result.tool_use_id in asked, "a tool result without its call"
