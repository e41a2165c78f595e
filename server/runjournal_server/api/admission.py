"""Which calls the server takes on, decided before a call's request is read: budgets by kind, and the drain.

gRPC's own ``maximum_concurrent_rpcs`` counts every call alike and before any
token is seen, so 128 anonymous ``Health/Watch`` streams, which need no token
and never end, left no room for an authenticated worker's Append. Here the
server's interceptor (``Admission``) sorts each call as it arrives, from its
method and metadata alone:

* **Journal and task calls** share ``max_concurrent_rpcs``. With token auth on,
  a call without a valid token is refused UNAUTHENTICATED at once, before its
  request is read and without taking room: only authenticated work holds the
  budget. (The handler checks the token again, with the ids and scopes.)
* **Health and reflection** share ``max_health_rpcs``, apart from the journal's
  budget, so no number of them starves a worker. Their streams (``Watch``,
  reflection) may hold at most ``1 - CHECK_RESERVE`` of the budget, so a
  mesh's unary ``Check`` still gets an answer while idle watchers hold the
  rest, and one connection at most ``HEALTH_STREAMS_PER_CONNECTION`` of them.

A call over a bound is refused RESOURCE_EXHAUSTED with the reason
``TOO_MANY_CALLS``, ``budget`` naming the bound. Each admitted call holds its
place until its task ends, whatever ends it (the per-call task gRPC runs the
interceptor in), so memory is bounded by the two budgets: an anonymous caller
can make the server hold ``max_health_rpcs`` small calls, and buffer no
request of a journal call.

**The drain** (``drain``, at SIGTERM): from then on every new call is refused
UNAVAILABLE without an ErrorInfo, the status of a transport failure, which
every client resends (elsewhere, or here after the restart): it did nothing.
``idle`` waits until the journal and task calls admitted before the drain have
ended, so the server stops gRPC only once they are answered; gRPC's own stop,
which cancels calls it queued but had not handed over, then finds few or none.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc

from runjournal_server.api.auth import TokenTable
from runjournal_server.api.status import to_status
from runjournal_server.core.errors import JournalError, TooManyCallsError
from runjournal_server.observability.handler_wrapping import Behaviour, rewrap

HEALTH_STREAMS_PER_CONNECTION = 4
"""Health and reflection streams one connection may hold at once: a prober watches one or two services."""
CHECK_RESERVE = 0.25
"""The share of ``max_health_rpcs`` that only unary calls (``Health/Check``) may take."""

DRAINING = "the server is shutting down and takes no new calls: retry, through another server if there is one"

JOURNAL_SERVICES = frozenset({"runjournal.v1.JournalService", "runjournal.v1.TaskService"})
"""The services whose calls share ``max_concurrent_rpcs``; every other (health, reflection) is a side call."""


@dataclass
class Budget:
    """How many calls of one kind the server holds, and how many it may."""

    name: str
    limit: int
    held: int = 0

    def take(self, limit: int | None = None) -> None:
        """Hold one more, or refuse TOO_MANY_CALLS past ``limit`` (the budget's own unless given)."""
        if self.held >= (self.limit if limit is None else limit):
            raise TooManyCallsError(self.name, self.limit)
        self.held += 1

    def give(self) -> None:
        self.held -= 1


class Admission(grpc.aio.ServerInterceptor):
    """The server's admission of calls (see the module docstring); the last interceptor, innermost."""

    def __init__(self, tokens: TokenTable | None, *, max_calls: int, max_health_calls: int) -> None:
        self._tokens = tokens
        self.calls = Budget("calls", max_calls)
        self.health = Budget("health", max_health_calls)
        self._health_streams_limit = max(1, round(max_health_calls * (1 - CHECK_RESERVE)))
        self._per_connection: collections.Counter[str] = collections.Counter()
        self._draining = False
        self._idle = asyncio.Event()
        self._idle.set()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler | None]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = await continuation(details)
        if handler is None:
            return None  # no such method: gRPC answers UNIMPLEMENTED
        if self._draining:
            return _refusal(grpc.StatusCode.UNAVAILABLE, DRAINING)
        service = details.method.lstrip("/").partition("/")[0]
        try:
            if service in JOURNAL_SERVICES:
                self._check_token(details)
                self.calls.take()
                self._hold(self.calls)
                return handler
            streaming = handler.response_streaming or handler.request_streaming
            self.health.take(self._health_streams_limit if streaming else None)
        except JournalError as err:
            return _refusal_of(err)
        self._hold(self.health)
        if not streaming:
            return handler  # a Check ends at once: only streams are held long enough to need a share
        return rewrap(handler, unary=self._connection_share, stream=self._connection_share_of_stream)

    def drain(self) -> None:
        """Refuse every call from now on (UNAVAILABLE, no ErrorInfo); ``idle`` waits for those admitted."""
        self._draining = True

    async def idle(self) -> None:
        """Wait until no journal or task call admitted before is still being served."""
        await self._idle.wait()

    def _check_token(self, details: grpc.HandlerCallDetails) -> None:
        if self._tokens is not None:
            self._tokens.authenticate(details.invocation_metadata or ())

    def _hold(self, budget: Budget) -> None:
        """Keep the place taken in ``budget`` until this call's task ends, however it ends."""
        task = asyncio.current_task()
        assert task is not None, "gRPC runs each call's interceptors in the call's own task"
        if budget is self.calls:
            self._idle.clear()
        task.add_done_callback(lambda _: self._give(budget))

    def _give(self, budget: Budget) -> None:
        budget.give()
        if budget is self.calls and not budget.held:
            self._idle.set()

    def _connection_share(self, behaviour: Behaviour) -> Behaviour:
        """For a client-streaming call with one answer (a stream too, held as long as its client sends)."""

        async def shared(request: Any, context: grpc.aio.ServicerContext) -> Any:
            peer = await self._enter(context)
            try:
                return await behaviour(request, context)
            finally:
                self._leave(peer)

        return shared

    def _connection_share_of_stream(self, behaviour: Behaviour) -> Behaviour:
        async def shared(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            peer = await self._enter(context)
            try:
                responses = behaviour(request, context)
                if inspect.isasyncgen(responses):  # reflection yields; Health/Watch writes and returns
                    async for response in responses:
                        yield response
                else:
                    await responses
            finally:
                self._leave(peer)

        return shared

    async def _enter(self, context: grpc.aio.ServicerContext) -> str:
        """Count the call against its connection's share, or end it TOO_MANY_CALLS."""
        peer = context.peer()  # the connection's address: only the call's context knows it
        if self._per_connection[peer] >= HEALTH_STREAMS_PER_CONNECTION:
            await context.abort_with_status(to_status(TooManyCallsError("connection", HEALTH_STREAMS_PER_CONNECTION)))
        self._per_connection[peer] += 1
        return peer

    def _leave(self, peer: str) -> None:
        self._per_connection[peer] -= 1
        if not self._per_connection[peer]:
            del self._per_connection[peer]


def _refusal_of(err: JournalError) -> grpc.RpcMethodHandler:
    status = to_status(err)

    async def refuse(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> None:
        await context.abort_with_status(status)

    # Request-streaming, whatever the method's kind: gRPC hands the behaviour the
    # request unread, so a refused call never makes the server buffer its body.
    return grpc.stream_unary_rpc_method_handler(refuse)


def _refusal(code: grpc.StatusCode, message: str) -> grpc.RpcMethodHandler:
    async def refuse(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> None:
        await context.abort(code, message)

    return grpc.stream_unary_rpc_method_handler(refuse)
