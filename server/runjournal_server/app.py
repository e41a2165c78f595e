"""Wiring: backend, runs, the gRPC server with health and reflection, shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import resource
import signal
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from runjournal.v1 import journal_service_pb2, task_service_pb2
from runjournal_server.api.admission import Admission
from runjournal_server.api.auth import TokenFileError, TokenTable
from runjournal_server.api.handlers import add_to_server
from runjournal_server.api.journal_servicer import JournalServicer
from runjournal_server.api.task_servicer import TaskServicer
from runjournal_server.backends import BackendStartError, make_backend
from runjournal_server.backends.base import MAX_TASK_DOCUMENT_BYTES
from runjournal_server.config import Config
from runjournal_server.core.errors import JournalError
from runjournal_server.listing.pages import RunListing
from runjournal_server.observability.observer import NO_OBSERVER
from runjournal_server.runs.runs import Runs
from runjournal_server.tasks import Tasks

if TYPE_CHECKING:
    from runjournal_server.observability.metrics import Metrics, MetricsEndpoint
    from runjournal_server.observability.tracing import Tracing

log = logging.getLogger("runjournal")

JOURNAL_SERVICE = journal_service_pb2.DESCRIPTOR.services_by_name["JournalService"]
TASK_SERVICE = task_service_pb2.DESCRIPTOR.services_by_name["TaskService"]
SERVICE_NAME = JOURNAL_SERVICE.full_name
TASK_SERVICE_NAME = TASK_SERVICE.full_name


class ServerStartError(RuntimeError):
    """The server could not start (bad address, unusable store)."""


RECEIVE_SLACK_BYTES = 64 * 1024
"""Room in a request around its records (run id, token, field tags; 6 bytes per record of a batch)."""


RECEIVE_WINDOW_BYTES = 1024 * 1024
"""The HTTP/2 flow-control window the server grants each incoming stream, fixed.

gRPC's default BDP probing grows the windows so a client may push many MiB per
stream before the server reads them; 16 unauthenticated 63 MiB Appends on one
connection then grew the server by 14-192 MiB before each was refused at the
receive limit. A fixed 1 MiB window keeps that at about 5 MiB (``python -m
bench.attack_memory``) and still uploads a 1 MiB record as fast on loopback;
only a very long, fat link uploads large records slower.
"""


def max_receive_bytes(config: Config) -> int:
    """The largest request the server receives: one record, one batch or one task document, plus slack.

    gRPC applies this before any handler runs, so before auth: an anonymous
    caller can make the server buffer this much per call and no more (with
    ``max_concurrent_rpcs``, the bound on request memory). A record's wire
    size never exceeds its stored line (see ``records.encode``), so a maximal
    record always fits. ``max_message_bytes`` stays a ceiling.
    """
    largest = max(config.record_limit, config.max_batch_bytes, MAX_TASK_DOCUMENT_BYTES)
    return min(config.max_message_bytes, largest + RECEIVE_SLACK_BYTES)


FDS_PER_OPEN_JOURNAL = 2
"""An open file-backend journal holds its journal file and its lock file."""
RESERVED_FDS = 64
"""Descriptors the process needs besides journals and connections: stdio, epoll, gRPC's pipes, the data dir."""
FDS_PER_IO_THREAD = 2
"""What one I/O thread may hold for a moment: a listing or cold read, a task file, a temp file."""
CONNECTION_SHARE = 4
"""One descriptor in this many is left for client connections (each a socket)."""


def raise_fd_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit where allowed (common practice for servers); return it.

    systemd starts services with a soft limit of 1024 and a much higher hard
    limit; nothing here uses select(), so the higher limit is safe to take.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError) as err:
            log.warning("cannot raise the file-descriptor limit from %d to %d: %s", soft, hard, err)
        else:
            soft = hard
    return soft


