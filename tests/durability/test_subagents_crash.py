"""SIGKILLs of a real server while 8 parents each delegate 4 calls to child runs that complete (issue 26).

Each parent's worker spawns one child per call (SpawnRun, retried until
answered: a retry is a verified duplicate); each child's worker appends a few
records and its terminal, one append at a time, resuming from the child's
last seq after every failure. The server is SIGKILLed 20 times, each after a
seeded random number of acknowledged calls (RUNJOURNAL_TEST_SEED replays a
run), and started again on the same store. A child worker whose terminal
append got no answer checks the child: when the terminal is there it stops
without appending it again, as a crashed worker would, so the only one left
to deliver the outcome is the server's start (``listing/completions.py``).

Then every parent must hold exactly one result per call, answered by its own
child with the child's final answer: 0 lost, 0 doubled, on both backends.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc, records_pb2
from tests.conftest import new_stream_target
from tests.durability.harness import CALL_TIMEOUT_SECONDS, make_seed
from tests.servers import ServerProcess
from tests.support import builders as b

PARENTS = 8
CALLS_PER_PARENT = 4
KILLS = 20
CHILD_TURNS = 3
"""Records a child appends before its terminal (one append each): more moments for a kill to land."""
MAX_ACKS_BETWEEN_KILLS = 9
RETRYABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED}

T = TypeVar("T")


@dataclass
class Cluster:
    """The one server, killed and started again; calls go to whichever process is up."""

    server: ServerProcess
    rng: random.Random
    acked: int = 0
    kills: int = 0
    up: asyncio.Event = field(default_factory=asyncio.Event)
    progress: asyncio.Event = field(default_factory=asyncio.Event)
    channel: grpc.aio.Channel | None = None
    left_to_start: int = 0
    """Terminals stored without an answer to their append while the parent's call still waited: those only a
    start's pass (or a later touch) delivered."""
    old_channels: list[grpc.aio.Channel] = field(default_factory=list)
    """Channels to dead servers, closed at the end: closing one under its calls would cancel them."""

    def stub(self) -> journal_service_pb2_grpc.JournalServiceStub:
        if self.channel is None:
            self.channel = grpc.aio.insecure_channel(self.server.address)
        return journal_service_pb2_grpc.JournalServiceStub(self.channel)

    async def call(self, make: Callable[[journal_service_pb2_grpc.JournalServiceStub], Awaitable[T]]) -> T:
        """One call, retried through kills until the server answers it (a refusal is raised)."""
        while True:
            await self.up.wait()
            try:
                answer = await make(self.stub())
            except grpc.aio.AioRpcError as err:
                if err.code() not in RETRYABLE:
                    raise
                await self._wait_for_restart()
                continue
            self.acked += 1
            self.progress.set()
            return answer

    async def call_once(self, make: Callable[[journal_service_pb2_grpc.JournalServiceStub], Awaitable[T]]) -> T | None:
        """One attempt: None when the server died under it (whether the call landed is unknown)."""
        await self.up.wait()
        try:
            answer = await make(self.stub())
        except grpc.aio.AioRpcError as err:
            if err.code() not in RETRYABLE:
                raise
            await self._wait_for_restart()
            return None
        self.acked += 1
        self.progress.set()
        return answer

    async def _wait_for_restart(self) -> None:
        # The server is dead or restarting: the killer clears ``up`` before the kill, sets it once started.
        if self.up.is_set() and self.server.process is not None and self.server.process.poll() is None:
            return  # a transient failure of a live server: try again
        await self.up.wait()

    async def restart(self, *, kill: bool) -> None:
        self.up.clear()
        if kill:
            self.server.kill()
            self.kills += 1
        else:
            self.server.stop()
        if self.channel is not None:
            self.old_channels.append(self.channel)
            self.channel = None
        await asyncio.to_thread(self.server.start)
        self.up.set()

    async def killer(self, load_done: asyncio.Event) -> None:
        """``KILLS`` SIGKILLs, each after a random number of acknowledged calls (or at once when idle)."""
        while self.kills < KILLS:
            target = self.acked + self.rng.randint(1, MAX_ACKS_BETWEEN_KILLS)
            while self.acked < target and not load_done.is_set():
                self.progress.clear()
                await self.progress.wait()
            await self.restart(kill=True)


def parent_id(index: int) -> str:
    return f"parent-{index}"


def child_id(parent: int, call: int) -> str:
    return f"parent-{parent}-child-{call}"


def child_answer(parent: int, call: int) -> str:
    return f"answer of child {call} of parent {parent}"


def child_record(parent: int, call: int, seq: int) -> records_pb2.JournalRecord:
    """The child's record at ``seq`` (deterministic, so a retry is a verified duplicate)."""
    if seq < 2 + CHILD_TURNS:
        return b.note(seq, f"child {call} of parent {parent} works, step {seq}")
    if seq == 2 + CHILD_TURNS:
        return b.assistant(seq, 1, say=child_answer(parent, call))
    return b.terminal(seq, records_pb2.TERMINAL_REASON_COMPLETED, "done")


TERMINAL_SEQ = 3 + CHILD_TURNS


async def run_parent(cluster: Cluster, parent: int) -> None:
    run_id = parent_id(parent)
    calls = [f"call-{i}" for i in range(CALLS_PER_PARENT)]
    journal = [b.meta(run_id=run_id, prompt="delegate"), b.assistant(2, 1, calls)]
    request = pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=journal)
    await cluster.call(lambda stub: stub.AppendBatch(request, timeout=CALL_TIMEOUT_SECONDS))
    await asyncio.gather(*(run_child(cluster, parent, i, call) for i, call in enumerate(calls)))


