"""A real 3-node NATS JetStream cluster on loopback, for the cluster tests and the fault suite.

Every node runs the committed ``deploy/compose/nats-cluster.conf`` (the
compose file's cluster runs the same file), given its name, ports, store and
routes through the environment. Each node reaches each other node through a
loopback proxy of its own, so a node's routes can be stalled: bytes held back
both ways, as a network that drops every packet holds them for TCP to
retransmit, then delivered in order on ``unstall``.

The proxies must be the only paths. A node tells the nodes it meets where its
own route port is, and they dial it directly ("implicit routes": gossip, which
``no_advertise`` does not stop; that option is about client URLs), so at
start-up some pairs ended up joined by a direct route besides the proxied one,
and a "stalled" leader went on replicating over it: the cut-off-leader test
then wrote through a leader that was not cut off at all. Each node therefore
advertises a route address nothing listens on (``--cluster_advertise``): a
dial to it is refused, and an implicit route is not retried.

Every process is started here and ended here by its PID: SIGKILL, SIGSTOP,
SIGCONT and SIGTERM go to ``process.pid``, never to a name.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nats
import pytest

from tests.nats_server import PartitionProxy

CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "compose" / "nats-cluster.conf"
NODE_NAMES = ("n1", "n2", "n3")
START_TIMEOUT_SECONDS = 30.0
STOP_TIMEOUT_SECONDS = 20.0
HEALTHY_TIMEOUT_SECONDS = 60.0
POLL_SECONDS = 0.1
"""How often a wait for the cluster's state asks again (it has no event to wait on)."""
_READY = "Server is ready"


