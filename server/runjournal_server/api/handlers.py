"""What every RPC handler shares, so that each handler is a few lines: parse, authorize, call, end a failure.

* ``add_to_server`` registers a servicer with request parsing that cannot
  fail: bytes that do not parse reach the handler as a ``MalformedRequest``.
* ``Authorizing.authorize`` is the first step of every call: the caller's
  token, the ids it may touch, the scope the call needs (``READS``,
  ``WRITES``, ``DECIDES``), and the refusal of a malformed request.
* ``unary`` and ``streaming`` wrap a servicer method in those steps and end
  any failure as ``api/status.py`` says, so no handler picks a status code.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import DecodeError
from google.protobuf.message_factory import GetMessageClass

from runjournal_server.api.auth import ANY_SCOPE, UNRESTRICTED, Access, Scope, TokenTable
from runjournal_server.api.status import abort
from runjournal_server.core.errors import InvalidArgumentError

Response = TypeVar("Response")
Handler = Callable[[Any, Any, grpc.aio.ServicerContext], Response]
"""A method gRPC calls: the servicer, the request, the call's context."""
Method = Callable[[Any, Any, grpc.aio.ServicerContext, Access], Response]
"""A servicer method as written: a handler that is also handed the caller's access."""

# The scope each kind of call needs with token auth on (see api/auth.py): reading
# is open to either scope, since an operator must see what it decides.
READS = ANY_SCOPE
WRITES = frozenset({Scope.WORKER})
DECIDES = frozenset({Scope.OPERATOR})


@dataclass(frozen=True)
class MalformedRequest:
    """A request whose bytes did not parse as its message (bad wire format, invalid UTF-8, nesting too deep)."""

    type_name: str
    problem: str


def add_to_server(servicer: object, service: ServiceDescriptor, server: grpc.aio.Server) -> None:
    """Register ``servicer`` for ``service`` with request parsing that cannot fail.

    The generated ``add_*_to_server`` parses with ``FromString``, and gRPC
    answers a request that does not parse with UNKNOWN and no ErrorInfo. Here
    such a request reaches the handler as a ``MalformedRequest``, refused by
    ``authorize`` with INVALID_ARGUMENT like any other bad field.
    """
    handlers = {}
    for method in service.methods:
        request_class = GetMessageClass(method.input_type)
        factory = (
            grpc.unary_stream_rpc_method_handler if method.server_streaming else grpc.unary_unary_rpc_method_handler
        )
        handlers[method.name] = factory(
            getattr(servicer, method.name),
            request_deserializer=_lenient(request_class),
            response_serializer=_serialize,
        )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service.full_name, handlers),))
    server.add_registered_method_handlers(service.full_name, handlers)


def _lenient(message_class: Any) -> Callable[[bytes], Any]:
    def parse(data: bytes) -> Any:
        try:
            return message_class.FromString(data)
        except DecodeError as err:
            return MalformedRequest(message_class.DESCRIPTOR.full_name, str(err).rpartition(": ")[2])

    return parse


def _serialize(response: Any) -> bytes:
    """Serialize a response message; bytes (a response serialized by its handler already) pass as they are."""
    return response if isinstance(response, bytes) else response.SerializeToString()


class Authorizing:
    """Token checks shared by the servicers."""

    def __init__(self, tokens: TokenTable | None) -> None:
        self._tokens = tokens

    def authorize(self, request: Any, context: grpc.aio.ServicerContext, needs: frozenset[Scope]) -> Access:
        """The caller's access; with tokens configured, its prefixes bound every run or task id it names,
        and it must hold one of the scopes the call ``needs``.

        Every handler calls this first, so it also refuses a request whose bytes
        did not parse (see ``add_to_server``), once the caller is authenticated.
        """
        if self._tokens is None:
            access = UNRESTRICTED
        else:
            access = self._tokens.authenticate(context.invocation_metadata() or ())
        if isinstance(request, MalformedRequest):
            raise InvalidArgumentError("request", f"the bytes are not a valid {request.type_name}: {request.problem}")
        if self._tokens is None:
            return access
        if getattr(request, "run_id", ""):
            access.check_run(request.run_id)
        if getattr(request, "new_run_id", ""):
            access.check_run(request.new_run_id)  # ForkRun writes a second run: both are the tenant's
        if getattr(request, "task_id", ""):
            access.check_task(request.task_id)
        access.check_scope(needs, getattr(request, "run_id", None))
        return access


def unary(needs: frozenset[Scope]) -> Callable[[Method[Awaitable[Response]]], Handler[Awaitable[Response]]]:
    """Authorize (the token must hold one of ``needs``), call, and end a failure as ``api/status.py`` says."""

    def wrap(method: Method[Awaitable[Response]]) -> Handler[Awaitable[Response]]:
        @functools.wraps(method)
        async def handler(self: Authorizing, request: Any, context: grpc.aio.ServicerContext) -> Response:
            try:
                return await method(self, request, context, self.authorize(request, context, needs))
            except Exception as err:
                await abort(context, err, method.__name__)

        return handler

    return wrap


def streaming(needs: frozenset[Scope]) -> Callable[[Method[AsyncIterator[bytes]]], Handler[AsyncIterator[bytes]]]:
    """``unary`` for server-streaming calls: authorize, stream, and end a failure (a refusal, the shutdown) there."""

    def wrap(method: Method[AsyncIterator[bytes]]) -> Handler[AsyncIterator[bytes]]:
        @functools.wraps(method)
        async def handler(self: Authorizing, request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
            try:
                access = self.authorize(request, context, needs)
                async with contextlib.aclosing(method(self, request, context, access)) as items:  # type: ignore[type-var]
                    async for item in items:
                        yield item
            except Exception as err:
                await abort(context, err, method.__name__)

        return handler

    return wrap
