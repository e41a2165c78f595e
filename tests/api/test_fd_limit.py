"""The bound on open journals follows the file-descriptor limit the server starts with.

systemd starts services with RLIMIT_NOFILE 1024 by default; each open journal
of the file backend holds two descriptors (journal and lock), so a configured
bound that does not fit must be lowered at start, not discovered as EMFILE
at the 500th run.
"""

from __future__ import annotations

import resource
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc
from tests.api.rpc import new_run_id
from tests.durability.harness import LaunchedServer
from tests.support import builders as b

FD_LIMIT = 256
RUNS = 400  # two descriptors each would need 800: far more than fit


def _limit_fds() -> None:
    """In the child before exec: soft and hard limit both, so the server cannot raise it."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


@pytest.fixture
def limited_server(tmp_path) -> Iterator[LaunchedServer]:
    server = LaunchedServer(tmp_path / "data", preexec=_limit_fds).start()
    yield server
    assert server.stop() == 0, server.log()


def _create_and_append(stub: journal_service_pb2_grpc.JournalServiceStub, run_id: str) -> int:
    stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.meta(run_id=run_id)), timeout=30)
    return stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(2)), timeout=30).seq


def test_many_more_runs_than_the_fd_limit_allows_open_all_append(limited_server):
    run_ids = [new_run_id("fd") for _ in range(RUNS)]
    with grpc.insecure_channel(limited_server.address) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        with ThreadPoolExecutor(16) as pool:
            assert list(pool.map(lambda r: _create_and_append(stub, r), run_ids)) == [2] * RUNS
        # Every run again, now that most were closed to make room: each is reopened and appended to.
        for run_id in run_ids[:50]:
            answer = stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(3)), timeout=30)
            assert answer.seq == 3
    assert "open journals" in limited_server.log()
    assert f"file-descriptor limit {FD_LIMIT}" in limited_server.log()
