"""TaskService: convert the request, call ``Tasks``, convert back; each handler a few lines.

The task rules (idempotent submission, the first completion wins) live in
``tasks.py``; authorization and failures are ``api/handlers.py``'s, as for
JournalService. A token's run-id prefixes bound its task ids too.
"""

from __future__ import annotations

from grpc.aio import ServicerContext

from runjournal.v1 import task_service_pb2 as tpb
from runjournal.v1 import task_service_pb2_grpc as tpb_grpc
from runjournal_server.api.auth import Access, TokenTable
from runjournal_server.api.handlers import DECIDES, READS, WRITES, Authorizing, unary
from runjournal_server.tasks import Tasks


class TaskServicer(Authorizing, tpb_grpc.TaskServiceServicer):
    """TaskService over ``Tasks``."""

    def __init__(self, tasks: Tasks, tokens: TokenTable | None = None) -> None:
        super().__init__(tokens)
        self._tasks = tasks

    @unary(WRITES)
    async def SubmitTask(
        self, request: tpb.SubmitTaskRequest, context: ServicerContext, access: Access
    ) -> tpb.SubmitTaskResponse:
        task, created = await self._tasks.submit(request.task_id, request.request_json, dict(request.labels))
        return tpb.SubmitTaskResponse(task=task, created=created)

    @unary(WRITES)
    async def CompleteTask(
        self, request: tpb.CompleteTaskRequest, context: ServicerContext, access: Access
    ) -> tpb.CompleteTaskResponse:
        return tpb.CompleteTaskResponse(task=await self._tasks.complete(request.task_id, request.outcome))

    @unary(READS)
    async def GetTask(
        self, request: tpb.GetTaskRequest, context: ServicerContext, access: Access
    ) -> tpb.GetTaskResponse:
        return tpb.GetTaskResponse(task=await self._tasks.get(request.task_id))

    @unary(READS)
    async def ListTasks(
        self, request: tpb.ListTasksRequest, context: ServicerContext, access: Access
    ) -> tpb.ListTasksResponse:
        tasks, token = await self._tasks.list(
            page_size=request.page_size,
            page_token=request.page_token,
            state=request.state,
            labels=dict(request.labels),
            task_id_prefixes=access.run_id_prefixes,
        )
        return tpb.ListTasksResponse(tasks=tasks, next_page_token=token)

    @unary(DECIDES)
    async def DeleteTask(
        self, request: tpb.DeleteTaskRequest, context: ServicerContext, access: Access
    ) -> tpb.DeleteTaskResponse:
        return tpb.DeleteTaskResponse(deleted=await self._tasks.delete(request.task_id))