def free_port() -> int:
    """A loopback port free right now (the node binds it a moment later; a clash fails its start loudly)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class ClusterNode:
    """One nats-server of the cluster: its ports are fixed at creation, so a restart comes back on them."""

    name: str
    base_dir: Path
    binary: Path
    client_port: int = field(default_factory=free_port)
    http_port: int = field(default_factory=free_port)
    cluster_port: int = field(default_factory=free_port)
    unreachable_port: int = field(default_factory=free_port)
    """The route port this node advertises to the others: nothing listens there (see the module docstring)."""
    routes: list[str] = field(default_factory=list)
    process: subprocess.Popen[bytes] | None = None
    paused: bool = False

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.client_port}"

    @property
    def store_dir(self) -> Path:
        return self.base_dir / "store"

    @property
    def log_path(self) -> Path:
        return self.base_dir / "nats-server.log"

    @property
    def pid(self) -> int:
        assert self.process is not None, f"{self.name} is not running"
        return self.process.pid

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def environment(self) -> dict[str, str]:
        """The variables ``nats-cluster.conf`` reads: what makes this node this node."""
        route_a, route_b = self.routes
        return {
            "NATS_SERVER_NAME": self.name,
            "NATS_CLIENT_LISTEN": f"127.0.0.1:{self.client_port}",
            "NATS_HTTP_LISTEN": f"127.0.0.1:{self.http_port}",
            "NATS_CLUSTER_LISTEN": f"127.0.0.1:{self.cluster_port}",
            "NATS_STORE_DIR": str(self.store_dir),
            "NATS_ROUTE_A": route_a,
            "NATS_ROUTE_B": route_b,
        }

    def start(self) -> ClusterNode:
        """Start from the committed config and wait for "Server is ready"; check every write is synced."""
        if self.running:
            raise RuntimeError(f"{self.name} is already running")
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [str(self.binary), "-c", str(CONFIG), "--cluster_advertise", f"127.0.0.1:{self.unreachable_port}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, **self.environment()},
        )
        self.paused = False
        ready = threading.Event()
        threading.Thread(target=_copy_log, args=(self.process, self.log_path, ready), daemon=True).start()
        if not ready.wait(START_TIMEOUT_SECONDS) or not self.running:
            self.kill()
            raise RuntimeError(f"nats-server {self.name} did not start:\n{self.log()}")
        jetstream = self.monitor("varz").get("jetstream") or {}
        if (jetstream.get("config") or {}).get("sync_always") is not True:
            self.kill()
            raise RuntimeError(f"nats-server {self.name} does not sync every write: {jetstream!r}")
        return self

    def kill(self) -> None:
        """SIGKILL by PID: the node dies at once, as in a crash (its store stays)."""
        self._end(signal.SIGKILL)

    def stop(self) -> None:
        """SIGTERM by PID, SIGKILL if it hangs."""
        self._end(signal.SIGTERM)

    def pause(self) -> None:
        """SIGSTOP by PID: the node hangs with its sockets open, as a frozen VM does."""
        os.kill(self.pid, signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        os.kill(self.pid, signal.SIGCONT)
        self.paused = False

    def monitor(self, endpoint: str) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/{endpoint}", timeout=5) as response:
            return json.loads(response.read())  # type: ignore[no-any-return]

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-6000:]
        except OSError:
            return ""

    def _end(self, signum: signal.Signals) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            if self.paused and signum != signal.SIGKILL:
                os.kill(process.pid, signal.SIGCONT)
            os.kill(process.pid, signum)
        self.paused = False
        try:
            process.wait(STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


class NatsCluster:
    """Three nodes, each reaching the others through proxies that ``stall`` can hold (see the module docstring)."""

    def __init__(self, base_dir: Path, binary: Path) -> None:
        self.nodes = {name: ClusterNode(name, base_dir / name, binary) for name in NODE_NAMES}
        self._proxies: dict[tuple[str, str], PartitionProxy] = {}

    @property
    def urls(self) -> list[str]:
        return [node.url for node in self.nodes.values()]

    def node(self, name: str) -> ClusterNode:
        return self.nodes[name]

    async def start(self, names: tuple[str, ...] = NODE_NAMES) -> NatsCluster:
        """Start the proxies, then the nodes ``names``, and wait until each reports a healthy JetStream."""
        for source in self.nodes.values():
            source.routes = []
            for target in self.nodes.values():
                if target is not source:
                    proxy = await PartitionProxy(target.cluster_port, scheme="nats-route").start()
                    self._proxies[(source.name, target.name)] = proxy
                    source.routes.append(proxy.url)
        await asyncio.gather(*(asyncio.to_thread(self.nodes[name].start) for name in names))
        await self.wait_healthy()
        return self

    async def close(self) -> None:
        """End every node by its PID, then the proxies."""
        for node in self.nodes.values():
            node.stop()
        for proxy in self._proxies.values():
            await proxy.close()

    def stall(self, name: str) -> None:
        """Hold back every byte on the routes to and from ``name``; clients still reach it."""
        for (source, target), proxy in self._proxies.items():
            if name in (source, target):
                proxy.partition()

    def unstall(self, name: str) -> None:
        for (source, target), proxy in self._proxies.items():
            if name in (source, target):
                proxy.heal()

    async def wait_healthy(self, timeout_seconds: float = HEALTHY_TIMEOUT_SECONDS) -> None:
        """Until every running node reports a healthy JetStream (a meta leader, streams current)."""
        deadline = time.monotonic() + timeout_seconds
        while True:
            unhealthy = [node.name for node in self.nodes.values() if node.running and not _healthy(node)]
            if not unhealthy:
                return
            if time.monotonic() > deadline:
                logs = "\n".join(f"--- {name}\n{self.nodes[name].log()}" for name in unhealthy)
                raise RuntimeError(f"nodes {unhealthy} not healthy within {timeout_seconds:g} s\n{logs}")
            await asyncio.sleep(POLL_SECONDS)

    async def stream_leader(
        self,
        stream: str,
        timeout_seconds: float = HEALTHY_TIMEOUT_SECONDS,
        *,
        asking: tuple[str, ...] = NODE_NAMES,
        other_than: str | None = None,
    ) -> str:
        """The name of the node leading ``stream``, once it has one, as the nodes ``asking`` see it.

        ``other_than``: wait for a leader other than this node (the nodes go on naming a node they lost
        until their election timeout, 4 to 9 s in NATS raft).
        """
        deadline = time.monotonic() + timeout_seconds
        while True:
            leader = await self._ask_leader(stream, asking)
            if leader is not None and leader != other_than:
                return leader
            if time.monotonic() > deadline:
                raise RuntimeError(f"stream {stream} has no leader after {timeout_seconds:g} s")
            await asyncio.sleep(POLL_SECONDS)

    async def wait_leaderless(self, stream: str, timeout_seconds: float = HEALTHY_TIMEOUT_SECONDS) -> None:
        """Until the running nodes answer that ``stream`` has no leader (JetStream 10008 or no reply)."""
        deadline = time.monotonic() + timeout_seconds
        while await self._ask_leader(stream, NODE_NAMES) is not None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"stream {stream} still has a leader after {timeout_seconds:g} s")
            await asyncio.sleep(POLL_SECONDS)

    async def _ask_leader(self, stream: str, asking: tuple[str, ...]) -> str | None:
        urls = [node.url for node in self.nodes.values() if node.running and not node.paused and node.name in asking]
        with contextlib.suppress(Exception):
            nc = await nats.connect(urls, connect_timeout=2, allow_reconnect=False, max_reconnect_attempts=0)
            try:
                reply = await nc.request(f"$JS.API.STREAM.INFO.{stream}", b"", timeout=2)
                info = json.loads(reply.data)
                return (info.get("cluster") or {}).get("leader") or None
            finally:
                await nc.close()
        return None


def _healthy(node: ClusterNode) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{node.http_port}/healthz", timeout=2) as response:
            return bool(json.loads(response.read()).get("status") == "ok")
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _copy_log(process: subprocess.Popen[bytes], path: Path, ready: threading.Event) -> None:
    assert process.stderr is not None
    with path.open("ab") as out:
        for raw in process.stderr:
            out.write(raw)
            out.flush()
            if _READY.encode() in raw:
                ready.set()
    ready.set()


@pytest.fixture
async def nats_cluster(tmp_path: Path, nats_binary: Path) -> AsyncIterator[NatsCluster]:
    """Three nodes, not started (each test starts what it needs); every node ended by PID at the end."""
    cluster = NatsCluster(tmp_path / "nats", nats_binary)
    try:
        yield cluster
    finally:
        await cluster.close()
