"""Folder.copy: records applied to a copy never change the original, and the copy folds as the original would.

What lets runs/writing.py check a batch on a scratch copy of a run's warm
state and keep it only once the batch is durable.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from runjournal.v1.records_pb2 import JournalRecord
from runjournal_server.core.fold import Folder, JournalRuleError, fold
from tests.support import builders as b
from tests.support.journals import valid_journals

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(valid_journals())
def test_records_applied_to_a_copy_leave_the_original_as_it_was_at_every_split(records: list[JournalRecord]) -> None:
    expected = fold(records).state()
    for split in range(len(records) + 1):
        original = fold(records[:split])
        before = original.state()
        scratch = original.copy()
        for record in records[split:]:
            scratch.apply(record)
        assert scratch.state() == expected
        assert original.state() == before
        # The original still folds the rest on its own, to the same state.
        for record in records[split:]:
            original.apply(record)
        assert original.state() == expected


def test_a_copy_answering_and_deciding_calls_leaves_the_originals_calls_open() -> None:
    original = fold([b.meta(), b.assistant(2, 1, ["a", "b"]), b.deferral(3, "a")])
    scratch = original.copy()
    scratch.apply(b.approval(4, "a"))
    scratch.apply(b.result(5, "a"))
    scratch.apply(b.result(6, "b"))
    scratch.apply(b.user(7, "more"))
    status = original.call_status("a")
    assert status is not None and (status.answered, status.approval_seq, status.deferral_seq) == (False, 0, 3)
    assert original.has_pending and not scratch.has_pending
    assert original.state().counters.tool_calls == 0
    assert scratch.state().counters.tool_calls == 2


def test_a_follow_up_merged_in_a_copy_leaves_the_originals_last_message_alone() -> None:
    original = fold([b.meta(prompt="p")])
    scratch = original.copy()
    scratch.apply(b.user(2, "merged"))
    assert len(original.state().conversation[0].content) == 1
    assert len(scratch.state().conversation[0].content) == 2


def test_a_batch_refused_part_way_through_a_copy_leaves_the_original_whole() -> None:
    original = fold([b.meta(), b.assistant(2, 1, ["a"])])
    before = original.state()
    scratch = original.copy()
    scratch.apply(b.result(3, "a"))
    try:
        scratch.apply(b.result(4, "a"))  # a second result for the same call
    except JournalRuleError:
        pass
    else:
        raise AssertionError("a second result for one call is refused")
    assert original.state() == before
    assert Folder().copy().state() == Folder().state()
