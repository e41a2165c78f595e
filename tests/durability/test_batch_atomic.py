"""SIGKILL in the middle of batches of 1 MB records: after restart no batch is ever there in part.

A child process creates a run with a creation batch (meta + 7 records) and
appends two more batches of 8, every record about 1 MB, through the file
backend. (Each child is forked from one process that imported the backend
once, so a cycle does not spend half its time importing.) Its writes go to the kernel in 1 MiB pieces (a short write the
backend continues, as the kernel may do at any time) and it reports each piece,
so the parent can SIGKILL it at a seeded random piece: most kills land with a
batch partly written. Then, with the child dead, every lock-free reader and a
fresh writer must see whole batches only, and every acknowledged record.

The second test does the same to a real ``runjournal serve`` taking
AppendBatch calls of three 1 MB records (the default batch limit is 4 MiB),
its pieces reported through a FIFO by a launcher script.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc, records_pb2
from runjournal_server.backends.file import FileBackend
from runjournal_server.core.errors import RunNotFoundError
from tests.durability.harness import (
    CALL_TIMEOUT_SECONDS,
    LaunchedServer,
    journal_path,
    make_seed,
    memory_data_dir,
    split_journal,
)
from tests.support import builders as b

KILLS = 20
MAX_ATTEMPTS = 40
"""A child may finish before its chosen piece; such a run counts as no kill."""
BATCH = 8
BATCHES = 3
"""The creation batch and two appended ones."""
RECORD_CHARS = 1_000_000
PIECE_BYTES = 1 << 20
CHILD_SECONDS = 30.0

CHILD = f"""
import asyncio, os, sys, traceback
from pathlib import Path
from runjournal_server.core import records
from runjournal_server.backends.file import FileBackend
from tests.file_backend_os import replace_os
from tests.support import builders as b

class PiecewiseOs:
    '''``os`` as the backend sees it, but a large write goes to the kernel 1 MiB at a time, each piece reported.'''
    def __getattr__(self, name):
        return getattr(os, name)
    def pwrite(self, fd, data, offset):
        written = os.pwrite(fd, data[:{PIECE_BYTES}], offset)
        if len(data) > 4096:
            print("piece", flush=True)
        return written

def notes(run_id, first, count):
    # Encoded just before they are written: a writer killed in its first batch never encodes the others.
    text = "x" * {RECORD_CHARS}
    return [records.encode(b.note(seq, f"{{run_id}} seq {{seq}} " + text)) for seq in range(first, first + count)]

async def main(data_dir, run_id) -> None:
    backend = FileBackend(Path(data_dir))
    await backend.start()
    replace_os(PiecewiseOs())
    meta = records.encode(b.meta(run_id=run_id))
    journal = await backend.create_journal(run_id, meta, notes(run_id, 2, {BATCH} - 1))
    print("acked", journal.last_seq, flush=True)
    for first in range({BATCH} + 1, {BATCH * BATCHES} + 1, {BATCH}):
        await journal.append(notes(run_id, first, {BATCH}))
        print("acked", journal.last_seq, flush=True)
    print("done", flush=True)
    await backend.close()

# One writer per line on stdin ("data_dir run_id"), each in a child forked from here (no threads yet):
# the writer's "pid N" and its lines, then "ended CODE" from here (negative: the signal that ended it).
for line in sys.stdin:
    data_dir, run_id = line.split()
    pid = os.fork()
    if pid == 0:
        try:
            print("pid", os.getpid(), flush=True)
            asyncio.run(main(data_dir, run_id))
        except BaseException:
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
        os._exit(0)
    print("ended", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""


@dataclass
class Writers:
    """The process that forks each writer (``CHILD``); its stderr, the writers' too, goes to ``log``."""

    process: subprocess.Popen[str]
    log: Path

    @classmethod
    def start(cls, log: Path) -> Writers:
        with log.open("w") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True
            )
        return cls(process, log)

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        assert self.process.wait(timeout=CHILD_SECONDS) == 0, self.log.read_text()


