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

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from runjournal.v1 import records_pb2, state_pb2
from runjournal_server import records
from runjournal_server.backends.base import Backend, Journal, WriteRaceError
from runjournal_server.config import DEFAULT_MAX_WARM_BYTES
from runjournal_server.errors import (
    AlreadyAnsweredError,
    AlreadyDecidedError,
    CallNotPendingError,
    CorruptJournalError,
    InvalidArgumentError,
    InvalidRecordError,
    NotDeferredError,
    ResponseTooLargeError,
    ResumeRefusedError,
    RunClaimedError,
    RunExistsError,
    SeqConflictError,
    SeqGapError,
    StorageUnavailableError,
)
from runjournal_server.fold import Folder, JournalRuleError, fold_stored
from runjournal_server.gate import blocking_fields, check_resume, has_hard_block
from runjournal_server.handles import ColdRead, RunHandles, Slot, stored_bytes
from runjournal_server.ids import validate_run_id
from runjournal_server.kinds import kind_of
from runjournal_server.listing import RunFilter, RunListing
from runjournal_server.past_states import PastStates
from runjournal_server.schema import validate_fingerprint, validate_payload
from runjournal_server.sequence import AppendDecision, check_append

log = logging.getLogger(__name__)

MAX_BATCH_RECORDS = 1000
MAX_WRITE_RACES = 3
FOLD_ON_LOOP_RECORDS = 256
"""Journals shorter than this are folded on the event loop; longer ones in a thread."""
ENCODE_ON_LOOP_BYTES = 64 * 1024
"""Batches smaller than this (protobuf wire bytes) are encoded on the event loop: a thread hop costs more."""
RESPONSE_SLACK_BYTES = 16 * 1024
"""Room kept in a response for what surrounds the state (framing, the gate report's strings, the reminder)."""

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
    ) -> None:
        self._backend = backend
        self._max_record_bytes = max_record_bytes
        self._max_response_bytes = max_response_bytes  # None: no limit to keep (in-process use)
        self._past_states = PastStates()
        self._known_corrupt: dict[str, str] = {}  # run id -> problem, from full reads
        self._handles = RunHandles(
            backend,
            max_open=max_open_journals,
            fold=self._fold_cold,
            known_corrupt=self._known_corrupt,
            max_warm_bytes=max_warm_bytes,
        )
        self._listing = RunListing(backend, self._known_corrupt)

    # ----------------------------------------------------------------- append

    async def append(self, run_id: str, claim_token: int, batch: Sequence[records_pb2.Record]) -> AppendOutcome:
        """Append consecutive records, all or nothing (see JournalService.Append)."""
        validate_run_id(run_id)
        stored = await self._encode_batch(run_id, batch)
        creating = stored[0].kind == records.Kind.META
        if creating:
            # The creator's token is the meta seq; callers may leave it unset.
            claim_token = claim_token or 1
        async with self._handles.use(run_id) as slot:
            if creating and slot.journal is None and await self._try_create(slot, claim_token, stored):
                return AppendOutcome(1, 0, slot.last_seq)
            return await self._append_locked(slot, claim_token, stored)

    async def _encode_batch(self, run_id: str, batch: Sequence[records_pb2.Record]) -> list[records.StoredRecord]:
        """Validate and encode a batch; a large one off the event loop, so other runs' calls never wait on it."""
        if not batch:
            raise InvalidArgumentError("records", "at least one record is required")
        if len(batch) > MAX_BATCH_RECORDS:
            raise InvalidArgumentError("records", f"at most {MAX_BATCH_RECORDS} records per batch, got {len(batch)}")
        if sum(record.ByteSize() for record in batch) < ENCODE_ON_LOOP_BYTES:
            return self._encode_batch_sync(run_id, batch)
        return await asyncio.to_thread(self._encode_batch_sync, run_id, batch)

    async def _encode(self, record: records_pb2.Record) -> records.StoredRecord:
        """Encode one record; a large one off the event loop (see ``_encode_batch``)."""
        if record.ByteSize() < ENCODE_ON_LOOP_BYTES:
            return records.encode(record, max_record_bytes=self._max_record_bytes)
        return await asyncio.to_thread(records.encode, record, max_record_bytes=self._max_record_bytes)

    def _encode_batch_sync(self, run_id: str, batch: Sequence[records_pb2.Record]) -> list[records.StoredRecord]:
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
            journal = await self._backend.create_journal(slot.run_id, stored[0], stored[1:])
        except RunExistsError:
            return False
        self._handles.adopt(slot, journal, folder, stored_bytes(stored))
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
                if candidate.kind == records.Kind.META:
                    raise RunExistsError(slot.run_id)  # a different meta: another run of that id
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
        self._handles.grow(slot, stored_bytes(newer))
        return bool(newer)

    def _check_token(self, slot: Slot, folder: Folder, claim_token: int, token_ok: bool) -> None:
        if not token_ok:
            raise RunClaimedError(slot.run_id, claim_token, folder.claim_token, folder.claimed_by)

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
            await journal.append(new)
        except BaseException:
            # The warm state ran ahead of the store; rebuild it from the store.
            await self._handles.drop(slot)
            raise
        self._handles.grow(slot, stored_bytes(new))

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
                    _gate_appended_reconfigure(run_id, folder, candidate.record)
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
        if conversation_from < 0:
            raise InvalidArgumentError("conversation_from", "must be 0 (everything) or a message index")
        notice = records_pb2.ClaimNotice(worker_id=worker_id, host=host, pid=pid, reason=reason)
        self._check_claim_request(notice, fingerprint)
        # Gate without the lock: a refusal writes nothing and holds nothing.
        folder, cold = await self._pre_read(run_id)
        self._gate(run_id, folder, fingerprint, force)
        asked = _ClaimAsk(notice, fingerprint, force, conversation_from)
        async with self._handles.use(run_id) as slot:
            return await self._racing(run_id, lambda: self._claim_locked(slot, asked, cold))

    async def _claim_locked(self, slot: Slot, asked: _ClaimAsk, cold: ColdRead | None) -> ClaimOutcome:
        notice, fingerprint = asked.notice, asked.fingerprint
        await self._handles.ensure_open(slot, cold)  # first: _catch_up would open without the cold read
        await self._catch_up(slot)
        journal, folder = await self._handles.ensure_open(slot)
        report = self._gate(slot.run_id, folder, fingerprint, asked.force)  # the run may have moved meanwhile
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
        # Before anything is written: a claim whose answer cannot be sent would
        # leave nobody holding a token that works.
        extra = sum(len(item.line) for item in new) + report.ByteSize()
        self._check_state_fits(slot.run_id, folder, slot.warm_bytes, asked.conversation_from, extra)
        await self._write(slot, journal, folder, new, gated=False)
        state = folder.state(conversation_from=asked.conversation_from)
        return ClaimOutcome(
            claim_token=claim_seq,
            last_seq=journal.last_seq,
            state=state,
            gate=report,
            resume_reminder=resume_reminder(state),
        )

    def _check_state_fits(
        self, run_id: str, folder: Folder, folded_bytes: int, conversation_from: int, extra_bytes: int = 0
    ) -> None:
        """Refuse with RESPONSE_TOO_LARGE when the state (from ``conversation_from``) would not fit in a response.

        Cheap for most runs: a state never holds more than twice the stored
        bytes folded into it (its messages are the records' payloads, in the
        wire format, which is never longer than their JSON; the pending batch
        repeats the last turn's calls), so only a run near the limit pays for
        building the state once to measure it.
        """
        limit = self._max_response_bytes
        if limit is None or 2 * folded_bytes + extra_bytes + RESPONSE_SLACK_BYTES <= limit:
            return
        size = folder.state(conversation_from=conversation_from).ByteSize() + extra_bytes + RESPONSE_SLACK_BYTES
        if size > limit:
            raise ResponseTooLargeError(run_id, size, limit)

    @staticmethod
    def _check_claim_request(notice: records_pb2.ClaimNotice, fingerprint: records_pb2.Fingerprint) -> None:
        """Schema-check the claim notice and fingerprint as the records they become (claim, reconfigure)."""
        try:
            validate_payload(records.Kind.CLAIM, notice)
        except InvalidRecordError as err:
            raise InvalidArgumentError(err.field.rsplit(".", 1)[-1], str(err)) from err
        try:
            validate_fingerprint(fingerprint)
        except InvalidRecordError as err:
            raise InvalidArgumentError("fingerprint", str(err)) from err

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
                        self._check_state_fits(run_id, slot.folder, slot.warm_bytes, conversation_from)
                        return slot.folder.state(conversation_from=conversation_from, into=into)
        if as_of_seq:
            return await self._fold_past(run_id, as_of_seq, conversation_from, into)
        stored = await self._load(run_id)
        folder = await self._fold_cold(run_id, stored)
        self._check_state_fits(run_id, folder, stored_bytes(stored), conversation_from)
        return folder.state(conversation_from=conversation_from, into=into)

    async def _fold_past(
        self, run_id: str, as_of_seq: int, conversation_from: int, into: state_pb2.RunState | None
    ) -> state_pb2.RunState:
        """The state as of an acknowledged seq: from the LRU of past states, else folded from the prefix alone."""
        key = (run_id, as_of_seq, conversation_from)
        serialized = self._past_states.get(key)
        if serialized is None:
            stored = await self._read_prefix(run_id, as_of_seq)
            folder = await self._fold_cold(run_id, stored)
            self._check_state_fits(run_id, folder, stored_bytes(stored), conversation_from)
            serialized = folder.state(conversation_from=conversation_from).SerializeToString()
            self._past_states.put(key, serialized)
        elif self._max_response_bytes is not None and len(serialized) + RESPONSE_SLACK_BYTES > self._max_response_bytes:
            raise ResponseTooLargeError(run_id, len(serialized) + RESPONSE_SLACK_BYTES, self._max_response_bytes)
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
        folder = await self._fold_cold(run_id, stored)
        return folder, ColdRead(stored, folder)

    async def _load(self, run_id: str) -> list[records.StoredRecord]:
        try:
            return await self._backend.load(run_id)
        except CorruptJournalError as err:
            self._known_corrupt[run_id] = err.message
            raise

    async def _fold_cold(self, run_id: str, stored: Sequence[records.StoredRecord]) -> Folder:
        """Fold stored records; a long journal in a thread, so other runs' calls do not wait on it.

        A rule the records break is corruption, remembered for the listing
        (on the event loop, where the ledger is kept).
        """
        try:
            if len(stored) < FOLD_ON_LOOP_RECORDS:
                folder = _fold_checked(run_id, stored)
            else:
                folder = await asyncio.to_thread(_fold_checked, run_id, stored)
        except CorruptJournalError as err:
            self._known_corrupt[run_id] = err.message
            raise
        self._known_corrupt.pop(run_id, None)  # the whole journal just read back clean
        return folder

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
        # The payload before anything else; its exact size once it has its seq.
        kind = kind_of(record)
        try:
            validate_payload(kind, getattr(record, kind.value))
        except InvalidRecordError as err:
            raise InvalidArgumentError(err.field.removeprefix(field_prefix), str(err)) from err
        records.refuse_surely_too_large(record, self._max_record_bytes)
        folder, cold = await self._pre_read(run_id)
        check(run_id, tool_use_id, folder)
        async with self._handles.use(run_id) as slot:

            async def attempt() -> int:
                await self._handles.ensure_open(slot, cold)  # first: _catch_up would open without the cold read
                await self._catch_up(slot)
                journal, folder = await self._handles.ensure_open(slot)
                check(run_id, tool_use_id, folder)
                record.seq = journal.last_seq + 1
                stored = await self._encode(record)
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

    def read(self, run_id: str, from_seq: int) -> RecordReader:
        """The stored records from ``from_seq``, as far as they are acknowledged.

        Streamed from the store a chunk at a time under the reader's flow
        control: a stalled reader holds one chunk, never the whole run. Close
        the reader (``aclose``) when done early, to release its descriptor.
        """
        validate_run_id(run_id)
        if from_seq < 0:
            raise InvalidArgumentError("from_seq", "must be >= 0")
        return RecordReader(run_id, self._backend.stream(run_id, from_seq), self._acknowledged, self._known_corrupt)

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


