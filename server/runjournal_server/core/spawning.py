"""Child runs (SpawnRun): when a child has stopped, and the one result its outcome makes in the parent. Pure.

The rules kept here:

* A child has an outcome once a terminal record other than ``suspended``
  describes it (``FINAL_REASONS``): a suspended child waits for a person (its
  waiting calls are in the inbox, with its root), which is a pause, not an
  outcome. A budget or iteration stop is an outcome: the parent needs an
  answer now, and a person may still resume the child by hand (its later
  outcome is then recorded on the child only, as any outcome that comes after
  the parent's call has its result).
* The outcome is one ordinary ``tool_result`` for the parent's call, remote,
  with ``answered_by_run_id`` naming the child: for a completed child, the
  text of its last assistant message (its final answer); for any other stop,
  an error result naming the reason and its message, so the parent's model
  reads why its delegate failed.
* A parent call already answered keeps its answer (``Delivery``): the child's
  outcome then goes into a ``note`` on the child.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from runjournal.v1 import records_pb2 as pb
from runjournal_server.core.fold import Folder

FINAL_REASONS: frozenset[int] = frozenset(
    {
        pb.TerminalReason.TERMINAL_REASON_COMPLETED,
        pb.TerminalReason.TERMINAL_REASON_ERROR,
        pb.TerminalReason.TERMINAL_REASON_BUDGET,
        pb.TerminalReason.TERMINAL_REASON_MAX_ITERATIONS,
        pb.TerminalReason.TERMINAL_REASON_CANCELLED,
    }
)
"""Terminal reasons that give a child its outcome; ``suspended`` is a pause (see the module docstring)."""


def outcome_of(folder: Folder) -> pb.Terminal | None:
    """The terminal that is a child's outcome, or None while the child has none (open, or suspended)."""
    terminal = folder.terminal
    if terminal is None or terminal.reason not in FINAL_REASONS:
        return None
    return terminal


def outcome_result(child_run_id: str, tool_use_id: str, folder: Folder, terminal: pb.Terminal) -> pb.ToolResult:
    """The parent's result for a child that stopped with ``terminal`` (see the module docstring)."""
    result = pb.ToolResult(tool_use_id=tool_use_id, remote=True, answered_by_run_id=child_run_id)
    if terminal.reason == pb.TerminalReason.TERMINAL_REASON_COMPLETED:
        message = folder.last_assistant_message()
        text = "" if message is None else "\n".join(b.text.text for b in message.content if b.HasField("text"))
        result.content.add().text.text = text or terminal.message or f"child run {child_run_id} completed"
        return result
    reason = pb.TerminalReason.Name(terminal.reason).removeprefix("TERMINAL_REASON_").lower()
    said = f": {terminal.message}" if terminal.message else ""
    result.content.add().text.text = f"child run {child_run_id} stopped ({reason}){said}"
    result.is_error = True
    return result


@dataclass(frozen=True)
class Delivery:
    """What a child's outcome does to its parent's call, decided on the parent's state."""

    write: bool
    """True: write the outcome as the call's result. False: the call needs nothing (see ``note``)."""
    note: bool
    """True when someone else answered the call first: the outcome is recorded on the child only."""


NOTHING = Delivery(write=False, note=False)


def delivery(parent: Folder, origin: pb.SpawnOrigin, child_run_id: str) -> Delivery:
    """Whether the parent's call still takes the child's outcome: exactly once, never over another answer."""
    status = parent.call_status(origin.tool_use_id)
    if status is None or status.assistant_seq != origin.seq:
        return NOTHING  # not the call the child was spawned for (a damaged link): nothing to answer
    result = parent.call_result(origin.tool_use_id)
    if result is not None:
        return Delivery(write=False, note=result.answered_by_run_id != child_run_id)
    deferral = parent.call_deferral(origin.tool_use_id)
    if not status.in_open_turn or deferral is None or deferral.child_run_id != child_run_id:
        return NOTHING  # the call was delegated elsewhere: only the child it names answers it
    return Delivery(write=True, note=False)


def outcome_note(origin: pb.SpawnOrigin, answered_at: int, result: pb.ToolResult) -> pb.Note:
    """The note a child gets when its parent's call had an answer already: what its outcome would have been."""
    text = (
        f"outcome not delivered: call {origin.tool_use_id!r} of run {origin.run_id} was answered "
        f"at seq {answered_at} before this run stopped"
    )
    data = {
        "parent_run_id": origin.run_id,
        "tool_use_id": origin.tool_use_id,
        "answered_at_seq": answered_at,
        "is_error": result.is_error,
    }
    return pb.Note(text=text, data_json=json.dumps(data, separators=(",", ":")))