async def run_child(cluster: Cluster, parent: int, index: int, call: str) -> None:
    child = child_id(parent, index)
    meta = b.meta(run_id="", prompt=f"do {call}").meta
    spawn = pb.SpawnRunRequest(run_id=parent_id(parent), tool_use_id=call, new_run_id=child, meta=meta)
    await cluster.call(lambda stub: stub.SpawnRun(spawn, timeout=CALL_TIMEOUT_SECONDS))
    fold = pb.FoldRequest(run_id=child)
    unanswered_terminal = False
    while True:
        state = (await cluster.call(lambda stub: stub.Fold(fold, timeout=CALL_TIMEOUT_SECONDS))).state
        if state.last_seq >= TERMINAL_SEQ:
            # The terminal is stored: a crashed worker would not come back to append it again.
            if unanswered_terminal:
                of_parent = pb.FoldRequest(run_id=parent_id(parent))
                parent_state = (await cluster.call(lambda stub, ask=of_parent: stub.Fold(ask))).state
                waits = [c for c in parent_state.pending.calls if c.tool_use.id == call and not c.answered]
                cluster.left_to_start += bool(waits)
            return
        record = child_record(parent, index, state.last_seq + 1)
        append = pb.AppendRequest(run_id=child, claim_token=1, record=record)
        acked = await cluster.call_once(lambda stub, append=append: stub.Append(append, timeout=CALL_TIMEOUT_SECONDS))
        unanswered_terminal = acked is None and record.HasField("terminal")


async def wait_answered(stub: journal_service_pb2_grpc.JournalServiceStub, run_id: str) -> None:
    """Until the parent has a result for every call, watched (the start's pass delivers in the background)."""
    answered: set[str] = set()
    watch = stub.Watch(pb.WatchRequest(run_id=run_id), timeout=CALL_TIMEOUT_SECONDS * 3)
    async for item in watch:
        if item.HasField("record") and item.record.record.HasField("tool_result"):
            answered.add(item.record.record.tool_result.tool_use_id)
        if len(answered) == CALLS_PER_PARENT:
            watch.cancel()
            return


async def results_of(stub: journal_service_pb2_grpc.JournalServiceStub, run_id: str) -> list[records_pb2.ToolResult]:
    read = stub.Read(pb.ReadRequest(run_id=run_id), timeout=CALL_TIMEOUT_SECONDS)
    return [item.record.tool_result async for item in read if item.record.HasField("tool_result")]


@contextlib.asynccontextmanager
async def running(server: ServerProcess, rng: random.Random) -> AsyncIterator[Cluster]:
    cluster = Cluster(server, rng)
    await asyncio.to_thread(server.start)
    cluster.up.set()
    try:
        yield cluster
    finally:
        for channel in [*cluster.old_channels, *([cluster.channel] if cluster.channel else [])]:
            await channel.close()
        server.stop()


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("backend", ["file", "jetstream"])
def test_every_parent_call_is_answered_exactly_once_across_20_sigkills(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    seed = make_seed()
    args: tuple[str, ...] = ()
    if backend == "jetstream":
        args = new_stream_target().server_args(request.getfixturevalue("nats_server").url)
    server = ServerProcess(tmp_path / "data", extra_args=args)
    rng = random.Random(seed)

    async def scenario() -> tuple[int, int, dict[str, list[records_pb2.ToolResult]]]:
        async with running(server, rng) as cluster:
            load_done = asyncio.Event()
            killer = asyncio.create_task(cluster.killer(load_done))
            await asyncio.gather(*(run_parent(cluster, parent) for parent in range(PARENTS)))
            load_done.set()
            cluster.progress.set()
            await killer
            await cluster.restart(kill=False)  # a last start: its pass finishes what the last kill interrupted
            for parent in range(PARENTS):
                await wait_answered(cluster.stub(), parent_id(parent))
            await cluster.restart(kill=False)  # and one more, whose pass must find nothing left to do
            stub = cluster.stub()
            found = {parent_id(p): await results_of(stub, parent_id(p)) for p in range(PARENTS)}
            return cluster.kills, cluster.left_to_start, found

    kills, left_to_start, found = asyncio.run(scenario())
    assert kills == KILLS, f"seed {seed}"
    lost, doubled = 0, 0
    for parent in range(PARENTS):
        per_call = Counter(result.tool_use_id for result in found[parent_id(parent)])
        lost += sum(1 for i in range(CALLS_PER_PARENT) if per_call[f"call-{i}"] == 0)
        doubled += sum(count - 1 for count in per_call.values() if count > 1)
        for result in found[parent_id(parent)]:
            index = int(result.tool_use_id.removeprefix("call-"))
            assert result.answered_by_run_id == child_id(parent, index), f"seed {seed}"
            assert [c.text.text for c in result.content] == [child_answer(parent, index)], f"seed {seed}"
    calls = PARENTS * CALLS_PER_PARENT
    print(
        f"\n{backend}: {kills} SIGKILLs, {calls} delegated calls, lost {lost}, doubled {doubled}, "
        f"{left_to_start} left to a start's pass, seed {seed}"
    )
    assert (lost, doubled) == (0, 0), f"seed {seed}"
