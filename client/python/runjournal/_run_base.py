"""What ``Run`` and ``AsyncRun`` share: the position in the journal and the record methods.

``RunRecords`` defines every record method once. Each one builds a draft and
hands it to ``_append``, which the sync handle implements by returning the seq
and the async handle by returning an awaitable of it; so the two handles share
the record building and seq tracking and differ only in how they call the server.
(``AsyncRun`` is written in ``_run_aio.py``; ``Run`` is generated from it.)
"""

from __future__ import annotations

import abc
import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from runjournal import _builders
from runjournal._builders import DecisionLike, StopReasonLike, TerminalReasonLike, UsageLike
from runjournal.v1 import journal_service_pb2, records_pb2, state_pb2

T = TypeVar("T")

CREATOR_CLAIM_TOKEN = 1
"""The claim token of the worker that created a run: the meta record's seq."""


def creation_meta(
    run_id: str,
    fingerprint: records_pb2.Fingerprint,
    prompt_text: str | None,
    prompt_blocks: Sequence[records_pb2.ContentBlock] | None,
    labels: Mapping[str, str] | None,
    interactive: bool,
    task_id: str,
    created_at: datetime.datetime | None,
) -> records_pb2.JournalRecord:
    """The meta record a handle's ``create`` appends at seq 1 (the prompt as text or blocks)."""
    prompt = _builders.content_of(prompt_blocks, prompt_text, what="prompt")
    return _builders.meta_record(
        run_id,
        fingerprint,
        prompt,
        labels=labels,
        interactive=interactive,
        task_id=task_id,
        created_at=created_at,
    )


@dataclass
class RunPosition:
    """Where a writer stands in a run's journal: its token and its next seq.

    The seq advances only when the server acknowledged a record, so after a
    failed call the same method with the same arguments rebuilds the same
    record at the same seq, which the server verifies as a duplicate if the
    first attempt did land.
    """

    run_id: str
    claim_token: int
    next_seq: int
    state: state_pb2.RunState | None = None
    gate: state_pb2.GateReport | None = None
    resume_reminder: str = ""

    @classmethod
    def created(cls, run_id: str, response: journal_service_pb2.AppendResponse) -> RunPosition:
        return cls(run_id=run_id, claim_token=CREATOR_CLAIM_TOKEN, next_seq=response.seq + 1)

    @classmethod
    def claimed(cls, run_id: str, response: journal_service_pb2.ClaimResponse) -> RunPosition:
        return cls(
            run_id=run_id,
            claim_token=response.claim_token,
            next_seq=response.last_seq + 1,
            state=response.state,
            gate=response.gate,
            resume_reminder=response.resume_reminder,
        )

    def place(self, draft: records_pb2.JournalRecord) -> records_pb2.JournalRecord:
        """A copy of the draft at the next seq."""
        return self.place_batch([draft])[0]

    def place_batch(self, drafts: Sequence[records_pb2.JournalRecord]) -> list[records_pb2.JournalRecord]:
        """Copies of the drafts at consecutive seqs from the next one."""
        if not drafts:
            raise ValueError("a batch needs at least one record")
        placed = []
        for offset, draft in enumerate(drafts):
            seq = self.next_seq + offset
            if draft.seq not in (0, seq):
                raise ValueError(
                    f"record already carries seq {draft.seq}, but the run's next seq is {seq}; "
                    "pass drafts (seq 0) and let the run place them"
                )
            record = records_pb2.JournalRecord()
            record.CopyFrom(draft)
            record.seq = seq
            placed.append(record)
        return placed

    def appended(self, last_seq: int) -> int:
        """Moves past ``last_seq``, the seq of the last record just acknowledged; returns it."""
        self.next_seq = last_seq + 1
        return last_seq


