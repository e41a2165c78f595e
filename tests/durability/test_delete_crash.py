"""kill -9 between the steps of a file-backend deletion: the run is whole, or deleted for good.

A server that SIGKILLs itself at one step of ``tombstones.py``'s order
(``delete_crash_launcher.py``) is asked to delete a run holding a random
canary (also in a batch, whose intent the lock file carries). A fresh server
on the same directory must then show one of two states and nothing between:
before the tombstone, the whole run, readable and deletable; after it, the
run deleted (RUN_DELETED for reads and for a retry of its meta, not listed)
and, once the new server has started, no byte of the canary anywhere in the
data directory.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc
from tests.durability.delete_crash_launcher import CRASH_ENV
from tests.durability.harness import CALL_TIMEOUT_SECONDS, LaunchedServer, reason
from tests.servers import ServerProcess
from tests.support import builders as b

LAUNCHER = Path(__file__).with_name("delete_crash_launcher.py")
RUN_ID = "crashing-delete"


def canaries(root: Path, needle: bytes) -> int:
    return sum(path.read_bytes().count(needle) for path in root.rglob("*") if path.is_file())


def write_run(stub: journal_service_pb2_grpc.JournalServiceStub, canary: str) -> None:
    t = CALL_TIMEOUT_SECONDS
    stub.Append(pb.AppendRequest(run_id=RUN_ID, claim_token=1, record=b.meta(run_id=RUN_ID)), timeout=t)
    stub.Append(pb.AppendRequest(run_id=RUN_ID, claim_token=1, record=b.note(2, canary)), timeout=t)
    batch = [b.assistant(3, 1, ["c1"], say=canary), b.result(4, "c1", canary)]
    stub.AppendBatch(pb.AppendBatchRequest(run_id=RUN_ID, claim_token=1, records=batch), timeout=t)


@pytest.mark.parametrize("step", ["before-tombstone", "after-tombstone", "after-truncate"])
def test_a_deletion_killed_at_any_step_leaves_the_whole_run_or_none_of_it(tmp_path: Path, step: str) -> None:
    data_dir = tmp_path / "data"
    canary = secrets.token_urlsafe(24)
    crashing = LaunchedServer(data_dir, launcher=LAUNCHER, env={CRASH_ENV: step}).start()
    with grpc.insecure_channel(crashing.address) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        write_run(stub, canary)
        with pytest.raises(grpc.RpcError) as died:
            stub.DeleteRun(pb.DeleteRunRequest(run_id=RUN_ID, expected_last_seq=4), timeout=CALL_TIMEOUT_SECONDS)
        assert died.value.code() == grpc.StatusCode.UNAVAILABLE  # the server was killed mid-deletion
    assert crashing.process is not None and crashing.process.wait() != 0
    server = ServerProcess(data_dir).start()
    try:
        with grpc.insecure_channel(server.address) as channel:
            stub = journal_service_pb2_grpc.JournalServiceStub(channel)
            listed = {s.run_id for s in stub.ListRuns(pb.ListRunsRequest(), timeout=CALL_TIMEOUT_SECONDS).runs}
            if step == "before-tombstone":
                assert RUN_ID in listed
                assert [r.seq for r in stub.Read(pb.ReadRequest(run_id=RUN_ID))] == [1, 2, 3, 4]
                assert stub.DeleteRun(pb.DeleteRunRequest(run_id=RUN_ID, expected_last_seq=4)).deleted
            else:
                assert RUN_ID not in listed
                for call in (
                    lambda: list(stub.Read(pb.ReadRequest(run_id=RUN_ID), timeout=CALL_TIMEOUT_SECONDS)),
                    lambda: stub.Fold(pb.FoldRequest(run_id=RUN_ID), timeout=CALL_TIMEOUT_SECONDS),
                    lambda: stub.Append(
                        pb.AppendRequest(run_id=RUN_ID, claim_token=1, record=b.meta(run_id=RUN_ID)),
                        timeout=CALL_TIMEOUT_SECONDS,
                    ),
                ):
                    with pytest.raises(grpc.RpcError) as refused:
                        call()
                    assert reason(refused.value) == "RUN_DELETED"
                again = stub.DeleteRun(pb.DeleteRunRequest(run_id=RUN_ID, expected_last_seq=4))
                assert (again.deleted, again.last_seq) == (False, 4)
            assert canaries(data_dir, canary.encode()) == 0
    finally:
        assert server.stop() == 0, server.log()
