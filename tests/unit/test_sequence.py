"""The append rule: next, verified duplicate, conflict or gap; it decides and advances nothing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runjournal_server.sequence import AppendDecision, check_append

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
