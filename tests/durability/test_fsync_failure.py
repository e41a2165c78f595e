"""A failing fsync, injected into a real server's file backend (see fsync_launcher.py).

An append whose fsync fails is refused (STORAGE_UNAVAILABLE, or STORAGE_FULL
for ENOSPC), the journal is cut back to its last acknowledged record (or the
handle is poisoned when even that cannot be synced), the server lets go of
the journal and opens it again from disk for the next call, and nothing
acknowledged is ever lost. Once fsync works again, the same append succeeds.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc
from runjournal_server.core import records
from tests.durability.fsync_launcher import MARKER_ENV
from tests.durability.harness import (
    CALL_TIMEOUT_SECONDS,
    LaunchedServer,
    journal_path,
    reason,
    sync_read_lines,
)
from tests.support import builders as b

LAUNCHER = Path(__file__).with_name("fsync_launcher.py")


@pytest.fixture
def faulty(tmp_path: Path) -> Iterator[tuple[LaunchedServer, journal_service_pb2_grpc.JournalServiceStub, Path]]:
    marker = tmp_path / "fsync-fault"
    server = LaunchedServer(tmp_path / "data", env={MARKER_ENV: str(marker)}, launcher=LAUNCHER).start()
    try:
        with grpc.insecure_channel(server.address) as channel:
            yield server, journal_service_pb2_grpc.JournalServiceStub(channel), marker
        assert server.stop() == 0, server.log()
    finally:
        if server.alive():
            server.kill()


def lock_is_free(data_dir: Path, run_id: str) -> bool:
    """True when no process holds the run's writer lock, i.e. the server has let go of the journal."""
    fd = os.open(data_dir / f"{run_id}.lock", os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # closing the descriptor releases a lock we took
    return True


def refused(call, *args) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call(*args, timeout=CALL_TIMEOUT_SECONDS)
    return caught.value


def test_failed_fsync_refuses_the_append_keeps_everything_acknowledged_and_recovers(faulty):
    server, stub, marker = faulty
    run_id = "fsync-run"
    acked = [b.meta(run_id=run_id), b.assistant(2, 1, ["c1"]), b.result(3, "c1", "ünïcode 🙂")]
    stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, records=acked), timeout=CALL_TIMEOUT_SECONDS)
    acked_lines = [records.encode(r).line for r in acked]
    path = journal_path(server.data_dir, run_id)
    assert not lock_is_free(server.data_dir, run_id)  # the server holds the open journal

    def on_disk() -> bytes:
        return b"".join(line + b"\n" for line in acked_lines)

    cases = [
        # (marker, gRPC code, reason, poisoned): "EIO 1" fails the append's fsync only, so the
        # rollback succeeds; "EIO" fails the rollback's fsync too, which poisons the handle.
        ("EIO 1", grpc.StatusCode.UNAVAILABLE, "STORAGE_UNAVAILABLE", False),
        ("EIO", grpc.StatusCode.UNAVAILABLE, "STORAGE_UNAVAILABLE", True),
        ("ENOSPC 1", grpc.StatusCode.RESOURCE_EXHAUSTED, "STORAGE_FULL", False),
        ("ENOSPC", grpc.StatusCode.RESOURCE_EXHAUSTED, "STORAGE_FULL", True),
    ]
    for fault, code, why, poisoned in cases:
        seq = len(acked_lines) + 1
        single = b.note(seq, f"after {fault}")
        batch = [b.user(seq, f"batch after {fault}"), b.assistant(seq + 1, seq, say="two")]
        for attempt in ("single", "batch"):
            marker.write_text(fault)
            if attempt == "single":
                err = refused(stub.Append, pb.AppendRequest(run_id=run_id, claim_token=1, record=single))
            else:
                err = refused(stub.AppendBatch, pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=batch))
            assert (err.code(), reason(err)) == (code, why), (fault, attempt, err.details())
            assert ("rolling back" in err.details()) == poisoned, (fault, attempt, err.details())
            # Cut back to the last acknowledged record, and the journal's handle dropped.
            assert path.read_bytes() == on_disk(), (fault, attempt)
            assert lock_is_free(server.data_dir, run_id), (fault, attempt)
            # Reading needs no fsync: the run folds and reads as acknowledged, even while fsync fails.
            assert stub.Fold(pb.FoldRequest(run_id=run_id), timeout=CALL_TIMEOUT_SECONDS).state.last_seq == seq - 1
            assert sync_read_lines(stub, run_id) == acked_lines
            marker.unlink(missing_ok=True)
        # fsync works again: the same append is written (not a duplicate) from a reopened journal.
        landed = stub.Append(
            pb.AppendRequest(run_id=run_id, claim_token=1, record=single), timeout=CALL_TIMEOUT_SECONDS
        )
        assert (landed.seq, landed.duplicate) == (seq, False)
        acked_lines.append(records.encode(single).line)
        assert not lock_is_free(server.data_dir, run_id)
        assert sync_read_lines(stub, run_id) == acked_lines
        assert path.read_bytes() == on_disk()
    assert server.alive()


def test_failed_fsync_of_a_creation_or_a_claim_leaves_no_trace(faulty):
    server, stub, marker = faulty
    run_id = "fsync-created"
    meta = b.meta(run_id=run_id)
    marker.write_text("EIO")
    err = refused(stub.Append, pb.AppendRequest(run_id=run_id, record=meta))
    assert reason(err) == "STORAGE_UNAVAILABLE"
    # A meta that was never durable is not left behind to be taken for a run later.
    assert not journal_path(server.data_dir, run_id).exists()
    assert reason(refused(stub.Fold, pb.FoldRequest(run_id=run_id))) == "RUN_NOT_FOUND"
    listed = stub.ListRuns(pb.ListRunsRequest(), timeout=CALL_TIMEOUT_SECONDS).runs
    assert run_id not in {r.run_id for r in listed}
    marker.unlink()
    assert stub.Append(pb.AppendRequest(run_id=run_id, record=meta), timeout=CALL_TIMEOUT_SECONDS).seq == 1

    claim = pb.ClaimRequest(run_id=run_id, worker_id="w2", fingerprint=b.fingerprint())
    for fault in ("EIO 1", "EIO", "ENOSPC"):
        marker.write_text(fault)
        err = refused(stub.Claim, claim)
        assert reason(err) in {"STORAGE_UNAVAILABLE", "STORAGE_FULL"}, err.details()
        marker.unlink(missing_ok=True)
        # No claim landed: the creator still holds the run and can write.
        state = stub.Fold(pb.FoldRequest(run_id=run_id), timeout=CALL_TIMEOUT_SECONDS).state
        assert (state.last_seq, state.claim_token) == (1, 1)
        assert journal_path(server.data_dir, run_id).read_bytes() == records.encode(meta).line + b"\n"
    claimed = stub.Claim(claim, timeout=CALL_TIMEOUT_SECONDS)
    assert (claimed.claim_token, claimed.last_seq) == (2, 2)
    assert server.alive()
