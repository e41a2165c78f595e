"""Row 7: server RSS after many runs were touched, against an idle fresh server.

A fresh server on an empty data dir; its VmRSS (``/proc/PID/status``) right
after it is ready is the baseline. Then 64 concurrent workers create runs
(meta) and append one record to each, 10,000 runs in full mode, and VmRSS is
read again (target <= 300 MiB). A second figure adds a full ListRuns pass
over the same runs, which fills the server's meta cache for every run.
"""

from __future__ import annotations

import asyncio

from bench import load, processes, workload
from bench.harness import LOWER, Context, Row, figure_target
from runjournal.v1 import journal_service_pb2 as service_pb

SECTION = 7
RSS_TARGET_MIB = 300.0
WORKERS = 64
MIB = 1024 * 1024


def run(ctx: Context) -> list[Row]:
    runs = ctx.settings.memory_runs
    data_dir = ctx.new_dir("memory-data")
    with processes.runjournal(data_dir, ctx.work_dir, profile_dir=ctx.profile_dir, label="memory") as server:
        idle = server.rss_bytes()
        ctx.log(f"memory: touching {runs:,} runs")
        asyncio.run(_touch(server.address, runs))
        touched = server.rss_bytes()
        asyncio.run(_list_all(server.address))
        listed = server.rss_bytes()
        peak = _peak(server)
    rows = [
        figure_target(
            Row(
                SECTION,
                f"server RSS after {runs:,} runs created + appended",
                touched / MIB,
                "MiB",
                "idle fresh server",
                idle / MIB,
                LOWER,
                note=f"peak (VmHWM) {peak / MIB:.0f} MiB",
            ),
            "<=",
            RSS_TARGET_MIB,
        ),
        Row(
            SECTION,
            f"server RSS after that and a full ListRuns pass over {runs:,} runs",
            listed / MIB,
            "MiB",
            "idle fresh server",
            idle / MIB,
            LOWER,
        ),
    ]
    return rows


def _peak(server: processes.Process) -> int:
    with open(f"/proc/{server.pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


async def _touch(address: str, runs: int) -> None:
    pending = list(reversed(range(runs)))
    async with load.channel(address) as chan:
        append = load.method(chan, "Append", service_pb.AppendResponse)

        async def worker() -> None:
            while pending:
                run_id = f"mem-{pending.pop():05d}"
                for seq in (1, 2):
                    await append(workload.append_request(run_id, seq), timeout=load.RPC_TIMEOUT_SECONDS)

        await asyncio.gather(*(worker() for _ in range(min(WORKERS, runs))))


async def _list_all(address: str) -> int:
    count = 0
    token = ""
    async with load.channel(address) as chan:
        list_runs = load.method(chan, "ListRuns", service_pb.ListRunsResponse)
        for _ in range(1_000_000):  # bounded: far more pages than any data set here
            response = await list_runs(
                service_pb.ListRunsRequest(page_size=1000, page_token=token), timeout=load.RPC_TIMEOUT_SECONDS
            )
            count += len(response.runs)
            token = response.next_page_token
            if not token:
                break
    return count
