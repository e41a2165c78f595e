"""The fault suite's workload: workers, claimers and a reader through two runjournal replicas, and their ledger.

Workers create runs and append to them one record at a time or in batches
(AppendBatch), through either replica, then leave each run as it is, delete
it, or fork it. Claimers take runs over from the workers (Claim, then a few
appends with their token), so a worker is refused RUN_CLAIMED at its next
append. A reader lists and reads. Every call is made as a worker following
the proto's advice would make it: an answer that says "nothing was
acknowledged, resend" (transport UNAVAILABLE or DEADLINE_EXCEEDED without an
ErrorInfo, or STORAGE_UNAVAILABLE) is resent, the very same request, to the
next replica, until the operation's deadline; anything else is the answer.

The ``Ledger`` keeps what the checker needs: each acknowledged record (its
run, seq, canonical bytes, the claim token it was written under, and when),
the claims acknowledged, the runs deleted and forked, and every refusal a
correct worker should never get.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc, records_pb2
from runjournal_server.core import records as codec
from tests.durability.harness import error_info
from tests.servers import ServerProcess
from tests.support import builders as b

ATTEMPT_SECONDS = 10.0
"""Each attempt's deadline: the Python client's default."""
OPERATION_SECONDS = 60.0
"""How long a worker keeps resending one operation before it gives up (and the ledger counts it surfaced)."""
RESEND_PAUSE_SECONDS = (0.1, 0.5)
RESENT_REASONS = frozenset({"STORAGE_UNAVAILABLE"})
"""The ErrorInfo reasons the proto tells a worker to resend (its transport failures carry none)."""


@dataclass
class Ack:
    run_id: str
    seq: int
    line: bytes
    token: int
    at: float
    replica: int
    waited: float
    """Seconds from the operation's first attempt to this acknowledgement."""


@dataclass
class Ledger:
    """What the workload was told (see the module docstring)."""

    acks: list[Ack] = field(default_factory=list)
    claims: dict[str, list[int]] = field(default_factory=dict)
    """Run id -> the claim tokens acknowledged to claimers."""
    deleted: set[str] = field(default_factory=set)
    maybe_deleted: set[str] = field(default_factory=set)
    """Runs a DeleteRun was sent for, answered or not: such a run may read as RUN_DELETED."""
    forks: dict[str, tuple[str, int]] = field(default_factory=dict)
    """New run id -> (source run, at seq)."""
    refused: list[str] = field(default_factory=list)
    """Refusals a correct worker should never get (SEQ_GAP, a conflict on a run nobody else wrote)."""
    surfaced: Counter[str] = field(default_factory=Counter)
    """Operations that gave up after resending until their deadline, by the last reason."""
    resent: Counter[str] = field(default_factory=Counter)
    """Attempts resent, by reason."""
    last_refusal_by: dict[int, int] = field(default_factory=dict)

    def refuse(self, text: str, err: grpc.aio.AioRpcError) -> None:
        """Note a refusal a correct worker should never get, with the replica that gave it and when."""
        replica = self.last_refusal_by.pop(id(err), -1)
        self.refused.append(f"{text} (replica {replica}, at {time.monotonic():.1f})")

    def ack(self, run_id: str, lines: Sequence[tuple[int, bytes]], token: int, replica: int, waited: float) -> None:
        now = time.monotonic()
        self.acks.extend(Ack(run_id, seq, line, token, now, replica, waited) for seq, line in lines)


