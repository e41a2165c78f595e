"""A real OTLP/gRPC trace receiver for tests: opentelemetry-proto's TraceService on a free loopback port.

It keeps every ``ExportTraceServiceRequest`` it is sent, as a collector
would receive it; nothing is mocked on either side of the wire.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.trace.v1 import trace_pb2


@dataclass(frozen=True)
class ReceivedSpan:
    """One span as received, with the service name of its resource and the name of its scope."""

    span: trace_pb2.Span
    service_name: str
    scope: str

    @property
    def attributes(self) -> dict[str, Any]:
        return {kv.key: value_of(kv.value) for kv in self.span.attributes}


def value_of(value: common_pb2.AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(item) for item in value.array_value.values]
    return getattr(value, kind) if kind else None


class OtlpReceiver(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self) -> None:
        self.requests: list[trace_service_pb2.ExportTraceServiceRequest] = []
        self._changed = threading.Condition()
        self._server = grpc.server(ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(self, self._server)
        port = self._server.add_insecure_port("127.0.0.1:0")
        self.endpoint = f"http://127.0.0.1:{port}"
        self._server.start()

    def Export(
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: grpc.ServicerContext
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        with self._changed:
            self.requests.append(request)
            self._changed.notify_all()
        return trace_service_pb2.ExportTraceServiceResponse()

    def spans(self) -> list[ReceivedSpan]:
        with self._changed:
            return list(_spans(self.requests))

    def wait_for(self, done: Callable[[list[ReceivedSpan]], bool]) -> list[ReceivedSpan]:
        """The spans, once ``done`` holds for them (woken by each export; the test's timeout bounds the wait)."""
        with self._changed:
            self._changed.wait_for(lambda: done(list(_spans(self.requests))))
            return list(_spans(self.requests))

    def close(self) -> None:
        self._server.stop(None)


def _spans(requests: list[trace_service_pb2.ExportTraceServiceRequest]) -> Iterator[ReceivedSpan]:
    for request in requests:
        for resource_spans in request.resource_spans:
            resource = {kv.key: value_of(kv.value) for kv in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    yield ReceivedSpan(span, str(resource.get("service.name", "")), scope_spans.scope.name)
