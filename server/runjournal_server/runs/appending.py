"""Append: a worker's consecutive records, all or nothing, decided by the append rule.

Rules kept here:

* The append rule (``core/sequence.py``'s ``decide_batch``) decides on the
  warm state, which needs no read on the common path; a refusal decided
  there is provisional until the run has caught up once with what other
  writers stored (on a store shared by replicas the warm state may lag; the
  write itself is fenced, so a stale "next" loses a race instead).
* A batch that creates a run is created whole (``Writer.create``); a
  creation that finds the run there already is decided like any append: a
  retry's duplicate, or RUN_EXISTS for another meta.
* The observer is told once per call, of the outcome the caller gets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from runjournal.v1 import records_pb2
from runjournal_server.backends.journal import Journal
from runjournal_server.core import records
from runjournal_server.core.errors import RunClaimedError, RunExistsError, SeqConflictError, SeqGapError
from runjournal_server.core.fold import Folder
from runjournal_server.core.ids import validate_run_id
from runjournal_server.core.sequence import BatchDecision, BatchOutcome, decide_batch
from runjournal_server.observability.observer import Observer, result_of
from runjournal_server.runs.handles import RunHandles, Slot
from runjournal_server.runs.requests import encode_batch
from runjournal_server.runs.writing import Writer, check_records

_SETTLED = (BatchOutcome.WRITE, BatchOutcome.DUPLICATES)
"""Outcomes a stale warm state cannot make wrong: a duplicate is stored, a stale "next" loses its race."""


@dataclass
class AppendOutcome:
    first_seq: int
    duplicates: int
    last_seq: int


class Appending:
    """Append over the server's run handles."""

    def __init__(self, handles: RunHandles, writer: Writer, observer: Observer, *, max_record_bytes: int) -> None:
        self._handles = handles
        self._writer = writer
        self._observer = observer
        self._max_record_bytes = max_record_bytes

    async def append(self, run_id: str, claim_token: int, batch: Sequence[records_pb2.JournalRecord]) -> AppendOutcome:
        """Append consecutive records, all or nothing (see JournalService.Append); the observer is told how it went."""
        try:
            outcome = await self._append(run_id, claim_token, batch)
        except Exception as err:
            self._observer.refused(batch, result_of(err))
            raise
        self._observer.appended(batch, outcome.duplicates)
        return outcome

    async def _append(self, run_id: str, claim_token: int, batch: Sequence[records_pb2.JournalRecord]) -> AppendOutcome:
        validate_run_id(run_id)
        stored = await encode_batch(run_id, batch, max_record_bytes=self._max_record_bytes)
        creating = stored[0].kind == records.Kind.META
        if creating:
            # The creator's token is the meta seq; callers may leave it unset.
            claim_token = claim_token or 1
        async with self._handles.use(run_id) as slot:
            if creating and slot.journal is None and await self._try_create(slot, claim_token, stored):
                return AppendOutcome(1, 0, slot.last_seq)
            await self._handles.open(slot)
            return await self._writer.racing(slot, lambda: self._decide_and_write(slot, claim_token, stored))

    async def _try_create(self, slot: Slot, claim_token: int, stored: list[records.StoredRecord]) -> bool:
        """Create the run with the whole batch; False when it already exists (a retry or a rival)."""
        folder = Folder()
        check_records(slot.run_id, folder, stored)  # the whole batch is valid before anything is written
        if len(stored) > 1 and claim_token != folder.claim_token:
            raise RunClaimedError(slot.run_id, claim_token, folder.claim_token, folder.claimed_by)
        try:
            await self._writer.create(slot, stored, folder)
        except RunExistsError:
            return False
        return True

    async def _decide_and_write(
        self, slot: Slot, claim_token: int, stored: Sequence[records.StoredRecord]
    ) -> AppendOutcome:
        """Decide on the warm state (caught up once before a refusal), then write or refuse."""
        decision = await self._decide(slot, claim_token, stored)
        if decision.outcome not in _SETTLED and await self._handles.catch_up(slot):
            decision = await self._decide(slot, claim_token, stored)
        journal, folder = self._handles.held(slot)
        last = journal.last_seq
        match decision.outcome:
            case BatchOutcome.DUPLICATES:
                return AppendOutcome(stored[0].seq, decision.duplicates, last)
            case BatchOutcome.CLAIMED:
                raise RunClaimedError(slot.run_id, claim_token, folder.claim_token, folder.claimed_by)
            case BatchOutcome.CONFLICT if stored[decision.seq - stored[0].seq].kind == records.Kind.META:
                raise RunExistsError(slot.run_id)  # a different meta: another run of that id
            case BatchOutcome.CONFLICT:
                raise SeqConflictError(slot.run_id, decision.seq, last)
            case BatchOutcome.GAP:
                raise SeqGapError(slot.run_id, decision.seq, last)
        await self._writer.write(slot, stored[decision.duplicates :])
        return AppendOutcome(stored[0].seq, decision.duplicates, journal.last_seq)

    async def _decide(self, slot: Slot, claim_token: int, stored: Sequence[records.StoredRecord]) -> BatchDecision:
        """The append rule on the warm state, with the stored bodies of the seqs the batch overlaps."""
        journal, folder = self._handles.held(slot)
        last = journal.last_seq
        existing = {item.seq: await _stored_body(journal, item) for item in stored if item.seq <= last}
        batch = [(item.seq, item.body) for item in stored]
        return decide_batch(last, batch, existing, token_ok=claim_token == folder.claim_token)


async def _stored_body(journal: Journal, item: records.StoredRecord) -> bytes:
    """The body stored at ``item``'s seq, for the append rule; the stored line is decoded only when it differs.

    Equal lines are equal bodies (the line is the body and its checksum), so a
    retry, the common case, costs one read and one comparison. A line that
    differs is decoded, so damage is reported as damage and not as a conflict.
    """
    line = await journal.stored_bytes(item.seq)
    if line == item.line:
        return item.body
    return (await journal.stored_line(item.seq)).body
