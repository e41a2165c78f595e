"""The human-inbox rule: which calls wait for a person, shared by fold and listing.

A call waits for a person while it is deferred and has no result, and, when
its deferral ``needs_approval``, while it has no decision yet (once decided, the
worker acts: it runs an approved call, answers a denied one with an error).

Only the trailing turn can hold such calls (a new assistant record or a user
follow-up is refused while a call is unanswered), so the listing needs only
the journal's tail from the last assistant record on — never a fold of the
whole run.
"""

from __future__ import annotations

from collections.abc import Sequence

from runjournal.v1.records_pb2 import Deferral
from runjournal.v1.state_pb2 import WaitingCall, WaitingFor
from runjournal_server.core.kinds import Kind
from runjournal_server.core.summary import StoredLike

TURN_START_KINDS: frozenset[str] = frozenset({Kind.META, Kind.ASSISTANT, Kind.USER})
"""A tail read for the inbox stops at the last of these: nothing before it can wait."""

MAY_WAIT_AFTER_KINDS: frozenset[str] = frozenset({Kind.DEFERRAL, Kind.APPROVAL, Kind.TOOL_RESULT, Kind.TERMINAL})
"""Last significant record kinds after which a call may still wait; after others, none can."""


def waiting_for(deferral: Deferral | None, *, answered: bool, decided: bool) -> WaitingFor:
    """What a call waits for, or ``WAITING_FOR_UNSPECIFIED`` when it waits for nobody."""
    if deferral is None or answered:
        return WaitingFor.WAITING_FOR_UNSPECIFIED
    if not deferral.needs_approval:
        return WaitingFor.WAITING_FOR_ANSWER
    return WaitingFor.WAITING_FOR_UNSPECIFIED if decided else WaitingFor.WAITING_FOR_DECISION


def waiting_calls(tail: Sequence[StoredLike]) -> list[WaitingCall]:
    """The waiting calls of a journal tail that starts at its last turn-start record.

    Records of a well-formed journal are assumed (fold validates them on every
    write); unknown optional records are skipped.
    """
    if not tail or tail[0].kind != Kind.ASSISTANT or tail[0].record is None:
        return []
    names: dict[str, str] = {}
    for block in tail[0].record.assistant.content:
        if block.HasField("tool_use"):
            names[block.tool_use.id] = block.tool_use.name
    deferrals: dict[str, tuple[int, Deferral]] = {}
    answered: set[str] = set()
    decided: set[str] = set()
    for item in tail[1:]:
        record = item.record
        if record is None:
            continue
        kind = record.WhichOneof("payload")
        if kind == Kind.DEFERRAL:
            deferrals[record.deferral.tool_use_id] = (item.seq, record.deferral)
        elif kind == Kind.TOOL_RESULT:
            answered.add(record.tool_result.tool_use_id)
        elif kind == Kind.APPROVAL:
            decided.add(record.approval.tool_use_id)
    waiting = []
    for call_id, name in names.items():  # call order, as the model asked
        seq, deferral = deferrals.get(call_id, (0, None))
        what = waiting_for(deferral, answered=call_id in answered, decided=call_id in decided)
        if what != WaitingFor.WAITING_FOR_UNSPECIFIED:
            assert deferral is not None
            waiting.append(
                WaitingCall(
                    tool_use_id=call_id,
                    tool_name=name,
                    waiting_for=what,
                    deferral_seq=seq,
                    reason=deferral.reason,
                    expected_answerer=deferral.expected_answerer,
                )
            )
    return waiting
