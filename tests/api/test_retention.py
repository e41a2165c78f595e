"""Retention in a real server (issue 13, item 4): the background pass deletes what ListRuns' stopped_before admits.

The runs are written, the server stopped, and two journals' mtimes (the file
backend's record time) set 40 days back; a server started with
``--retention 30d`` then deletes the stopped one of them, and no other. Its
Watch ends with RUN_DELETED when the pass deletes it: the test waits on that
news, not on a clock.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc
from tests.api.rpc import reason
from tests.servers import ServerProcess
from tests.support import builders as b

DAY_NS = 86400 * 10**9


def _age(data_dir: Path, run_id: str, days: int) -> None:
    path = data_dir / f"{run_id}.jsonl"
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns - days * DAY_NS))


def test_a_server_with_retention_deletes_only_old_stopped_runs(
    server_factory: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    server = server_factory(data_dir)
    with grpc.insecure_channel(server.address) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        for run_id, rest in {
            "old-stopped": [b.assistant(2, 1), b.terminal(3)],
            "old-open": [b.assistant(2, 1, ["c1"])],
            "young-stopped": [b.assistant(2, 1), b.terminal(3)],
        }.items():
            stub.AppendBatch(
                pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=[b.meta(run_id=run_id), *rest])
            )
    assert server.stop() == 0
    _age(data_dir, "old-stopped", 40)
    _age(data_dir, "old-open", 40)
    server = server_factory(
        data_dir, "--retention", "30d", "--retention-interval-seconds", "0.05", "--retention-max-deletions", "10"
    )
    with grpc.insecure_channel(server.address) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        with pytest.raises(grpc.RpcError) as ended:
            for _ in stub.Watch(pb.WatchRequest(run_id="old-stopped"), timeout=60):
                pass  # its records, caught_up, then nothing until the pass deletes it
        assert reason(ended.value) == "RUN_DELETED"
        listed = [s.run_id for s in stub.ListRuns(pb.ListRunsRequest()).runs]
        assert sorted(listed) == ["old-open", "young-stopped"]
        assert stub.Fold(pb.FoldRequest(run_id="old-open")).state.last_seq == 2
