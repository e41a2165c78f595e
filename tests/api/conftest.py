"""The API tests run against every backend: a file server and a JetStream server.

``journal_server`` here overrides the file-only session server of
``tests/conftest.py``: each test in this folder that uses it (or ``stub``)
runs once per backend, so the RPC behaviour is one contract for both.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import new_stream_target
from tests.servers import ServerProcess

BACKENDS = ("file", "jetstream")


@pytest.fixture(scope="session", params=BACKENDS)
def journal_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    data_dir = tmp_path_factory.mktemp(f"journal-server-{request.param}") / "data"
    args: tuple[str, ...] = ()
    if request.param == "jetstream":
        nats_server = request.getfixturevalue("nats_server")
        args = new_stream_target().server_args(nats_server.url)
    server = ServerProcess(data_dir, extra_args=args).start()
    server.backend = request.param
    yield server
    assert server.stop() == 0, server.log()
