"""Shared fixtures: real servers over real gRPC on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from runjournal.v1 import journal_service_pb2_grpc
from tests.servers import ServerProcess


@pytest.fixture(scope="session")
def journal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One file-backend server for the session; tests use distinct run ids."""
    data_dir = tmp_path_factory.mktemp("journal-server") / "data"
    server = ServerProcess(data_dir).start()
    yield server
    assert server.stop() == 0, server.log()


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[type[ServerProcess] | object]:
    """Start extra servers (e.g. two processes on one data dir); all stopped at the end."""
    started: list[ServerProcess] = []

    def start(data_dir: Path | None = None, *args: str) -> ServerProcess:
        server = ServerProcess(data_dir or tmp_path / "data", extra_args=args).start()
        started.append(server)
        return server

    yield start
    for server in started:
        if server.process is not None and server.process.poll() is None:
            server.stop()


@pytest.fixture
def stub(journal_server: ServerProcess) -> Iterator[journal_service_pb2_grpc.JournalServiceStub]:
    """A raw generated stub on the session server (what any language's client sees)."""
    with grpc.insecure_channel(journal_server.address) as channel:
        yield journal_service_pb2_grpc.JournalServiceStub(channel)