def open_journal_bound(config: Config, fd_limit: int) -> int:
    """How many journals may stay open: the configured bound, lowered to what the fd limit fits.

    The file backend holds two descriptors per open journal; beyond the
    bound the least recently used idle journals are closed (``runs/handles.py``).
    Room is kept for connections, the I/O threads' short-lived reads and the
    process itself, so the 500th open run does not fail with EMFILE. The
    JetStream backend holds no descriptor per run.
    """
    if config.backend != "file" or fd_limit == resource.RLIM_INFINITY:
        return config.max_open_journals
    reserved = RESERVED_FDS + FDS_PER_IO_THREAD * config.io_threads + fd_limit // CONNECTION_SHARE
    fits = (fd_limit - reserved) // FDS_PER_OPEN_JOURNAL
    if fits < 1:
        raise ServerStartError(
            f"the file-descriptor limit {fd_limit} leaves no room for open journals ({reserved} are reserved "
            "for connections and I/O threads): raise it (ulimit -n, LimitNOFILE=) or lower io_threads"
        )
    if config.max_open_journals > fits:
        log.warning(
            "max_open_journals %d does not fit the file-descriptor limit %d (%d per journal, %d reserved): "
            "keeping at most %d open journals; raise the limit (ulimit -n, LimitNOFILE=) to keep more",
            config.max_open_journals,
            fd_limit,
            FDS_PER_OPEN_JOURNAL,
            reserved,
            fits,
        )
        return fits
    return config.max_open_journals


def grpc_options(config: Config) -> list[tuple[str, int]]:
    """Explicit message limits: a record over the limit is refused, never truncated.

    The send limit is separate and larger: Fold and Claim answer with a whole
    folded state, which may be far larger than any one request.
    """
    return [
        ("grpc.max_receive_message_length", max_receive_bytes(config)),
        ("grpc.max_send_message_length", config.max_message_bytes),
        ("grpc.http2.bdp_probe", 0),
        ("grpc.http2.lookahead_bytes", RECEIVE_WINDOW_BYTES),
    ]


def _load_tokens(config: Config) -> TokenTable | None:
    if config.auth_tokens_file is None:
        return None
    try:
        return TokenTable.from_file(config.auth_tokens_file)
    except TokenFileError as err:
        raise ServerStartError(str(err)) from err


def _add_port(server: grpc.aio.Server, config: Config) -> int:
    """Plaintext, TLS, or mutual TLS, by configuration alone."""
    if config.tls_cert is None or config.tls_key is None:
        return server.add_insecure_port(config.listen)
    try:
        chain = config.tls_cert.read_bytes()
        key = config.tls_key.read_bytes()
        client_ca = config.tls_client_ca.read_bytes() if config.tls_client_ca else None
    except OSError as err:
        raise ServerStartError(f"cannot read TLS file {err.filename}: {err.strerror}") from err
    credentials = grpc.ssl_server_credentials(
        [(key, chain)], root_certificates=client_ca, require_client_auth=client_ca is not None
    )
    return server.add_secure_port(config.listen, credentials)


def _metrics() -> Metrics:
    """Imported only when metrics are served: prometheus_client and its HTTP server are about 35 ms of a start."""
    from runjournal_server.observability.metrics import Metrics

    return Metrics()


def _start_metrics(metrics: Metrics | None, config: Config) -> MetricsEndpoint | None:
    if metrics is None:
        return None
    from runjournal_server.observability.metrics import MetricsEndpoint

    try:
        return MetricsEndpoint(metrics, config.metrics_listen)
    except OSError as err:
        raise ServerStartError(f"cannot serve metrics on {config.metrics_listen}: {err.strerror or err}") from err


def _start_tracing(config: Config) -> Tracing | None:
    """The span exporter when tracing is on; only then is OpenTelemetry imported (observability/tracing.py)."""
    if not config.tracing:
        return None
    try:
        from runjournal_server.observability.tracing import Tracing, TracingConfigError
    except ModuleNotFoundError as err:
        raise ServerStartError(f"tracing needs pip install 'runjournal[otel]' (missing module {err.name!r})") from err
    try:
        tracing = Tracing(os.environ)
    except TracingConfigError as err:
        raise ServerStartError(str(err)) from err
    log.info("tracing: a span per RPC, exported as the OTEL_* variables say (see docs/operations.md, Tracing)")
    return tracing


