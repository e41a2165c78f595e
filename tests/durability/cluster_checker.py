"""The fault suite's checker, in the style of Jepsen's: what the workload was told against what the store holds.

Run once the faults are healed, through both replicas:

* **lost**: an acknowledged record not read back with identical bytes, at
  its seq, through either replica (runs deleted on purpose excepted);
* **doubled**: a seq acknowledged with two different records;
* **gaps**: a run whose records, read back, are not exactly seqs 1..N, or
  that reads differently through the two replicas;
* **stale tokens**: an acknowledged append whose claim token was not the
  run's latest claim at its seq (claims must be exclusive);
* **forks** must hold their source's bytes up to the fork point, **deleted**
  runs must read as RUN_DELETED through both replicas;
* **listings**: every page of ListRuns, through each replica, must be the same.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import grpc

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc
from runjournal_server.core import records as codec
from tests.durability.cluster_workload import Ledger, reason_of

CALL_SECONDS = 30.0


@dataclass
class Verdict:
    acknowledged: int = 0
    runs: int = 0
    lost: list[str] = field(default_factory=list)
    doubled: list[str] = field(default_factory=list)
    gaps: list[str] = field(default_factory=list)
    stale_tokens: list[str] = field(default_factory=list)
    forks: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    listings_differ: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        return [
            *self.lost,
            *self.doubled,
            *self.gaps,
            *self.stale_tokens,
            *self.forks,
            *self.deleted,
            *self.listings_differ,
        ]


async def check(ledger: Ledger, stubs: list[journal_service_pb2_grpc.JournalServiceStub]) -> Verdict:
    verdict = Verdict()
    acked: dict[str, dict[int, set[bytes]]] = defaultdict(lambda: defaultdict(set))
    for ack in ledger.acks:
        acked[ack.run_id][ack.seq].add(ack.line)
    verdict.acknowledged = sum(len(lines) for seqs in acked.values() for lines in seqs.values())
    for run_id, seqs in sorted(acked.items()):
        for seq, lines in sorted(seqs.items()):
            if len(lines) > 1:
                verdict.doubled.append(f"{run_id} seq {seq}: {len(lines)} different records acknowledged")
    stored: dict[str, list[bytes]] = {}
    for run_id in sorted(set(acked) | set(ledger.forks)):
        if run_id in ledger.deleted:
            await _check_deleted(run_id, stubs, verdict)
            continue
        lines = await _read_through_both(run_id, stubs, verdict, maybe_deleted=run_id in ledger.maybe_deleted)
        if lines is None:
            continue
        stored[run_id] = lines
        verdict.runs += 1
        for seq, expected in sorted(acked.get(run_id, {}).items()):
            if seq > len(lines) or lines[seq - 1] not in expected:
                verdict.lost.append(f"{run_id} seq {seq}: acknowledged, not read back with the same bytes")
    _check_tokens(ledger, stored, verdict)
    _check_forks(ledger, stored, verdict)
    await _check_listings(stubs, verdict)
    return verdict


async def _read_through_both(
    run_id: str, stubs: list[journal_service_pb2_grpc.JournalServiceStub], verdict: Verdict, *, maybe_deleted: bool
) -> list[bytes] | None:
    """The run's stored lines, the same through both replicas; None when it cannot be read (in the verdict).

    A run whose DeleteRun went unanswered may have been deleted by it: RUN_DELETED through both is then
    no loss (its acknowledged records were deleted on purpose).
    """
    reads: list[list[tuple[int, bytes]]] = []
    for index, stub in enumerate(stubs):
        try:
            call = stub.Read(pb.ReadRequest(run_id=run_id), timeout=CALL_SECONDS)
            reads.append([(item.seq, bytes(item.stored_line)) async for item in call])
        except grpc.aio.AioRpcError as err:
            if maybe_deleted and reason_of(err) == "RUN_DELETED":
                await _check_deleted(run_id, stubs, verdict)
                return None
            verdict.lost.append(f"{run_id}: reading it through replica {index}: {reason_of(err)}: {err.details()}")
            return None
    if reads[0] != reads[1]:
        verdict.gaps.append(f"{run_id}: the two replicas read it differently")
    seqs = [seq for seq, _ in reads[0]]
    if seqs != list(range(1, len(seqs) + 1)):
        verdict.gaps.append(f"{run_id}: seqs {seqs[:3]}...{seqs[-3:]} are not 1..{len(seqs)}")
    return [line for _, line in reads[0]]


async def _check_deleted(
    run_id: str, stubs: list[journal_service_pb2_grpc.JournalServiceStub], verdict: Verdict
) -> None:
    for index, stub in enumerate(stubs):
        try:
            call = stub.Read(pb.ReadRequest(run_id=run_id), timeout=CALL_SECONDS)
            async for _ in call:
                pass
            verdict.deleted.append(f"{run_id}: deleted, but replica {index} still reads it")
        except grpc.aio.AioRpcError as err:
            if reason_of(err) != "RUN_DELETED":
                verdict.deleted.append(f"{run_id}: deleted, replica {index} says {reason_of(err)}")


def _check_tokens(ledger: Ledger, stored: dict[str, list[bytes]], verdict: Verdict) -> None:
    """Each acknowledged append's token was the run's latest claim (1: its creator) at the append's seq."""
    claims: dict[str, list[int]] = {}
    for run_id, lines in stored.items():
        claims[run_id] = [seq for seq, line in enumerate(lines, start=1) if codec.decode(line).kind == codec.Kind.CLAIM]
    for ack in ledger.acks:
        if ack.run_id not in stored or ack.seq == ack.token:
            continue  # a claim record itself is its token
        latest = max([seq for seq in claims[ack.run_id] if seq < ack.seq], default=1)
        if ack.token != latest:
            verdict.stale_tokens.append(
                f"{ack.run_id} seq {ack.seq}: acknowledged under token {ack.token}, the run's claim there was {latest}"
            )


def _check_forks(ledger: Ledger, stored: dict[str, list[bytes]], verdict: Verdict) -> None:
    for fork, (source, at_seq) in sorted(ledger.forks.items()):
        if fork not in stored or source not in stored:
            if source not in ledger.deleted and source not in ledger.maybe_deleted:
                verdict.forks.append(f"{fork}: fork of {source} at {at_seq} not readable")
            continue
        if stored[fork][1:at_seq] != stored[source][1:at_seq] or len(stored[fork]) < at_seq:
            verdict.forks.append(f"{fork}: records 2..{at_seq} differ from {source}'s")


async def _check_listings(stubs: list[journal_service_pb2_grpc.JournalServiceStub], verdict: Verdict) -> None:
    listings = []
    for stub in stubs:
        runs: list[tuple[str, int, int]] = []
        token = ""
        while True:
            page = await stub.ListRuns(pb.ListRunsRequest(page_size=500, page_token=token), timeout=CALL_SECONDS)
            runs += [(summary.run_id, summary.status, summary.last_seq) for summary in page.runs]
            token = page.next_page_token
            if not token:
                break
        listings.append(runs)
    if listings[0] != listings[1]:
        only = set(listings[0]) ^ set(listings[1])
        verdict.listings_differ.append(f"ListRuns differs between the replicas: {sorted(only)[:6]}")
