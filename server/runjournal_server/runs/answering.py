"""Answer and Approve: the one record that answers or decides a call, written without a claim token.

Rules kept here:

* Validation comes before any lock and costs nothing: the record's payload
  schema, then the run's state (warm, or read without a lock): a refusal
  holds nothing.
* Under the run's lock the state is checked again on the current state (the
  run may have moved), then the record lands at ``last_seq + 1``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from runjournal.v1 import records_pb2
from runjournal_server.core import records
from runjournal_server.core.answering import check_answerable, check_decidable
from runjournal_server.core.errors import InvalidArgumentError, InvalidRecordError
from runjournal_server.core.fold import Folder
from runjournal_server.core.ids import validate_run_id
from runjournal_server.core.kinds import kind_of
from runjournal_server.core.schema import validate_payload
from runjournal_server.runs.handles import RunHandles, Slot
from runjournal_server.runs.requests import encode_one
from runjournal_server.runs.writing import Writer

Check = Callable[[str, str, Folder], None]
"""Whether the run's state lets the record in: ``check_answerable`` or ``check_decidable``."""


class Answering:
    """Answer and Approve over the server's run handles."""

    def __init__(self, handles: RunHandles, writer: Writer, *, max_record_bytes: int) -> None:
        self._handles = handles
        self._writer = writer
        self._max_record_bytes = max_record_bytes

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
        record = records_pb2.JournalRecord(tool_result=result)
        return await self._write_out_of_band(run_id, tool_use_id, record, "tool_result.", check_answerable)

    async def approve(
        self, run_id: str, tool_use_id: str, decision: records_pb2.Decision, approver: str, reason: str
    ) -> int:
        """Write the one approval record that decides a call of the pending batch; the record's seq."""
        approval = records_pb2.Approval(tool_use_id=tool_use_id, decision=decision, approver=approver, reason=reason)
        record = records_pb2.JournalRecord(approval=approval)
        return await self._write_out_of_band(run_id, tool_use_id, record, "approval.", check_decidable)

    async def _write_out_of_band(
        self, run_id: str, tool_use_id: str, record: records_pb2.JournalRecord, field_prefix: str, check: Check
    ) -> int:
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
            await self._handles.current(slot, cold)
            return await self._writer.racing(slot, lambda: self._write_locked(slot, tool_use_id, record, check))

    async def _write_locked(self, slot: Slot, tool_use_id: str, record: records_pb2.JournalRecord, check: Check) -> int:
        journal, folder = self._handles.held(slot)
        check(slot.run_id, tool_use_id, folder)
        record.seq = journal.last_seq + 1
        stored = await encode_one(record, max_record_bytes=self._max_record_bytes)
        await self._writer.write(slot, [stored])
        return record.seq
