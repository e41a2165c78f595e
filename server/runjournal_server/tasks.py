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

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
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
    SortKey,
    decode_page_token,
    encode_page_token,
)
from runjournal_server.core.schema import label_problems

MAX_FAILURE_CODE_CHARS = 128


@dataclass(frozen=True)
class _TaskInfo:
    sort_key: SortKey
    labels: Mapping[str, str]


def canonical(message: Message) -> bytes:
    """The stored bytes of a task document: deterministic for equal messages."""
    as_dict = json_format.MessageToDict(message, preserving_proto_field_name=True)
    return json.dumps(as_dict, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class Tasks:
    """Task operations over a ``TaskStore``."""

    def __init__(self, store: TaskStore, *, now: Callable[[], datetime] | None = None) -> None:
        self._store = store
        self._now = now or (lambda: datetime.now(UTC))
        self._info_cache: dict[str, _TaskInfo] = {}

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
        self._info_cache.pop(task_id, None)
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
        """Tasks newest first (by submission time, then id), filtered by state and labels."""
        if page_size < 0 or page_size > MAX_PAGE_SIZE:
            raise InvalidArgumentError("page_size", f"must be between 0 and {MAX_PAGE_SIZE}")
        if state not in tpb.TaskState.values():
            raise InvalidArgumentError("state", f"unknown state {state}")
        page_size = page_size or DEFAULT_PAGE_SIZE
        after = decode_page_token(page_token)
        task_ids = [t for t in await self._store.list_task_ids() if has_prefix(t, task_id_prefixes)]
        infos = {task_id: await self._info(task_id) for task_id in task_ids}
        page: list[tpb.Task] = []
        last_key: SortKey | None = None
        for task_id, info in sorted(infos.items(), key=lambda item: item[1].sort_key, reverse=True):
            if after is not None and info.sort_key >= after:
                continue
            if any(info.labels.get(k) != v for k, v in labels.items()):
                continue
            task = await self.get(task_id)
            if state and task.state != state:
                continue
            if len(page) == page_size:
                return page, encode_page_token(last_key)
            page.append(task)
            last_key = info.sort_key
        return page, ""

    async def _info(self, task_id: str) -> _TaskInfo:
        info = self._info_cache.get(task_id)
        if info is None:
            task = await self.get(task_id)
            key = (task.submitted_at.seconds, task.submitted_at.nanos, task_id)
            info = self._info_cache[task_id] = _TaskInfo(sort_key=key, labels=dict(task.labels))
        return info


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
