"""Shared parts of the durability suite: launched servers, statuses, journals on disk.

Every server here is a real ``runjournal serve`` process on a free loopback
port (see ``tests/servers.py``); ``LaunchedServer`` adds what crash and fault
tests need on top: a launcher script instead of the plain CLI (to inject I/O
faults) and a hook run in the child before ``exec`` (resource limits).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc
from google.rpc import error_details_pb2, status_pb2

from runjournal.v1 import journal_service_pb2 as pb
from tests.servers import ServerProcess

CALL_TIMEOUT_SECONDS = 20.0
"""Deadline of every call the suite makes: a hung server fails the test instead of hanging it."""

STATUS_DETAILS_KEY = "grpc-status-details-bin"


@dataclass
class LaunchedServer(ServerProcess):
    """A server started through ``launcher`` (a script taking the CLI's arguments) and ``preexec``."""

    launcher: Path | None = None
    preexec: Callable[[], None] | None = None

    def start(self) -> LaunchedServer:
        self.stderr_path = self.data_dir.parent / f"{self.data_dir.name}-server-{os.getpid()}-{id(self)}.log"
        entry = [str(self.launcher)] if self.launcher else ["-m", "runjournal_server.cli"]
        command = [
            sys.executable,
            *entry,
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            str(self.data_dir),
            "--shutdown-grace-seconds",
            "2",
            *self.extra_args,
        ]
        with self.stderr_path.open("a") as stderr:
            self.process = subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=stderr,
                stdin=subprocess.DEVNULL,
                text=True,
                env={**os.environ, **self.env},
                preexec_fn=self.preexec,
            )
        self.address = self._read_ready_line().removeprefix("runjournal listening on ").strip()
        return self

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


def make_seed() -> int:
    """A seed for a test's random.Random: $RUNJOURNAL_TEST_SEED when set (to replay a run), else a fresh one."""
    configured = os.environ.get("RUNJOURNAL_TEST_SEED")
    return int(configured) if configured else random.SystemRandom().randrange(1 << 32)


@contextlib.contextmanager
def memory_data_dir(tmp_path: Path) -> Iterator[Path]:
    """A data directory in memory (/dev/shm) when there is one, else under ``tmp_path``.

    For tests of what the server makes of the bytes on disk, where a real
    disk's fsync latency (about a millisecond here) would only add minutes.
    """
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path / "data"
        return
    parent = Path(tempfile.mkdtemp(prefix="runjournal-durability-", dir=shm))
    try:
        yield parent / "data"
    finally:
        shutil.rmtree(parent, ignore_errors=True)


# ------------------------------------------------------------------ statuses


def status_of(err: grpc.RpcError) -> status_pb2.Status | None:
    """The rich status a refusal carries (sync or asyncio error), or None when there is none."""
    for key, value in err.trailing_metadata() or ():  # type: ignore[attr-defined]
        if key == STATUS_DETAILS_KEY:
            return status_pb2.Status.FromString(value)
    return None


def error_info(err: grpc.RpcError) -> error_details_pb2.ErrorInfo | None:
    status = status_of(err)
    if status is None:
        return None
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            return info
    return None


def reason(err: grpc.RpcError) -> str:
    info = error_info(err)
    return info.reason if info is not None else f"<no ErrorInfo: {err.code()}>"  # type: ignore[attr-defined]


# ------------------------------------------------------------------ journals on disk


def journal_path(data_dir: Path, run_id: str) -> Path:
    return data_dir / f"{run_id}.jsonl"


def split_journal(data: bytes) -> tuple[list[bytes], bytes]:
    """The complete lines of a journal (without newlines) and the fragment after the last newline."""
    *lines, fragment = data.split(b"\n")
    return lines, fragment


def snapshot(data_dir: Path) -> dict[str, bytes]:
    """Every file of a data directory by name, with its bytes."""
    return {path.name: path.read_bytes() for path in sorted(data_dir.iterdir()) if path.is_file()}


async def read_lines(stub, run_id: str, from_seq: int = 1) -> list[bytes]:
    """The stored lines the server streams back for a run from ``from_seq`` on (asyncio stub)."""
    call = stub.Read(pb.ReadRequest(run_id=run_id, from_seq=from_seq), timeout=CALL_TIMEOUT_SECONDS)
    return [response.stored_line async for response in call]


def sync_read_lines(stub, run_id: str) -> list[bytes]:
    return [r.stored_line for r in stub.Read(pb.ReadRequest(run_id=run_id), timeout=CALL_TIMEOUT_SECONDS)]


def lines_of(records: Sequence[object]) -> list[bytes]:
    from runjournal_server.core import records as codec

    return [codec.encode(record).line for record in records]  # type: ignore[arg-type]
