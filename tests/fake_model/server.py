"""The fake model server's core: an aiohttp app on a loopback port, in a thread of its own.

It records every request an SDK sends (method, path, headers, the JSON body as parsed and as the raw
bytes) and answers each with the handler registered for its path. What the answers say is the
provider modules' business (``anthropic.py``, ``openai.py``); a handler must answer from the request
alone, never from how many calls came before, so that a worker resumed by another process gets the
answer the first one would have got.

A thread rather than the test's own event loop: tests drive worker subprocesses and wait on them
synchronously, and the server must keep answering meanwhile; and the TypeScript workers reach it
over the same loopback port.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from aiohttp import web

_HIDDEN_HEADERS = frozenset({"authorization", "x-api-key"})


@dataclass(frozen=True)
class Recorded:
    """One request as the SDK sent it. Credentials are left out of ``headers``."""

    method: str
    path: str
    headers: dict[str, str]
    raw: bytes
    body: Any  # the JSON body, parsed; None when the request had none


Handler = Callable[[Recorded], Awaitable[web.StreamResponse]]


class FakeModel:
    """``with FakeModel() as fake: fake.route("/v1/messages", handler); ... fake.base_url ... fake.requests``."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._routes: dict[tuple[str, str], Handler] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def route(self, path: str, handler: Handler, *, method: str = "POST") -> None:
        """Answer ``method path`` with ``handler``; an unrouted request gets a 404 the SDK reports."""
        self._routes[(method, path)] = handler

    def requests_to(self, path: str) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def start(self) -> FakeModel:
        ready = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._start_site())
            except BaseException as err:  # reported to start(), which raises it
                failure.append(err)
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._stop_site())
            loop.close()

        self._thread = threading.Thread(target=serve, name="fake-model", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise failure[0]
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
        self._loop = self._thread = None

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    async def _start_site(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        # A socket bound here, so the port is known without reaching into the site.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()

    async def _stop_site(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        recorded = Recorded(
            method=request.method,
            path=request.path,
            headers={k.lower(): v for k, v in request.headers.items() if k.lower() not in _HIDDEN_HEADERS},
            raw=raw,
            body=json.loads(raw) if raw else None,
        )
        with self._lock:
            self.requests.append(recorded)
        handler = self._routes.get((request.method, request.path))
        if handler is None:
            return web.json_response(
                {"type": "error", "error": {"type": "not_found_error", "message": f"no route {request.path}"}},
                status=404,
            )
        return await handler(recorded)


def sse(events: list[tuple[str | None, Any]]) -> bytes:
    """Server-sent events: ``(event name or None, JSON data)`` pairs, as the providers stream them."""
    out = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n")
    return "".join(out).encode()


async def send_sse(events: list[tuple[str | None, Any]]) -> web.StreamResponse:
    """An SSE response holding ``events``, whole (the SDKs read streams to their end either way)."""
    return web.Response(body=sse(events), content_type="text/event-stream")