async def _finish_completions(runs: Runs, listing: RunListing) -> None:
    """The start's pass over stopped children; a failure is logged (the next start tries again), never fatal."""
    from runjournal_server.listing.completions import finish_completions

    try:
        await finish_completions(runs, listing)
    except JournalError as err:
        log.warning("child outcomes: the start's pass failed (%s); the next start tries again", err.message)
    except Exception:
        log.exception("child outcomes: the start's pass failed unexpectedly; the next start tries again")


def _start_retention(runs: Runs, listing: RunListing, config: Config) -> asyncio.Task[None] | None:
    """The background retention passes (``retention.py``) when ``retention`` is set."""
    if not config.retention:
        return None
    from runjournal_server.retention import Retention

    retention = Retention(
        runs, listing, older_than_seconds=config.retention, max_deletions=config.retention_max_deletions
    )
    log.info(
        "retention: deleting runs stopped more than %gs ago, at most %d every %gs",
        config.retention,
        config.retention_max_deletions,
        config.retention_interval_seconds,
    )
    return asyncio.create_task(retention.run(config.retention_interval_seconds), name="retention")


async def drain(
    admission: Admission, health_servicer: health.aio.HealthServicer, runs: Runs, grace_seconds: float
) -> None:
    """Take no new call (each is refused UNAVAILABLE, which clients resend), then answer those taken, within the grace.

    gRPC's own stop would cancel the calls it had queued but not yet handed to
    a handler, CANCELLED to their callers; drained first, it finds none.
    """
    admission.drain()
    await health_servicer.enter_graceful_shutdown()
    runs.events.close()  # watch streams never end by themselves: end them now, to be resumed elsewhere
    try:
        await asyncio.wait_for(admission.idle(), grace_seconds)
    except TimeoutError:
        log.warning("calls still running after the %.1fs grace are cancelled", grace_seconds)


