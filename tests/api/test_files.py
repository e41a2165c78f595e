"""The file backend seen through the server: torn tails, corruption, locks, crashes."""

from __future__ import annotations

import os

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc, state_pb2
from tests.api.rpc import error_info, reason
from tests.support import builders as b


def connect(server) -> tuple[grpc.Channel, journal_service_pb2_grpc.JournalServiceStub]:
    channel = grpc.insecure_channel(server.address)
    return channel, journal_service_pb2_grpc.JournalServiceStub(channel)


def write_run(stub, run_id: str) -> None:
    batch = [b.meta(run_id=run_id), b.assistant(2, 1, ["c1"]), b.result(3, "c1"), b.note(4)]
    stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, records=batch))


def test_last_line_cut_at_any_offset_is_dropped_truncated_and_the_next_append_reads_back(server_factory, tmp_path):
    data_dir = tmp_path / "data"
    server = server_factory(data_dir)
    channel, stub = connect(server)
    with channel:
        write_run(stub, "torn-0000")
        whole = (data_dir / "torn-0000.jsonl").read_bytes()
        last_start = whole.rstrip(b"\n").rfind(b"\n") + 1
        cuts = range(1, len(whole) - last_start)  # keep 1 .. all-but-the-newline bytes of the last line
        runs = {f"torn-{cut:04d}": cut for cut in cuts}
        for run_id in runs:
            if run_id != "torn-0000":
                write_run(stub, run_id)
    server.stop()
    good_prefix = {}
    for run_id, cut in runs.items():
        path = data_dir / f"{run_id}.jsonl"
        raw = path.read_bytes()
        assert len(raw) == len(whole)  # same-length ids: the same offsets apply
        good_prefix[run_id] = raw[:last_start]
        path.write_bytes(raw[: last_start + cut])
    server = server_factory(data_dir)
    channel, stub = connect(server)
    with channel:
        for run_id in runs:
            assert stub.Fold(pb.FoldRequest(run_id=run_id)).state.last_seq == 3, run_id
            landed = stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(4, "after repair")))
            assert landed.seq == 4 and not landed.duplicate
            stored = list(stub.Read(pb.ReadRequest(run_id=run_id)))
            assert [r.record.seq for r in stored] == [1, 2, 3, 4]
            assert stored[3].record.note.text == "after repair"
            assert (data_dir / f"{run_id}.jsonl").read_bytes() == good_prefix[run_id] + stored[3].stored_line + b"\n"
    assert len(runs) > 50


def test_flipped_byte_in_an_interior_line_is_corrupt_with_its_line_and_listed(server_factory, tmp_path):
    data_dir = tmp_path / "data"
    server = server_factory(data_dir)
    channel, stub = connect(server)
    with channel:
        write_run(stub, "flipped")
        write_run(stub, "healthy")
    server.stop()
    path = data_dir / "flipped.jsonl"
    raw = bytearray(path.read_bytes())
    second_line = raw.index(b"\n") + 1
    position = raw.index(b"turn 1", second_line)  # inside a string: still valid JSON after the flip
    raw[position] ^= 0x01
    path.write_bytes(bytes(raw))
    server = server_factory(data_dir)
    channel, stub = connect(server)
    with channel:
        with pytest.raises(grpc.RpcError) as caught:
            stub.Fold(pb.FoldRequest(run_id="flipped"))
        assert caught.value.code() == grpc.StatusCode.DATA_LOSS
        assert reason(caught.value) == "CORRUPT_JOURNAL"
        assert error_info(caught.value).metadata["line"] == "2"
        with pytest.raises(grpc.RpcError) as caught:
            stub.Append(pb.AppendRequest(run_id="flipped", claim_token=1, record=b.note(5)))
        assert reason(caught.value) == "CORRUPT_JOURNAL"
        listed = {r.run_id: r for r in stub.ListRuns(pb.ListRunsRequest()).runs}
        assert listed["flipped"].status == state_pb2.RUN_STATUS_CORRUPT
        assert "line 2" in listed["flipped"].corruption
        assert listed["healthy"].status == state_pb2.RUN_STATUS_OPEN
        corrupt_only = stub.ListRuns(pb.ListRunsRequest(status=state_pb2.RUN_STATUS_CORRUPT)).runs
        assert [r.run_id for r in corrupt_only] == ["flipped"]
    assert path.read_bytes() == bytes(raw)  # nothing rewrote the damaged journal


def test_second_server_process_is_refused_a_held_run_until_the_first_is_killed(server_factory, tmp_path):
    data_dir = tmp_path / "data"
    first = server_factory(data_dir)
    second = server_factory(data_dir)
    channel_1, stub_1 = connect(first)
    channel_2, stub_2 = connect(second)
    with channel_1, channel_2:
        write_run(stub_1, "shared")  # the first server now holds the run
        with pytest.raises(grpc.RpcError) as caught:
            stub_2.Append(pb.AppendRequest(run_id="shared", claim_token=1, record=b.note(5)))
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
        assert reason(caught.value) == "RUN_LOCKED"
        with pytest.raises(grpc.RpcError) as caught:
            stub_2.Claim(pb.ClaimRequest(run_id="shared", worker_id="w2", fingerprint=b.fingerprint()))
        assert reason(caught.value) == "RUN_LOCKED"
        # Reading needs no lock.
        assert stub_2.Fold(pb.FoldRequest(run_id="shared")).state.last_seq == 4
        first.kill()
        claimed = stub_2.Claim(pb.ClaimRequest(run_id="shared", worker_id="w2", fingerprint=b.fingerprint()))
        assert claimed.claim_token == 5
        assert stub_2.Append(pb.AppendRequest(run_id="shared", claim_token=5, record=b.note(6))).seq == 6


def test_graceful_shutdown_releases_every_lock(server_factory, tmp_path):
    data_dir = tmp_path / "data"
    first = server_factory(data_dir)
    channel, stub = connect(first)
    with channel:
        write_run(stub, "handover")
    assert first.stop() == 0
    second = server_factory(data_dir)
    channel, stub = connect(second)
    with channel:
        assert stub.Append(pb.AppendRequest(run_id="handover", claim_token=1, record=b.note(5))).seq == 5


def test_open_journals_are_bounded_so_many_runs_do_not_exhaust_descriptors(server_factory, tmp_path):
    server = server_factory(tmp_path / "data", "--max-open-journals", "8")
    fd_dir = f"/proc/{server.process.pid}/fd"
    channel, stub = connect(server)
    with channel:
        baseline = len(os.listdir(fd_dir))
        for index in range(300):
            run_id = f"many-{index}"
            stub.Append(pb.AppendRequest(run_id=run_id, record=b.meta(run_id=run_id)))
            stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(2)))
        # each open journal holds two descriptors (journal + lock file); allow a little slack for gRPC
        assert len(os.listdir(fd_dir)) <= baseline + 2 * 8 + 8
        # an evicted run reopens transparently and keeps its sequence
        assert stub.Append(pb.AppendRequest(run_id="many-0", claim_token=1, record=b.note(3))).seq == 3
