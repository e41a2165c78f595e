"""The gRPC ceiling: a grpc.aio server whose ``Echo`` method returns the request bytes.

A second method, ``Blob``, answers a byte count with that many bytes: the
ceiling for returning a response as large as a big run's Fold.

Same process model as ``runjournal serve`` (its own Python process, one
grpc.aio server, the same message limits) with no work at all: the bytes are
neither parsed nor stored. Clients call it exactly as they call ``Append``
(the same request messages, serialized the same way), so the difference
between the two is what runjournal itself costs. Run as
``python -m bench.echo --listen 127.0.0.1:0``; it prints ``echo listening on
HOST:PORT`` and stops on SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from collections.abc import Awaitable, Callable

import grpc

ECHO_METHOD = "/runjournal.bench.Echo/Echo"
BLOB_METHOD = "/runjournal.bench.Echo/Blob"
"""Request: a decimal byte count N; response: N zero bytes (cached), the ceiling for a large response."""
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


async def serve(listen: str) -> None:
    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ]
    )
    # No (de)serializers: bytes in, bytes out.
    handlers = {
        ECHO_METHOD.rsplit("/", 1)[1]: grpc.unary_unary_rpc_method_handler(_echo),
        BLOB_METHOD.rsplit("/", 1)[1]: grpc.unary_unary_rpc_method_handler(_blob_handler()),
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="127.0.0.1:0")
    asyncio.run(serve(parser.parse_args().listen))


if __name__ == "__main__":
    main()
