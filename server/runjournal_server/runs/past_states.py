"""Folded states of runs as of past seqs, kept serialized in a small LRU bounded in bytes.

A run's records up to an acknowledged seq never change (the journal is append
only), so the state as of that seq never does either: a repeated
``Fold(as_of_seq)`` of a long run is answered from here instead of reading
and folding its prefix again. A store that can remove a run (a later
``DeleteRun``) must ``forget`` it, or a new run of the same id would be
answered with the old one's past.
"""

from __future__ import annotations

from collections import OrderedDict

PastKey = tuple[str, int, int, bool]
"""(run id, as_of_seq, conversation_from, uncompacted)."""

DEFAULT_MAX_PAST_STATE_BYTES = 32 * 1024 * 1024


class PastStates:
    """An LRU of serialized ``RunState`` messages by ``PastKey``, at most ``max_bytes`` in all."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_PAST_STATE_BYTES) -> None:
        self._max_bytes = max_bytes
        self._bytes = 0
        self._states: OrderedDict[PastKey, bytes] = OrderedDict()

    def get(self, key: PastKey) -> bytes | None:
        state = self._states.get(key)
        if state is not None:
            self._states.move_to_end(key)
        return state

    def put(self, key: PastKey, state: bytes) -> None:
        """Keep ``state``; one larger than a quarter of the bound is not kept (it would evict everything)."""
        if len(state) > self._max_bytes // 4 or key in self._states:
            return
        self._states[key] = state
        self._bytes += len(state)
        while self._bytes > self._max_bytes:
            _, evicted = self._states.popitem(last=False)
            self._bytes -= len(evicted)

    def forget(self, run_id: str) -> None:
        """Drop every past state of ``run_id``."""
        for key in [key for key in self._states if key[0] == run_id]:
            self._bytes -= len(self._states.pop(key))

    @property
    def size_bytes(self) -> int:
        return self._bytes
