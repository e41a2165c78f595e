"""``runjournal dev-nats`` run as a person would: a syncing nats-server a journal server can use, stopped cleanly."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc
from tests.conftest import new_stream_target
from tests.support import builders as b

STOP_TIMEOUT_SECONDS = 30
_READY = re.compile(r"nats-server listening on (nats://127\.0\.0\.1:\d+) \(monitoring (http://127\.0\.0\.1:\d+),")


@dataclass
class DevNats:
    process: subprocess.Popen[str]
    url: str
    monitor: str
    advice: str
    log_path: Path

    def stop(self) -> tuple[int, str]:
        """SIGTERM, as Ctrl-C or a service manager would; the exit code and the rest of stdout."""
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(STOP_TIMEOUT_SECONDS)
        assert self.process.stdout is not None
        return code, self.process.stdout.read()


@contextmanager
def dev_nats(store_dir: Path, log_path: Path) -> Iterator[DevNats]:
    with log_path.open("a") as log:
        command = ["dev-nats", "--port", "-1", "--http-port", "-1", "--store-dir", str(store_dir)]
        process = subprocess.Popen(
            [sys.executable, "-m", "runjournal_server.cli", *command],
            stdout=subprocess.PIPE,
            stderr=log,
            stdin=subprocess.DEVNULL,
            text=True,
        )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()  # blocks until it is ready or gone; the test timeout bounds it
        match = _READY.match(first)
        assert match, f"{first!r}\n{log_path.read_text()}"
        advice = "".join(process.stdout.readline() for _ in range(3))
        yield DevNats(process, match.group(1), match.group(2), advice, log_path)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_dev_nats_serves_a_syncing_jetstream_a_journal_server_uses_and_stops_cleanly(
    nats_binary, server_factory, tmp_path
):
    store_dir = tmp_path / "nats"
    stream = new_stream_target()
    with dev_nats(store_dir, tmp_path / "dev-nats.log") as nats:
        assert f"runjournal serve --backend jetstream --nats-url {nats.url} --create-stream" in nats.advice
        with urllib.request.urlopen(f"{nats.monitor}/varz", timeout=10) as response:
            varz = json.loads(response.read())
        assert varz["jetstream"]["config"]["sync_always"] is True
        assert varz["jetstream"]["config"]["store_dir"].startswith(str(store_dir))
        assert varz["max_payload"] >= (1 << 20) + 1024  # a maximal record with its headers
        server = server_factory(tmp_path / "unused", *stream.server_args(nats.url))
        with grpc.insecure_channel(server.address) as channel:
            stub = journal_service_pb2_grpc.JournalServiceStub(channel)
            batch = [b.meta(run_id="dev-1"), b.assistant(2, 1, ["c1"]), b.result(3, "c1")]
            assert stub.AppendBatch(pb.AppendBatchRequest(run_id="dev-1", records=batch)).last_seq == 3
        assert server.stop() == 0, server.log()
        code, rest = nats.stop()
        assert code == 0, nats.log_path.read_text()
        assert "nats-server stopped (exit code 0)" in rest

    # The store outlives the process: a second dev-nats on it still has the run.
    with dev_nats(store_dir, tmp_path / "dev-nats-2.log") as nats:
        server = server_factory(tmp_path / "unused", *stream.server_args(nats.url))
        with grpc.insecure_channel(server.address) as channel:
            stub = journal_service_pb2_grpc.JournalServiceStub(channel)
            assert stub.Fold(pb.FoldRequest(run_id="dev-1")).state.last_seq == 3
        assert server.stop() == 0, server.log()
        assert nats.stop()[0] == 0
