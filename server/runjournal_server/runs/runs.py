"""The operations the RPCs call: append, claim, fold, answer, list and read.

Ordering rules live here, once, for every backend:

* Validate before writing: a request is decoded, schema-checked and applied to
  the run's folded state before any byte reaches the store, so a refusal
  changes nothing.
* One ``asyncio.Lock`` per run serialises its writers; there is no lock shared
  between runs. The folded state of an open run is kept warm and advanced
  record by record, so ``Fold`` and ``Claim`` after an append read nothing.
* Warm state may run ahead of the store only between "applied" and "durable";
  if the write then fails, the run's handle is dropped and reopened from the
  store, so the state can never describe a record that is not there.
* ``Claim`` gates first (a refusal writes nothing and takes no lock), writes
  the claim record before anything else, then reads ``last_seq``.
* ``Answer`` validates before it takes any lock.
* A batch that creates a run goes to the backend whole, in one creation:
  "meta, then the rest" would leave a listed run with only its meta when the
  second write fails.
* A ``reconfigure`` a worker appends passes the resume gate as Claim does,
  without force (only Claim carries force): otherwise a worker could record a
  provider change and then claim under the other provider.
* CPU-heavy work on large inputs (encoding a large record, folding a long
  journal) runs in a thread, and ``Read`` streams from the store a chunk at a
  time: one large run never stalls the other runs' calls or holds its whole
  journal in memory per reader.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from runjournal.v1 import records_pb2, state_pb2
from runjournal_server.backends.base import Backend, Deletion, Journal, WriteRaceError
from runjournal_server.core import records
from runjournal_server.core.answering import check_answerable, check_decidable
from runjournal_server.core.errors import (
    CorruptJournalError,
    InvalidArgumentError,
    InvalidRecordError,
    ResumeRefusedError,
    RunClaimedError,
    RunExistsError,
    SeqConflictError,
    SeqGapError,
    StorageUnavailableError,
)
from runjournal_server.core.fold import Folder, JournalRuleError
from runjournal_server.core.ids import validate_run_id
from runjournal_server.core.kinds import kind_of
from runjournal_server.core.resume import check_appended_reconfigure, check_claim_request, gate_claim, resume_reminder
from runjournal_server.core.schema import validate_payload
from runjournal_server.core.sequence import BatchOutcome, decide_batch
from runjournal_server.observability.observer import NO_OBSERVER, Observer, result_of
from runjournal_server.runs import forking
from runjournal_server.runs.deleting import RunDeleter
from runjournal_server.runs.events import RunEvents
from runjournal_server.runs.handles import DEFAULT_MAX_WARM_BYTES, ColdRead, RunHandles, Slot, stored_bytes
from runjournal_server.runs.past_states import PastStates
from runjournal_server.runs.reader import RecordReader
from runjournal_server.runs.requests import encode_batch, encode_one
from runjournal_server.runs.response_limit import ResponseLimit

log = logging.getLogger(__name__)

MAX_WRITE_RACES = 3

T = TypeVar("T")


@dataclass
class AppendOutcome:
    first_seq: int
    duplicates: int
    last_seq: int


@dataclass
class ClaimOutcome:
    claim_token: int
    last_seq: int
    state: state_pb2.RunState
    gate: state_pb2.GateReport
    resume_reminder: str


@dataclass(frozen=True)
class _ClaimAsk:
    """What a Claim asks for, as the locked part needs it."""

    notice: records_pb2.ClaimNotice
    fingerprint: records_pb2.Fingerprint
    force: bool
    conversation_from: int


def _check_conversation_from(conversation_from: int) -> None:
    if conversation_from < 0:
        raise InvalidArgumentError("conversation_from", "must be 0 (everything) or a message index")


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
        self._observer = observer
        self._max_record_bytes = max_record_bytes
        self._response_limit = ResponseLimit(max_response_bytes)
        self._past_states = PastStates()
        self._handles = RunHandles(backend, max_open=max_open_journals, max_warm_bytes=max_warm_bytes)
        self.events = RunEvents()
        """Told of every acknowledged write, after it is durable: what Watch and WatchRuns wait on."""
        self._deleter = RunDeleter(backend, self._handles, self._past_states, self.events)
        self.events.listen(self._deleter)  # a deletion through another replica forgets the run here too

    @property
    def backend(self) -> Backend:
        return self._backend

    @property
    def corruption(self) -> Mapping[str, str]:
        """Runs a full read found damaged, with the problem: the listing lists them CORRUPT."""
        return self._handles.corruption

    # ----------------------------------------------------------------- append

    async def append(self, run_id: str, claim_token: int, batch: Sequence[records_pb2.JournalRecord]) -> AppendOutcome:
        """Append consecutive records, all or nothing (see JournalService.Append); the observer is told how it went.

        Told here, once per call, not where ``decide_batch`` decides: a
        refusal decided on the warm state is provisional until the run has
        caught up with other writers (``_append_locked``).
        """
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
            return await self._append_locked(slot, claim_token, stored)

    async def _try_create(self, slot: Slot, claim_token: int, stored: list[records.StoredRecord]) -> bool:
        """Create the run with the whole batch, atomically; False when it already exists (a retry or a rival).

        The batch goes to the backend in one creation, never as "meta, then
        the rest": a failure between the two would leave a listed run with
        only its meta.
        """
        folder = Folder()
        self._apply_new(slot.run_id, folder, stored)  # the whole batch is valid before anything is written
        if len(stored) > 1 and claim_token != folder.claim_token:
            raise RunClaimedError(slot.run_id, claim_token, folder.claim_token, folder.claimed_by)
        try:
            journal = await self._backend.create_journal(slot.run_id, stored[0], stored[1:], observer=self._observer)
        except RunExistsError:
            return False
        self._handles.adopt(slot, journal, folder, stored_bytes(stored))
        self.events.stored(slot.run_id, journal.last_seq)
        return True

    async def _append_locked(
        self, slot: Slot, claim_token: int, stored: Sequence[records.StoredRecord]
    ) -> AppendOutcome:
        """Decide with the warm state; before refusing, catch up once with what other writers stored."""

        async def attempt() -> AppendOutcome:
            try:
                return await self._decide_and_write(slot, claim_token, stored)
            except (SeqGapError, SeqConflictError, RunClaimedError, RunExistsError):
                if not await self._handles.catch_up(slot):
                    raise
            return await self._decide_and_write(slot, claim_token, stored)

        return await self._racing(slot.run_id, attempt)

    async def _racing(self, run_id: str, attempt: Callable[[], Awaitable[T]]) -> T:
        """Run a locked write, again after losing a write race to another replica (bounded).

        A lost race stored nothing of ours; ``_write`` dropped the warm state,
        so the next attempt reopens the run and decides on what is really
        there (a duplicate, a conflict, RUN_CLAIMED, or simply the next seq).
        """
        for _ in range(MAX_WRITE_RACES):
            try:
                return await attempt()
            except WriteRaceError:
                continue
        raise StorageUnavailableError(run_id, f"lost {MAX_WRITE_RACES} write races in a row to other replicas")

    async def _decide_and_write(
        self, slot: Slot, claim_token: int, stored: Sequence[records.StoredRecord]
    ) -> AppendOutcome:
        """Read what the batch overlaps, let the append rule decide (``decide_batch``), then write or refuse."""
        journal, folder = await self._handles.ensure_open(slot)
        last = journal.last_seq
        overlap = [item.seq for item in stored if item.seq <= last]
        existing = {seq: (await journal.stored_line(seq)).body for seq in overlap}
        batch = [(item.seq, item.body) for item in stored]
        decision = decide_batch(last, batch, existing, token_ok=claim_token == folder.claim_token)
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
        await self._write(slot, journal, folder, stored[decision.duplicates :])
        return AppendOutcome(stored[0].seq, decision.duplicates, journal.last_seq)

    async def _write(
        self,
        slot: Slot,
        journal: Journal,
        folder: Folder,
        new: Sequence[records.StoredRecord],
        *,
        gated: bool = True,
    ) -> None:
        """Apply ``new`` to the warm state (validating it), then make it durable.

        ``gated`` is False only for the records Claim writes itself: its
        reconfigure already passed the gate (with the request's force flag).
        """
        self._apply_new(slot.run_id, folder, new, slot=slot, gated=gated)
        try:
            await journal.append(new, observer=self._observer)
        except BaseException:
            # The warm state ran ahead of the store; rebuild it from the store.
            await self._handles.drop(slot)
            raise
        self._handles.grow(slot, stored_bytes(new))
        self.events.stored(slot.run_id, journal.last_seq)

    @staticmethod
    def _apply_new(
        run_id: str,
        folder: Folder,
        new: Sequence[records.StoredRecord],
        *,
        slot: Slot | None = None,
        gated: bool = True,
    ) -> None:
        """Apply incoming records; a rule violation is the client's INVALID_RECORD.

        Fold checks a record completely before it changes anything, so a single
        refused record leaves the state as it was; when a later record of a
        batch is refused, the earlier ones already moved the warm state, which
        is then discarded and rebuilt from the store on next use. A worker's
        own ``reconfigure`` passes the resume gate first (``gated``).
        """
        for index, candidate in enumerate(new):
            try:
                if gated and candidate.kind == records.Kind.RECONFIGURE and candidate.record is not None:
                    check_appended_reconfigure(run_id, folder, candidate.record)
                folder.apply_stored(candidate)
            except (JournalRuleError, InvalidRecordError, ResumeRefusedError) as err:
                if index and slot is not None:
                    slot.folder = None
                if isinstance(err, JournalRuleError):
                    raise InvalidRecordError(str(candidate.kind), err.detail, seq=err.seq) from err
                raise

    # ------------------------------------------------------------------ claim

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
    ) -> ClaimOutcome:
        """Gate, then write the claim (and a reconfigure), then read last_seq."""
        validate_run_id(run_id)
        if not worker_id:
            raise InvalidArgumentError("worker_id", "a worker id is required")
        _check_conversation_from(conversation_from)
        notice = records_pb2.ClaimNotice(worker_id=worker_id, host=host, pid=pid, reason=reason)
        check_claim_request(notice, fingerprint)
        # Gate without the lock: a refusal writes nothing and holds nothing.
        folder, cold = await self._handles.pre_read(run_id)
        gate_claim(run_id, folder, fingerprint, force=force)
        asked = _ClaimAsk(notice, fingerprint, force, conversation_from)
        async with self._handles.use(run_id) as slot:
            return await self._racing(run_id, lambda: self._claim_locked(slot, asked, cold))

    async def _claim_locked(self, slot: Slot, asked: _ClaimAsk, cold: ColdRead | None) -> ClaimOutcome:
        notice, fingerprint = asked.notice, asked.fingerprint
        journal, folder = await self._handles.current(slot, cold)
        report = gate_claim(slot.run_id, folder, fingerprint, force=asked.force)  # the run may have moved meanwhile
        claim_seq = journal.last_seq + 1
        batch = [records_pb2.JournalRecord(seq=claim_seq, claim=notice)]
        if report.differences:
            changed = [d.field for d in report.differences]
            batch.append(
                records_pb2.JournalRecord(
                    seq=claim_seq + 1,
                    reconfigure=records_pb2.Reconfigure(fingerprint=fingerprint, changed_fields=changed),
                )
            )
            report.reconfigured = True
        new = [records.encode(r, max_record_bytes=self._max_record_bytes) for r in batch]
        # Before anything is written: a claim whose answer cannot be sent would
        # leave nobody holding a token that works.
        extra = sum(len(item.line) for item in new) + report.ByteSize()
        self._response_limit.check_state(slot.run_id, folder, slot.warm_bytes, asked.conversation_from, extra)
        await self._write(slot, journal, folder, new, gated=False)
        state = folder.state(conversation_from=asked.conversation_from)
        return ClaimOutcome(
            claim_token=claim_seq,
            last_seq=journal.last_seq,
            state=state,
            gate=report,
            resume_reminder=resume_reminder(state),
        )

    # ------------------------------------------------------------------- fold

    async def fold(
        self,
        run_id: str,
        as_of_seq: int = 0,
        *,
        conversation_from: int = 0,
        into: state_pb2.RunState | None = None,
    ) -> state_pb2.RunState:
        """The folded state now, or as of ``as_of_seq``; see ``Folder.state`` for the other options."""
        validate_run_id(run_id)
        if as_of_seq < 0:
            raise InvalidArgumentError("as_of_seq", "must be 0 (latest) or a seq >= 1")
        _check_conversation_from(conversation_from)

        slot = self._handles.get(run_id)
        if slot is not None and slot.journal is not None:
            async with slot.lock:
                # Under the lock: the warm state never shows a record that is not yet durable.
                if slot.journal is not None and slot.folder is not None:
                    await self._handles.catch_up(slot)
                    last = slot.journal.last_seq
                    if as_of_seq == 0 or as_of_seq == last:
                        self._response_limit.check_state(run_id, slot.folder, slot.warm_bytes, conversation_from)
                        return slot.folder.state(conversation_from=conversation_from, into=into)
        if as_of_seq:
            return await self._fold_past(run_id, as_of_seq, conversation_from, into)
        stored = await self._handles.load(run_id)
        folder = await self._handles.fold_cold(run_id, stored)
        self._response_limit.check_state(run_id, folder, stored_bytes(stored), conversation_from)
        return folder.state(conversation_from=conversation_from, into=into)

    async def _fold_past(
        self, run_id: str, as_of_seq: int, conversation_from: int, into: state_pb2.RunState | None
    ) -> state_pb2.RunState:
        """The state as of an acknowledged seq: from the LRU of past states, else folded from the prefix alone."""
        key = (run_id, as_of_seq, conversation_from)
        serialized = self._past_states.get(key)
        if serialized is None:
            stored = await self._read_prefix(run_id, as_of_seq)
            folder = await self._handles.fold_cold(run_id, stored, whole=False)
            # Serialized anyway for the LRU, so its length is the size to check: no state is built twice.
            serialized = folder.state(conversation_from=conversation_from).SerializeToString()
            self._past_states.put(key, serialized)
        self._response_limit.check_size(run_id, len(serialized))
        state = into if into is not None else state_pb2.RunState()
        state.MergeFromString(serialized)
        return state

    async def _read_prefix(self, run_id: str, as_of_seq: int) -> list[records.StoredRecord]:
        """Records 1..as_of_seq, read no further than that (a past state of a long run decodes only its past)."""
        prefix: list[records.StoredRecord] = []
        async with contextlib.aclosing(self.read(run_id, 1)) as reader:
            async for item in reader:
                prefix.append(item)
                if item.seq == as_of_seq:
                    return prefix
        raise InvalidArgumentError("as_of_seq", f"run {run_id!r} has only {len(prefix)} records")

    # ----------------------------------------------------------------- answer

    async def answer(
        self,
        run_id: str,
        tool_use_id: str,
        content: Sequence[records_pb2.ContentBlock],
        is_error: bool,
        *,
        answered_by: str = "",
    ) -> int:
        """Write the one tool_result that answers a deferred call; ``answered_by`` is the authenticated answerer."""
        result = records_pb2.ToolResult(
            tool_use_id=tool_use_id, content=content, is_error=is_error, remote=True, answered_by=answered_by
        )
        return await self._write_out_of_band(
            run_id, tool_use_id, records_pb2.JournalRecord(tool_result=result), "tool_result.", check_answerable
        )

    async def approve(
        self, run_id: str, tool_use_id: str, decision: records_pb2.Decision, approver: str, reason: str
    ) -> int:
        """Write the one approval record that decides a call of the pending batch."""
        approval = records_pb2.Approval(tool_use_id=tool_use_id, decision=decision, approver=approver, reason=reason)
        return await self._write_out_of_band(
            run_id, tool_use_id, records_pb2.JournalRecord(approval=approval), "approval.", check_decidable
        )

    async def _write_out_of_band(
        self,
        run_id: str,
        tool_use_id: str,
        record: records_pb2.JournalRecord,
        field_prefix: str,
        check: Callable[[str, str, Folder], None],
    ) -> int:
        """Append one record that needs no claim token (an answer, a decision), checked before any lock.

        Validation comes first and costs nothing: the record's schema, then the
        run's state (warm, or read without a lock). Under the run's lock the
        state is checked again, since it may have moved, then the record lands
        at ``last_seq + 1``.
        """
        validate_run_id(run_id)
        # The payload before anything else; its exact size once it has its seq.
        kind = kind_of(record)
        try:
            validate_payload(kind, getattr(record, kind.value))
        except InvalidRecordError as err:
            raise InvalidArgumentError(err.field.removeprefix(field_prefix), str(err)) from err
        records.refuse_surely_too_large(record, self._max_record_bytes)
        folder, cold = await self._handles.pre_read(run_id)
        check(run_id, tool_use_id, folder)
        async with self._handles.use(run_id) as slot:

            async def attempt() -> int:
                journal, folder = await self._handles.current(slot, cold)
                check(run_id, tool_use_id, folder)
                record.seq = journal.last_seq + 1
                stored = await encode_one(record, max_record_bytes=self._max_record_bytes)
                await self._write(slot, journal, folder, [stored])
                return record.seq

            return await self._racing(run_id, attempt)

    # ------------------------------------------------------------------- fork

    async def fork(self, run_id: str, at_seq: int, new_run_id: str) -> forking.Fork:
        """Create ``new_run_id`` from records 1..at_seq of ``run_id`` in one atomic creation (``runs/forking.py``)."""
        validate_run_id(run_id)
        validate_run_id(new_run_id, "new_run_id")
        forking.check_at_seq(at_seq)
        prefix = await forking.read_prefix(self.read(run_id, 1), run_id, at_seq)
        fork = await forking.plan(prefix, run_id, new_run_id, max_record_bytes=self._max_record_bytes)
        async with self._handles.use(new_run_id) as slot:
            if slot.journal is not None:
                raise RunExistsError(new_run_id)
            journal = await self._backend.create_journal(
                new_run_id, fork.records[0], fork.records[1:], observer=self._observer
            )
            self._handles.adopt(slot, journal, fork.folder, stored_bytes(fork.records))
            self.events.stored(new_run_id, journal.last_seq)
        return fork

    # ----------------------------------------------------------------- delete

    async def delete(self, run_id: str, expected_last_seq: int) -> Deletion:
        """Delete the run if its last seq is ``expected_last_seq``, keeping a tombstone (``runs/deleting.py``)."""
        return await self._deleter.delete(run_id, expected_last_seq)

    # ------------------------------------------------------------------- read

    def read(self, run_id: str, from_seq: int) -> RecordReader:
        """The stored records from ``from_seq``, as far as they are acknowledged.

        Streamed from the store a chunk at a time under the reader's flow
        control: a stalled reader holds one chunk, never the whole run. Close
        the reader (``aclose``) when done early, to release its descriptor.
        """
        validate_run_id(run_id)
        if from_seq < 0:
            raise InvalidArgumentError("from_seq", "must be >= 0")
        source = self._backend.stream(run_id, from_seq)
        return RecordReader(run_id, source, self._acknowledged, self._handles.note_corrupt)

    async def read_recent(self, run_id: str, after_seq: int, max_bytes: int) -> list[records.StoredRecord] | None:
        """The acknowledged records after ``after_seq``, in order, read backward from the run's end; None when
        they hold more than about ``max_bytes`` (then ``read`` them forward, a chunk at a time).

        For a watcher a few records behind: a read back from the end costs what
        was appended since, where a forward read from a seq may first scan the
        journal up to it (the file backend counts its lines).
        """
        validate_run_id(run_id)
        held = 0

        def reached(stored: records.StoredRecord) -> bool:
            nonlocal held
            held += len(stored.line)
            return stored.seq <= after_seq + 1 or held > max_bytes

        try:
            found = await self._backend.tail(run_id, reached)
        except CorruptJournalError as err:
            self._handles.note_corrupt(err)
            raise
        if found[0].seq > after_seq + 1:
            return None  # stopped by the size bound, short of after_seq
        return [stored for stored in found if stored.seq > after_seq and self._acknowledged(run_id, stored.seq)]

    def _acknowledged(self, run_id: str, seq: int) -> bool:
        """False for a record this server is writing right now (stored, not yet acknowledged).

        Only where the writer lock is exclusive: on a store shared by replicas
        a record this replica did not write was acknowledged by another, and a
        replica's Read must show every acknowledged record.
        """
        if self._backend.shared_writers:
            return True
        slot = self._handles.get(run_id)
        return slot is None or slot.journal is None or seq <= slot.journal.last_seq

    # ---------------------------------------------------------------- gauges

    @property
    def warm_bytes(self) -> int:
        """The stored bytes folded into the warm states held (bounded by ``max_warm_bytes``)."""
        return self._handles.warm_bytes

    @property
    def open_journals(self) -> int:
        """Journals held open (bounded by ``max_open_journals``)."""
        return self._handles.open_count

    # ------------------------------------------------------------------ close

    async def close(self) -> None:
        """Close every journal this server holds (releasing their locks)."""
        await self._handles.close()
