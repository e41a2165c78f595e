"""Row 12: ForkRun of a 10,000-record run against a cold read of it (Read of every record), on both backends.

A fork reads the source's records from the store (never the warm state: only
acknowledged, stored bytes are copied), hashes them, folds the whole fork
and creates it in one atomic creation (on JetStream, staged batches and a
commit: ``backends/jetstream/staging.py``). The baseline is what any cold
reader pays for the same run: ``Read`` of all 10,000 records, streamed and
consumed by the client. The two alternate, round by round, on the same
server and the same source; each fork makes a new 10,000-record run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from bench import jetstream, load, processes, workload
from bench.harness import LOWER, Context, Row, median, unavailable
from runjournal.v1 import journal_service_pb2 as service_pb
from runjournal.v1 import journal_service_pb2_grpc

SECTION = 12
RECORDS = 10_000
BATCH = 1_000
ROW_NAME = "ForkRun of a 10,000-record run ({backend})"


def run(ctx: Context) -> list[Row]:
    rows = [_measure_on(ctx, "file", lambda: processes.runjournal(ctx.new_dir("fork-data"), ctx.work_dir).start())]
    ok, why = jetstream.available()
    if not ok:
        return [*rows, unavailable(SECTION, ROW_NAME.format(backend="JetStream"), f"not available: {why}")]
    try:
        with jetstream._wire(ctx) as (start_server, _):
            rows.append(_measure_on(ctx, "JetStream", start_server))
    except jetstream.JetStreamUnavailableError as err:
        rows.append(unavailable(SECTION, ROW_NAME.format(backend="JetStream"), f"not available here: {err}"))
    return rows


def _measure_on(ctx: Context, backend: str, start: Callable[[], processes.Process]) -> Row:
    ctx.log(f"fork: {backend}")
    server = start()
    try:
        forks, reads = asyncio.run(_rounds(server.address, ctx.settings.rounds))
    finally:
        server.stop()
    return Row(
        SECTION,
        ROW_NAME.format(backend=backend),
        median(forks),
        "ms",
        f"Read of all {RECORDS:,} records",
        median(reads),
        LOWER,
        samples={"figure": forks, "baseline": reads},
    )


async def _rounds(address: str, rounds: int, records: int = RECORDS) -> tuple[list[float], list[float]]:
    source = "fork-source"
    forks: list[float] = []
    reads: list[float] = []
    async with load.channel(address) as chan:
        stub = journal_service_pb2_grpc.JournalServiceStub(chan)
        for first in range(1, records + 1, BATCH):
            request = workload.batch_request(source, first, min(BATCH, records - first + 1))
            await stub.AppendBatch(request, timeout=load.RPC_TIMEOUT_SECONDS)
        for round_number in range(rounds + 1):  # the first round warms both paths up and is not counted
            began = time.perf_counter()
            count = 0
            async for _ in stub.Read(service_pb.ReadRequest(run_id=source), timeout=load.RPC_TIMEOUT_SECONDS):
                count += 1
            read_ms = (time.perf_counter() - began) * 1000
            assert count == records, count
            began = time.perf_counter()
            answer = await stub.ForkRun(
                service_pb.ForkRunRequest(run_id=source, new_run_id=f"fork-{round_number}"),
                timeout=load.RPC_TIMEOUT_SECONDS,
            )
            fork_ms = (time.perf_counter() - began) * 1000
            assert answer.last_seq == records, answer
            if round_number:
                reads.append(read_ms)
                forks.append(fork_ms)
    return forks, reads
