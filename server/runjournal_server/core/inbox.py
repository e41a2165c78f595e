"""What a call of the open turn waits for, and which calls wait for a person: shared by fold and listing.

``call_waits_for`` is the one rule: a call with its result waits for nothing;
a call delegated to a child run waits for that child; a deferred call
without one waits for a person, for an answer or, when its
deferral ``needs_approval``, for a decision until it has one; every other call
waits for its worker (once decided, the worker acts: it runs an approved call,
answers a denied one with an error). The fold states it on each call of a
pending batch (``turns.pending_batch``: ``PendingCall.waiting_for``), the listing
on each call of its inbox (``waiting_calls``), so clients read it and never
work it out again.

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


FOR_A_PERSON: frozenset[WaitingFor] = frozenset({WaitingFor.WAITING_FOR_ANSWER, WaitingFor.WAITING_FOR_DECISION})
"""What ``call_waits_for`` answers for a call that waits for a person (the inbox's calls)."""


def call_waits_for(deferral: Deferral | None, *, answered: bool, decided: bool) -> WaitingFor:
    """What a call of the open turn waits for: nothing, its worker, an answer, a decision or a child run."""
    if answered:
        return WaitingFor.WAITING_FOR_NOTHING
    if deferral is not None and deferral.child_run_id:
        # Delegated to a child run (SpawnRun): the server answers it when the child stops, so it is not in
        # the parent's inbox; the child's own waiting calls are, with the root they belong to.
        return WaitingFor.WAITING_FOR_CHILD
    if deferral is None or (deferral.needs_approval and decided):
        return WaitingFor.WAITING_FOR_WORKER
    return WaitingFor.WAITING_FOR_DECISION if deferral.needs_approval else WaitingFor.WAITING_FOR_ANSWER


def waiting_for(deferral: Deferral | None, *, answered: bool, decided: bool) -> WaitingFor:
    """What a call waits for from a person, or ``WAITING_FOR_UNSPECIFIED`` when it waits for nobody."""
    what = call_waits_for(deferral, answered=answered, decided=decided)
    return what if what in FOR_A_PERSON else WaitingFor.WAITING_FOR_UNSPECIFIED


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
