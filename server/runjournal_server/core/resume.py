"""Resuming a run: the gate as Claim and an appended reconfigure apply it, and the reminder a resumed worker gets.

The gate itself (``gate.py``) only reports; here a report becomes a refusal.
"""

from __future__ import annotations

from runjournal.v1 import records_pb2, state_pb2
from runjournal_server.core.errors import InvalidArgumentError, InvalidRecordError, ResumeRefusedError
from runjournal_server.core.fold import Folder
from runjournal_server.core.gate import blocking_fields, check_resume, has_hard_block
from runjournal_server.core.kinds import Kind
from runjournal_server.core.schema import validate_fingerprint, validate_payload


def check_claim_request(notice: records_pb2.ClaimNotice, fingerprint: records_pb2.Fingerprint) -> None:
    """Schema-check the claim notice and fingerprint as the records they become (claim, reconfigure)."""
    try:
        validate_payload(Kind.CLAIM, notice)
    except InvalidRecordError as err:
        raise InvalidArgumentError(err.field.rsplit(".", 1)[-1], str(err)) from err
    try:
        validate_fingerprint(fingerprint)
    except InvalidRecordError as err:
        raise InvalidArgumentError("fingerprint", str(err)) from err


def gate_claim(
    run_id: str, folder: Folder, fingerprint: records_pb2.Fingerprint, *, force: bool
) -> state_pb2.GateReport:
    """The gate's report for a Claim; a blocked resume is RESUME_REFUSED."""
    report = check_resume(folder.effective_fingerprint, fingerprint, has_pending=folder.has_pending, force=force)
    if not report.allowed:
        raise ResumeRefusedError(run_id, blocking_fields(report), has_hard_block(report))
    return report


def check_appended_reconfigure(run_id: str, folder: Folder, record: records_pb2.JournalRecord) -> None:
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
