"""Out-of-band writes a person makes: which calls may be answered or decided, checked against the folded state.

Pure: the checks read a ``Folder`` and raise the refusal; ``runs/runs.py`` runs
them before any lock (a refusal costs nothing) and again under the run's lock.
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
        raise NotDeferredError(run_id, tool_use_id, "is not a call of the run's pending batch")
    if not status.deferred:
        raise NotDeferredError(run_id, tool_use_id, "was never deferred")


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
