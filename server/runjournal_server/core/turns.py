"""The open turn of a fold and its calls: what a pending batch is made of. Pure.

``fold.Folder`` keeps these as its mutable state; ``CallStatus`` is the
read-only view ``Answer`` and ``Approve`` check, and ``pending_batch`` the
``PendingBatch`` a state shows for a trailing turn with unanswered calls.
"""

from __future__ import annotations

from dataclasses import dataclass

from runjournal.v1.records_pb2 import (
    Approval,
    ContentBlock,
    ConversationMessage,
    Decision,
    Deferral,
    ToolResult,
    ToolUseBlock,
)
from runjournal.v1.state_pb2 import PendingBatch, PendingCall
from runjournal_server.core.inbox import FOR_A_PERSON, call_waits_for


@dataclass(frozen=True)
class CallStatus:
    """One tool call of the run, as ``Answer`` and ``Approve`` need to check it."""

    tool_use_id: str
    assistant_seq: int
    """The seq of the assistant record that asked for the call."""
    in_open_turn: bool
    """True when the call belongs to the open (trailing) turn."""
    result_seq: int
    """The seq of the result that answered the call; 0 while unanswered."""
    deferral_seq: int
    """The seq of the call's deferral; 0 when never deferred."""
    decision: Decision
    """The decision recorded on the call, kept after it is spent (unspecified when none)."""
    approval_seq: int
    """The seq of that approval; 0 when none."""

    @property
    def answered(self) -> bool:
        return self.result_seq != 0

    @property
    def deferred(self) -> bool:
        return self.deferral_seq != 0


class Call:
    """A call's mutable fold state; its records are kept as given (copies)."""

    __slots__ = (
        "approval",
        "approval_seq",
        "assistant_seq",
        "deferral",
        "deferral_seq",
        "result",
        "result_seq",
        "tool_use",
    )

    def __init__(self, tool_use: ToolUseBlock, assistant_seq: int) -> None:
        self.tool_use = tool_use
        self.assistant_seq = assistant_seq
        self.result_seq = 0
        self.result: ToolResult | None = None
        self.deferral_seq = 0
        self.deferral: Deferral | None = None
        self.approval_seq = 0
        self.approval: Approval | None = None


class Turn:
    """The open turn: the last assistant record, its calls and the results so far."""

    __slots__ = ("calls", "iteration", "message", "results", "seq", "unanswered")

    def __init__(self, seq: int, iteration: int, message: ConversationMessage, calls: list[Call]) -> None:
        self.seq = seq
        self.iteration = iteration
        self.message = message
        self.calls = calls
        self.results: list[ContentBlock] = []
        self.unanswered = len(calls)


def pending_batch(turn: Turn) -> PendingBatch:
    batch = PendingBatch(assistant_seq=turn.seq, iteration=turn.iteration, assistant=turn.message)
    for call in turn.calls:
        pending = PendingCall(tool_use=call.tool_use)
        if call.result is not None:
            # An approval is spent once its call has a result.
            pending.answered = True
            pending.result_seq = call.result_seq
            pending.result.CopyFrom(call.result)
        elif call.approval is not None:
            pending.decision = call.approval.decision
            pending.approval_seq = call.approval_seq
            pending.approval.CopyFrom(call.approval)
        if call.deferral is not None:
            pending.child_run_id = call.deferral.child_run_id
            pending.deferred = True
            pending.deferral_seq = call.deferral_seq
            pending.deferral.CopyFrom(call.deferral)
        pending.waiting_for = call_waits_for(
            call.deferral, answered=call.result is not None, decided=call.approval is not None
        )
        pending.waiting_for_person = pending.waiting_for in FOR_A_PERSON
        batch.calls.append(pending)
    return batch
