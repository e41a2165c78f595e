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
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from runjournal.v1 import records_pb2, state_pb2
from runjournal_server import records
from runjournal_server.backends.base import Backend, Journal, WriteRaceError
from runjournal_server.errors import (
    AlreadyAnsweredError,
    AlreadyDecidedError,
    CallNotPendingError,
    CorruptJournalError,
    InvalidArgumentError,
    InvalidRecordError,
    NotDeferredError,
    ResumeRefusedError,
    RunClaimedError,
    RunExistsError,
    SeqConflictError,
    SeqGapError,
    StorageUnavailableError,
)
from runjournal_server.fold import Folder, JournalRuleError, fold_stored
from runjournal_server.gate import blocking_fields, check_resume, has_hard_block
from runjournal_server.handles import ColdRead, RunHandles, Slot
from runjournal_server.ids import validate_run_id
from runjournal_server.listing import RunFilter, RunListing
from runjournal_server.sequence import AppendDecision, check_append

log = logging.getLogger(__name__)

MAX_BATCH_RECORDS = 1000
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


class Runs:
    """Every journal operation, over one backend."""

    def __init__(self, backend: Backend, *, max_record_bytes: int, max_open_journals: int) -> None:
        self._backend = backend
        self._max_record_bytes = max_record_bytes
        self._known_corrupt: dict[str, str] = {}  # run id -> problem, from full reads
        self._handles = RunHandles(
            backend, max_open=max_open_journals, fold=self._fold, known_corrupt=self._known_corrupt
        )
        self._listing = RunListing(backend, self._known_corrupt)

    # ----------------------------------------------------------------- append

    async def append(self, run_id: str, claim_token: int, batch: Sequence[records_pb2.Record]) -> AppendOutcome:
        """Append consecutive records, all or nothing (see JournalService.Append)."""
        validate_run_id(run_id)
        stored = self._encode_batch(run_id, batch)
        creating = stored[0].seq == 1
        if creating:
            # The creator's token is the meta seq; callers may leave it unset.
            claim_token = claim_token or 1
        async with self._handles.use(run_id) as slot:
            if creating and slot.journal is None:
                created = await self._try_create(slot, stored)
                if created:
                    if len(stored) > 1:
                        await self._append_locked(slot, claim_token, stored[1:])
                    return AppendOutcome(1, 0, slot.last_seq)
            return await self._append_locked(slot, claim_token, stored)

    def _encode_batch(self, run_id: str, batch: Sequence[records_pb2.Record]) -> list[records.StoredRecord]:
        if not batch:
            raise InvalidArgumentError("records", "at least one record is required")
        if len(batch) > MAX_BATCH_RECORDS:
            raise InvalidArgumentError("records", f"at most {MAX_BATCH_RECORDS} records per batch, got {len(batch)}")
        stored = []
        for index, record in enumerate(batch):
            if index and record.seq != batch[index - 1].seq + 1:
                raise InvalidArgumentError(
                    f"records[{index}].seq", f"batch records must be consecutive: expected {batch[index - 1].seq + 1}"
                )
            encoded = records.encode(record, max_record_bytes=self._max_record_bytes)
            if encoded.kind == records.Kind.CLAIM:
                raise InvalidRecordError("claim", "claim records are written by the Claim RPC", seq=record.seq)
            if encoded.kind == records.Kind.META and record.meta.run_id != run_id:
                raise InvalidRecordError("meta.run_id", f"must equal the run id {run_id!r}, got {record.meta.run_id!r}")
            stored.append(encoded)
        return stored

    async def _try_create(self, slot: Slot, stored: list[records.StoredRecord]) -> bool:
        """Create the run with its meta; False when it already exists (a retry or a rival)."""
        trial = Folder()
        self._apply_new(slot.run_id, trial, stored)  # the whole batch is valid before anything is written
        try:
            journal = await self._backend.create_journal(slot.run_id, stored[0])
        except RunExistsError:
            return False
        folder = Folder()
        folder.apply_stored(stored[0])
        self._handles.adopt(slot, journal, folder)
        return True

    async def _append_locked(
        self, slot: Slot, claim_token: int, stored: Sequence[records.StoredRecord]
    ) -> AppendOutcome:
        """Decide with the warm state; before refusing, catch up once with what other writers stored."""

        async def attempt() -> AppendOutcome:
            try:
                return await self._decide_and_write(slot, claim_token, stored)
            except (SeqGapError, SeqConflictError, RunClaimedError, RunExistsError):
                if not await self._catch_up(slot):
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
        journal, folder = await self._handles.ensure_open(slot)
        last = journal.last_seq
        token_ok = claim_token == folder.claim_token
        duplicates = 0
        for candidate in stored:
            if candidate.seq > last:
                break
            existing = await journal.stored_line(candidate.seq)
            if check_append(last, candidate.seq, candidate.body, existing.body) is AppendDecision.CONFLICT:
                self._check_token(slot, folder, claim_token, token_ok)
                if candidate.seq == 1:
                    raise RunExistsError(slot.run_id)
                raise SeqConflictError(slot.run_id, candidate.seq, last)
            duplicates += 1
        new = list(stored[duplicates:])
        if not new:
            # A verified retry is truthful whoever sends it: the record is there.
            return AppendOutcome(stored[0].seq, duplicates, last)
        self._check_token(slot, folder, claim_token, token_ok)
        if check_append(last, new[0].seq, new[0].body, None) is AppendDecision.GAP:
            raise SeqGapError(slot.run_id, new[0].seq, last)
        await self._write(slot, journal, folder, new)
        return AppendOutcome(stored[0].seq, duplicates, journal.last_seq)

    async def _catch_up(self, slot: Slot) -> bool:
        """Adopt records other writers stored (never any with an exclusive writer lock); True if any."""
        journal, folder = await self._handles.ensure_open(slot)
        newer = await journal.refresh()
        for item in newer:
            try:
                folder.apply_stored(item)
            except JournalRuleError as err:
                await self._handles.drop(slot)
                corrupt = CorruptJournalError(slot.run_id, err.detail, seq=err.seq)
                self._known_corrupt[slot.run_id] = corrupt.message
                raise corrupt from err
        return bool(newer)

    def _check_token(self, slot: Slot, folder: Folder, claim_token: int, token_ok: bool) -> None:
        if not token_ok:
            raise RunClaimedError(slot.run_id, claim_token, folder.claim_token, folder.claimed_by)

    async def _write(self, slot: Slot, journal: Journal, folder: Folder, new: Sequence[records.StoredRecord]) -> None:
        """Apply ``new`` to the warm state (validating it), then make it durable."""
        self._apply_new(slot.run_id, folder, new, slot=slot)
        try:
            await journal.append(new)
        except BaseException:
            # The warm state ran ahead of the store; rebuild it from the store.
            await self._handles.drop(slot)
            raise

    @staticmethod
    def _apply_new(
        run_id: str, folder: Folder, new: Sequence[records.StoredRecord], *, slot: Slot | None = None
    ) -> None:
        """Apply incoming records; a rule violation is the client's INVALID_RECORD.

        Fold checks a record completely before it changes anything, so a single
        refused record leaves the state as it was; when a later record of a
        batch is refused, the earlier ones already moved the warm state, which
        is then discarded and rebuilt from the store on next use.
        """
        for index, candidate in enumerate(new):
            try:
                folder.apply_stored(candidate)
            except JournalRuleError as err:
                if index and slot is not None:
                    slot.folder = None
                raise InvalidRecordError(str(candidate.kind), err.detail, seq=err.seq) from err

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
    ) -> ClaimOutcome:
        """Gate, then write the claim (and a reconfigure), then read last_seq."""
        validate_run_id(run_id)
        if not worker_id:
            raise InvalidArgumentError("worker_id", "a worker id is required")
        notice = records_pb2.ClaimNotice(worker_id=worker_id, host=host, pid=pid, reason=reason)
        self._check_claim_request(notice, fingerprint)
        # Gate without the lock: a refusal writes nothing and holds nothing.
        folder, cold = await self._pre_read(run_id)
        self._gate(run_id, folder, fingerprint, force)
        async with self._handles.use(run_id) as slot:
            return await self._racing(run_id, lambda: self._claim_locked(slot, notice, fingerprint, force, cold))

    async def _claim_locked(
        self,
        slot: Slot,
        notice: records_pb2.ClaimNotice,
        fingerprint: records_pb2.Fingerprint,
        force: bool,
        cold: ColdRead | None,
    ) -> ClaimOutcome:
        await self._handles.ensure_open(slot, cold)  # first: _catch_up would open without the cold read
        await self._catch_up(slot)
        journal, folder = await self._handles.ensure_open(slot)
        report = self._gate(slot.run_id, folder, fingerprint, force)  # the run may have moved meanwhile
        claim_seq = journal.last_seq + 1
        batch = [records_pb2.Record(seq=claim_seq, claim=notice)]
        if report.differences:
            changed = [d.field for d in report.differences]
            batch.append(
                records_pb2.Record(
                    seq=claim_seq + 1,
                    reconfigure=records_pb2.Reconfigure(fingerprint=fingerprint, changed_fields=changed),
                )
            )
            report.reconfigured = True
        new = [records.encode(r, max_record_bytes=self._max_record_bytes) for r in batch]
        await self._write(slot, journal, folder, new)
        state = folder.state()
        return ClaimOutcome(
            claim_token=claim_seq,
            last_seq=journal.last_seq,
            state=state,
            gate=report,
            resume_reminder=resume_reminder(state),
        )

    @staticmethod
    def _check_claim_request(notice: records_pb2.ClaimNotice, fingerprint: records_pb2.Fingerprint) -> None:
        """Schema-check the claim notice and fingerprint as the records they become."""
        probes = [
            ("", records_pb2.Record(seq=1, claim=notice)),
            (
                "fingerprint",
                records_pb2.Record(
                    seq=1, reconfigure=records_pb2.Reconfigure(fingerprint=fingerprint, changed_fields=["model"])
                ),
            ),
        ]
        for prefix, probe in probes:
            try:
                records.validate(probe)
            except InvalidRecordError as err:
                raise InvalidArgumentError(prefix or err.field.rsplit(".", 1)[-1], str(err)) from err

    def _gate(
        self, run_id: str, folder: Folder, fingerprint: records_pb2.Fingerprint, force: bool
    ) -> state_pb2.GateReport:
        report = check_resume(folder.effective_fingerprint, fingerprint, has_pending=folder.has_pending, force=force)
        if not report.allowed:
            raise ResumeRefusedError(run_id, blocking_fields(report), has_hard_block(report))
        return report

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
        if conversation_from < 0:
            raise InvalidArgumentError("conversation_from", "must be 0 (everything) or a message index")

        slot = self._handles.get(run_id)
        if slot is not None and slot.journal is not None:
            async with slot.lock:
                # Under the lock: the warm state never shows a record that is not yet durable.
                if slot.journal is not None and slot.folder is not None:
                    await self._catch_up(slot)
                    last = slot.journal.last_seq
                    if as_of_seq == 0 or as_of_seq == last:
                        return slot.folder.state(conversation_from=conversation_from, into=into)
        stored = await self._load(run_id)
        last = stored[-1].seq
        if as_of_seq > last:
            raise InvalidArgumentError("as_of_seq", f"run {run_id!r} has only {last} records")
        if as_of_seq:
            stored = stored[:as_of_seq]
        return self._fold(run_id, stored).state(conversation_from=conversation_from, into=into)

    async def _pre_read(self, run_id: str) -> tuple[Folder, ColdRead | None]:
        """The state to check a request against before taking any lock.

        The warm state when the server holds the run; else a cold read and fold
        without any lock, returned too so that opening the run next can reuse
        it instead of decoding and folding the journal a second time.
        """
        slot = self._handles.get(run_id)
        if slot is not None and slot.folder is not None and slot.journal is not None:
            return slot.folder, None
        stored = await self._load(run_id)
        folder = self._fold(run_id, stored)
        return folder, ColdRead(stored, folder)

    async def _load(self, run_id: str) -> list[records.StoredRecord]:
        try:
            return await self._backend.load(run_id)
        except CorruptJournalError as err:
            self._known_corrupt[run_id] = err.message
            raise

    def _fold(self, run_id: str, stored: Sequence[records.StoredRecord]) -> Folder:
        """Fold stored records; a rule they break is corruption, remembered for the listing."""
        try:
            folder = fold_stored(stored)
            if folder.run_id != run_id:
                raise CorruptJournalError(run_id, f"its meta names run {folder.run_id!r}", seq=1)
        except JournalRuleError as err:
            corrupt = CorruptJournalError(run_id, err.detail, seq=err.seq)
            self._known_corrupt[run_id] = corrupt.message
            raise corrupt from err
        except CorruptJournalError as err:
            self._known_corrupt[run_id] = err.message
            raise
        self._known_corrupt.pop(run_id, None)  # the whole journal just read back clean
        return folder

    # ----------------------------------------------------------------- answer

    async def answer(
        self, run_id: str, tool_use_id: str, content: Sequence[records_pb2.ContentBlock], is_error: bool
    ) -> int:
        """Write the one tool_result that answers a deferred call."""
        result = records_pb2.ToolResult(tool_use_id=tool_use_id, content=content, is_error=is_error, remote=True)
        return await self._write_out_of_band(
            run_id, tool_use_id, records_pb2.Record(tool_result=result), "tool_result.", self._check_answerable
        )

    async def approve(
        self, run_id: str, tool_use_id: str, decision: records_pb2.Decision, approver: str, reason: str
    ) -> int:
        """Write the one approval record that decides a call of the pending batch."""
        approval = records_pb2.Approval(tool_use_id=tool_use_id, decision=decision, approver=approver, reason=reason)
        return await self._write_out_of_band(
            run_id, tool_use_id, records_pb2.Record(approval=approval), "approval.", self._check_decidable
        )

    async def _write_out_of_band(
        self,
        run_id: str,
        tool_use_id: str,
        record: records_pb2.Record,
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
        record.seq = 2  # a placeholder position: validate the payload before anything else
        try:
            records.encode(record, max_record_bytes=self._max_record_bytes)
        except InvalidRecordError as err:
            raise InvalidArgumentError(err.field.removeprefix(field_prefix), str(err)) from err
        folder, cold = await self._pre_read(run_id)
        check(run_id, tool_use_id, folder)
        async with self._handles.use(run_id) as slot:

            async def attempt() -> int:
                await self._handles.ensure_open(slot, cold)  # first: _catch_up would open without the cold read
                await self._catch_up(slot)
                journal, folder = await self._handles.ensure_open(slot)
                check(run_id, tool_use_id, folder)
                record.seq = journal.last_seq + 1
                stored = records.encode(record, max_record_bytes=self._max_record_bytes)
                await self._write(slot, journal, folder, [stored])
                return record.seq

            return await self._racing(run_id, attempt)

    @staticmethod
    def _check_answerable(run_id: str, tool_use_id: str, folder: Folder) -> None:
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

    @staticmethod
    def _check_decidable(run_id: str, tool_use_id: str, folder: Folder) -> None:
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

    # ------------------------------------------------------------------- list

    async def list_runs(
        self, *, page_size: int, page_token: str, where: RunFilter
    ) -> tuple[list[state_pb2.RunSummary], str]:
        """A page of summaries, newest first, by the shared listing rule (``listing.py``)."""
        if where.task_id:
            validate_run_id(where.task_id, "task_id")
        return await self._listing.page(page_size=page_size, page_token=page_token, where=where)

    # ------------------------------------------------------------------- read

    async def read(self, run_id: str, from_seq: int) -> AsyncIterator[records.StoredRecord]:
        """The stored records from ``from_seq``, as far as they are acknowledged."""
        validate_run_id(run_id)
        if from_seq < 0:
            raise InvalidArgumentError("from_seq", "must be >= 0")
        stored = await self._load(run_id)
        slot = self._handles.get(run_id)
        # A record being written by this server is not acknowledged yet: don't show it.
        acknowledged = slot.journal.last_seq if slot is not None and slot.journal is not None else stored[-1].seq
        for item in stored:
            if item.seq > acknowledged:
                break
            if item.seq >= from_seq:
                yield item

    # ------------------------------------------------------------------ close

    async def close(self) -> None:
        """Close every journal this server holds (releasing their locks)."""
        await self._handles.close()


def resume_reminder(state: state_pb2.RunState) -> str:
    """Text a resumed worker may add to its system prompt; never part of a fingerprint."""
    parts = [
        f"This conversation was interrupted and is being resumed from its journal at iteration {state.next_iteration}."
    ]
    if state.HasField("pending"):
        waiting = [c.tool_use.id for c in state.pending.calls if not c.answered]
        parts.append(
            f"{len(waiting)} tool call(s) of the last turn have no result yet ({', '.join(waiting)}); "
            "finish them before asking the model again."
        )
    return " ".join(parts)
