"""Run handles for workers: create or claim a run, then append typed records.

A handle keeps the run's claim token and the seq of the next record, so a
worker writes ``run.assistant(...)``, ``run.tool_result(...)`` and so on
without counting. ``Run`` uses a ``JournalClient``; ``AsyncRun`` an
``AsyncJournalClient``; both get their record methods from ``RunRecords``.

A handle is one writer. When another worker claims the run, this handle's next
append raises ``RunClaimedError``: stop working on the run.
"""

from __future__ import annotations

import asyncio
import datetime
import threading
from collections.abc import Awaitable, Mapping, Sequence

from runjournal import _builders
from runjournal._builders import (
    approval_record,
    assistant_record,
    deferral_record,
    note_record,
    opaque_block,
    redacted_thinking_block,
    terminal_record,
    text_block,
    thinking_block,
    tool_result_record,
    tool_use_block,
    user_record,
)
from runjournal._run_base import CREATOR_CLAIM_TOKEN, RunPosition, RunRecords
from runjournal.aio import AsyncJournalClient
from runjournal.client import JournalClient
from runjournal.v1 import records_pb2, state_pb2


def _meta(
    run_id: str,
    fingerprint: records_pb2.Fingerprint,
    prompt_text: str | None,
    prompt_blocks: Sequence[records_pb2.ContentBlock] | None,
    labels: Mapping[str, str] | None,
    interactive: bool,
    task_id: str,
    created_at: datetime.datetime | None,
) -> records_pb2.Record:
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


class Run(RunRecords[int]):
    """A synchronous run handle. Build it with ``Run.create`` or ``Run.claim``."""

    def __init__(self, client: JournalClient, position: RunPosition) -> None:
        self.client = client
        self._position = position
        self._lock = threading.Lock()

    @classmethod
    def create(
        cls,
        client: JournalClient,
        run_id: str,
        fingerprint: records_pb2.Fingerprint,
        prompt_text: str | None = None,
        *,
        prompt_blocks: Sequence[records_pb2.ContentBlock] | None = None,
        labels: Mapping[str, str] | None = None,
        interactive: bool = False,
        task_id: str = "",
        created_at: datetime.datetime | None = None,
    ) -> Run:
        """Creates the run by appending its meta at seq 1; the creator's claim token is 1.

        ``created_at`` defaults to now; pass the same value to make a repeated
        ``create`` a verified duplicate instead of ``RunExistsError``.
        """
        meta = _meta(run_id, fingerprint, prompt_text, prompt_blocks, labels, interactive, task_id, created_at)
        response = client.append(run_id, CREATOR_CLAIM_TOKEN, meta)
        return cls(client, RunPosition.created(run_id, response))

    @classmethod
    def claim(
        cls,
        client: JournalClient,
        run_id: str,
        worker_id: str,
        fingerprint: records_pb2.Fingerprint,
        force: bool = False,
        *,
        reason: str = "",
    ) -> Run:
        """Claims the run; ``state``, ``gate`` and ``resume_reminder`` come from the claim."""
        response = client.claim(run_id, worker_id, fingerprint, force=force, reason=reason)
        return cls(client, RunPosition.claimed(run_id, response))

    def fold(self) -> state_pb2.RunState:
        """Folds the run now and keeps the result as ``state``."""
        state = self.client.fold(self.run_id)
        self._position.state = state
        return state

    def _append(self, draft: records_pb2.Record) -> int:
        with self._lock:
            record = self._position.place(draft)
            response = self.client.append(self.run_id, self.claim_token, record)
            return self._position.appended(response.seq)

    def _append_batch(self, drafts: Sequence[records_pb2.Record]) -> int:
        with self._lock:
            records = self._position.place_batch(drafts)
            response = self.client.append_batch(self.run_id, self.claim_token, records)
            return self._position.appended(response.first_seq + len(records) - 1)


class AsyncRun(RunRecords[Awaitable[int]]):
    """An asyncio run handle. Build it with ``await AsyncRun.create`` or ``AsyncRun.claim``.

    Record methods return awaitables; appends run one at a time, in the order
    they are awaited.
    """

    def __init__(self, client: AsyncJournalClient, position: RunPosition) -> None:
        self.client = client
        self._position = position
        self._lock = asyncio.Lock()

    @classmethod
    async def create(
        cls,
        client: AsyncJournalClient,
        run_id: str,
        fingerprint: records_pb2.Fingerprint,
        prompt_text: str | None = None,
        *,
        prompt_blocks: Sequence[records_pb2.ContentBlock] | None = None,
        labels: Mapping[str, str] | None = None,
        interactive: bool = False,
        task_id: str = "",
        created_at: datetime.datetime | None = None,
    ) -> AsyncRun:
        """As ``Run.create``."""
        meta = _meta(run_id, fingerprint, prompt_text, prompt_blocks, labels, interactive, task_id, created_at)
        response = await client.append(run_id, CREATOR_CLAIM_TOKEN, meta)
        return cls(client, RunPosition.created(run_id, response))

    @classmethod
    async def claim(
        cls,
        client: AsyncJournalClient,
        run_id: str,
        worker_id: str,
        fingerprint: records_pb2.Fingerprint,
        force: bool = False,
        *,
        reason: str = "",
    ) -> AsyncRun:
        """As ``Run.claim``."""
        response = await client.claim(run_id, worker_id, fingerprint, force=force, reason=reason)
        return cls(client, RunPosition.claimed(run_id, response))

    async def fold(self) -> state_pb2.RunState:
        """Folds the run now and keeps the result as ``state``."""
        state = await self.client.fold(self.run_id)
        self._position.state = state
        return state

    def _append(self, draft: records_pb2.Record) -> Awaitable[int]:
        return self._append_now(draft)

    def _append_batch(self, drafts: Sequence[records_pb2.Record]) -> Awaitable[int]:
        return self._append_batch_now(drafts)

    async def _append_now(self, draft: records_pb2.Record) -> int:
        async with self._lock:
            record = self._position.place(draft)
            response = await self.client.append(self.run_id, self.claim_token, record)
            return self._position.appended(response.seq)

    async def _append_batch_now(self, drafts: Sequence[records_pb2.Record]) -> int:
        async with self._lock:
            records = self._position.place_batch(drafts)
            response = await self.client.append_batch(self.run_id, self.claim_token, records)
            return self._position.appended(response.first_seq + len(records) - 1)


__all__ = [
    "AsyncRun",
    "Run",
    "approval_record",
    "assistant_record",
    "deferral_record",
    "note_record",
    "opaque_block",
    "redacted_thinking_block",
    "terminal_record",
    "text_block",
    "thinking_block",
    "tool_result_record",
    "tool_use_block",
    "user_record",
]
