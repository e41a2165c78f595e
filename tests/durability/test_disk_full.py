"""A full disk under a real server: refused with STORAGE_FULL, rolled back, fine once space returns.

Two ways to run out of space: a real, tiny tmpfs mounted for the test (needs
root; skipped without it), and ``RLIMIT_FSIZE`` on the server process (works
anywhere: a write past the limit is cut short, then fails with EFBIG). Either
way an append that does not fit is partly written before it fails, which is
exactly what the rollback must undo.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc
from runjournal_server.core import records
from tests.durability.harness import (
    CALL_TIMEOUT_SECONDS,
    LaunchedServer,
    journal_path,
    reason,
    sync_read_lines,
)
from tests.support import builders as b
from tests.support.environment import unavailable

SMALL_BYTES = 256 << 10
BIG_NOTE_CHARS = 24 << 10
"""Each filler record spans several pages, so the one that does not fit is written in part."""
MAX_FILL_APPENDS = 200


@contextlib.contextmanager
def tmpfs(mount_point: Path, size: int) -> Iterator[Callable[[int], None]]:
    """A tmpfs of ``size`` bytes at ``mount_point``; yields a function that resizes it."""
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        unavailable(f"cannot mount a tmpfs here ({mounted.stderr.strip()}); the RLIMIT_FSIZE case still runs")

    def resize(new_size: int) -> None:
        subprocess.run(["mount", "-o", f"remount,size={new_size}", str(mount_point)], check=True, timeout=30)

    try:
        yield resize
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False, timeout=30)


def limit_file_size(limit: int) -> Callable[[], None]:
    def preexec() -> None:
        # Ignored, SIGXFSZ turns a write past the limit into a short write, then EFBIG.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    return preexec


def fill_until_full(
    stub, run_id: str, acked: list[bytes], path: Path, *, chars: int = BIG_NOTE_CHARS
) -> tuple[grpc.RpcError, object]:
    """Append records of about ``chars`` bytes until one is refused; returns the refusal and that record."""
    for _ in range(MAX_FILL_APPENDS):
        seq = len(acked) + 1
        record = b.note(seq, f"filler {seq} " + "é" * (chars // 2))
        try:
            stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=record), timeout=CALL_TIMEOUT_SECONDS)
        except grpc.RpcError as err:
            return err, record
        acked.append(records.encode(record).line)
        assert path.stat().st_size == sum(len(line) + 1 for line in acked)
    raise AssertionError(f"{MAX_FILL_APPENDS} big appends and the store is still not full")


def take_all_space(path: Path) -> None:
    """Write ``path`` until the file system has no free page left, so that even a small write fails."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        for _ in range(SMALL_BYTES // 4096 + 1):
            os.write(fd, b"\0" * 4096)
        raise AssertionError(f"{path} outgrew the whole file system")
    except OSError as err:
        assert err.errno == errno.ENOSPC, err
    finally:
        os.close(fd)


def assert_full(err: grpc.RpcError) -> None:
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err.details()
    assert reason(err) == "STORAGE_FULL", err.details()


def assert_back_at(stub, path: Path, run_id: str, acked: list[bytes]) -> None:
    """The journal is exactly its acknowledged records: size, bytes, fold and read."""
    assert path.stat().st_size == sum(len(line) + 1 for line in acked)
    assert path.read_bytes() == b"".join(line + b"\n" for line in acked)
    assert stub.Fold(pb.FoldRequest(run_id=run_id), timeout=CALL_TIMEOUT_SECONDS).state.last_seq == len(acked)
    assert sync_read_lines(stub, run_id) == acked


def start(data_dir: Path, preexec: Callable[[], None] | None = None) -> LaunchedServer:
    return LaunchedServer(data_dir, preexec=preexec).start()


def create(stub, run_id: str) -> list[bytes]:
    meta = b.meta(run_id=run_id, prompt="fill the disk")
    stub.Append(pb.AppendRequest(run_id=run_id, record=meta), timeout=CALL_TIMEOUT_SECONDS)
    return [records.encode(meta).line]


