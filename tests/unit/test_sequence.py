"""The append rule: next, verified duplicate, conflict or gap; it decides and advances nothing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runjournal_server.core.sequence import AppendDecision, BatchOutcome, check_append, decide_batch

BODY = b'{"id":"runjournal.v1.note","seq":3}'


@pytest.mark.parametrize(
    ("last", "seq", "stored", "decision"),
    [
        (0, 1, None, AppendDecision.NEXT),
        (2, 3, None, AppendDecision.NEXT),
        (3, 3, BODY, AppendDecision.DUPLICATE),
        (3, 1, BODY, AppendDecision.DUPLICATE),
        (3, 3, BODY + b" ", AppendDecision.CONFLICT),
        (3, 2, b"", AppendDecision.CONFLICT),
        (0, 2, None, AppendDecision.GAP),
        (3, 5, None, AppendDecision.GAP),
    ],
    ids=[
        "first",
        "next",
        "retry_of_last",
        "retry_of_earlier",
        "other_body",
        "empty_stored",
        "gap_empty",
        "gap",
    ],
)
def test_append_rule_table(last: int, seq: int, stored: bytes | None, decision: AppendDecision) -> None:
    assert check_append(last, seq, BODY, stored) is decision


def test_occupied_seq_without_stored_body_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match="stored at seq 2"):
        check_append(3, 2, BODY, None)


@pytest.mark.parametrize(("last", "seq"), [(0, 0), (5, -1), (-1, 1)])
def test_impossible_positions_are_caller_errors(last: int, seq: int) -> None:
    with pytest.raises(ValueError):
        check_append(last, seq, BODY, BODY)


def test_duplicate_compares_bytes_not_meaning() -> None:
    reordered = b'{"seq":3,"id":"runjournal.v1.note"}'
    assert check_append(3, 3, BODY, reordered) is AppendDecision.CONFLICT


@given(
    last=st.integers(0, 10_000),
    seq=st.integers(1, 10_010),
    body=st.binary(max_size=16),
    other=st.binary(max_size=16),
    same=st.booleans(),
)
def test_append_rule_over_random_positions_and_bodies(
    last: int, seq: int, body: bytes, other: bytes, same: bool
) -> None:
    stored = body if same else other
    decision = check_append(last, seq, body, stored if seq <= last else None)
    if seq == last + 1:
        assert decision is AppendDecision.NEXT
    elif seq > last + 1:
        assert decision is AppendDecision.GAP
    elif stored == body:
        assert decision is AppendDecision.DUPLICATE
    else:
        assert decision is AppendDecision.CONFLICT


# ---------------------------------------------------------------- decide_batch


@st.composite
def batches(draw: st.DrawFn) -> tuple[int, list[tuple[int, bytes]], dict[int, bytes], bool]:
    """A journal of ``last`` records, a batch of consecutive records around its end, and a token verdict."""
    last = draw(st.integers(0, 8))
    stored = {seq: b"s%d" % seq for seq in range(1, last + 1)}
    first = draw(st.integers(1, last + 3))
    count = draw(st.integers(1, 5))
    batch = []
    for seq in range(first, first + count):
        same = seq <= last and draw(st.booleans())
        batch.append((seq, stored[seq] if same else b"n%d" % seq))
    return last, batch, stored, draw(st.booleans())


def _overlap(last: int, batch: list[tuple[int, bytes]], stored: dict[int, bytes]) -> dict[int, bytes]:
    return {seq: stored[seq] for seq, _ in batch if seq <= last}


@given(batches())
def test_decide_batch_follows_the_append_rule_record_by_record(case) -> None:
    last, batch, stored, token_ok = case
    decision = decide_batch(last, batch, _overlap(last, batch, stored), token_ok=token_ok)
    # The leading records it calls duplicates are stored byte for byte.
    assert all(stored.get(seq) == body for seq, body in batch[: decision.duplicates])
    first_conflict = next((seq for seq, body in batch if seq <= last and stored[seq] != body), None)
    all_stored = all(seq <= last and stored[seq] == body for seq, body in batch)
    if all_stored:
        assert decision.outcome is BatchOutcome.DUPLICATES and decision.duplicates == len(batch)
    elif not token_ok:
        assert decision.outcome is BatchOutcome.CLAIMED  # a stale writer hears it lost the run, nothing else
    elif first_conflict is not None:
        assert (decision.outcome, decision.seq) == (BatchOutcome.CONFLICT, first_conflict)
    elif batch[decision.duplicates][0] > last + 1:
        assert (decision.outcome, decision.seq) == (BatchOutcome.GAP, batch[decision.duplicates][0])
    else:
        assert decision.outcome is BatchOutcome.WRITE
        assert batch[decision.duplicates][0] == last + 1  # what is written is exactly the next seq


@given(st.integers(0, 8), st.integers(1, 12), st.booleans(), st.booleans())
def test_decide_batch_of_one_record_agrees_with_check_append(last, seq, same, token_ok) -> None:
    stored = {s: b"s%d" % s for s in range(1, last + 1)}
    body = stored[seq] if same and seq <= last else b"other"
    decision = decide_batch(last, [(seq, body)], _overlap(last, [(seq, body)], stored), token_ok=token_ok)
    single = check_append(last, seq, body, stored.get(seq))
    expected = {
        AppendDecision.DUPLICATE: BatchOutcome.DUPLICATES,
        AppendDecision.CONFLICT: BatchOutcome.CONFLICT if token_ok else BatchOutcome.CLAIMED,
        AppendDecision.GAP: BatchOutcome.GAP if token_ok else BatchOutcome.CLAIMED,
        AppendDecision.NEXT: BatchOutcome.WRITE if token_ok else BatchOutcome.CLAIMED,
    }[single]
    assert decision.outcome is expected
