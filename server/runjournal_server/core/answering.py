"""Out-of-band writes a person makes: which calls may be answered or decided, checked against the folded state.

One rule for both: a person's write is taken only for what the call waits
for (``PendingCall.waiting_for``). Answer writes the result of a call
deferred for an answer (WAITING_FOR_ANSWER, or WAITING_FOR_CHILD: a person
may take a delegated call back); Approve decides a call deferred for a
decision (WAITING_FOR_DECISION). Anything else is NOT_DEFERRED, because it
would go around someone: a decision on a call nobody asked to have decided
takes it from its worker (or, on a call deferred for an answer, from the
person who was to answer it), and an answer to a call that waits for a
decision settles it without the decision the worker asked for. An operator
who wants such a call not to run denies it; the worker then answers it with
an error.

Pure: the checks read a ``Folder`` and raise the refusal; ``runs/answering.py``
runs them before any lock (a refusal costs nothing) and again under the
run's lock.
"""

from __future__ import annotations

from runjournal_server.core.errors import (
    AlreadyAnsweredError,
    AlreadyDecidedError,
    CallNotPendingError,
    NotDeferredError,
)
from runjournal_server.core.fold import Folder


def check_answerable(run_id: str, tool_use_id: str, folder: Folder) -> None:
    """May a person answer this call now? Refuses with the reason that tells them what happened."""
    # The committed conversation first: answering twice must hear "already
    # answered at seq N", never "not deferred".
    answered_at = folder.result_seq(tool_use_id)
    if answered_at is not None:
        raise AlreadyAnsweredError(run_id, tool_use_id, answered_at)
    status = folder.call_status(tool_use_id)
    if status is None or not status.in_open_turn:
        raise NotDeferredError(
            run_id, tool_use_id, "is not a call of the run's pending batch; only deferred calls take an answer"
        )
    deferral = folder.call_deferral(tool_use_id)
    if deferral is None:
        raise NotDeferredError(
            run_id, tool_use_id, "was never deferred: its worker runs it; only deferred calls take an answer"
        )
    if deferral.needs_approval:
        raise NotDeferredError(
            run_id,
            tool_use_id,
            f"was deferred at seq {status.deferral_seq} for an operator's decision, not an answer: decide it "
            "with Approve (a denied call is answered by its worker with an error)",
        )


def check_decidable(run_id: str, tool_use_id: str, folder: Folder) -> None:
    """May an operator decide this call now? Refuses with where the first decision (or result) landed."""
    # Answered and decided first, with their seqs: deciding twice must hear
    # where the first decision (or the result) landed.
    answered_at = folder.result_seq(tool_use_id)
    if answered_at is not None:
        raise AlreadyAnsweredError(run_id, tool_use_id, answered_at)
    status = folder.call_status(tool_use_id)
    if status is not None and status.approval_seq:
        raise AlreadyDecidedError(run_id, tool_use_id, status.approval_seq)
    if status is None or not status.in_open_turn:
        raise CallNotPendingError(run_id, tool_use_id)
    deferral = folder.call_deferral(tool_use_id)
    if deferral is None:
        raise NotDeferredError(
            run_id,
            tool_use_id,
            "was never deferred for a decision: its worker runs it; only a call deferred with "
            "needs_approval takes a decision",
        )
    if not deferral.needs_approval:
        raise NotDeferredError(
            run_id,
            tool_use_id,
            f"was deferred at seq {status.deferral_seq} for an answer, not a decision: answer it with Answer",
        )
