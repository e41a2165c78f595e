"""Fixtures for the backend tests: real backends on real storage (a directory, a real nats-server)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import nats
import pytest

from runjournal_server.backends.file import FileBackend
from runjournal_server.backends.jetstream import JetStreamBackend
from tests.conftest import StreamTarget, delete_stream
from tests.nats_server import NatsServer
from tests.support.raw_nats import RawNats, backend_for


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
async def file_backend(data_dir: Path) -> AsyncIterator[FileBackend]:
    """A started file backend on a fresh directory; closed (locks released) after the test."""
    backend = FileBackend(data_dir)
    await backend.start()
    yield backend
    await backend.close()


@pytest.fixture
async def jetstream_backend(nats_server: NatsServer, nats_stream: StreamTarget) -> AsyncIterator[JetStreamBackend]:
    """A started JetStream backend on a stream of its own, created by the backend; deleted after the test."""
    backend = JetStreamBackend(
        [nats_server.url], stream=nats_stream.name, subject_prefix=nats_stream.prefix, create_stream=True
    )
    await backend.start()
    yield backend
    await backend.close()
    await delete_stream(nats_server.url, nats_stream.name)


@pytest.fixture
async def raw(nats_server: NatsServer) -> AsyncIterator[RawNats]:
    """A plain NATS connection to the test server."""
    nc = await nats.connect(nats_server.url)
    yield RawNats(nc)
    await nc.close()


@pytest.fixture
async def replica_b(
    nats_server: NatsServer, nats_stream: StreamTarget, jetstream_backend: JetStreamBackend
) -> AsyncIterator[JetStreamBackend]:
    """A second server replica on the same stream: its own backend and connection."""
    backend = backend_for(nats_server.url, nats_stream)
    await backend.start()
    yield backend
    await backend.close()
