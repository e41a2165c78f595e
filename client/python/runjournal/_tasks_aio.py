"""The asyncio client of ``TaskService``, ``AsyncTaskClient`` (exported by ``runjournal.aio``)."""

# The sync version, _tasks_sync.py, is generated from this module by scripts/generate.py.  # unasync: drop

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import grpc
import grpc.aio  # unasync: drop

from runjournal import _common
from runjournal._client_aio import _AsyncClient
from runjournal._common import UNSET, FailureLike, TaskStateLike
from runjournal.errors import AlreadyCompletedError
from runjournal.v1 import task_service_pb2, task_service_pb2_grpc


class AsyncTaskClient(_AsyncClient):
    """An asyncio client of ``runjournal.v1.TaskService``: what was asked of an agent and what came back.

    Arguments as for ``AsyncJournalClient``; or use ``journal_client.tasks`` to
    share that client's channel. Submitting is idempotent by task id and the
    first completion wins, so transport failures are retried with the same
    request as for every other call.
    """

    def _bind(self, channel: grpc.aio.Channel) -> None:
        self._stub = task_service_pb2_grpc.TaskServiceStub(channel)

    async def submit(
        self,
        task_id: str,
        request: Any = UNSET,
        labels: Mapping[str, str] | None = None,
        *,
        request_json: str | None = None,
        timeout: float | None = None,
    ) -> tuple[task_service_pb2.Task, bool]:
        """Submits a task; the stored task, and True when this call stored it.

        ``request`` is any JSON-serialisable value, sent as canonical JSON; or
        pass JSON text as ``request_json``. The same request (and labels) again
        is accepted with ``created`` False; a different one under the same id
        is ``TaskConflictError``. After a transport retry ``created`` is False
        even when it was the lost first attempt that stored the task.
        """
        message = _common.submit_task_request(task_id, request, request_json, labels)
        response = await self._call(self._stub.SubmitTask, message, timeout)
        return response.task, response.created

    async def complete(
        self,
        task_id: str,
        result: Any = UNSET,
        *,
        result_json: str | None = None,
        failure: FailureLike | None = None,
        timeout: float | None = None,
    ) -> task_service_pb2.Task:
        """Records the task's outcome; the task with the stored outcome.

        Give exactly one of ``result`` (any JSON value, sent as canonical
        JSON), ``result_json`` (JSON text) and ``failure`` (``(code, message)``).
        The first completion wins: a later one raises ``AlreadyCompletedError``
        whose ``stored_task`` holds the winner. When a transport failure hid
        the reply of an attempt that landed, the resent request finds our very
        outcome stored and returns the stored task instead.
        """
        request = _common.complete_task_request(task_id, result, result_json, failure)
        attempts = self._attempts()
        try:
            response = await self._call(self._stub.CompleteTask, request, timeout, attempts)
        except AlreadyCompletedError as err:
            stored = _common.own_completion(err, request) if attempts.made > 1 else None
            if stored is None:
                raise
            return stored
        return response.task

    async def get(self, task_id: str, *, timeout: float | None = None) -> task_service_pb2.Task:
        """The task, with its outcome once completed."""
        response = await self._call(self._stub.GetTask, _common.get_task_request(task_id), timeout)
        return response.task

    async def delete(self, task_id: str, *, timeout: float | None = None) -> bool:
        """Deletes the task's request and outcome; True when this call deleted it.

        The id is never used again (``TaskDeletedError``); runs that name the
        task are kept. Deleting a deleted task again answers False, so a
        transport retry is safe (and answers False when the lost first attempt
        deleted it). With token auth on it needs the ``operator`` scope.
        """
        response = await self._call(self._stub.DeleteTask, _common.delete_task_request(task_id), timeout)
        return bool(response.deleted)

    async def list(
        self,
        page_size: int = 0,
        page_token: str = "",
        state: TaskStateLike = 0,
        labels: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> task_service_pb2.ListTasksResponse:
        """One page of tasks, newest first; ``state`` e.g. "submitted", "succeeded" or "failed"."""
        request = _common.list_tasks_request(page_size, page_token, state, labels)
        return await self._call(self._stub.ListTasks, request, timeout)

    async def iter(
        self,
        page_size: int = 0,
        state: TaskStateLike = 0,
        labels: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> AsyncIterator[task_service_pb2.Task]:
        """Every task matching the filters, across all pages (one call per page)."""
        token = ""
        while True:
            page = await self.list(page_size, token, state, labels, timeout=timeout)
            for task in page.tasks:  # unasync: yield from page.tasks
                yield task  # unasync: drop
            token = page.next_page_token
            if not token:
                return