def test_full_tmpfs_refuses_appends_creations_and_claims_and_recovers_when_it_grows(tmp_path):
    mount_point = tmp_path / "small"
    with tmpfs(mount_point, SMALL_BYTES) as resize:
        # The mount point itself is the data dir: the server's log lives outside it.
        server = start(mount_point)
        try:
            with grpc.insecure_channel(server.address) as channel:
                stub = journal_service_pb2_grpc.JournalServiceStub(channel)
                run_id = "full-disk"
                path = journal_path(mount_point, run_id)
                acked = create(stub, run_id)
                err, refused_record = fill_until_full(stub, run_id, acked, path)
                assert_full(err)
                assert_back_at(stub, path, run_id, acked)

                take_all_space(mount_point / "filler")
                # Only the free bytes of the journal's last page are left: small records fill it.
                err, refused_record = fill_until_full(stub, run_id, acked, path, chars=40)
                assert_full(err)
                assert_back_at(stub, path, run_id, acked)
                claim = pb.ClaimRequest(run_id=run_id, worker_id="w2", reason="r" * 400, fingerprint=b.fingerprint())
                assert_full(refused(stub.Claim, claim))
                assert_back_at(stub, path, run_id, acked)
                other = "full-disk-new"
                assert_full(refused(stub.Append, pb.AppendRequest(run_id=other, record=b.meta(run_id=other))))
                assert reason(refused(stub.Fold, pb.FoldRequest(run_id=other))) == "RUN_NOT_FOUND"
                listed = stub.ListRuns(pb.ListRunsRequest(), timeout=CALL_TIMEOUT_SECONDS).runs
                assert [r.run_id for r in listed] == [run_id]

                resize(SMALL_BYTES * 8)
                landed = stub.Append(
                    pb.AppendRequest(run_id=run_id, claim_token=1, record=refused_record), timeout=CALL_TIMEOUT_SECONDS
                )
                assert (landed.seq, landed.duplicate) == (len(acked) + 1, False)
                acked.append(records.encode(refused_record).line)
                assert_back_at(stub, path, run_id, acked)
                assert stub.Claim(claim, timeout=CALL_TIMEOUT_SECONDS).claim_token == len(acked) + 1
                assert stub.Append(pb.AppendRequest(run_id=other, record=b.meta(run_id=other))).seq == 1
            assert server.stop() == 0, server.log()
        finally:
            if server.alive():
                server.kill()


def test_file_size_limit_refuses_the_append_that_crosses_it_and_recovers_when_raised(tmp_path):
    limit = 128 << 10
    server = start(tmp_path / "data", limit_file_size(limit))
    try:
        with grpc.insecure_channel(server.address) as channel:
            stub = journal_service_pb2_grpc.JournalServiceStub(channel)
            run_id = "size-limited"
            path = journal_path(server.data_dir, run_id)
            acked = create(stub, run_id)
            err, refused_record = fill_until_full(stub, run_id, acked, path)
            assert_full(err)
            assert_back_at(stub, path, run_id, acked)
            assert path.stat().st_size + len(records.encode(refused_record).line) + 1 > limit
            # A second try meets the same limit, and is rolled back the same way.
            request = pb.AppendRequest(run_id=run_id, claim_token=1, record=refused_record)
            assert_full(refused(stub.Append, request))
            assert_back_at(stub, path, run_id, acked)

            assert server.process is not None
            resource.prlimit(server.process.pid, resource.RLIMIT_FSIZE, (limit * 4, resource.RLIM_INFINITY))
            landed = stub.Append(request, timeout=CALL_TIMEOUT_SECONDS)
            assert (landed.seq, landed.duplicate) == (len(acked) + 1, False)
            acked.append(records.encode(refused_record).line)
            assert_back_at(stub, path, run_id, acked)
        assert server.stop() == 0, server.log()
    finally:
        if server.alive():
            server.kill()


def refused(call, request) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call(request, timeout=CALL_TIMEOUT_SECONDS)
    return caught.value
