"""Claim: gate, then write the claim (and a reconfigure), then read ``last_seq``.

Rules kept here:

* The gate comes first, without the run's lock: a refusal writes nothing and
  holds nothing. Under the lock the gate is passed again on the current
  state (the run may have moved meanwhile).
* The claim record is written before anything else is read for the answer,
  and ``last_seq`` is read after it: the token is the claim's seq.
* A claim whose answer (the state) cannot be sent is refused before anything
  is written: it would leave nobody holding a token that works.
"""

from __future__ import annotations

from dataclasses import dataclass

from runjournal.v1 import records_pb2, state_pb2
from runjournal_server.core import records
from runjournal_server.core.errors import InvalidArgumentError
from runjournal_server.core.ids import validate_run_id
from runjournal_server.core.resume import check_claim_request, gate_claim, resume_reminder
from runjournal_server.runs.folding import check_conversation_from
from runjournal_server.runs.handles import RunHandles, Slot
from runjournal_server.runs.response_limit import ResponseLimit
from runjournal_server.runs.writing import Writer


@dataclass
class ClaimOutcome:
    claim_token: int
    last_seq: int
    state: state_pb2.RunState
    gate: state_pb2.GateReport
    resume_reminder: str


@dataclass(frozen=True)
class ClaimAsk:
    """What a Claim asks for (see JournalService.Claim)."""

    worker_id: str
    host: str
    pid: int
    reason: str
    fingerprint: records_pb2.Fingerprint
    force: bool
    conversation_from: int = 0
    uncompacted: bool = False


class Claiming:
    """Claim over the server's run handles."""

    def __init__(
        self, handles: RunHandles, writer: Writer, response_limit: ResponseLimit, *, max_record_bytes: int
    ) -> None:
        self._handles = handles
        self._writer = writer
        self._response_limit = response_limit
        self._max_record_bytes = max_record_bytes

    async def claim(self, run_id: str, asked: ClaimAsk) -> ClaimOutcome:
        """Gate, then write the claim (and a reconfigure), then read last_seq."""
        validate_run_id(run_id)
        if not asked.worker_id:
            raise InvalidArgumentError("worker_id", "a worker id is required")
        check_conversation_from(asked.conversation_from)
        notice = records_pb2.ClaimNotice(worker_id=asked.worker_id, host=asked.host, pid=asked.pid, reason=asked.reason)
        check_claim_request(notice, asked.fingerprint)
        folder, cold = await self._handles.pre_read(run_id)
        gate_claim(run_id, folder, asked.fingerprint, force=asked.force)
        async with self._handles.use(run_id) as slot:
            await self._handles.current(slot, cold)
            return await self._writer.racing(slot, lambda: self._claim_locked(slot, notice, asked))

    async def _claim_locked(self, slot: Slot, notice: records_pb2.ClaimNotice, asked: ClaimAsk) -> ClaimOutcome:
        journal, folder = self._handles.held(slot)
        report = gate_claim(slot.run_id, folder, asked.fingerprint, force=asked.force)
        claim_seq = journal.last_seq + 1
        batch = [records_pb2.JournalRecord(seq=claim_seq, claim=notice)]
        if report.differences:
            changed = [d.field for d in report.differences]
            batch.append(
                records_pb2.JournalRecord(
                    seq=claim_seq + 1,
                    reconfigure=records_pb2.Reconfigure(fingerprint=asked.fingerprint, changed_fields=changed),
                )
            )
            report.reconfigured = True
        new = [records.encode(r, max_record_bytes=self._max_record_bytes) for r in batch]
        extra = sum(len(item.line) for item in new) + report.ByteSize()
        self._response_limit.check_state(
            slot.run_id, folder, slot.folded_bytes, asked.conversation_from, extra, uncompacted=asked.uncompacted
        )
        folder = await self._writer.write(slot, new, gated=False)  # its reconfigure passed the gate above, with force
        state = folder.state(conversation_from=asked.conversation_from, uncompacted=asked.uncompacted)
        return ClaimOutcome(
            claim_token=claim_seq,
            last_seq=journal.last_seq,
            state=state,
            gate=report,
            resume_reminder=resume_reminder(state),
        )
