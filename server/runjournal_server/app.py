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

from runjournal.v1 import journal_service_pb2, journal_service_pb2_grpc
from runjournal_server.backends import make_backend
from runjournal_server.config import Config
from runjournal_server.runs import Runs
from runjournal_server.service import JournalServicer

log = logging.getLogger("runjournal")

SERVICE_NAME = journal_service_pb2.DESCRIPTOR.services_by_name["JournalService"].full_name


class ServerStartError(RuntimeError):
    """The server could not start (bad address, unusable store)."""


def grpc_options(config: Config) -> list[tuple[str, int]]:
    """Explicit message limits: a record over the limit is refused, never truncated."""
    return [
        ("grpc.max_receive_message_length", config.max_message_bytes),
        ("grpc.max_send_message_length", config.max_message_bytes),
    ]


async def serve(config: Config, *, on_ready: Callable[[str], None] | None = None) -> None:
    """Run the server until SIGTERM or SIGINT, then drain calls and release every lock."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    executor = ThreadPoolExecutor(max_workers=config.io_threads, thread_name_prefix="runjournal-io")
    backend = make_backend(config, executor)
    await backend.start()
    runs = Runs(backend, max_record_bytes=config.max_record_bytes, max_open_journals=config.max_open_journals)
    server = grpc.aio.server(options=grpc_options(config))
    journal_service_pb2_grpc.add_JournalServiceServicer_to_server(JournalServicer(runs), server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection((SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    try:
        port = server.add_insecure_port(config.listen)
    except RuntimeError as err:
        await backend.close()
        raise ServerStartError(f"cannot listen on {config.listen}: {err}") from err
    await server.start()
    address = f"{config.listen.rpartition(':')[0]}:{port}"
    for name in ("", SERVICE_NAME):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    log.info("runjournal listening on %s (backend %s)", address, config.backend)
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
