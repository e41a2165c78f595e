"""OpenTelemetry server spans for every RPC, exported over OTLP; off unless the ``tracing`` setting is on.

The spans come from opentelemetry-instrumentation-grpc's asyncio server
interceptor: one SERVER span per call (streams included, for their whole
life), named ``/runjournal.v1.JournalService/Append`` and so on, with
``rpc.system``, ``rpc.service``, ``rpc.method``, ``rpc.grpc.status_code`` and
the peer address, and the caller's trace context taken from the call's
metadata (W3C ``traceparent`` unless ``OTEL_PROPAGATORS`` says otherwise).
Nothing a caller sends becomes an attribute but the method name and the
user agent: no authorization metadata, no record content.

The exporter, the resource and the sampler are configured by the standard
``OTEL_*`` environment variables, read when the server starts (never at
import): ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``,
``..._HEADERS``, ``..._TIMEOUT``, ``..._INSECURE``, ``OTEL_SERVICE_NAME``
(default ``runjournal``), ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER``,
and ``OTEL_TRACES_EXPORTER`` (``otlp``, ``console`` or ``none``). Spans
leave through a batch processor on its own thread, so a slow or absent
collector never holds up a call.

This module imports OpenTelemetry at its top, and ``app.py`` imports it only
when tracing is on: a server without tracing loads none of it and pays
nothing per call.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import grpc
from opentelemetry import trace
from opentelemetry.instrumentation.grpc import aio_server_interceptor
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.trace import Status, StatusCode

from runjournal_server.observability.handler_wrapping import rewrap

DEFAULT_SERVICE_NAME = "runjournal"
EXPORTERS = ("otlp", "console", "none")
"""The values of ``OTEL_TRACES_EXPORTER`` this server knows (a comma-separated list of them)."""
OTLP_PROTOCOL = "grpc"
"""The one OTLP protocol served: the exporter it needs ships with the otel extra."""

SERVER_ERROR_CODES = frozenset(
    {
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.UNIMPLEMENTED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DATA_LOSS,
    }
)
"""The codes that mark a server span as an error (OpenTelemetry's gRPC conventions): a refusal is not a fault."""


class TracingConfigError(ValueError):
    """An ``OTEL_*`` variable asks for something this server cannot do; the message names it."""


class Tracing:
    """A tracer provider of the server's own (never the process-wide one) and the interceptors that use it."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        exporters = _exporters(environ)
        resource = Resource.create({SERVICE_NAME: environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME})
        # The sampler comes from OTEL_TRACES_SAMPLER (default: parent-based, always on).
        self.provider = TracerProvider(resource=resource)
        for exporter in exporters:
            self.provider.add_span_processor(BatchSpanProcessor(exporter))

    def interceptors(self) -> list[grpc.aio.ServerInterceptor]:
        """The span interceptor, then the one that gives each span the call's status code.

        The instrumentation sees a status set through its own context
        wrapper's ``abort`` and ``set_code``, not one set by
        ``abort_with_status``, which is how every refusal leaves this server
        (``api/status.py``); the second interceptor runs inside the span and reads
        the code the call really ended with.
        """
        return [aio_server_interceptor(tracer_provider=_QuietProvider(self.provider)), _StatusRecorder()]

    def close(self) -> None:
        """Export the spans still queued and stop the exporters. Blocks: run it off the event loop."""
        self.provider.shutdown()


def _exporters(environ: Mapping[str, str]) -> list[SpanExporter]:
    names = [name.strip() for name in (environ.get("OTEL_TRACES_EXPORTER") or "otlp").split(",") if name.strip()]
    unknown = sorted(set(names) - set(EXPORTERS))
    if unknown:
        raise TracingConfigError(
            f"OTEL_TRACES_EXPORTER names {', '.join(unknown)}: this server exports with {', '.join(EXPORTERS)}"
        )
    exporters: list[SpanExporter] = []
    if "otlp" in names:
        protocol = environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        if protocol and protocol != OTLP_PROTOCOL:
            raise TracingConfigError(
                f"OTLP protocol {protocol!r} is not served: this server exports OTLP over {OTLP_PROTOCOL} only"
            )
        # Imported here: it loads a gRPC exporter stack that 'console' alone does not need.
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        exporters.append(OTLPSpanExporter())  # endpoint, headers, timeout, TLS: from the OTEL_ variables
    if "console" in names:
        exporters.append(ConsoleSpanExporter())
    return exporters


class _QuietProvider:
    """The provider, handing the instrumentation tracers whose spans record no exception text.

    Every refusal leaves a servicer as ``grpc.aio.AbortError``, which the
    instrumentation records as an exception, twice, with a traceback that
    quotes the refusal's message (and so may quote journal text). The code the
    call ended with is the span's story (``_StatusRecorder``); any other
    exception is recorded by its type alone.
    """

    def __init__(self, provider: TracerProvider) -> None:
        self._provider = provider

    def get_tracer(self, *args: Any, **kwargs: Any) -> _QuietTracer:
        return _QuietTracer(self._provider.get_tracer(*args, **kwargs))


class _QuietTracer:
    def __init__(self, tracer: trace.Tracer) -> None:
        self._tracer = tracer

    @contextmanager
    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Iterator[_QuietSpan]:
        with self._tracer.start_as_current_span(*args, **{**kwargs, "record_exception": False}) as span:
            yield _QuietSpan(span)


class _QuietSpan:
    """A span that records an exception as its type only, and an abort not at all."""

    def __init__(self, span: trace.Span) -> None:
        self._span = span

    def __getattr__(self, name: str) -> Any:
        return getattr(self._span, name)

    def record_exception(self, exception: BaseException, *args: Any, **kwargs: Any) -> None:
        if not isinstance(exception, grpc.aio.AbortError):
            self._span.add_event("exception", {"exception.type": type(exception).__qualname__})


class _StatusRecorder(grpc.aio.ServerInterceptor):
    """Sets ``rpc.grpc.status_code`` and the span status from the code the call ended with.

    The status description is the code's name only: a refusal's message may
    quote journal text, which stays out of the spans.
    """

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        return rewrap(handler, unary=_unary, stream=_stream)


def _unary(behavior: Callable[..., Any]) -> Callable[..., Any]:
    async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
        try:
            result = behavior(request, context)
            response = await result if inspect.isawaitable(result) else result
        finally:
            _record(context)
        return response

    return unary


def _stream(behavior: Callable[..., Any]) -> Callable[..., Any]:
    # The instrumentation iterates every streaming behaviour with ``async for``, so this one is a generator too.
    async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        try:
            responses = behavior(request, context)
            if inspect.isasyncgen(responses):
                async for response in responses:
                    yield response
            else:
                for response in responses:
                    yield response
        finally:
            _record(context)

    return stream


def _record(context: grpc.aio.ServicerContext) -> None:
    code = context.code()  # None unless a code was set (abort, abort_with_status, set_code)
    if not isinstance(code, grpc.StatusCode):
        return  # OK, as the instrumentation already said; a cancel is the instrumentation's to report
    span = trace.get_current_span()
    span.set_attribute("rpc.grpc.status_code", code.value[0])
    if code in SERVER_ERROR_CODES:
        span.set_status(Status(StatusCode.ERROR, code.name))