def run_child(writers: Writers, data_dir: Path, run_id: str, kill_at_piece: int) -> tuple[bool, int]:
    """Run a writer and SIGKILL it after its ``kill_at_piece``-th piece; (killed, last acknowledged seq)."""
    stdin, stdout = writers.process.stdin, writers.process.stdout
    assert stdin is not None and stdout is not None
    stdin.write(f"{data_dir} {run_id}\n")
    stdin.flush()
    word, pid = stdout.readline().split()
    assert word == "pid", (word, writers.log.read_text())
    pieces = acked = 0
    killed = False
    for line in stdout:
        word, *rest = line.split()
        if word == "acked":
            acked = int(rest[0])
        elif word == "piece" and not killed:
            pieces += 1
            if pieces == kill_at_piece:
                os.kill(int(pid), signal.SIGKILL)
                killed = True
        elif word == "ended":
            code = int(rest[0])
            break
    else:
        raise AssertionError(f"the writers' process ended: {writers.log.read_text()}")
    assert code == (-signal.SIGKILL if killed else 0), writers.log.read_text()
    return killed, acked


async def check_whole_batches(data_dir: Path, run_id: str, acked: int, batch: int, stats: Counter[str]) -> None:
    """Whole batches of ``batch`` records only, through every reader; acknowledged records all there."""
    path = journal_path(data_dir, run_id)
    lines, fragment = split_journal(path.read_bytes() if path.exists() else b"")
    if len(lines) % batch or fragment:
        stats["kills that left a batch partly on disk"] += 1
    backend = FileBackend(data_dir)
    await backend.start()
    try:
        try:
            seen = [
                len(await backend.load(run_id)),
                len([item async for item in backend.stream(run_id, 1)]),
                (await backend.ends(run_id, lambda _: False)).last_seq,
            ]
            await backend.meta(run_id)
            journal, stored = await backend.open_journal(run_id)
            seen.append(len(stored))
            await journal.close()
            seen.append(len(await backend.load(run_id)))
        except RunNotFoundError:
            assert acked == 0, f"{run_id}: acknowledged up to seq {acked} but not found"
            stats["creations left absent"] += 1
            return
        assert all(count >= acked for count in seen), (run_id, seen, acked)
        if any(count % batch for count in seen):
            stats["partial batches after restart"] += 1
        assert len(set(seen)) == 1, (run_id, seen)
        stats["whole batches kept"] += seen[0] // batch
    finally:
        await backend.close()


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_sigkill_during_batches_of_1mb_records_leaves_no_partial_batch(tmp_path: Path) -> None:
    seed = make_seed()
    rng = random.Random(seed)
    total_pieces = BATCH * BATCHES * (RECORD_CHARS + 200) // PIECE_BYTES
    stats: Counter[str] = Counter()
    writers = Writers.start(tmp_path / "writers.log")
    with memory_data_dir(tmp_path) as data_dir:
        data_dir.mkdir(parents=True)
        for attempt in range(MAX_ATTEMPTS):
            if stats["kills"] == KILLS:
                break
            run_id = f"kill-{attempt:02d}"
            piece = rng.randint(1, total_pieces)
            killed, acked = await asyncio.to_thread(run_child, writers, data_dir, run_id, piece)
            stats["kills" if killed else "children that finished"] += 1
            await check_whole_batches(data_dir, run_id, acked, BATCH, stats)
            for suffix in (".jsonl", ".lock"):
                (data_dir / f"{run_id}{suffix}").unlink(missing_ok=True)  # keep /dev/shm small
    writers.stop()
    print(f"batch kill suite (seed {seed}, RUNJOURNAL_TEST_SEED to replay): {dict(stats)}")
    assert stats["kills"] == KILLS
    assert stats["partial batches after restart"] == 0, stats
    assert stats["kills that left a batch partly on disk"] >= KILLS // 4, "the kills must land inside batches"


# ---------------------------------------------------------------- the same over real gRPC

GRPC_BATCH = 3
"""Three 1 MB records: an AppendBatch under the server's default 4 MiB batch limit."""
GRPC_BATCHES = 3
PROGRESS_ENV = "RUNJOURNAL_TEST_PROGRESS_FIFO"

LAUNCHER = f"""
import os, sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})  # the repository root: ``tests`` is importable

class PiecewiseOs:
    '''``os`` as the file backend sees it; a large write goes to the kernel 1 MiB at a time, each piece reported.'''
    def __init__(self, progress):
        self._progress = progress
    def __getattr__(self, name):
        return getattr(os, name)
    def pwrite(self, fd, data, offset):
        written = os.pwrite(fd, data[:{PIECE_BYTES}], offset)
        if len(data) > 4096:
            os.write(self._progress, b"p")
        return written

def main():
    from runjournal_server import cli
    from tests.file_backend_os import replace_os
    replace_os(PiecewiseOs(os.open(os.environ["{PROGRESS_ENV}"], os.O_WRONLY)))
    return cli.main(sys.argv[1:])

raise SystemExit(main())
"""


