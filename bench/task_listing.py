"""Row 17: ListTasks at 10,000 tasks on the task index, against one GetTask in the same run (file backend).

Beside the run listing (rows 6 and 15): 10,000 tasks are submitted, every
third completed with a result (none failed). Then, after a restart (the kept
index loaded, as after a deploy), the first ListTasks page, the same page
again, and a ``state=FAILED`` filter that matches none are timed, each
against the median of ``SAMPLES`` GetTask calls (one task's documents read):
a listing that read every document would cost about 10,000 of them. Before
issue 28 the first page took 7.7 s and the empty filter 7.3 s at 10,000
tasks.

``python -m bench.task_listing`` runs this row alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from bench import load, processes
from bench.harness import LOWER, QUICK, Context, Row, median
from runjournal.v1 import task_service_pb2 as tpb
from runjournal.v1 import task_service_pb2_grpc

SECTION = 17
TASKS = 10_000
WORKERS = 16
SAMPLES = 20


def run(ctx: Context) -> list[Row]:
    data_dir = ctx.new_dir("task-listing-data")
    with processes.runjournal(data_dir, ctx.work_dir, label="task-listing") as server:
        ctx.log(f"task listing: submitting {TASKS:,} tasks")
        asyncio.run(_fill(server.address))
    with processes.runjournal(data_dir, ctx.work_dir, label="task-listing-restarted") as server:
        get, first, again, none = asyncio.run(_measure(server.address))
    ctx.log(
        f"task listing: GetTask {get * 1e3:.2f} ms, first page {first * 1e3:.1f} ms, FAILED none {none * 1e3:.1f} ms"
    )

    def row(name: str, value: float) -> Row:
        return Row(
            SECTION, f"{name} at {TASKS:,} tasks, after a restart", value * 1e3, "ms", "one GetTask", get * 1e3, LOWER
        )

    return [
        row("first ListTasks page", first),
        row("the same page again", again),
        row("state=FAILED matching none", none),
    ]


async def _fill(address: str) -> None:
    pending = list(reversed(range(TASKS)))
    async with load.channel(address) as chan:
        stub = task_service_pb2_grpc.TaskServiceStub(chan)

        async def worker() -> None:
            while pending:
                n = pending.pop()
                task_id = f"task-{n:05d}"
                await stub.SubmitTask(
                    tpb.SubmitTaskRequest(task_id=task_id, request_json=f'{{"n":{n}}}', labels={"team": f"t{n % 7}"}),
                    timeout=load.RPC_TIMEOUT_SECONDS,
                )
                if n % 3 == 0:
                    outcome = tpb.TaskOutcome(result_json='"done"')
                    await stub.CompleteTask(
                        tpb.CompleteTaskRequest(task_id=task_id, outcome=outcome), timeout=load.RPC_TIMEOUT_SECONDS
                    )

        await asyncio.gather(*(worker() for _ in range(WORKERS)))


async def _measure(address: str) -> tuple[float, float, float, float]:
    async with load.channel(address) as chan:
        stub = task_service_pb2_grpc.TaskServiceStub(chan)
        first = await _timed(lambda: stub.ListTasks(tpb.ListTasksRequest(page_size=100), timeout=600))
        again = await _timed(lambda: stub.ListTasks(tpb.ListTasksRequest(page_size=100), timeout=600))
        none = await _timed(lambda: stub.ListTasks(tpb.ListTasksRequest(state=tpb.TASK_STATE_FAILED), timeout=600))
        gets = [
            await _timed(lambda n=n: stub.GetTask(tpb.GetTaskRequest(task_id=f"task-{n:05d}"))) for n in range(SAMPLES)
        ]
    return median(gets), first, again, none


async def _timed(call: Callable[[], Awaitable[object]]) -> float:
    start = time.perf_counter()
    await call()
    return time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-tasks-") as scratch:
        ctx = Context(settings=QUICK, work_dir=args.work_dir or Path(scratch))
        rows = run(ctx)
    print(json.dumps([row.__dict__ for row in rows], indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
