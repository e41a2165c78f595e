"""``Runs``: every journal operation over one backend, wired once; each operation lives in its own module.

The RPCs (``api/servicers.py``), the listing (``listing/pages.py``),
retention and the app call this facade; it holds no rule of its own. See the
package docstring (``runs/__init__.py``) for which module keeps which rule.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from runjournal.v1 import records_pb2, state_pb2
from runjournal_server.backends.base import Backend, Deletion
from runjournal_server.core.errors import JournalError
from runjournal_server.observability.observer import NO_OBSERVER, Observer
from runjournal_server.runs.answering import Answering
from runjournal_server.runs.appending import Appending, AppendOutcome
from runjournal_server.runs.claiming import ClaimAsk, Claiming, ClaimOutcome
from runjournal_server.runs.deleting import RunDeleter
from runjournal_server.runs.events import RunEvents
from runjournal_server.runs.folding import Folding
from runjournal_server.runs.forking import Fork, Forking
from runjournal_server.runs.handles import DEFAULT_MAX_WARM_BYTES, RunHandles
from runjournal_server.runs.past_states import PastStates
from runjournal_server.runs.reading import Reads, RecordReader
from runjournal_server.runs.response_limit import ResponseLimit
from runjournal_server.runs.spawning import Spawning, SpawnOutcome
from runjournal_server.runs.writing import Writer

__all__ = ["AppendOutcome", "ClaimOutcome", "RecordReader", "Runs", "SpawnOutcome"]

log = logging.getLogger(__name__)


class Runs:
    """Every journal operation, over one backend."""

    def __init__(
        self,
        backend: Backend,
        *,
        max_record_bytes: int,
        max_open_journals: int,
        max_warm_bytes: int = DEFAULT_MAX_WARM_BYTES,
        max_response_bytes: int | None = None,
        observer: Observer = NO_OBSERVER,
    ) -> None:
        self._backend = backend
        self._handles = RunHandles(backend, max_open=max_open_journals, max_warm_bytes=max_warm_bytes)
        self.events = RunEvents()
        """Told of every acknowledged write, after it is durable: what Watch and WatchRuns wait on."""
        response_limit = ResponseLimit(max_response_bytes)
        past_states = PastStates()
        writer = Writer(backend, self._handles, self.events, observer)
        self._reads = Reads(backend, self._handles)
        self._appending = Appending(self._handles, writer, observer, max_record_bytes=max_record_bytes)
        self._claiming = Claiming(self._handles, writer, response_limit, max_record_bytes=max_record_bytes)
        self._answering = Answering(self._handles, writer, max_record_bytes=max_record_bytes)
        self._folding = Folding(self._handles, self._reads, past_states, response_limit)
        self._forking = Forking(self._handles, self._reads, writer, max_record_bytes=max_record_bytes)
        self._deleter = RunDeleter(backend, self._handles, past_states, self.events)
        self._spawning = Spawning(self._handles, writer, max_record_bytes=max_record_bytes)
        self.events.listen(self._deleter)  # a deletion through another replica forgets the run here too

    @property
    def backend(self) -> Backend:
        return self._backend

    @property
    def corruption(self) -> Mapping[str, str]:
        """Runs a full read found damaged, with the problem: the listing lists them CORRUPT."""
        return self._handles.corruption

    async def append(self, run_id: str, claim_token: int, batch: Sequence[records_pb2.JournalRecord]) -> AppendOutcome:
        """Append consecutive records, all or nothing (``runs/appending.py``); a child's terminal answers its parent."""
        outcome = await self._appending.append(run_id, claim_token, batch)
        if any(record.WhichOneof("payload") == "terminal" for record in batch):
            # A retried terminal (a duplicate) delivers too: that finishes a delivery a crash cut short.
            await self.deliver(run_id)
        return outcome

    async def claim(
        self,
        run_id: str,
        *,
        worker_id: str,
        host: str,
        pid: int,
        reason: str,
        fingerprint: records_pb2.Fingerprint,
        force: bool,
        conversation_from: int = 0,
        uncompacted: bool = False,
    ) -> ClaimOutcome:
        """Gate, then write the claim (and a reconfigure), then read last_seq (``runs/claiming.py``)."""
        asked = ClaimAsk(worker_id, host, pid, reason, fingerprint, force, conversation_from, uncompacted)
        return await self._claiming.claim(run_id, asked)

    async def fold(
        self,
        run_id: str,
        as_of_seq: int = 0,
        *,
        conversation_from: int = 0,
        uncompacted: bool = False,
        into: state_pb2.RunState | None = None,
    ) -> state_pb2.RunState:
        """The folded state now, or as of ``as_of_seq`` (``runs/folding.py``)."""
        state = await self._folding.fold(
            run_id, as_of_seq, conversation_from=conversation_from, uncompacted=uncompacted, into=into
        )
        await self._spawning.show_children(state)  # a delegated call shows its child's status
        return state

    async def answer(
        self,
        run_id: str,
        tool_use_id: str,
        content: Sequence[records_pb2.ContentBlock],
        is_error: bool,
        *,
        answered_by: str = "",
    ) -> int:
        """Write the one tool_result that answers a deferred call (``runs/answering.py``)."""
        return await self._answering.answer(run_id, tool_use_id, content, is_error, answered_by=answered_by)

    async def approve(
        self, run_id: str, tool_use_id: str, decision: records_pb2.Decision, approver: str, reason: str
    ) -> int:
        """Write the one approval record that decides a call of the pending batch (``runs/answering.py``)."""
        return await self._answering.approve(run_id, tool_use_id, decision, approver, reason)

    async def fork(self, run_id: str, at_seq: int, new_run_id: str) -> Fork:
        """Create ``new_run_id`` from records 1..at_seq of ``run_id`` in one creation (``runs/forking.py``)."""
        return await self._forking.fork(run_id, at_seq, new_run_id)

    async def delete(self, run_id: str, expected_last_seq: int, *, with_children: bool = False) -> Deletion:
        """Delete the run (and, asked, its children) if its last seq is ``expected_last_seq`` (``runs/deleting.py``)."""
        return await self._deleter.delete(run_id, expected_last_seq, with_children=with_children)

    async def spawn(
        self, parent_run_id: str, tool_use_id: str, child_run_id: str, meta: records_pb2.Meta, reason: str
    ) -> SpawnOutcome:
        """Delegate a pending call to a new child run, parent's deferral first (``runs/spawning.py``)."""
        return await self._spawning.spawn(parent_run_id, tool_use_id, child_run_id, meta, reason)

    async def deliver(self, child_run_id: str) -> bool:
        """Answer the parent's call with a stopped child's outcome, if it still takes it (``runs/spawning.py``).

        A failure is logged, never raised: the child's terminal is durable, and
        the next start (or a retried terminal) delivers it.
        """
        try:
            return await self._spawning.deliver(child_run_id)
        except JournalError as err:
            log.warning("run %s: its outcome was not delivered yet: %s", child_run_id, err.message)
            return False

    def read(self, run_id: str, from_seq: int) -> RecordReader:
        """The stored records from ``from_seq``, as far as acknowledged, a chunk at a time (``runs/reading.py``)."""
        return self._reads.read(run_id, from_seq)

    async def read_after(self, run_id: str, after_seq: int, *, recent_bytes: int) -> RecordReader:
        """The acknowledged records after ``after_seq``, back from the end when near it (``runs/reading.py``)."""
        return await self._reads.read_after(run_id, after_seq, recent_bytes=recent_bytes)

    @property
    def warm_bytes(self) -> int:
        """The stored bytes folded into the warm states held (bounded by ``max_warm_bytes``)."""
        return self._handles.warm_bytes

    @property
    def open_journals(self) -> int:
        """Journals held open (bounded by ``max_open_journals``)."""
        return self._handles.open_count

    async def close(self) -> None:
        """Close every journal this server holds (releasing their locks)."""
        await self._handles.close()