def event_loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes the event loop ``serve`` runs on, by the ``event_loop`` setting.

    uvloop (libuv's loop, in C) is the default: grpc.aio schedules several
    callbacks and futures per call, and on its loop a unary Append took 11-16%
    less server CPU at one run, 5-24% at 64 (docs/performance.md, section 20).
    ``asyncio`` is there for a platform without uvloop (Windows) and to tell a
    loop's fault from the server's.
    """
    if name == "asyncio":
        return asyncio.new_event_loop
    try:
        import uvloop
    except ImportError as err:
        raise ServerStartError(f"the uvloop event loop is not installed ({err}); set event_loop = asyncio") from err
    return uvloop.new_event_loop


async def serve(
    config: Config,
    *,
    on_ready: Callable[[str], None] | None = None,
    on_metrics_ready: Callable[[str], None] | None = None,
) -> None:
    """Run the server until SIGTERM or SIGINT, then drain calls and release every lock.

    ``on_ready`` is told the gRPC address once it serves, then
    ``on_metrics_ready`` the metrics address (when ``metrics_listen`` is set).
    """
    tokens = _load_tokens(config)
    tracing = _start_tracing(config)
    fd_limit = raise_fd_limit()
    max_open = open_journal_bound(config, fd_limit)
    log.info("keeping at most %d open journals (file-descriptor limit %d)", max_open, fd_limit)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    log.info("serving on the %s event loop", type(loop).__module__.partition(".")[0])
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    executor = ThreadPoolExecutor(max_workers=config.io_threads, thread_name_prefix="runjournal-io")
    try:
        backend = make_backend(config, executor)
        await backend.start()
    except (BackendStartError, JournalError, ValueError, OSError) as err:
        executor.shutdown(wait=False)
        raise ServerStartError(f"the {config.backend} backend cannot start: {err}") from err
    metrics = _metrics() if config.metrics_listen else None
    runs = Runs(
        backend,
        max_record_bytes=backend.max_record_bytes or config.record_limit,
        max_open_journals=max_open,
        max_warm_bytes=config.max_warm_bytes,
        max_response_bytes=config.max_message_bytes,  # the send limit: a Claim never writes an answer it cannot send
        observer=metrics or NO_OBSERVER,
    )
    listing = RunListing.of(runs)  # told of every write and deletion as it is announced
    if not config.list_without_index:
        # Loads the listing index and places every run before the server serves; the rest of its repair
        # (the states' check) begins once it serves (``listing.serving`` below).
        await listing.start(defer=True)
    # What start built lives as long as the server (the listing index: 100,000 entries at 100,000 runs):
    # out of the cyclic collector, whose full pass over it alone takes 80 ms, a stall of every call.
    gc.freeze()
    if metrics is not None:
        metrics.watch(lambda: runs.open_journals, lambda: runs.warm_bytes, backend.durability_counts)
    try:
        # What other replicas store or delete reaches this server's watchers.
        await backend.follow(runs.events.stored, runs.events.deleted)
    except JournalError as err:
        await backend.close()
        executor.shutdown(wait=False)
        raise ServerStartError(f"the {config.backend} backend cannot start: {err}") from err
    # Which calls are taken on, by kind and before their request is read (api/admission.py), instead of
    # gRPC's one cap over every call alike; last, so metrics and tracing see its refusals.
    admission = Admission(tokens, max_calls=config.max_concurrent_rpcs, max_health_calls=config.max_health_rpcs)
    server = grpc.aio.server(
        options=grpc_options(config),
        interceptors=[
            *([metrics.interceptor()] if metrics is not None else []),
            *(tracing.interceptors() if tracing is not None else []),
            admission,
        ],
    )
    add_to_server(JournalServicer(runs, listing, tokens, metrics or NO_OBSERVER), JOURNAL_SERVICE, server)
    tasks = Tasks(backend.task_store())
    tasks.start()  # the task index, brought up to date while the server starts serving
    add_to_server(TaskServicer(tasks, tokens), TASK_SERVICE, server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    services = (SERVICE_NAME, TASK_SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME)
    reflection.enable_server_reflection(services, server)
    try:
        try:
            port = _add_port(server, config)
        except RuntimeError as err:
            raise ServerStartError(f"cannot listen on {config.listen}: {err}") from err
        endpoint = _start_metrics(metrics, config)
    except ServerStartError:
        await backend.close()
        executor.shutdown(wait=False)
        raise
    await server.start()
    listing.serving()
    address = f"{config.listen.rpartition(':')[0]}:{port}"

    async def report_store(reachable: bool) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if reachable else health_pb2.HealthCheckResponse.NOT_SERVING
        for name in ("", SERVICE_NAME, TASK_SERVICE_NAME):
            await health_servicer.set(name, status)

    await report_store(True)
    backend.health_listener = report_store
    log.info(
        "runjournal listening on %s (backend %s, %s, %s)",
        address,
        config.backend,
        "mTLS" if config.tls_client_ca else "TLS" if config.tls_cert else "plaintext",
        "token auth" if tokens else "no auth",
    )
    if on_ready is not None:
        on_ready(address)
    if endpoint is not None:
        log.info("serving Prometheus metrics on http://%s/metrics", endpoint.address)
        if on_metrics_ready is not None:
            on_metrics_ready(endpoint.address)
    retention = _start_retention(runs, listing, config)
    # Child outcomes a stop left undelivered (``listing/completions.py``), while the server already serves.
    completions = asyncio.create_task(_finish_completions(runs, listing), name="child-completions")
    try:
        await stop.wait()
    finally:
        completions.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await completions
        log.info("shutting down: draining in-flight calls for up to %.1fs", config.shutdown_grace_seconds)
        if retention is not None:
            retention.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await retention
        await drain(admission, health_servicer, runs, config.shutdown_grace_seconds)
        await server.stop(0)  # what is left after the grace is cancelled
        await listing.close()
        await tasks.close()
        await runs.close()
        await backend.close()
        if endpoint is not None:
            endpoint.close()
        if tracing is not None:
            await loop.run_in_executor(executor, tracing.close)  # exports the spans still queued
        executor.shutdown(wait=True)
        log.info("stopped; every journal lock released")