class RunRecords(abc.ABC, Generic[T]):
    """The record methods of a run handle. ``T`` is ``int`` (sync) or ``Awaitable[int]``.

    Every method returns (or, async, resolves to) the seq of the record written.
    """

    _position: RunPosition

    @property
    def run_id(self) -> str:
        return self._position.run_id

    @property
    def claim_token(self) -> int:
        """The token sent with every append: the claim's seq, or 1 for the creator."""
        return self._position.claim_token

    @property
    def next_seq(self) -> int:
        """The seq the next record will take."""
        return self._position.next_seq

    @property
    def last_seq(self) -> int:
        """The seq of the last record this handle knows to be stored."""
        return self._position.next_seq - 1

    @property
    def state(self) -> state_pb2.RunState | None:
        """The folded state from the claim (or the last ``fold``); None after ``create``."""
        return self._position.state

    @property
    def gate(self) -> state_pb2.GateReport | None:
        """The resume gate's report from the claim; None for a created run."""
        return self._position.gate

    @property
    def resume_reminder(self) -> str:
        """Text the server offers for the system prompt of a resumed run ("" if none)."""
        return self._position.resume_reminder

    @abc.abstractmethod
    def _append(self, draft: records_pb2.JournalRecord) -> T: ...

    @abc.abstractmethod
    def _append_batch(self, drafts: Sequence[records_pb2.JournalRecord]) -> T: ...

    def append(self, draft: records_pb2.JournalRecord) -> T:
        """Appends any draft record (seq 0) at the next seq."""
        return self._append(draft)

    def batch(self, drafts: Sequence[records_pb2.JournalRecord]) -> T:
        """Appends drafts at consecutive seqs in one all-or-nothing AppendBatch; the last seq."""
        return self._append_batch(drafts)

    def assistant(
        self,
        iteration: int,
        content_blocks: Sequence[records_pb2.ContentBlock],
        stop_reason: StopReasonLike,
        usage: UsageLike | None = None,
    ) -> T:
        """Records one model call (``stop_reason`` e.g. "tool_use" or "end_turn")."""
        return self._append(_builders.assistant_record(iteration, content_blocks, stop_reason, usage))

    def tool_result(
        self,
        tool_use_id: str,
        text: str | None = None,
        *,
        content: Sequence[records_pb2.ContentBlock] | None = None,
        is_error: bool = False,
        remote: bool = False,
    ) -> T:
        """Records the result of a call of the open turn, as ``text`` or ``content`` blocks."""
        return self._append(
            _builders.tool_result_record(tool_use_id, content, text=text, is_error=is_error, remote=remote)
        )

    def deferral(self, tool_use_id: str, reason: str, expected_answerer: str, needs_approval: bool = False) -> T:
        """Marks a call of the open turn as awaiting an out-of-band answer.

        With ``needs_approval`` the call awaits an operator's decision
        (``approve``) instead; the worker then runs it or answers it with an error.
        """
        return self._append(
            _builders.deferral_record(tool_use_id, reason, expected_answerer, needs_approval=needs_approval)
        )

    def user(self, text: str | None = None, *, content: Sequence[records_pb2.ContentBlock] | None = None) -> T:
        """Records a user follow-up message."""
        return self._append(_builders.user_record(text, content=content))

    def terminal(self, reason: TerminalReasonLike, message: str = "") -> T:
        """Records why the run stopped ("completed", "suspended", "error", ...)."""
        return self._append(_builders.terminal_record(reason, message))

    def note(self, text: str, data: Any = None) -> T:
        """Records an optional note for people and UIs; ``data`` is stored as JSON."""
        return self._append(_builders.note_record(text, data))

    def compaction(
        self,
        upto_seq: int,
        summary: _builders.SummaryLike,
        *,
        trigger: _builders.CompactionTriggerLike,
        provider: str = "",
        model: str = "",
        tokens_before: int = 0,
        usage: UsageLike | None = None,
    ) -> T:
        """Records a compaction: from now on the model is sent ``summary`` instead of records 1..``upto_seq``.

        Nothing is removed (Fold with ``uncompacted`` still returns every
        message). Refused (InvalidRecordError) when the point would separate a
        call from its result, or on a run of journal format 1.
        """
        return self._append(
            _builders.compaction_record(
                upto_seq,
                summary,
                trigger=trigger,
                provider=provider,
                model=model,
                tokens_before=tokens_before,
                usage=usage,
            )
        )

    def approval(self, tool_use_id: str, decision: DecisionLike, approver: str, reason: str = "") -> T:
        """Records an operator's decision ("approved" / "denied") on a call of the open turn."""
        return self._append(_builders.approval_record(tool_use_id, decision, approver, reason))