class Replicas:
    """The two runjournal replicas and a channel to each; a replica restarted on a new port gets a new channel."""

    def __init__(self, servers: list[ServerProcess]) -> None:
        self.servers = servers
        self._channels: list[grpc.aio.Channel | None] = [None] * len(servers)
        self._stubs: list[journal_service_pb2_grpc.JournalServiceStub | None] = [None] * len(servers)

    def stub(self, index: int) -> journal_service_pb2_grpc.JournalServiceStub:
        stub = self._stubs[index]
        if stub is None:
            channel = grpc.aio.insecure_channel(self.servers[index].address)
            self._channels[index] = channel
            stub = self._stubs[index] = journal_service_pb2_grpc.JournalServiceStub(channel)
        return stub

    async def restart(self, index: int) -> None:
        """Start a killed replica again (on a new port), then point its channel there."""
        await asyncio.to_thread(self.servers[index].start)
        channel, self._channels[index], self._stubs[index] = self._channels[index], None, None
        if channel is not None:
            await channel.close()

    async def close(self) -> None:
        for channel in self._channels:
            if channel is not None:
                await channel.close()


class Caller:
    """Makes one operation as a careful worker does: resent to the next replica while nothing was acknowledged."""

    def __init__(self, replicas: Replicas, ledger: Ledger, rng: random.Random) -> None:
        self._replicas = replicas
        self._ledger = ledger
        self._rng = rng

    async def call(
        self, make: Callable[[journal_service_pb2_grpc.JournalServiceStub], object], op: str = "call"
    ) -> tuple[object, int]:
        """The answer and the replica that gave it; raises the refusal (``grpc.aio.AioRpcError``) otherwise.

        ``op`` names the operation in the ledger's counts of resends and of operations given up.
        """
        replica = self._rng.randrange(len(self._replicas.servers))
        started = time.monotonic()
        while True:
            try:
                answer = await make(self._replicas.stub(replica))  # type: ignore[misc]
                return answer, replica
            except grpc.aio.AioRpcError as err:
                why = _resend_reason(err)
                if why is None:
                    self._ledger.last_refusal_by[id(err)] = replica  # which replica refused, for the report
                    raise
                if time.monotonic() - started > OPERATION_SECONDS:
                    self._ledger.surfaced[f"{op}: {why}"] += 1
                    raise
                self._ledger.resent[f"{op}: {why}"] += 1
            replica = (replica + 1) % len(self._replicas.servers)
            await asyncio.sleep(self._rng.uniform(*RESEND_PAUSE_SECONDS))


def _resend_reason(err: grpc.aio.AioRpcError) -> str | None:
    info = error_info(err)
    if info is None:
        if err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            return f"transport {err.code().name}"
        return None
    return info.reason if info.reason in RESENT_REASONS else None


def reason_of(err: grpc.aio.AioRpcError) -> str:
    info = error_info(err)
    return info.reason if info is not None else err.code().name


