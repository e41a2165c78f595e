"""With token auth on, an approval names the token: a resent ``approve(approver="")`` still finds its own (item 18).

The server records the token's name as the approver, which the client does
not know; a resend whose first attempt landed must still return that seq
rather than ``AlreadyDecidedError``.
"""

from __future__ import annotations

import grpc
import pytest

import runjournal
from runjournal import JournalClient
from runjournal.v1 import records_pb2
from tests.client.fake_journal import FakeServer, abort_plain, abort_with_reason


def decided_by_token(fake: FakeServer, seq: int, *, reason: str = "ok") -> None:
    """Our first Approve landed (as token "ops") but its reply was lost; the resend hears ALREADY_DECIDED."""
    fake.journal.read_last_seq = seq
    approval = records_pb2.Approval(
        tool_use_id="c1", decision=records_pb2.DECISION_APPROVED, approver="ops", reason=reason
    )
    fake.journal.stored[seq] = records_pb2.JournalRecord(seq=seq, approval=approval)
    already = abort_with_reason(
        "ALREADY_DECIDED", grpc.StatusCode.ALREADY_EXISTS, {"tool_use_id": "c1", "decided_at_seq": str(seq)}
    )
    fake.journal.fail_next("Approve", abort_plain(grpc.StatusCode.UNAVAILABLE), already)


def test_a_resent_approve_without_an_approver_finds_the_decision_the_server_signed(
    fake: FakeServer, client: JournalClient
) -> None:
    decided_by_token(fake, 8)
    assert client.approve("r1", "c1", "approved", "", "ok") == 8


def test_a_resent_approve_without_an_approver_still_tells_another_decision_apart(
    fake: FakeServer, client: JournalClient
) -> None:
    decided_by_token(fake, 8, reason="someone else's reason")
    with pytest.raises(runjournal.AlreadyDecidedError):
        client.approve("r1", "c1", "approved", "", "ok")
