"""A Claude Agent SDK ``SessionStore`` kept on a runjournal server (``pip install 'runjournal[claude-agent-sdk]'``).

::

    from claude_agent_sdk import ClaudeAgentOptions, query
    from runjournal.aio import AsyncJournalClient
    from runjournal.adapters.claude_agent_sdk import RunJournalSessionStore

    async with AsyncJournalClient("localhost:50051") as client:
        store = RunJournalSessionStore(client)
        async for message in query(prompt="...", options=ClaudeAgentOptions(session_store=store)):
            ...

Each session key is one run (``_claude_sessions`` maps keys to run ids and
labels, and entries to records). Writers never take a lock on the server: a
write is one AppendBatch at the seq after the last one this store read, and
the journal's own sequence check refuses it when another writer got there
first (SEQ_CONFLICT, RUN_EXISTS); the store then reads what was added, drops
the entries whose ``uuid`` is stored now and writes the rest after it. So
concurrent appenders through any number of stores lose nothing and double
nothing, and the SDK's retried batches add nothing. Within one store, the
appends of one key take turns (an asyncio lock per key), so they are stored
in call order.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from typing import Any

from claude_agent_sdk import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStore,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
)

from runjournal.adapters._claude_sessions import (
    LABEL_SESSION,
    LABEL_SUBPATH,
    MAIN,
    SUBAGENT,
    Entry,
    Transcript,
    check_project_key,
    entry_of,
    epoch_ms,
    fold_summary,
    label_filter,
    place_of,
    prepare,
    summary_of,
)
from runjournal.adapters._run_ids import check_namespace
from runjournal.aio import AsyncJournalClient
from runjournal.errors import (
    LastSeqMismatchError,
    RunDeletedError,
    RunExistsError,
    RunNotFoundError,
    SeqConflictError,
    SeqGapError,
)
from runjournal.v1 import state_pb2

__all__ = ["DEFAULT_NAMESPACE", "RunJournalSessionStore"]

DEFAULT_NAMESPACE = "claude"
CREATOR_TOKEN = 1
"""Every write carries the creator's claim token: session runs are never claimed, so the seq alone decides."""
MAX_BATCH_RECORDS = 500
"""Entries per AppendBatch (the server takes 1000 records); a larger append is written in several."""
MAX_BATCH_BYTES = 3 * 1024 * 1024
"""Bytes of entries per AppendBatch, under the server's default 4 MiB batch limit."""
CACHED_TRANSCRIPTS = 256
"""Runs whose last seq and uuids a store remembers; a forgotten one is read again on its next append."""
SUMMARY_READS = 16
"""Sessions whose summaries ``list_session_summaries`` reads at once."""


