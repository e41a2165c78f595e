"""Prometheus metrics: the series, the gRPC interceptor that feeds the RPC ones, and the /metrics endpoint.

Every series lives in the server's own ``CollectorRegistry`` (never the
process-wide default), so two servers in one process count apart. No series
has a run-id label, or any label taken from a request but the method name of a
registered RPC: the number of series is bounded by the API and the record
kinds, whatever the number of runs.

Gauges of the server's state (open journals, warm bytes) are read when
scraped, from the scrape's thread: each is one int read, which needs no lock.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any
from wsgiref.simple_server import WSGIServer

import grpc
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from runjournal.v1 import records_pb2
from runjournal_server.core.kinds import Kind
from runjournal_server.observability.handler_wrapping import rewrap
from runjournal_server.observability.observer import AppendResult, Observer

NAMESPACE = "runjournal"
UNKNOWN_KIND = "unknown"
"""The kind label of a record with no payload (refused as INVALID_RECORD)."""
SYNC_BUCKETS_SECONDS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
WATCH_METHODS = ("Watch", "WatchRuns")
"""The ``method`` label values of the watch-streams gauge (set by the servicer, never by a request)."""
BATCH_BUCKETS_RECORDS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096)


class Metrics(Observer):
    """The server's series, in a registry of their own; an ``Observer`` that counts what it is told."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        registry = self.registry
        self.rpcs = Counter(
            "rpcs_handled", "RPCs completed, by method and gRPC status code", ("method", "code"),
            namespace=NAMESPACE, registry=registry,
        )  # fmt: skip
        self.rpc_seconds = Histogram(
            "rpc_duration_seconds", "Time from an RPC's start to its end (a stream's whole life), by method",
            ("method",), namespace=NAMESPACE, registry=registry,
        )  # fmt: skip
        self.append_records = Counter(
            "append_records", "Records of Append and AppendBatch calls, by record kind and what became of the call",
            ("kind", "result"), namespace=NAMESPACE, registry=registry,
        )  # fmt: skip
        self.sync_seconds = Histogram(
            "storage_sync_duration_seconds", "Time the store took to make one write durable (fsync, JetStream ack)",
            namespace=NAMESPACE, registry=registry, buckets=SYNC_BUCKETS_SECONDS,
        )  # fmt: skip
        self.batch_records = Histogram(
            "storage_batch_records", "Records made durable by one store write",
            namespace=NAMESPACE, registry=registry, buckets=BATCH_BUCKETS_RECORDS,
        )  # fmt: skip
        self.open_journals = Gauge(
            "open_journals", "Journals held open (locked, warm state kept)", namespace=NAMESPACE, registry=registry
        )
        self.warm_bytes = Gauge(
            "warm_bytes",
            "Memory of the warm states held (the stored bytes folded into them times a measured 3.5)",
            namespace=NAMESPACE,
            registry=registry,
        )
        self.read_streams = Gauge(
            "read_streams_open", "Read streams being served now", namespace=NAMESPACE, registry=registry
        )
        self.watch_streams = Gauge(
            "watch_streams_open", "Watch and WatchRuns streams being served now, by method", ("method",),
            namespace=NAMESPACE, registry=registry,
        )  # fmt: skip
        for method in WATCH_METHODS:
            self.watch_streams.labels(method)
        # Every (kind, result) from the start, at 0: a rate is defined before the first refusal.
        for kind in (*Kind, UNKNOWN_KIND):
            for result in AppendResult:
                self.append_records.labels(str(kind), str(result))

    def watch(
        self,
        open_journals: Callable[[], float],
        warm_bytes: Callable[[], float],
        durability_counts: Callable[[], Mapping[str, int]] = dict,
    ) -> None:
        """Read the state gauges and the store's own counters from these at scrape time.

        ``durability_counts`` is ``Backend.durability_counts``: counted by the
        store where it does the work (the group commit's drain thread), and
        turned into series only when scraped, so the write path pays nothing.
        """
        self.open_journals.set_function(open_journals)
        self.warm_bytes.set_function(warm_bytes)
        self.registry.register(_DurabilityCollector(durability_counts))

    # -------------------------------------------------------------- Observer

    def appended(self, batch: Sequence[records_pb2.JournalRecord], duplicates: int) -> None:
        for index, record in enumerate(batch):
            result = AppendResult.DUPLICATE if index < duplicates else AppendResult.OK
            self.append_records.labels(_kind(record), str(result)).inc()

    def refused(self, batch: Sequence[records_pb2.JournalRecord], result: AppendResult) -> None:
        for record in batch:
            self.append_records.labels(_kind(record), str(result)).inc()

    def stored(self, records: int, seconds: float) -> None:
        self.sync_seconds.observe(seconds)
        self.batch_records.observe(records)

    def reading(self) -> AbstractContextManager[None]:
        return self.read_streams.track_inprogress()

    def watching(self, method: str) -> AbstractContextManager[None]:
        return self.watch_streams.labels(method).track_inprogress()

    # ------------------------------------------------------------------ RPCs

    def interceptor(self) -> grpc.aio.ServerInterceptor:
        """A server interceptor counting every RPC of a registered method, streams included."""
        return _RpcInterceptor(self)

    def rpc_done(self, method: str, code: grpc.StatusCode, seconds: float) -> None:
        self.rpcs.labels(method, code.name).inc()
        self.rpc_seconds.labels(method).observe(seconds)


