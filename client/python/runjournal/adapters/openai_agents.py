"""An OpenAI Agents SDK ``Session`` kept on a runjournal server (``pip install 'runjournal[openai-agents]'``).

::

    from agents import Agent, Runner
    from runjournal.aio import AsyncJournalClient
    from runjournal.adapters.openai_agents import RunJournalSession

    async with AsyncJournalClient("localhost:50051") as client:
        session = RunJournalSession("user-42", client)
        result = await Runner.run(Agent(name="Assistant"), "Hello", session=session)

A session is one run; its items are records, and ``pop_item`` and
``clear_session`` are records that supersede earlier ones, so nothing the SDK
removes leaves the journal (``_openai_agents_journal`` says how). Writers
take no lock on the server: a write is one AppendBatch at the seq after the
last one this session read, and the journal's own sequence check refuses it
when another writer got there first (SEQ_CONFLICT, RUN_EXISTS); the session
then reads what was written and decides again (a pop pops what is the latest
item now). So any number of sessions on one session id lose nothing and
double nothing. Within one session object, operations take turns (an
asyncio lock), so they apply in call order.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from agents.memory import SessionSettings
from agents.memory.session_settings import resolve_session_limit

from runjournal.adapters._openai_agents_journal import (
    EncodedItem,
    SessionJournal,
    SessionJournalError,
    StoredItem,
    added_note,
    check_session_id,
    cleared_note,
    encode_items,
    item_record,
    popped_note,
    run_labels,
    session_run_id,
)
from runjournal.adapters._run_ids import check_namespace
from runjournal.aio import AsyncJournalClient
from runjournal.errors import RunExistsError, RunNotFoundError, SeqConflictError
from runjournal.v1 import records_pb2

if TYPE_CHECKING:
    from agents.items import TResponseInputItem

__all__ = ["DEFAULT_NAMESPACE", "RunJournalSession", "SessionJournalError"]

DEFAULT_NAMESPACE = "agents"
CREATOR_TOKEN = 1
"""Every write carries the creator's claim token: a session's run is never claimed, so the seq alone decides."""
MAX_BATCH_ITEMS = 499
"""Items per AppendBatch (with the note that closes it, 500; the server takes 1000 records)."""
MAX_BATCH_BYTES = 3 * 1024 * 1024
"""Bytes of items per AppendBatch, under the server's default 4 MiB batch limit."""

_Result = TypeVar("_Result")
Plan = Callable[[SessionJournal, str], tuple[list[records_pb2.JournalRecord], _Result] | None]
"""What to write given what the run holds now and a fresh write id: drafts and the result, or None for nothing."""


class RunJournalSession:
    """The SDK's ``Session`` protocol on one runjournal run, through an ``AsyncJournalClient`` the caller owns.

    ``namespace`` begins the run id (so a token's run-id prefixes can fence
    it) and is a label of the run. ``run_id`` names the run, for
    ``runjournal runs show`` and ``client.read``.
    """

    def __init__(
        self,
        session_id: str,
        client: AsyncJournalClient,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.session_id = check_session_id(session_id)
        self.session_settings = session_settings
        self._client = client
        namespace = check_namespace(namespace)
        self._journal = SessionJournal(session_run_id(namespace, session_id), run_labels(namespace, session_id))
        self._lock = asyncio.Lock()

    @property
    def run_id(self) -> str:
        return self._journal.run_id

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The items in order: all, or the latest ``limit`` (else ``session_settings.limit``); 0 or less: none."""
        async with self._lock:
            await self._catch_up()
            return self._journal.items(resolve_session_limit(limit, self.session_settings))

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Appends ``items``; one that JSON would not give back equal is refused before anything is written.

        More than one batch's worth (``MAX_BATCH_ITEMS``, ``MAX_BATCH_BYTES``) is
        written in several batches, each whole; another writer's items may land
        between two of them.
        """
        encoded = encode_items(items)
        async with self._lock:
            for chunk in _chunks(encoded):
                await self._write(_adding(chunk))

    async def pop_item(self) -> TResponseInputItem | None:
        """Removes the latest item from the session (not from the journal) and returns it; None when there is none."""
        async with self._lock:
            popped = await self._write(_popping)
        return None if popped is None else popped.value()

    async def clear_session(self) -> None:
        """Removes every item from the session (not from the journal); the session id stays usable."""
        async with self._lock:
            await self._write(_clearing)

    # --- plumbing -------------------------------------------------------------

    async def _write(self, plan: Plan[_Result]) -> _Result | None:
        """Writes what ``plan`` asks for at the seq after the last one read; on a lost race, reads and plans again."""
        while True:
            await self._catch_up()
            planned = plan(self._journal, uuid.uuid4().hex)
            if planned is None:
                return None
            drafts, result = planned
            records = self._journal.place(drafts)
            try:
                await self._client.append_batch(self.run_id, CREATOR_TOKEN, records)
            except (SeqConflictError, RunExistsError):
                continue  # another writer got there first: what it wrote is read on the next turn
            for record in records:
                self._journal.apply(record.seq, record)
            return result

    async def _catch_up(self) -> None:
        """Reads the records after the last one read (a run that does not exist yet holds nothing)."""
        try:
            async for record, _ in self._client.read(self.run_id, self._journal.last_seq + 1):
                self._journal.apply(record.seq, record)
        except RunNotFoundError:
            if self._journal.last_seq:
                raise


def _adding(chunk: list[EncodedItem]) -> Plan[None]:
    def plan(journal: SessionJournal, write_id: str) -> tuple[list[records_pb2.JournalRecord], None]:
        first_seq = journal.last_seq + (1 if journal.last_seq else 2)  # after the meta on a new run
        return [*map(item_record, chunk), added_note(write_id, first_seq, len(chunk))], None

    return plan


def _popping(journal: SessionJournal, write_id: str) -> tuple[list[records_pb2.JournalRecord], StoredItem] | None:
    if not journal.live:
        return None
    latest = journal.live[-1]
    return [popped_note(write_id, latest)], latest


def _clearing(journal: SessionJournal, write_id: str) -> tuple[list[records_pb2.JournalRecord], None] | None:
    if not journal.live:
        return None
    return [cleared_note(write_id, list(journal.live))], None


def _chunks(items: list[EncodedItem]) -> list[list[EncodedItem]]:
    """``items`` in batches of at most ``MAX_BATCH_ITEMS`` items and (but for a single item) ``MAX_BATCH_BYTES``."""
    chunks: list[list[EncodedItem]] = []
    size = 0
    for item in items:
        item_bytes = len(item.text.encode("utf-8"))
        if not chunks or len(chunks[-1]) >= MAX_BATCH_ITEMS or size + item_bytes > MAX_BATCH_BYTES:
            chunks.append([])
            size = 0
        chunks[-1].append(item)
        size += item_bytes
    return chunks