class Worker:
    """Creates runs and writes them (see the module docstring) until ``stop`` is set."""

    def __init__(self, name: str, caller: Caller, ledger: Ledger, active: dict[str, int], rng: random.Random) -> None:
        self._name = name
        self._caller = caller
        self._ledger = ledger
        self._active = active
        """Run id -> last seq, shared with the claimers: the runs a worker is writing now."""
        self._rng = rng
        self._runs = 0

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self._runs += 1
            run_id = f"{self._name}-r{self._runs}"
            try:
                await self._write_run(run_id, stop)
            finally:
                self._active.pop(run_id, None)

    async def _write_run(self, run_id: str, stop: asyncio.Event) -> None:
        if not await self._append(run_id, [b.meta(run_id=run_id, prompt=f"prompt of {run_id}")], token=1):
            return
        self._active[run_id] = 1
        last, length = 1, self._rng.randint(6, 24)
        while last < length and not stop.is_set():
            count = 1 if self._rng.random() < 0.75 else self._rng.randint(2, 4)
            batch = [b.note(seq, f"{run_id} record {seq}") for seq in range(last + 1, last + 1 + count)]
            if not await self._append(run_id, batch, token=1):
                return  # claimed by a claimer (or refused: in the ledger)
            last += count
            self._active[run_id] = last
        self._active.pop(run_id, None)
        ending = self._rng.random()
        if ending < 0.2:
            await self._delete(run_id, last)
        elif ending < 0.4:
            await self._fork(run_id, self._rng.randint(1, last))

    async def _append(self, run_id: str, batch: list[records_pb2.JournalRecord], token: int) -> bool:
        """True once acknowledged; False when the run was taken over (RUN_CLAIMED) or refused (in the ledger)."""
        started = time.monotonic()
        try:
            if len(batch) == 1:
                request = pb.AppendRequest(run_id=run_id, claim_token=token, record=batch[0])
                op = "Append (creating)" if batch[0].seq == 1 else "Append"
                _, replica = await self._caller.call(lambda stub: stub.Append(request, timeout=ATTEMPT_SECONDS), op)
            else:
                many = pb.AppendBatchRequest(run_id=run_id, claim_token=token, records=batch)
                _, replica = await self._caller.call(
                    lambda stub: stub.AppendBatch(many, timeout=ATTEMPT_SECONDS), "AppendBatch"
                )
        except grpc.aio.AioRpcError as err:
            why = reason_of(err)
            if why == "RUN_CLAIMED" or (why == "SEQ_CONFLICT" and run_id in self._ledger.claims):
                return False  # a claimer took the run over: exactly what a claim is for
            if why != "STORAGE_UNAVAILABLE" and not why.startswith("DEADLINE"):
                self._ledger.refuse(f"{run_id} seq {batch[0].seq}: {why}: {err.details()}", err)
            return False
        lines = [(record.seq, codec.encode(record).line) for record in batch]
        self._ledger.ack(run_id, lines, token, replica, time.monotonic() - started)
        return True

    async def _delete(self, run_id: str, last: int) -> None:
        request = pb.DeleteRunRequest(run_id=run_id, expected_last_seq=last)
        # Indeterminate until answered: an attempt whose answer was lost may have deleted it (Jepsen's "info").
        self._ledger.maybe_deleted.add(run_id)
        try:
            await self._caller.call(lambda stub: stub.DeleteRun(request, timeout=ATTEMPT_SECONDS), "DeleteRun")
        except grpc.aio.AioRpcError as err:
            if reason_of(err) not in ("LAST_SEQ_MISMATCH", "STORAGE_UNAVAILABLE"):
                self._ledger.refuse(f"delete {run_id}: {reason_of(err)}: {err.details()}", err)
            return
        self._ledger.deleted.add(run_id)

    async def _fork(self, run_id: str, at_seq: int) -> None:
        new_run_id = f"{run_id}-fork"
        request = pb.ForkRunRequest(run_id=run_id, at_seq=at_seq, new_run_id=new_run_id)
        try:
            await self._caller.call(lambda stub: stub.ForkRun(request, timeout=ATTEMPT_SECONDS), "ForkRun")
        except grpc.aio.AioRpcError as err:
            if reason_of(err) == "RUN_EXISTS":  # a resent fork whose first attempt landed
                self._ledger.forks[new_run_id] = (run_id, at_seq)
            elif reason_of(err) != "STORAGE_UNAVAILABLE":
                self._ledger.refuse(f"fork {run_id}: {reason_of(err)}: {err.details()}", err)
            return
        self._ledger.forks[new_run_id] = (run_id, at_seq)


