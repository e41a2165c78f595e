"""Wiring: backend, runs, the gRPC server with health and reflection, shutdown."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from runjournal.v1 import journal_service_pb2, task_service_pb2
from runjournal_server.auth import TokenFileError, TokenTable
from runjournal_server.backends import BackendStartError, make_backend
from runjournal_server.config import Config
from runjournal_server.errors import JournalError
from runjournal_server.runs import Runs
from runjournal_server.service import JournalServicer, TaskServicer, add_to_server
from runjournal_server.tasks import MAX_TASK_DOCUMENT_BYTES, Tasks

log = logging.getLogger("runjournal")

JOURNAL_SERVICE = journal_service_pb2.DESCRIPTOR.services_by_name["JournalService"]
TASK_SERVICE = task_service_pb2.DESCRIPTOR.services_by_name["TaskService"]
SERVICE_NAME = JOURNAL_SERVICE.full_name
TASK_SERVICE_NAME = TASK_SERVICE.full_name


class ServerStartError(RuntimeError):
    """The server could not start (bad address, unusable store)."""


RECEIVE_SLACK_BYTES = 64 * 1024
"""Room in a request around its records (run id, token, field tags; 6 bytes per record of a batch)."""


def max_receive_bytes(config: Config) -> int:
    """The largest request the server receives: one record, one batch or one task document, plus slack.

    gRPC applies this before any handler runs, so before auth: an anonymous
    caller can make the server buffer this much per call and no more (with
    ``max_concurrent_rpcs``, the bound on request memory). A record's wire
    size never exceeds its stored line (see ``records.encode``), so a maximal
    record always fits. ``max_message_bytes`` stays a ceiling.
    """
    largest = max(config.max_record_bytes, config.max_batch_bytes, MAX_TASK_DOCUMENT_BYTES)
    return min(config.max_message_bytes, largest + RECEIVE_SLACK_BYTES)


def grpc_options(config: Config) -> list[tuple[str, int]]:
    """Explicit message limits: a record over the limit is refused, never truncated.

    The send limit is separate and larger: Fold and Claim answer with a whole
    folded state, which may be far larger than any one request.
    """
    return [
        ("grpc.max_receive_message_length", max_receive_bytes(config)),
        ("grpc.max_send_message_length", config.max_message_bytes),
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


async def serve(config: Config, *, on_ready: Callable[[str], None] | None = None) -> None:
    """Run the server until SIGTERM or SIGINT, then drain calls and release every lock."""
    tokens = _load_tokens(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    executor = ThreadPoolExecutor(max_workers=config.io_threads, thread_name_prefix="runjournal-io")
    try:
        backend = make_backend(config, executor)
        await backend.start()
    except (BackendStartError, JournalError, ValueError, OSError) as err:
        executor.shutdown(wait=False)
        raise ServerStartError(f"the {config.backend} backend cannot start: {err}") from err
    runs = Runs(backend, max_record_bytes=config.max_record_bytes, max_open_journals=config.max_open_journals)
    # Calls beyond the cap are refused RESOURCE_EXHAUSTED at once instead of each holding a request in memory.
    server = grpc.aio.server(options=grpc_options(config), maximum_concurrent_rpcs=config.max_concurrent_rpcs)
    add_to_server(JournalServicer(runs, tokens), JOURNAL_SERVICE, server)
    add_to_server(TaskServicer(Tasks(backend.task_store()), tokens), TASK_SERVICE, server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    services = (SERVICE_NAME, TASK_SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME)
    reflection.enable_server_reflection(services, server)
    try:
        port = _add_port(server, config)
    except RuntimeError as err:
        await backend.close()
        executor.shutdown(wait=False)
        raise ServerStartError(f"cannot listen on {config.listen}: {err}") from err
    await server.start()
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
    try:
        await stop.wait()
    finally:
        log.info("shutting down: draining in-flight calls for up to %.1fs", config.shutdown_grace_seconds)
        await health_servicer.enter_graceful_shutdown()
        await server.stop(config.shutdown_grace_seconds)
        await runs.close()
        await backend.close()
        executor.shutdown(wait=True)
        log.info("stopped; every journal lock released")
