"""What a fold holds, and what can be read of it: ``FoldedRun``, the base of ``Folder`` (``core/fold.py``).

The rules that change a fold live in ``fold.py``; this module keeps what
they change and every read of it: the cheap queries the runs ask before a
write (last seq, claim token, where a call stands), the snapshot a client is
sent (``state``), and a scratch copy to check records on (``copy``). None of
them changes the fold.
"""

from __future__ import annotations

from array import array
from typing import Self

from runjournal.v1.records_pb2 import (
    ConversationMessage,
    Decision,
    Deferral,
    Fingerprint,
    Meta,
    Role,
    StopReason,
    Terminal,
    ToolResult,
)
from runjournal.v1.state_pb2 import Counters, RunState, RunStatus
from runjournal_server.core.compaction import Compacted
from runjournal_server.core.summary import status_of
from runjournal_server.core.turns import Call, CallStatus, Turn, pending_batch


class FoldedRun:
    """The state of one run's fold, read-only from here; ``Folder`` applies records to it."""

    def __init__(self) -> None:
        self._meta: Meta | None = None
        self._last_seq = 0
        self._conversation: list[ConversationMessage] = []
        self._starts: array[int] = array("q")
        self._ends: array[int] = array("q")
        """Per message of ``_conversation``: the seqs of the first and last record that built it
        (``core/compaction.py``: an assistant message with calls ends at its last result). Arrays, not
        lists: ``copy`` (one per write) duplicates them with a memcpy instead of a reference per seq."""
        self._compacted: Compacted | None = None
        """The compaction in force and the conversation it leaves; None before any."""
        self._turn: Turn | None = None
        self._calls: dict[str, Call] = {}
        self._counters = Counters()
        self._last_iteration = 0
        self._last_stop_reason: StopReason = StopReason.STOP_REASON_UNSPECIFIED
        self._terminal: Terminal | None = None
        self._terminal_seq = 0
        self._fingerprint = Fingerprint()
        self._claim_token = 0
        self._claimed_by = ""

    # -- cheap queries -----------------------------------------------------

    @property
    def last_seq(self) -> int:
        """The seq of the last record folded; 0 before the meta."""
        return self._last_seq

    @property
    def run_id(self) -> str:
        return self._meta.run_id if self._meta is not None else ""

    @property
    def claim_token(self) -> int:
        """The seq of the latest claim, or 1 (the meta seq) before any; 0 before the meta."""
        return self._claim_token

    @property
    def claimed_by(self) -> str:
        return self._claimed_by

    @property
    def has_pending(self) -> bool:
        """True while a call of the open turn has no result (a pending batch exists)."""
        return self._turn is not None and self._turn.unanswered > 0

    @property
    def effective_fingerprint(self) -> Fingerprint:
        """A copy of the fingerprint in force: meta's, replaced by each reconfigure."""
        fingerprint = Fingerprint()
        fingerprint.CopyFrom(self._fingerprint)
        return fingerprint

    @property
    def status(self) -> RunStatus:
        """The run status by the listing rule; unspecified before the meta."""
        if self._meta is None:
            return RunStatus.RUN_STATUS_UNSPECIFIED
        return status_of(self._terminal)

    def result_seq(self, tool_use_id: str) -> int | None:
        """The seq of the result that answered ``tool_use_id`` anywhere in the run, or None."""
        call = self._calls.get(tool_use_id)
        return call.result_seq if call is not None and call.result_seq else None

    def call_status(self, tool_use_id: str) -> CallStatus | None:
        """Where call ``tool_use_id`` stands, or None when no assistant record asked for it."""
        call = self._calls.get(tool_use_id)
        if call is None:
            return None
        return CallStatus(
            tool_use_id=tool_use_id,
            assistant_seq=call.assistant_seq,
            in_open_turn=self._turn is not None and call.assistant_seq == self._turn.seq,
            result_seq=call.result_seq,
            deferral_seq=call.deferral_seq,
            decision=call.approval.decision if call.approval is not None else Decision.DECISION_UNSPECIFIED,
            approval_seq=call.approval_seq,
        )

    @property
    def meta(self) -> Meta | None:
        """The run's meta as folded (read it, never change it); None before the meta."""
        return self._meta

    @property
    def terminal(self) -> Terminal | None:
        """The terminal record while it describes the run (the last non-inert record), else None."""
        return self._terminal

    @property
    def terminal_seq(self) -> int:
        """The seq of the last terminal record folded (0 before any), whether or not it still describes the run."""
        return self._terminal_seq

    def call_deferral(self, tool_use_id: str) -> Deferral | None:
        """The deferral of call ``tool_use_id`` as folded (a fork's copied child link cleared), or None."""
        call = self._calls.get(tool_use_id)
        return call.deferral if call is not None else None

    def call_result(self, tool_use_id: str) -> ToolResult | None:
        """The result that answered call ``tool_use_id``, or None."""
        call = self._calls.get(tool_use_id)
        return call.result if call is not None else None

    def children(self) -> list[str]:
        """The child runs this run's calls were delegated to (SpawnRun), in the order of their deferrals.

        Every child that exists is named here: SpawnRun writes the parent's
        deferral before it creates the child (``runs/spawning.py``).
        """
        found = [call for call in self._calls.values() if call.deferral is not None and call.deferral.child_run_id]
        found.sort(key=lambda call: call.deferral_seq)
        return [call.deferral.child_run_id for call in found]  # type: ignore[union-attr]

    def last_assistant_message(self) -> ConversationMessage | None:
        """The run's last assistant message (its final answer, once it stopped), or None before any."""
        if self._turn is not None:
            return self._turn.message
        for message in reversed(self._conversation):
            if message.role == Role.ROLE_ASSISTANT:
                return message
        return None

    # -- snapshot ----------------------------------------------------------

    def state(self, *, conversation_from: int = 0, into: RunState | None = None, uncompacted: bool = False) -> RunState:
        """A snapshot of the run; changes nothing.

        ``conversation_from`` skips the conversation's first messages (a client
        that keeps the conversation asks only for what it lacks; every message
        but the last is final once shown, the last may still grow by a merge).
        ``into`` fills a message the caller owns (e.g. a response's field)
        instead of a fresh one, which saves copying a long conversation twice.
        The conversation is the compacted one while a compaction is in force
        (``core/compaction.py``), the whole one with ``uncompacted``.
        """
        state = into if into is not None else RunState()
        state.last_seq = self._last_seq
        if self._meta is None:
            return state
        state.run_id = self._meta.run_id
        state.meta.CopyFrom(self._meta)
        compacted = self._compacted
        conversation = self._conversation
        if compacted is not None:
            state.compaction_seq = compacted.seq
            state.compacted_upto_seq = compacted.upto
            state.uncompacted = uncompacted
            if not uncompacted:
                conversation = compacted.view
        turn = self._turn
        trailing: list[ConversationMessage] = []
        if turn is not None and turn.unanswered == 0:
            if compacted is None or uncompacted or not compacted.covers(turn):  # else the summary holds it
                trailing.append(turn.message)
                if turn.results:
                    trailing.append(ConversationMessage(role=Role.ROLE_USER, content=turn.results))
        elif turn is not None:
            state.pending.CopyFrom(pending_batch(turn))
        committed = len(conversation)
        start = min(max(conversation_from, 0), committed + len(trailing))
        state.conversation_offset = start
        state.conversation_size = committed + len(trailing)
        state.conversation.extend(conversation[start:] if start else conversation)
        state.conversation.extend(trailing[max(start - committed, 0) :])
        state.counters.CopyFrom(self._counters)
        state.next_iteration = self._last_iteration + 1
        state.last_stop_reason = self._last_stop_reason
        if self._terminal is not None:
            state.terminal.CopyFrom(self._terminal)
        state.status = status_of(self._terminal)
        state.effective_fingerprint.CopyFrom(self._fingerprint)
        state.claim_token = self._claim_token
        state.claimed_by = self._claimed_by
        return state

    # -- a scratch copy ------------------------------------------------------

    def copy(self) -> Self:
        """A copy to check records on: applying records to it never changes this ``Folder``.

        Costs pointers, not content: what ``apply`` only ever replaces or
        appends after is shared (the messages, the meta, the terminal, every
        call of a committed turn); what it changes in place is copied (the
        lists and the call table themselves, the open turn and its calls, the
        counters, the fingerprint).
        """
        twin = type(self)()
        twin.__dict__.update(self.__dict__)
        twin._conversation = list(self._conversation)
        twin._starts = self._starts[:]
        twin._ends = self._ends[:]
        if self._compacted is not None:
            twin._compacted = self._compacted.copy()
        twin._calls = dict(self._calls)
        twin._counters = Counters()
        twin._counters.CopyFrom(self._counters)
        twin._fingerprint = Fingerprint()
        twin._fingerprint.CopyFrom(self._fingerprint)
        turn = self._turn
        if turn is not None:
            calls = [_copy_call(call) for call in turn.calls]
            twin._turn = Turn(turn.seq, turn.iteration, turn.message, calls)
            twin._turn.results = list(turn.results)
            twin._turn.unanswered = turn.unanswered
            twin._calls.update((call.tool_use.id, call) for call in calls)
        return twin


def _copy_call(call: Call) -> Call:
    twin = Call(call.tool_use, call.assistant_seq)
    for name in Call.__slots__:
        setattr(twin, name, getattr(call, name))
    return twin
