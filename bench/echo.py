"""The gRPC ceiling: a grpc.aio server whose ``Echo`` method returns the request bytes.

A second method, ``Blob``, answers a byte count with that many bytes: the
ceiling for returning a response as large as a big run's Fold. A third,
``SyncedEcho``, returns the request bytes once they are written to a file and
fsynced, off the event loop, one fsync per group of calls waiting (``SyncedLog``):
the floor under any durable append a grpc.aio server acknowledges, with the
hop to a thread and back the standards require, and no rule, fold or journal.

Same process model as ``runjournal serve`` (its own Python process, one
grpc.aio server on the same event loop, uvloop unless ``--event-loop asyncio`` or
``RUNJOURNAL_EVENT_LOOP=asyncio``, which the server reads too,
the same message limits) with no work at all: the bytes are
neither parsed nor stored. Clients call it exactly as they call ``Append``
(the same request messages, serialized the same way), so the difference
between the two is what runjournal itself costs. Run as
``python -m bench.echo --listen 127.0.0.1:0``; it prints ``echo listening on
HOST:PORT`` and stops on SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import tempfile
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc

ECHO_METHOD = "/runjournal.bench.Echo/Echo"
BLOB_METHOD = "/runjournal.bench.Echo/Blob"
"""Request: a decimal byte count N; response: N zero bytes (cached), the ceiling for a large response."""
SYNCED_ECHO_METHOD = "/runjournal.bench.Echo/SyncedEcho"
"""Request: any bytes; response: the same bytes, once written and fsynced (``SyncedLog``)."""
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The same limit ``runjournal serve`` uses by default."""


async def _echo(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    return request


def _blob_handler() -> Callable[[bytes, grpc.aio.ServicerContext], Awaitable[bytes]]:
    cache: dict[int, bytes] = {}

    async def blob(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        size = int(request)
        if size not in cache:
            cache[size] = bytes(size)
        return cache[size]

    return blob


class SyncedLog:
    """One file every call's bytes are appended to, one fsync per group, on one thread of its own.

    The shape of the file backend's group commit (``backends/file/group_commit.py``)
    reduced to its floor: a call joins the pending group; the call that finds
    no drain running starts one on the thread; the drain takes everything
    pending, writes it with one ``write``, fsyncs once and wakes the group's
    callers with one ``call_soon_threadsafe``. Nothing is parsed or checked.
    """

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="synced-echo")
        self._mutex = threading.Lock()
        self._pending: list[tuple[bytes, asyncio.Future[None]]] = []
        self._draining = False

    async def append(self, data: bytes) -> None:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        with self._mutex:
            self._pending.append((data, done))
            start, self._draining = not self._draining, True
        if start:
            self._thread.submit(self._drain, loop)
        await done

    def _drain(self, loop: asyncio.AbstractEventLoop) -> None:
        while True:
            with self._mutex:
                group, self._pending = self._pending, []
                if not group:
                    self._draining = False
                    return
            os.write(self._fd, b"".join(data for data, _ in group))
            os.fsync(self._fd)
            loop.call_soon_threadsafe(_wake, [done for _, done in group])

    def close(self) -> None:
        self._thread.shutdown(wait=True)
        os.close(self._fd)


def _wake(group: list[asyncio.Future[None]]) -> None:
    for done in group:
        if not done.done():
            done.set_result(None)


def _synced_echo_handler(synced: SyncedLog) -> Callable[[bytes, grpc.aio.ServicerContext], Awaitable[bytes]]:
    async def synced_echo(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        await synced.append(request)
        return request

    return synced_echo


async def serve(listen: str, sync_dir: Path) -> None:
    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ]
    )
    sync_dir.mkdir(parents=True, exist_ok=True)
    synced = SyncedLog(sync_dir / "synced-echo.log")
    # No (de)serializers: bytes in, bytes out.
    handlers = {
        ECHO_METHOD.rsplit("/", 1)[1]: grpc.unary_unary_rpc_method_handler(_echo),
        BLOB_METHOD.rsplit("/", 1)[1]: grpc.unary_unary_rpc_method_handler(_blob_handler()),
        SYNCED_ECHO_METHOD.rsplit("/", 1)[1]: grpc.unary_unary_rpc_method_handler(_synced_echo_handler(synced)),
    }
    service = ECHO_METHOD.strip("/").split("/")[0]
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(service, handlers)])
    port = server.add_insecure_port(listen)
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    print(f"echo listening on {listen.rpartition(':')[0]}:{port}", flush=True)
    await stop.wait()
    await server.stop(1)
    synced.close()


def main() -> None:
    # Here, not at the top: the bench's own process imports this module for the method names only.
    from runjournal_server.app import event_loop_factory
    from runjournal_server.config import EVENT_LOOPS, load

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="127.0.0.1:0")
    parser.add_argument("--sync-dir", type=Path, help="where SyncedEcho's file is written (default: a temporary one)")
    parser.add_argument(
        "--event-loop",
        choices=EVENT_LOOPS,
        default=load(argparse.Namespace()).event_loop,
        help="as runjournal serve's setting; when not given, read as the server reads it ($RUNJOURNAL_EVENT_LOOP)",
    )
    args = parser.parse_args()
    with asyncio.Runner(loop_factory=event_loop_factory(args.event_loop)) as runner:
        if args.sync_dir is not None:
            runner.run(serve(args.listen, args.sync_dir))
            return
        with tempfile.TemporaryDirectory(prefix="runjournal-echo-") as scratch:
            runner.run(serve(args.listen, Path(scratch)))


if __name__ == "__main__":
    main()