class RecordReader:
    """Records of one run from the store's stream, up to what is acknowledged.

    An iterator object rather than a generator: a suspended generator frame
    would keep the last record it yielded alive while the consumer waits on a
    stalled client, and a stalled reader must hold as little as possible.
    """

    def __init__(
        self,
        run_id: str,
        source: AsyncGenerator[records.StoredRecord, None],
        acknowledged: Callable[[str, int], bool],
        known_corrupt: dict[str, str],
    ) -> None:
        self._run_id = run_id
        self._source = source
        self._acknowledged = acknowledged
        self._known_corrupt = known_corrupt

    def __aiter__(self) -> RecordReader:
        return self

    async def __anext__(self) -> records.StoredRecord:
        try:
            item = await anext(self._source)
        except CorruptJournalError as err:
            self._known_corrupt[self._run_id] = err.message  # the listing shows it from now on
            raise
        if not self._acknowledged(self._run_id, item.seq):
            raise StopAsyncIteration
        return item

    async def aclose(self) -> None:
        """Stop reading: the store's stream releases its descriptor or window."""
        await self._source.aclose()


def _fold_checked(run_id: str, stored: Sequence[records.StoredRecord]) -> Folder:
    """Fold stored records of ``run_id``; a rule they break, or a meta naming another run, is corruption."""
    try:
        folder = fold_stored(stored)
    except JournalRuleError as err:
        raise CorruptJournalError(run_id, err.detail, seq=err.seq) from err
    if folder.run_id != run_id:
        raise CorruptJournalError(run_id, f"its meta names run {folder.run_id!r}", seq=1)
    return folder


def _gate_appended_reconfigure(run_id: str, folder: Folder, record: records_pb2.Record) -> None:
    """A reconfigure a worker appends obeys the gate classes of Claim, without force.

    Otherwise a worker could record a provider change (a hard field, refused
    even when forced) and then claim under the other provider, or cross a
    blocking field without the explicit force that only Claim carries. Its
    ``changed_fields`` must name exactly the fields that differ, so a later
    reader can trust the record.
    """
    seq = record.seq
    report = check_resume(
        folder.effective_fingerprint, record.reconfigure.fingerprint, has_pending=folder.has_pending, force=False
    )
    if not report.allowed:
        raise ResumeRefusedError(run_id, blocking_fields(report), has_hard_block(report))
    differing = sorted(d.field for d in report.differences)
    if sorted(record.reconfigure.changed_fields) != differing:
        raise InvalidRecordError(
            "reconfigure.changed_fields",
            f"must name exactly the fields that differ from the fingerprint in force: {differing}",
            seq=seq,
        )


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
