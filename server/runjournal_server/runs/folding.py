"""Fold: a run's state now, or as of a past seq.

Rules kept here:

* The state now of a run the server holds is its warm state, read under the
  run's lock (so it never shows a record that is not yet durable) and caught
  up first with what other writers stored; else the run is read and folded
  without any lock (a long journal in a thread: ``RunHandles.fold_cold``).
* A past state is folded from records 1..``as_of_seq`` alone
  (``Reads.read_prefix``) and kept serialized in a small LRU
  (``past_states.py``): the records up to an acknowledged seq never change.
* A state that would not fit in the answer is refused (``response_limit.py``).
"""

from __future__ import annotations

from runjournal.v1 import state_pb2
from runjournal_server.core.errors import InvalidArgumentError
from runjournal_server.core.ids import validate_run_id
from runjournal_server.runs.handles import RunHandles, stored_bytes
from runjournal_server.runs.past_states import PastStates
from runjournal_server.runs.reading import Reads
from runjournal_server.runs.response_limit import ResponseLimit


def check_conversation_from(conversation_from: int) -> None:
    """Refuse a ``conversation_from`` (Fold, Claim) that is no message index."""
    if conversation_from < 0:
        raise InvalidArgumentError("conversation_from", "must be 0 (everything) or a message index")


class Folding:
    """Fold over the server's run handles, with the LRU of past states."""

    def __init__(self, handles: RunHandles, reads: Reads, past_states: PastStates, response_limit: ResponseLimit):
        self._handles = handles
        self._reads = reads
        self._past_states = past_states
        self._response_limit = response_limit

    async def fold(
        self,
        run_id: str,
        as_of_seq: int = 0,
        *,
        conversation_from: int = 0,
        uncompacted: bool = False,
        into: state_pb2.RunState | None = None,
    ) -> state_pb2.RunState:
        """The folded state now, or as of ``as_of_seq``; see ``Folder.state`` for the other options."""
        validate_run_id(run_id)
        if as_of_seq < 0:
            raise InvalidArgumentError("as_of_seq", "must be 0 (latest) or a seq >= 1")
        check_conversation_from(conversation_from)
        slot = self._handles.get(run_id)
        if slot is not None and slot.journal is not None:
            async with slot.lock:
                if self._handles.usable(slot):
                    await self._handles.catch_up(slot)
                    journal, folder = self._handles.held(slot)
                    if as_of_seq in (0, journal.last_seq):
                        self._response_limit.check_state(
                            run_id, folder, slot.folded_bytes, conversation_from, uncompacted=uncompacted
                        )
                        return folder.state(conversation_from=conversation_from, into=into, uncompacted=uncompacted)
        if as_of_seq:
            return await self._fold_past(run_id, as_of_seq, conversation_from, uncompacted, into)
        stored = await self._handles.load(run_id)
        folder = await self._handles.fold_cold(run_id, stored)
        self._response_limit.check_state(
            run_id, folder, stored_bytes(stored), conversation_from, uncompacted=uncompacted
        )
        return folder.state(conversation_from=conversation_from, into=into, uncompacted=uncompacted)

    async def _fold_past(
        self,
        run_id: str,
        as_of_seq: int,
        conversation_from: int,
        uncompacted: bool,
        into: state_pb2.RunState | None,
    ) -> state_pb2.RunState:
        """The state as of an acknowledged seq: from the LRU of past states, else folded from the prefix alone."""
        key = (run_id, as_of_seq, conversation_from, uncompacted)
        serialized = self._past_states.get(key)
        if serialized is None:
            stored = await self._reads.read_prefix(run_id, as_of_seq)
            if len(stored) != as_of_seq:
                raise InvalidArgumentError("as_of_seq", f"run {run_id!r} has only {len(stored)} records")
            folder = await self._handles.fold_cold(run_id, stored, whole=False)
            # Serialized anyway for the LRU, so its length is the size to check: no state is built twice.
            serialized = folder.state(conversation_from=conversation_from, uncompacted=uncompacted).SerializeToString()
            self._past_states.put(key, serialized)
        self._response_limit.check_size(run_id, len(serialized))
        state = into if into is not None else state_pb2.RunState()
        state.MergeFromString(serialized)
        return state
