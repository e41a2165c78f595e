"""Eight workers claim one run at once, fifty times over, each writing a turn as soon as it holds the run.

Fifty more rounds are a relay: each worker claims as soon as the previous one
holds the run, so every claim races the previous holder's turn.

Every worker, right after its Claim returns, appends its turn (finish the
pending call it inherited, then an assistant call, its result and a note),
as one batch or as single appends, while the others claim around it. After
each round exactly one worker holds the run (the latest claim), every other
worker's next append is refused RUN_CLAIMED, and the journal read back shows
that between two claims only the holder of the first one wrote: turns never
interleave.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections import Counter
from dataclasses import dataclass, field

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc, records_pb2
from runjournal_server.core import records
from tests.durability.harness import CALL_TIMEOUT_SECONDS, error_info, make_seed, memory_data_dir, reason
from tests.servers import ServerProcess
from tests.support import builders as b

WORKERS = 8
ROUNDS = 50
RUN_ID = "contested"
TAG = re.compile(r"^(w\d+) r(\d+) ")


@dataclass
class Worker:
    name: str
    stub: journal_service_pb2_grpc.JournalServiceStub
    token: int = 0
    acked: dict[int, bytes] = field(default_factory=dict)
    refusals: int = 0

    def tag(self, round_number: int, what: str) -> str:
        return f"{self.name} r{round_number} {what}"

    def turn(self, response: pb.ClaimResponse, round_number: int) -> list[records_pb2.JournalRecord]:
        """The records this worker writes after its claim, built from the state the claim returned."""
        seq = response.last_seq + 1
        turn = []
        state = response.state
        for call in state.pending.calls if state.HasField("pending") else ():
            if not call.answered:
                # An earlier holder's call that never got its result: close it, as a resume would.
                turn.append(b.result(seq, call.tool_use.id, self.tag(round_number, "closes"), is_error=True))
                seq += 1
        call_id = f"{self.name}-r{round_number}"
        turn.append(b.assistant(seq, state.next_iteration, [call_id], say=self.tag(round_number, "asks")))
        turn.append(b.result(seq + 1, call_id, self.tag(round_number, "answers")))
        turn.append(b.note(seq + 2, self.tag(round_number, "notes")))
        return turn

    async def claim_and_write(
        self, round_number: int, after: asyncio.Event | None = None, claimed: asyncio.Event | None = None
    ) -> None:
        """Claim (in a relay round: once ``after`` is set, then set ``claimed``), then write the turn."""
        if after is not None:
            await asyncio.wait_for(after.wait(), CALL_TIMEOUT_SECONDS)
        request = pb.ClaimRequest(
            run_id=RUN_ID, worker_id=self.name, host="h", pid=round_number, reason=f"r{round_number}",
            fingerprint=b.fingerprint(),
        )  # fmt: skip
        try:
            response = await self.stub.Claim(request, timeout=CALL_TIMEOUT_SECONDS)
        finally:
            if claimed is not None:
                claimed.set()
        self.token = response.claim_token
        turn = self.turn(response, round_number)
        as_batch = (round_number + int(self.name[1:])) % 2 == 0
        try:
            if as_batch:
                batch = pb.AppendBatchRequest(run_id=RUN_ID, claim_token=self.token, records=turn)
                await self.stub.AppendBatch(batch, timeout=CALL_TIMEOUT_SECONDS)
                self.acked.update((r.seq, records.encode(r).line) for r in turn)
            else:
                for record in turn:
                    single = pb.AppendRequest(run_id=RUN_ID, claim_token=self.token, record=record)
                    await self.stub.Append(single, timeout=CALL_TIMEOUT_SECONDS)
                    self.acked[record.seq] = records.encode(record).line
        except grpc.aio.AioRpcError as err:
            # The only acceptable refusal: someone claimed the run after us.
            assert reason(err) == "RUN_CLAIMED", (self.name, round_number, err.code(), err.details())
            info = error_info(err)
            assert info is not None and int(info.metadata["claim_token"]) > self.token, info
            self.refusals += 1


def owner(record: records_pb2.JournalRecord) -> tuple[str, int]:
    """(worker, round) from the tag every worker puts in the text of what it writes."""
    which = record.WhichOneof("payload")
    text = record.note.text if which == "note" else getattr(record, which).content[0].text.text
    match = TAG.match(text)
    assert match, record
    return match.group(1), int(match.group(2))


async def test_eight_claimants_fifty_rounds_one_holder_and_no_interleaved_turns(tmp_path):
    seed = make_seed()
    print(f"claimants: seed {seed} (set RUNJOURNAL_TEST_SEED={seed} to replay)")
    with memory_data_dir(tmp_path) as data_dir:
        server = ServerProcess(data_dir).start()
        try:
            await contest(server, seed)
            assert server.stop() == 0, server.log()
        finally:
            if server.process is not None and server.process.poll() is None:
                server.kill()


async def contest(server: ServerProcess, seed: int) -> None:
    channels = [grpc.aio.insecure_channel(server.address) for _ in range(WORKERS)]
    try:
        workers = [Worker(f"w{i}", journal_service_pb2_grpc.JournalServiceStub(c)) for i, c in enumerate(channels)]
        stub = workers[0].stub
        await stub.Append(pb.AppendRequest(run_id=RUN_ID, record=b.meta(run_id=RUN_ID)), timeout=CALL_TIMEOUT_SECONDS)
        holders = []
        rng = random.Random(seed)
        for round_number in range(2 * ROUNDS):
            order = rng.sample(workers, len(workers))
            if round_number < ROUNDS:
                # All at once: the server serialises the claims in whatever order they arrive.
                await asyncio.gather(*(w.claim_and_write(round_number) for w in order))
            else:
                # A relay: each claims as soon as the previous one holds the run, racing its turn.
                events = [asyncio.Event() for _ in order]
                events[0].set()
                relay = [
                    w.claim_and_write(round_number, events[i], events[i + 1] if i + 1 < len(order) else None)
                    for i, w in enumerate(order)
                ]
                await asyncio.gather(*relay)
            state = (await stub.Fold(pb.FoldRequest(run_id=RUN_ID), timeout=CALL_TIMEOUT_SECONDS)).state
            [holder] = [w for w in workers if w.token == state.claim_token]
            assert state.claimed_by == holder.name
            assert holder.token == max(w.token for w in workers)
            # Nobody claimed after the holder, so its whole turn landed right after its claim.
            turn = range(holder.token + 1, state.last_seq + 1)
            assert len(turn) >= 3 and all(seq in holder.acked for seq in turn), (round_number, holder.name)
            holders.append(holder.name)
            # Every stale holder is refused at its next append and told who holds the run.
            for worker in workers:
                if worker is holder:
                    continue
                request = pb.AppendRequest(
                    run_id=RUN_ID, claim_token=worker.token, record=b.note(state.last_seq + 1, "stale")
                )
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await worker.stub.Append(request, timeout=CALL_TIMEOUT_SECONDS)
                assert reason(caught.value) == "RUN_CLAIMED"
                info = error_info(caught.value)
                assert info is not None
                assert (info.metadata["claimed_by"], info.metadata["claim_token"]) == (holder.name, str(holder.token))
        stored = [r async for r in stub.Read(pb.ReadRequest(run_id=RUN_ID), timeout=CALL_TIMEOUT_SECONDS)]
    finally:
        await asyncio.gather(*(c.close() for c in channels))
    check_journal(stored, workers, holders)


def check_journal(stored: list[pb.ReadResponse], workers: list[Worker], holders: list[str]) -> None:
    """Between two claims, only the first claim's worker wrote, in that claim's round; acks are all there."""
    assert [r.record.seq for r in stored] == list(range(1, len(stored) + 1))
    claims = 0
    holder: tuple[str, int] | None = None
    segments: Counter[str] = Counter()  # what each claim's holder got written before the next claim
    written = 0
    for response in [*stored[1:], None]:
        record = response.record if response is not None else None
        if record is None or record.WhichOneof("payload") == "claim":
            if holder is not None:
                segments["nothing" if not written else "a whole turn" if written >= 3 else "part of a turn"] += 1
            if record is None:
                break
            holder = (record.claim.worker_id, int(record.claim.reason.removeprefix("r")))
            claims += 1
            written = 0
            continue
        assert holder is not None and owner(record) == holder, (record.seq, owner(record), holder)
        written += 1
    assert claims == WORKERS * 2 * ROUNDS
    for worker in workers:
        for seq, line in worker.acked.items():
            assert stored[seq - 1].stored_line == line, (worker.name, seq)
    refusals = sum(w.refusals for w in workers)
    print(
        f"claimants: {ROUNDS} rounds all at once + {ROUNDS} relay rounds x {WORKERS} workers, "
        f"{claims} claims, {len(stored)} records; "
        f"{refusals} turns cut short by a later claim (RUN_CLAIMED), {len(set(holders))} distinct final holders; "
        f"between claims: {dict(segments)}"
    )