DURABILITY_SERIES = {
    "groups": ("group_commit_groups", "Groups of appends the file backend's group commit made durable together"),
    "appends": ("group_commit_appends", "Appends made durable through group commit (over the groups: the group size)"),
    "log_syncs": ("commit_log_fsyncs", "fsyncs of the group commit's shared log: one per group of two or more appends"),
    "journal_syncs": ("journal_fsyncs", "fsyncs of journals: an append alone in its group, checkpoints, closes"),
    "checkpoints": ("commit_log_checkpoints", "Checkpoints of the commit log: dirty journals fsynced, the log rewound"),
}
"""``Backend.durability_counts`` names and the counter each becomes (a store that counts none adds none)."""


class _DurabilityCollector(Collector):
    """The store's durability counters as Prometheus counters, read when scraped."""

    def __init__(self, counts: Callable[[], Mapping[str, int]]) -> None:
        self._counts = counts

    def collect(self) -> Iterator[Metric]:
        counts = self._counts()
        for key, (name, documentation) in DURABILITY_SERIES.items():
            if key in counts:
                yield CounterMetricFamily(f"{NAMESPACE}_{name}", documentation, value=counts[key])

    def describe(self) -> Iterator[Metric]:
        return iter(())  # the series depend on the store: nothing to check against other collectors' names


def _kind(record: records_pb2.JournalRecord) -> str:
    return record.WhichOneof("payload") or UNKNOWN_KIND


class _RpcInterceptor(grpc.aio.ServerInterceptor):
    """Wraps each registered method's handler so its end is counted with its status code.

    A call to a method no service registers gets no handler, is answered
    UNIMPLEMENTED by gRPC and is not counted: a caller cannot add series.
    """

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        return _counted(handler, handler_call_details.method, self._metrics)


def _counted(handler: grpc.RpcMethodHandler, method: str, metrics: Metrics) -> grpc.RpcMethodHandler:
    """``handler`` with its behaviour wrapped: the call's end (any status, a cancel too) is counted once.

    Counted as the behaviour ends, before gRPC sends the status: a client that
    has its answer and then scrapes /metrics finds its call counted (a done
    callback would run after the answer left, and such a scrape could miss it).
    """

    def finish(context: grpc.aio.ServicerContext, started: float, error: BaseException | None) -> None:
        metrics.rpc_done(method, _code_of(context, error), time.perf_counter() - started)

    return rewrap(
        handler,
        unary=lambda behavior: _wrap_unary(behavior, finish),
        stream=lambda behavior: _wrap_stream(behavior, finish),
    )


Finish = Callable[[grpc.aio.ServicerContext, float, "BaseException | None"], None]


def _wrap_unary(behavior: Callable[..., Any], finish: Finish) -> Callable[..., Any]:
    async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
        started = time.perf_counter()
        try:
            result = behavior(request, context)
            response = await result if inspect.isawaitable(result) else result
        except BaseException as err:
            finish(context, started, err)
            raise
        finish(context, started, None)
        return response

    return unary


def _wrap_stream(behavior: Callable[..., Any], finish: Finish) -> Callable[..., Any]:
    """A streaming behaviour keeps its shape: gRPC serves an async generator and a writer coroutine differently."""
    if inspect.iscoroutinefunction(behavior):
        return _wrap_unary(behavior, finish)

    async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        started = time.perf_counter()
        try:
            responses = behavior(request, context)
            if inspect.isasyncgen(responses):
                async for response in responses:
                    yield response
            else:
                for response in responses:
                    yield response
        except BaseException as err:
            finish(context, started, err)
            raise
        finish(context, started, None)

    return stream


def _code_of(context: grpc.aio.ServicerContext, error: BaseException | None) -> grpc.StatusCode:
    """The status the call ends with: the code set (abort, set_code), CANCELLED, UNKNOWN for an escaped error, or OK."""
    code = context.code()  # None unless a code was set
    if isinstance(code, grpc.StatusCode):
        return code
    if isinstance(error, asyncio.CancelledError | GeneratorExit) or context.cancelled():
        return grpc.StatusCode.CANCELLED
    return grpc.StatusCode.OK if error is None else grpc.StatusCode.UNKNOWN


class MetricsEndpoint:
    """The HTTP server of /metrics (prometheus_client's own, in a daemon thread)."""

    def __init__(self, metrics: Metrics, listen: str) -> None:
        host, _, port = listen.rpartition(":")
        self._server: WSGIServer
        self._server, self._thread = start_http_server(int(port), host.strip("[]"), registry=metrics.registry)
        self.address = f"{host}:{self._server.server_port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