class Claimer:
    """Takes a run a worker is writing over, and appends a few records under its own token."""

    def __init__(self, name: str, caller: Caller, ledger: Ledger, active: dict[str, int], rng: random.Random) -> None:
        self._name = name
        self._caller = caller
        self._ledger = ledger
        self._active = active
        self._rng = rng

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await asyncio.sleep(self._rng.uniform(0.5, 1.5))
            candidates = sorted(run_id for run_id, last in self._active.items() if last >= 2)
            if candidates:
                await self._take_over(self._rng.choice(candidates))

    async def _take_over(self, run_id: str) -> None:
        request = pb.ClaimRequest(
            run_id=run_id,
            worker_id=self._name,
            host="fault-suite",
            pid=1,
            reason="take over",
            fingerprint=b.fingerprint(),
        )
        self._ledger.claims.setdefault(run_id, [])  # from now on a conflict for the worker is this claim's doing
        started = time.monotonic()
        try:
            answer, replica = await self._caller.call(
                lambda stub: stub.Claim(request, timeout=ATTEMPT_SECONDS), "Claim"
            )
        except grpc.aio.AioRpcError as err:
            if reason_of(err) not in ("STORAGE_UNAVAILABLE", "RUN_DELETED"):
                self._ledger.refuse(f"claim {run_id}: {reason_of(err)}: {err.details()}", err)
            return
        token = int(answer.claim_token)  # type: ignore[attr-defined]
        self._ledger.claims[run_id].append(token)
        notice = records_pb2.ClaimNotice(worker_id=self._name, host="fault-suite", pid=1, reason="take over")
        claim = codec.encode(records_pb2.JournalRecord(seq=token, claim=notice)).line
        self._ledger.ack(run_id, [(token, claim)], token, replica, time.monotonic() - started)
        last = int(answer.last_seq)  # type: ignore[attr-defined]
        for seq in range(last + 1, last + 1 + self._rng.randint(1, 3)):
            record = b.note(seq, f"{run_id} record {seq} by {self._name}")
            append = pb.AppendRequest(run_id=run_id, claim_token=token, record=record)
            started = time.monotonic()
            try:
                _, replica = await self._caller.call(
                    lambda stub, append=append: stub.Append(append, timeout=ATTEMPT_SECONDS), "Append (claimer)"
                )
            except grpc.aio.AioRpcError as err:
                if reason_of(err) not in ("RUN_CLAIMED", "RUN_DELETED", "STORAGE_UNAVAILABLE"):
                    self._ledger.refuse(f"{run_id} seq {seq} by {self._name}: {reason_of(err)}: {err.details()}", err)
                return
            self._ledger.ack(run_id, [(seq, codec.encode(record).line)], token, replica, time.monotonic() - started)


class Reader:
    """Lists and reads through both replicas while the others write: load, and reads during the faults."""

    def __init__(self, caller: Caller, active: dict[str, int], rng: random.Random) -> None:
        self._caller = caller
        self._active = active
        self._rng = rng

    async def run(self, stop: asyncio.Event) -> None:
        listing = pb.ListRunsRequest(page_size=50)
        while not stop.is_set():
            await asyncio.sleep(0.3)
            try:
                await self._caller.call(lambda stub: stub.ListRuns(listing, timeout=ATTEMPT_SECONDS), "ListRuns")
                runs = sorted(self._active)
                if runs:
                    read = pb.ReadRequest(run_id=self._rng.choice(runs))
                    await self._caller.call(
                        lambda stub, read=read: _drain(stub.Read(read, timeout=ATTEMPT_SECONDS)), "Read"
                    )
            except grpc.aio.AioRpcError:
                continue  # reads of a run deleted meanwhile, or given up: the checker reads everything at the end


async def _drain(call: object) -> int:
    count = 0
    async for _ in call:  # type: ignore[attr-defined]
        count += 1
    return count


def replica_args(urls: Sequence[str], stream: str, prefix: str, *, create: bool) -> tuple[str, ...]:
    """``runjournal serve`` flags of a replica on the cluster (the first one creates the R3 stream)."""
    args = ["--backend", "jetstream", "--nats-url", ",".join(urls), "--stream", stream, "--nats-subject-prefix", prefix]
    if create:
        args += ["--create-stream", "--replicas", "3"]
    return tuple(args)


def replica_process(base: Path, index: int, args: tuple[str, ...]) -> ServerProcess:
    home = base / f"replica-{index}"
    home.mkdir(parents=True, exist_ok=True)
    return ServerProcess(home / "data", extra_args=args)
