"""One run the store cannot read never fails a listing: it is listed as UNAVAILABLE.

A journal is made unreadable with ``chmod 000``. Root ignores file modes, so
the server is started without the two capabilities that let it
(CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, dropped from the bounding set before
exec): its reads of that one journal then fail EACCES, which the file backend
reports as STORAGE_UNAVAILABLE, exactly as it would a failing disk.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import time
from collections.abc import Iterator

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc, state_pb2
from tests.api.rpc import new_run_id
from tests.durability.harness import LaunchedServer
from tests.support import builders as b
from tests.support.environment import unavailable

PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE = 1
CAP_DAC_READ_SEARCH = 2


def _drop_file_permission_override() -> None:
    """In the child before exec: without these, even root is refused by a mode of 000."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@pytest.fixture
def server(tmp_path) -> Iterator[LaunchedServer]:
    preexec = _drop_file_permission_override if os.geteuid() == 0 else None
    try:
        started = LaunchedServer(tmp_path / "data", preexec=preexec).start()
    except (RuntimeError, subprocess.SubprocessError) as err:
        unavailable(f"cannot start a server without CAP_DAC_OVERRIDE here: {err}")
    yield started
    assert started.stop() == 0, started.log()


def _create(stub: journal_service_pb2_grpc.JournalServiceStub, run_id: str, created_seconds: int) -> None:
    meta = b.meta(run_id=run_id)
    meta.meta.created_at.FromSeconds(created_seconds)
    stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=meta), timeout=30)


def _index_ready(server: LaunchedServer) -> None:
    """Until the listing index holds every run, a listing reads every run; after, the index picks the candidates.

    The two paths answered a filter by UNAVAILABLE differently (the index kept the journal's state, OPEN), and
    which one a test met depended on how fast the start's rebuild was: wait for it, so the index path is the one
    tested, every time.
    """
    deadline = time.monotonic() + 60
    while "runs, checked against the store" not in server.log():
        assert time.monotonic() < deadline, server.log()
        time.sleep(0.05)  # polling the log for the event, not waiting out a race


def test_a_run_the_store_cannot_read_is_listed_unavailable_and_the_others_are_listed(server):
    older, unreadable, newer = new_run_id("old"), new_run_id("unreadable"), new_run_id("new")
    with grpc.insecure_channel(server.address) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        for index, run_id in enumerate((older, unreadable, newer)):
            _create(stub, run_id, 1_700_000_000 + index)
        _index_ready(server)
        (server.data_dir / f"{unreadable}.jsonl").chmod(0)

        listed = stub.ListRuns(pb.ListRunsRequest(), timeout=30).runs
        assert {run.run_id for run in listed} == {older, unreadable, newer}
        bad = next(run for run in listed if run.run_id == unreadable)
        assert bad.status == state_pb2.RUN_STATUS_UNAVAILABLE
        assert "Permission denied" in bad.corruption
        assert all(run.status == state_pb2.RUN_STATUS_OPEN for run in listed if run.run_id != unreadable)

        only_bad = pb.ListRunsRequest(status=state_pb2.RUN_STATUS_UNAVAILABLE)
        assert [run.run_id for run in stub.ListRuns(only_bad, timeout=30).runs] == [unreadable]

        (server.data_dir / f"{unreadable}.jsonl").chmod(0o600)  # the store recovers: so does the listing
        recovered = {run.run_id: run.status for run in stub.ListRuns(pb.ListRunsRequest(), timeout=30).runs}
        assert recovered[unreadable] == state_pb2.RUN_STATUS_OPEN
