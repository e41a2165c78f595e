"""The task index: what ListTasks orders and filters on, kept so a listing reads no document it has read before.

Each task's listing facts are its sort key (submission time, then id), its
labels and its state. Every task document is create-only (request, outcome,
tombstone), so a fact, once read, never changes, and which facts can have
changed is told by the *names* of the documents alone (``TaskStore.names``:
one directory listing, or three subject listings of the stream). Before each
listing the index compares those names with what it holds and reads only the
documents it has not seen: a new request, a new outcome. A tombstone drops the
task. So a listing costs one listing of names and a sort in memory, whatever
wrote the store (this server, another replica, another process), and 10,000
tasks no longer mean 20,000 document reads per page.

The index is kept between starts where the store keeps it (``save_index``:
the file backend's ``tasks/.index``; the JetStream store keeps none, and its
first listing after a start reads each document once): ids, sort keys and
states, never labels, which are content that must leave the disk with a
deleted task (they are read again, once, by the first listing that filters
on them). It is brought up to date in the background at start (``Tasks.start``),
written once it is, and at a clean close, and derived data: whatever a crash left (a stale copy, none, damage
caught by a line's CRC) is put right by the comparison of names that every
listing makes, which reads what the copy lacks.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from runjournal.v1 import task_service_pb2 as tpb
from runjournal_server.backends.index_store import checked_line, parse_checked_line
from runjournal_server.backends.task_store import TaskStore
from runjournal_server.core.page_token import SortKey

log = logging.getLogger(__name__)

FORMAT = 1
READS_IN_FLIGHT = 32
"""Documents read at once when the index meets many new names (a start without a kept index)."""


@dataclass(slots=True)
class TaskFacts:
    """What the listing knows of one task."""

    key: SortKey
    state: int
    labels: Mapping[str, str] | None
    """None until read (a task loaded from the kept index): read by the first listing filtering on labels."""


class TaskIndex:
    """The facts of every live task, brought up to date with the store's names before each listing."""

    def __init__(self, store: TaskStore, read: Callable[[bytes, bytes | None], tpb.Task]) -> None:
        """``read`` makes a task of its request and outcome documents (``tasks.py``)."""
        self._store = store
        self._task_of = read
        self._facts: dict[str, TaskFacts] = {}
        self._loaded = False
        self._saved = False
        self._lock = asyncio.Lock()

    async def current(self) -> Mapping[str, TaskFacts]:
        """Every live task's facts, as of the store's names now (reading only documents not seen before)."""
        async with self._lock:
            if not self._loaded:
                await self._load()
            names = await self._store.names()
            live = names.live
            for task_id in [t for t in self._facts if t not in live]:
                del self._facts[task_id]
            unseen = [t for t in live if t not in self._facts]
            finished = [t for t in names.completed & live if t in self._facts and self._unfinished(t)]
            await self._read(unseen + finished)
            if not self._saved:
                await self._save()
            return self._facts

    async def labels(self, task_ids: Iterable[str]) -> None:
        """Read the labels of those of ``task_ids`` whose labels are not known yet (after a start)."""
        async with self._lock:
            await self._read([t for t in task_ids if t in self._facts and self._facts[t].labels is None])

    def submitted(self, task: tpb.Task) -> None:
        """This server stored ``task``'s request: known without a read."""
        self._facts[task.task_id] = TaskFacts(_key(task), tpb.TASK_STATE_SUBMITTED, dict(task.labels))

    def completed(self, task: tpb.Task) -> None:
        """This server stored ``task``'s outcome (or found one stored): its state is final."""
        facts = self._facts.get(task.task_id)
        if facts is not None:
            facts.state = task.state

    def deleted(self, task_id: str) -> None:
        self._facts.pop(task_id, None)

    async def close(self) -> None:
        """Keep the index for the next start (a clean stop)."""
        async with self._lock:
            if self._loaded:
                await self._save()

    def _unfinished(self, task_id: str) -> bool:
        return self._facts[task_id].state == tpb.TASK_STATE_SUBMITTED

    async def _read(self, task_ids: list[str]) -> None:
        gate = asyncio.Semaphore(READS_IN_FLIGHT)

        async def one(task_id: str) -> None:
            async with gate:
                request, outcome = await self._store.get(task_id)
            if request is None:
                self._facts.pop(task_id, None)  # deleted since the names were listed
                return
            task = self._task_of(request, outcome)
            known = self._facts.get(task_id)
            if known is None:
                self._facts[task_id] = TaskFacts(_key(task), task.state, dict(task.labels))
            else:  # in place: a listing holds the facts it is filtering
                known.state, known.labels = task.state, dict(task.labels)

        await asyncio.gather(*(one(task_id) for task_id in task_ids))

    async def _load(self) -> None:
        self._loaded = True
        data = await self._store.load_index()
        if data is None:
            return
        facts, problem = _decode(data)
        if problem is not None:
            log.warning("task index: %s; reading every task again", problem)
            return
        self._facts.update(facts)

    async def _save(self) -> None:
        try:
            await self._store.save_index(_encode(self._facts))
        except Exception as err:  # derived data: the next start reads what is missing
            log.warning("task index: cannot keep it (%s); the next start reads every task again", err)
        else:
            self._saved = True


def _key(task: tpb.Task) -> SortKey:
    return (task.submitted_at.seconds, task.submitted_at.nanos, task.task_id)


def _encode(facts: Mapping[str, TaskFacts]) -> bytes:
    rows = [[task_id, f.key[0], f.key[1], f.state] for task_id, f in facts.items()]
    return checked_line(["format", FORMAT]) + checked_line(rows)


def _decode(data: bytes) -> tuple[dict[str, TaskFacts], str | None]:
    lines = data.split(b"\n")
    if len(lines) != 3 or lines[2] != b"":
        return {}, "the kept index is torn"
    try:
        if parse_checked_line(lines[0]) != ["format", FORMAT]:
            return {}, "the kept index is of another format"
        facts = {}
        for task_id, seconds, nanos, state in parse_checked_line(lines[1]):
            if not (isinstance(task_id, str) and isinstance(seconds, int) and isinstance(nanos, int)):
                raise ValueError("malformed row")
            if state not in tpb.TaskState.values():
                raise ValueError(f"unknown state {state!r}")
            facts[task_id] = TaskFacts((seconds, nanos, task_id), state, None)
    except (ValueError, TypeError, UnicodeDecodeError, RecursionError) as err:
        return {}, f"the kept index is damaged ({err})"
    return facts, None
