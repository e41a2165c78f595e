"""kill -9 of a real file-backend server under a 32-client append load, over and over.

Each client owns one run and remembers every line it sent for a seq and which
appends the server acknowledged. The server is SIGKILLed at a moment chosen by
a seeded random count of acknowledged appends (set RUNJOURNAL_TEST_SEED to
replay a run); then, with the server dead, the journals on disk are checked
line by line, and a new server on the same directory must open, fold, read and
extend every run. Clients resume from the server's ``last_seq``, so the runs
keep growing across kills.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc, records_pb2
from runjournal_server.core import records
from tests.durability.harness import (
    CALL_TIMEOUT_SECONDS,
    LaunchedServer,
    journal_path,
    make_seed,
    read_lines,
    reason,
    split_journal,
)
from tests.support import builders as b

CLIENTS = 32
KILLS = 22
"""At least 20 SIGKILLs; then two epochs end with a graceful stop (the last one appends once per run)."""
EPOCH_SECONDS = 60.0
"""Upper bound of one epoch (start, load, kill, checks); a healthy epoch takes about a second."""
MAX_APPENDS_PER_CLIENT_EPOCH = 2000
BIG_RECORD_CHANCE = 0.01
"""Some records span many pages, so a kill can land in the middle of their write."""
BATCH_CHANCE = 0.3
UTF8 = "é ß 日本語 🙂"


def record_for(run_id: str, seq: int, epoch: int, rng: random.Random) -> records_pb2.JournalRecord:
    """The record a client writes at ``seq``; its kind depends only on seq, so every prefix folds.

    The text names the epoch, so a record rewritten after a kill differs from
    the one that was lost, and a stale line could not pass for the new one.
    """
    if seq == 1:
        return b.meta(run_id=run_id, prompt=f"load test {UTF8}")
    tag = f"{run_id} seq {seq} epoch {epoch} {UTF8} {rng.getrandbits(32):08x}"
    phase = seq % 4
    if phase == 2:
        return b.assistant(seq, (seq + 2) // 4, [f"call-{seq}"], say=tag)
    if phase == 3:
        return b.result(seq, f"call-{seq - 1}", tag)
    if phase == 0:
        return b.user(seq, tag)
    if rng.random() < BIG_RECORD_CHANCE:
        tag += " " + "x" * rng.randint(16 << 10, 96 << 10)
    return b.note(seq, tag)


@dataclass
class Client:
    run_id: str
    rng: random.Random
    sent: dict[int, set[bytes]] = field(default_factory=dict)
    """Every line sent for each seq, acknowledged or not."""
    acked: dict[int, bytes] = field(default_factory=dict)
    on_disk: int = 0
    """How many records the journal held when the server was last killed: what Fold must say now."""
    read_back: list[bytes] = field(default_factory=list)
    """The lines a server last read back: every later kill must leave them on disk as they were."""

    @property
    def last_acked(self) -> int:
        return max(self.acked, default=0)


@dataclass
class Epoch:
    number: int
    server: LaunchedServer
    threshold: int
    """Kill the server when this many appends were acknowledged in this epoch."""
    final: bool
    """End with a graceful stop instead of a kill."""
    acked: int = 0
    ended: bool = False
    opened: set[str] = field(default_factory=set)
    """Clients whose run folded and took an append in this epoch: the kill waits for all of them."""

    def acknowledge(self, run_id: str, count: int) -> None:
        self.acked += count
        self.opened.add(run_id)
        if not self.ended and self.acked >= self.threshold and len(self.opened) == CLIENTS and self.may_end():
            self.ended = True
            if not self.final:
                assert self.server.process is not None
                os.kill(self.server.process.pid, signal.SIGKILL)

    def may_end(self) -> bool:
        """A further condition of the kill, for a suite that needs the server in some state first."""
        return True


async def drive(client: Client, epoch: Epoch) -> None:
    """Append until the epoch ends; the first call is a Fold that says where the run stands."""
    async with grpc.aio.insecure_channel(epoch.server.address) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        try:
            await work(client, epoch, stub)
        except grpc.aio.AioRpcError as err:
            # After the kill every call in flight fails; before it, nothing may.
            if not (epoch.ended and not epoch.final and err.code() == grpc.StatusCode.UNAVAILABLE):
                raise AssertionError(f"{client.run_id} in epoch {epoch.number}: {err.code()} {reason(err)}") from err


async def work(client: Client, epoch: Epoch, stub: journal_service_pb2_grpc.JournalServiceStub) -> None:
    try:
        state = (await stub.Fold(pb.FoldRequest(run_id=client.run_id), timeout=CALL_TIMEOUT_SECONDS)).state
        last = state.last_seq
    except grpc.aio.AioRpcError as err:
        if reason(err) != "RUN_NOT_FOUND":
            raise
        assert not client.acked, f"{client.run_id}: acknowledged records but the run is not found"
        last = 0
    assert last == client.on_disk >= client.last_acked, (client.run_id, last, client.on_disk, client.last_acked)
    seq = last + 1
    for _ in range(MAX_APPENDS_PER_CLIENT_EPOCH):
        if epoch.ended:
            return
        count = client.rng.randint(2, 4) if seq > 1 and client.rng.random() < BATCH_CHANCE else 1
        batch = [record_for(client.run_id, s, epoch.number, client.rng) for s in range(seq, seq + count)]
        lines = [records.encode(r).line for r in batch]
        for record, line in zip(batch, lines, strict=True):
            client.sent.setdefault(record.seq, set()).add(line)
        if count == 1:
            response = await stub.Append(
                pb.AppendRequest(run_id=client.run_id, claim_token=1, record=batch[0]), timeout=CALL_TIMEOUT_SECONDS
            )
            assert (response.seq, response.duplicate) == (seq, False)
        else:
            batch_response = await stub.AppendBatch(
                pb.AppendBatchRequest(run_id=client.run_id, claim_token=1, records=batch),
                timeout=CALL_TIMEOUT_SECONDS,
            )
            assert (batch_response.first_seq, batch_response.duplicates) == (seq, 0)
        for record, line in zip(batch, lines, strict=True):
            client.acked[record.seq] = line
        seq += count
        epoch.acknowledge(client.run_id, count)


def check_on_disk(data_dir: Path, clients: list[Client], stats: Counter[str]) -> dict[str, list[bytes]]:
    """With the server dead: acknowledged lines present and byte-identical, nothing that was not sent."""
    found = {}
    for client in clients:
        path = journal_path(data_dir, client.run_id)
        lines, fragment = split_journal(path.read_bytes() if path.exists() else b"")
        assert lines[: len(client.read_back)] == client.read_back, f"{client.run_id}: a line read back changed"
        for seq, line in enumerate(lines, start=1):
            assert line in client.sent.get(seq, ()), f"{client.run_id} line {seq} holds bytes no client sent"
        for seq, line in client.acked.items():
            assert seq <= len(lines), f"{client.run_id}: acknowledged seq {seq} lost (journal has {len(lines)})"
            assert lines[seq - 1] == line, f"{client.run_id}: acknowledged seq {seq} changed"
        if fragment:
            # A torn write leaves a prefix of the line that was being written.
            assert any(sent.startswith(fragment) for sent in client.sent.get(len(lines) + 1, ())), client.run_id
            stats["torn tails"] += 1
        stats["stored but unacknowledged"] += len(lines) - client.last_acked
        client.on_disk = len(lines)
        found[client.run_id] = lines
    return found


async def check_through_server(
    server: LaunchedServer, clients: list[Client], on_disk: dict[str, list[bytes]], *, whole: bool = False
) -> None:
    """A new server reads back every run exactly as it is on disk (torn tails cut).

    The lines an earlier server read back are on disk unchanged (``check_on_disk``
    compared them), so only the lines after them are read, unless ``whole``:
    the last check reads every line again. Reading all of them after every kill
    made the suite quadratic in its length. Fold and the first append of each
    run are the next epoch's first calls.
    """
    async with grpc.aio.insecure_channel(server.address) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        created = [client for client in clients if on_disk[client.run_id]]
        first = {client.run_id: 0 if whole else len(client.read_back) for client in created}
        read = await asyncio.gather(*(read_lines(stub, c.run_id, first[c.run_id] + 1) for c in created))
        for client, lines in zip(created, read, strict=True):
            assert lines == on_disk[client.run_id][first[client.run_id] :], client.run_id
            client.read_back = on_disk[client.run_id]


@pytest.mark.slow
@pytest.mark.timeout(240)
async def test_acknowledged_records_survive_repeated_sigkill_under_32_client_load(tmp_path):
    seed = make_seed()
    print(f"kill -9 suite: seed {seed} (set RUNJOURNAL_TEST_SEED={seed} to replay)")
    rng = random.Random(seed)
    data_dir = tmp_path / "data"
    clients = [Client(f"load-{i:02d}", random.Random(rng.getrandbits(64))) for i in range(CLIENTS)]
    stats: Counter[str] = Counter()
    server = LaunchedServer(data_dir).start()
    try:
        for number in range(KILLS + 2):
            final = number >= KILLS
            # A quarter of the kills come early: right after the last client's first append.
            threshold = rng.randint(1, CLIENTS) if rng.random() < 0.25 or number > KILLS else rng.randint(CLIENTS, 320)
            epoch = Epoch(number, server, threshold, final)
            await asyncio.wait_for(asyncio.gather(*(drive(c, epoch) for c in clients)), EPOCH_SECONDS)
            assert epoch.ended, f"epoch {number} ran out of appends before its kill (seed {seed})"
            if final:
                assert server.stop() == 0, server.log()
            else:
                assert server.process is not None
                assert server.process.wait(timeout=EPOCH_SECONDS) == -signal.SIGKILL
                stats["kills"] += 1
            stats["acknowledged appends"] += epoch.acked
            on_disk = check_on_disk(data_dir, clients, stats)
            # The next epoch's server first proves every run opens as it is on disk.
            server = LaunchedServer(data_dir).start()
            await check_through_server(server, clients, on_disk, whole=number == KILLS + 1)
        assert server.stop() == 0, server.log()
    finally:
        if server.alive():
            server.kill()
    stats["acknowledged records"] = sum(len(c.acked) for c in clients)
    stats["runs never created"] = sum(1 for c in clients if not c.acked)
    print(f"kill -9 suite (seed {seed}): {dict(stats)}")
    assert stats["kills"] >= 20
    assert stats["acknowledged records"] > 20 * CLIENTS