class RunJournalSessionStore(SessionStore):
    """The SDK's ``SessionStore`` on a runjournal server, through an ``AsyncJournalClient`` the caller owns.

    ``namespace`` begins every run id (so a token's run-id prefixes can fence
    it) and is a label of every run: stores with different namespaces never
    see each other's sessions.
    """

    def __init__(
        self,
        client: AsyncJournalClient,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        cached_transcripts: int = CACHED_TRANSCRIPTS,
    ) -> None:
        self._client = client
        self._namespace = check_namespace(namespace)
        self._cached = max(cached_transcripts, 0)
        self._transcripts: OrderedDict[str, Transcript] = OrderedDict()
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    @property
    def namespace(self) -> str:
        return self._namespace

    def run_id(self, key: SessionKey) -> str:
        """The id of the run that holds ``key``'s transcript (``runjournal runs show <id>``)."""
        return place_of(self._namespace, key).run_id

    # --- required -------------------------------------------------------------

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Stores the entries whose ``uuid`` is not stored yet (and every entry without one), in order."""
        place = place_of(self._namespace, key)
        prepared = prepare(entries)
        if not prepared:
            return
        async with self._lock(place.run_id):
            # Taken out while writing: a failed write leaves no half-known state behind.
            transcript = self._transcripts.pop(place.run_id, None)
            if transcript is None:
                transcript = Transcript(place)
                await self._catch_up(transcript)
            for chunk in _chunks(prepared):
                await self._write(transcript, chunk)
            self._remember(transcript)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """Every entry of the key, in stored order; None when it was never written (or was deleted)."""
        place = place_of(self._namespace, key)
        entries: list[Any] = []
        try:
            async for record, _line in self._client.read(place.run_id):
                entry = entry_of(record)
                if entry is not None:
                    entries.append(entry)
        except (RunNotFoundError, RunDeletedError):
            return None
        return entries

    # --- optional -------------------------------------------------------------

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        """The project's main transcripts, by ListRuns on their labels; ``mtime`` is the last write's time."""
        runs = self._runs(label_filter(self._namespace, check_project_key(project_key), transcript=MAIN))
        return [{"session_id": run.labels[LABEL_SESSION], "mtime": _mtime(run)} async for run in runs]

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        """The SDK's summary of each main transcript, from the note that ends its last write.

        ``mtime`` is the one ``list_sessions`` gives. A session whose last
        record is not this language's summary (the TypeScript adapter wrote
        last: its SDK folds another shape) is folded here from its entries.
        """
        main = label_filter(self._namespace, check_project_key(project_key), transcript=MAIN)
        runs = [run async for run in self._runs(main)]
        gate = asyncio.Semaphore(SUMMARY_READS)

        async def summary(run: state_pb2.RunSummary) -> SessionSummaryEntry | None:
            async with gate:
                data = await self._summary_data(run)
            if data is None:
                return None
            return {"session_id": run.labels[LABEL_SESSION], "mtime": _mtime(run), "data": data}

        found = await asyncio.gather(*(summary(run) for run in runs))
        return [entry for entry in found if entry is not None]

    async def delete(self, key: SessionKey) -> None:
        """Deletes the key's run; a main key's subagent transcripts first, so a failed delete can be repeated.

        A deleted key stays deleted: runjournal never uses a deleted run id
        again, so a later ``append`` to it raises ``RunDeletedError``.
        """
        place = place_of(self._namespace, key)
        if place.is_main:
            subagents = label_filter(self._namespace, place.project_key, place.session_id, SUBAGENT)
            for run in [run async for run in self._runs(subagents)]:
                await self._delete_run(run.run_id, run.last_seq)
        await self._delete_run(place.run_id, 1)

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        """The subpaths of the session's subagent transcripts."""
        place = place_of(self._namespace, {"project_key": key["project_key"], "session_id": key["session_id"]})
        runs = self._runs(label_filter(self._namespace, place.project_key, place.session_id, SUBAGENT))
        return sorted([run.labels[LABEL_SUBPATH] async for run in runs])

    # --- writing --------------------------------------------------------------

    async def _write(self, transcript: Transcript, entries: list[Entry]) -> None:
        """Appends the entries not stored yet after the last seq; on a refusal reads what was added, and again."""
        while True:
            fresh = transcript.new(entries)
            if not fresh:
                return
            records = transcript.batch(fresh)
            try:
                await self._client.append_batch(transcript.place.run_id, CREATOR_TOKEN, records)
            except (SeqConflictError, RunExistsError):
                await self._catch_up(transcript)  # another writer got there first
                continue
            except (SeqGapError, RunNotFoundError):
                # What this store remembered is not the run any more (removed by hand): start over from the store.
                transcript.forget()
                await self._catch_up(transcript)
                continue
            for record in records:
                transcript.apply(record.seq, record)
            return

    async def _catch_up(self, transcript: Transcript) -> None:
        """Takes in the records stored after ``transcript.last_seq`` (none for a run not created yet)."""
        try:
            async for record, _line in self._client.read(transcript.place.run_id, transcript.last_seq + 1):
                transcript.apply(record.seq, record)
        except RunNotFoundError:
            return

    def _lock(self, run_id: str) -> asyncio.Lock:
        lock = self._locks.get(run_id)
        if lock is None:
            lock = self._locks[run_id] = asyncio.Lock()
        return lock

    def _remember(self, transcript: Transcript) -> None:
        self._transcripts[transcript.place.run_id] = transcript
        while len(self._transcripts) > self._cached:
            self._transcripts.popitem(last=False)

    # --- reading and deleting -------------------------------------------------

    async def _runs(self, labels: Mapping[str, str]) -> AsyncIterator[state_pb2.RunSummary]:
        async for run in self._client.iter_runs(page_size=1000, labels=labels):
            yield run

    async def _summary_data(self, run: state_pb2.RunSummary) -> dict[str, Any] | None:
        """The summary note at the run's tail, else a fold of all its entries; None for a run deleted meanwhile."""
        try:
            tail = [record async for record, _line in self._client.read(run.run_id, max(run.last_seq, 1))]
            data = summary_of(tail[-1]) if tail else None
            if data is not None:
                return data
            records = [record async for record, _line in self._client.read(run.run_id)]
        except (RunNotFoundError, RunDeletedError):
            return None
        entries = [entry for entry in map(entry_of, records) if entry is not None]
        return fold_summary(run.labels[LABEL_SESSION], None, entries)

    async def _delete_run(self, run_id: str, last_seq: int) -> None:
        """Deletes the run at its last seq, taking the server's word for it when something was appended meanwhile.

        A run already deleted is done: the server answers RUN_DELETED to a deletion at another seq than its own.
        """
        self._transcripts.pop(run_id, None)
        expected = max(last_seq, 1)
        while True:
            try:
                await self._client.delete_run(run_id, expected)
                return
            except (RunNotFoundError, RunDeletedError):
                return
            except LastSeqMismatchError as err:
                if err.last_seq is None:
                    raise
                expected = err.last_seq


def _chunks(entries: list[Entry]) -> list[list[Entry]]:
    """``entries`` in runs of at most ``MAX_BATCH_RECORDS`` entries and about ``MAX_BATCH_BYTES`` bytes."""
    chunks: list[list[Entry]] = [[]]
    size = 0
    for entry in entries:
        length = len(entry.text.encode("utf-8"))
        if chunks[-1] and (len(chunks[-1]) >= MAX_BATCH_RECORDS or size + length > MAX_BATCH_BYTES):
            chunks.append([])
            size = 0
        chunks[-1].append(entry)
        size += length
    return chunks


def _mtime(run: state_pb2.RunSummary) -> int:
    """When the run's last record was stored, in epoch ms (its creation for a run the store could not read)."""
    return epoch_ms(run.updated_at if run.HasField("updated_at") else run.created_at)