def append_batches(address: str, run_id: str, acked: list[int]) -> None:
    """Create the run with a creation batch, then append batches, until the server dies (UNAVAILABLE)."""
    batches = [[b.meta(run_id=run_id)] + [big_note(run_id, seq) for seq in range(2, GRPC_BATCH + 1)]]
    for first in range(GRPC_BATCH + 1, GRPC_BATCH * GRPC_BATCHES + 1, GRPC_BATCH):
        batches.append([big_note(run_id, seq) for seq in range(first, first + GRPC_BATCH)])
    with grpc.insecure_channel(address) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        for token, batch in zip([0] + [1] * GRPC_BATCHES, batches, strict=False):
            request = pb.AppendBatchRequest(run_id=run_id, claim_token=token, records=batch)
            try:
                stub.AppendBatch(request, timeout=CALL_TIMEOUT_SECONDS)
            except grpc.RpcError as err:
                assert err.code() == grpc.StatusCode.UNAVAILABLE, err  # type: ignore[attr-defined]
                return
            acked.append(batch[-1].seq)


def big_note(run_id: str, seq: int) -> records_pb2.JournalRecord:
    return b.note(seq, f"{run_id} seq {seq} " + "x" * RECORD_CHARS)


def kill_at_piece(server: LaunchedServer, progress: int, piece: int) -> bool:
    """SIGKILL the server after its ``piece``-th reported piece; False when it never wrote that many."""
    seen = 0
    while seen < piece:
        if not os.read(progress, 1):
            return False
        seen += 1
    assert server.process is not None
    os.kill(server.process.pid, signal.SIGKILL)
    return True


def grpc_cycle(data_dir: Path, fifo: Path, launcher: Path, run_id: str, piece: int) -> tuple[bool, int]:
    progress = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the server opens the writing end as it starts
    try:
        server = LaunchedServer(data_dir, env={PROGRESS_ENV: str(fifo)}, launcher=launcher).start()
        os.set_blocking(progress, True)
        acked: list[int] = []
        client = threading.Thread(target=append_batches, args=(server.address, run_id, acked))
        client.start()
        killed = False
        try:
            killed = kill_at_piece(server, progress, piece)
        finally:
            client.join(CHILD_SECONDS)
            assert server.process is not None
            if killed:
                assert server.process.wait(timeout=CHILD_SECONDS) == -signal.SIGKILL
            else:
                assert server.stop() == 0, server.log()
    finally:
        os.close(progress)
    return killed, max(acked, default=0)


@pytest.mark.slow
@pytest.mark.timeout(240)
async def test_sigkill_of_a_server_during_append_batch_of_1mb_records_leaves_no_partial_batch(tmp_path: Path) -> None:
    seed = make_seed()
    rng = random.Random(seed)
    total_pieces = GRPC_BATCH * GRPC_BATCHES * (RECORD_CHARS + 200) // PIECE_BYTES
    launcher = tmp_path / "piecewise_launcher.py"
    launcher.write_text(LAUNCHER)
    fifo = tmp_path / "progress.fifo"
    os.mkfifo(fifo)
    stats: Counter[str] = Counter()
    with memory_data_dir(tmp_path) as data_dir:
        data_dir.mkdir(parents=True)
        for attempt in range(MAX_ATTEMPTS):
            if stats["kills"] == KILLS:
                break
            run_id = f"grpc-kill-{attempt:02d}"
            piece = rng.randint(1, total_pieces)
            killed, acked = await asyncio.to_thread(grpc_cycle, data_dir, fifo, launcher, run_id, piece)
            stats["kills" if killed else "servers that finished"] += 1
            await check_whole_batches(data_dir, run_id, acked, GRPC_BATCH, stats)
            for suffix in (".jsonl", ".lock"):
                (data_dir / f"{run_id}{suffix}").unlink(missing_ok=True)
    print(f"AppendBatch kill suite (seed {seed}, RUNJOURNAL_TEST_SEED to replay): {dict(stats)}")
    assert stats["kills"] == KILLS
    assert stats["partial batches after restart"] == 0, stats
    assert stats["kills that left a batch partly on disk"] >= KILLS // 4, "the kills must land inside batches"
