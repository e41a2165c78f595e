"""The task store's operations: submit, complete (first wins), get, list.

A task keeps what was asked and what came back, apart from any run journal.
Its state is only what the store can observe: submitted, or completed with a
result (succeeded) or a failure (failed). Queue states belong to the queue.

Both documents are canonical JSON (the proto3 JSON form with sorted keys),
written create-only by the backend's ``TaskStore``, so:

* submitting again is idempotent: the same request (and labels) is accepted
  without rewriting anything; a different one is TASK_CONFLICT;
* completing is first-write-wins: with at-least-once delivery the loser is
  usually the failed worker, and last-write-wins would let its failure replace
  an answer that succeeded. The loser gets ALREADY_COMPLETED with the stored
  task attached.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TypeVar

from google.protobuf import json_format
from google.protobuf.message import Message

from runjournal.v1 import task_service_pb2 as tpb
from runjournal_server.backends.base import MAX_TASK_DOCUMENT_BYTES, TaskStore
from runjournal_server.core.errors import (
    AlreadyCompletedError,
    InvalidArgumentError,
    TaskConflictError,
    TaskDeletedError,
    TaskNotFoundError,
)
from runjournal_server.core.ids import has_prefix, validate_run_id
from runjournal_server.core.json_text import json_text_problem
from runjournal_server.core.page_token import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    decode_page_token,
    encode_page_token,
    filters_digest,
)
from runjournal_server.core.schema import label_problems
from runjournal_server.task_index import TaskIndex

log = logging.getLogger(__name__)

MAX_FAILURE_CODE_CHARS = 128


def canonical(message: Message) -> bytes:
    """The stored bytes of a task document: deterministic for equal messages."""
    as_dict = json_format.MessageToDict(message, preserving_proto_field_name=True)
    return json.dumps(as_dict, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class Tasks:
    """Task operations over a ``TaskStore``."""

    def __init__(self, store: TaskStore, *, now: Callable[[], datetime] | None = None) -> None:
        self._store = store
        self._now = now or (lambda: datetime.now(UTC))
        self._index = TaskIndex(store, _task)
        self._warming: asyncio.Task[None] | None = None

    async def submit(self, task_id: str, request_json: str, labels: Mapping[str, str]) -> tuple[tpb.Task, bool]:
        """Store the task unless it exists; the stored task and whether this call stored it."""
        validate_run_id(task_id, "task_id")
        _check_json(request_json, "request_json")
        for key, problem in label_problems(labels):
            raise InvalidArgumentError(f"labels[{key!r}]" if key else "labels", problem)
        task = tpb.Task(task_id=task_id, request_json=request_json, labels=dict(labels))
        task.submitted_at.FromDatetime(self._now())
        body = canonical(task)
        _check_size(body, "the request")
        await self._refuse_deleted(task_id)
        existing = await self._store.create_request(task_id, body)
        if existing is None:
            task.state = tpb.TASK_STATE_SUBMITTED
            self._index.submitted(task)
            return task, True
        stored = _parse(existing, tpb.Task())
        if stored.request_json != request_json or dict(stored.labels) != dict(labels):
            raise TaskConflictError(task_id)
        return await self.get(task_id), False

    async def complete(self, task_id: str, outcome: tpb.TaskOutcome) -> tpb.Task:
        """Store the first outcome; a later one is refused with the stored task attached."""
        validate_run_id(task_id, "task_id")
        kind = outcome.WhichOneof("kind")
        if kind is None:
            raise InvalidArgumentError("outcome", "set result_json or failure")
        if kind == "result_json":
            _check_json(outcome.result_json, "outcome.result_json")
        elif not 1 <= len(outcome.failure.code) <= MAX_FAILURE_CODE_CHARS:
            raise InvalidArgumentError("outcome.failure.code", f"use 1-{MAX_FAILURE_CODE_CHARS} characters")
        await self._refuse_deleted(task_id)
        request, _ = await self._store.get(task_id)
        if request is None:
            raise TaskNotFoundError(task_id)
        stored_outcome = tpb.TaskOutcome()
        stored_outcome.CopyFrom(outcome)
        stored_outcome.completed_at.FromDatetime(self._now())
        body = canonical(stored_outcome)
        _check_size(body, "the outcome")
        existing = await self._store.create_outcome(task_id, body)
        task = _task(request, body if existing is None else existing)
        self._index.completed(task)
        if existing is not None:
            raise AlreadyCompletedError(task_id, task)
        return task

    async def get(self, task_id: str) -> tpb.Task:
        validate_run_id(task_id, "task_id")
        await self._refuse_deleted(task_id)
        request, outcome = await self._store.get(task_id)
        if request is None:
            raise TaskNotFoundError(task_id)
        return _task(request, outcome)

    async def delete(self, task_id: str) -> bool:
        """Delete the task's documents, keeping a tombstone; False when it was deleted already (a retry)."""
        validate_run_id(task_id, "task_id")
        if not await self._store.is_deleted(task_id):
            request, _ = await self._store.get(task_id)
            if request is None:
                raise TaskNotFoundError(task_id)
        deleted = await self._store.delete(task_id)
        self._index.deleted(task_id)
        return deleted

    async def _refuse_deleted(self, task_id: str) -> None:
        if await self._store.is_deleted(task_id):
            raise TaskDeletedError(task_id)

    async def list(
        self,
        *,
        page_size: int,
        page_token: str,
        state: int,
        labels: Mapping[str, str],
        task_id_prefixes: Sequence[str] = ("",),
    ) -> tuple[list[tpb.Task], str]:
        """Tasks newest first (by submission time, then id), filtered by state and labels.

        Ordered and filtered on the task index (``task_index.py``); only the
        page's tasks are read whole.
        """
        if page_size < 0 or page_size > MAX_PAGE_SIZE:
            raise InvalidArgumentError("page_size", f"must be between 0 and {MAX_PAGE_SIZE}")
        if state not in tpb.TaskState.values():
            raise InvalidArgumentError("state", f"unknown state {state!r}")
        page_size = page_size or DEFAULT_PAGE_SIZE
        digest = filters_digest({"state": state, "labels": dict(labels), "task_id_prefixes": list(task_id_prefixes)})
        after = decode_page_token(page_token, digest)
        facts = await self._index.current()
        candidates = [
            (task_id, f)
            for task_id, f in facts.items()
            if (after is None or f.key < after)
            and (not state or f.state == state)
            and has_prefix(task_id, task_id_prefixes)
        ]
        candidates.sort(key=lambda item: item[1].key, reverse=True)
        if labels:
            await self._index.labels(task_id for task_id, f in candidates if f.labels is None)
            candidates = [(t, f) for t, f in candidates if f.labels is not None and _has_labels(f.labels, labels)]
        chosen = candidates[:page_size]
        page = [task for task in await asyncio.gather(*(self._get_listed(t) for t, _ in chosen)) if task is not None]
        token = encode_page_token(chosen[-1][1].key, digest) if len(candidates) > page_size else ""
        return page, token

    async def _get_listed(self, task_id: str) -> tpb.Task | None:
        """A listed task whole; None when it was deleted since the index was brought up to date."""
        request, outcome = await self._store.get(task_id)
        return None if request is None else _task(request, outcome)

    def start(self) -> None:
        """Bring the task index up to date in the background, so the first listing after a start need not."""
        self._warming = asyncio.create_task(self._warm(), name="task-index")

    async def _warm(self) -> None:
        try:
            await self._index.current()
        except Exception as err:  # the first listing tries again, and says why if it fails too
            log.warning("task index: cannot read the tasks at start (%s)", err)

    async def close(self) -> None:
        """Stop bringing the index up to date, and keep it for the next start."""
        if self._warming is not None:
            self._warming.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._warming
        await self._index.close()


def _has_labels(have: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    return all(have.get(key) == value for key, value in wanted.items())


def _task(request: bytes, outcome: bytes | None) -> tpb.Task:
    task = _parse(request, tpb.Task())
    if outcome is None:
        task.state = tpb.TASK_STATE_SUBMITTED
        return task
    task.outcome.CopyFrom(_parse(outcome, tpb.TaskOutcome()))
    task.state = tpb.TASK_STATE_SUCCEEDED if task.outcome.HasField("result_json") else tpb.TASK_STATE_FAILED
    return task


M = TypeVar("M", bound=Message)


def _parse(body: bytes, message: M) -> M:
    json_format.Parse(body, message)
    return message


def _check_json(text: str, field: str) -> None:
    problem = json_text_problem(text)
    if problem is not None:
        raise InvalidArgumentError(field, problem)


def _check_size(body: bytes, what: str) -> None:
    if len(body) > MAX_TASK_DOCUMENT_BYTES:
        raise InvalidArgumentError(what, f"is {len(body)} bytes; at most {MAX_TASK_DOCUMENT_BYTES} are stored")
