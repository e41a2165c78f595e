"""Rows 1 and 2: unary Append and AppendBatch on the file backend, against the gRPC ceiling and the disk.

One runjournal server and one echo server run for the whole benchmark, each
its own process. At each concurrency, ``c`` grpc.aio workers in the bench
process each append to their own run over one shared channel. Each round
measures, back to back, the echo ceiling, runjournal, and raw write + fsync
(``disk.py``); a reported value is the median of its rounds.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from bench import disk, load, processes, workload
from bench.fsync_count import read_count
from bench.harness import HIGHER, LOWER, Context, Measurement, Row, median, ratio_target
from runjournal.v1 import journal_service_pb2 as service_pb

UNARY_TARGET = 0.75
"""Unary append at 64 concurrent runs >= 0.75 x the echo ceiling."""
FSYNC_TARGET = 0.25
"""fsyncs per unary append at 64 concurrent runs (counted) <= 0.25: group commit (docs/file-backend.md)."""
BATCH_TARGET = 3.0
"""AppendBatch records/s >= 3 x unary appends/s."""
TARGET_CONCURRENCY = 64
RUN_LENGTHS = (100, 1_000, 10_000)
FILL_BATCH = 1_000
"""Records per AppendBatch when filling a run to a length (the server's limit)."""


def run_unary(ctx: Context) -> list[Row]:
    return asyncio.run(_run(ctx, batch=False))


def run_batch(ctx: Context) -> list[Row]:
    return asyncio.run(_run(ctx, batch=True))


async def _run(ctx: Context, *, batch: bool) -> list[Row]:
    kind = "batch" if batch else "unary"
    data_dir = ctx.new_dir(f"{kind}-data")
    disk_dir = ctx.new_dir(f"{kind}-disk")
    fsync_count = ctx.work_dir / f"{kind}-fsyncs"
    server = processes.runjournal(
        data_dir, ctx.work_dir, profile_dir=ctx.profile_dir, label=f"{kind}-server", fsync_count=fsync_count
    )
    echo = processes.echo(ctx.work_dir)
    rows: list[Row] = []
    with server, echo:
        for concurrency in ctx.settings.concurrency:
            ctx.log(f"{kind}: {concurrency} concurrent runs")
            if batch:
                rows += await _batch_rows(ctx, server, echo, disk_dir, concurrency)
            else:
                rows += await _unary_rows(ctx, server, echo, disk_dir, concurrency, fsync_count)
        if not batch:
            ctx.log("unary: latency by run length")
            rows += await length_rows(ctx, server.address, label="file backend", section=1)
    return rows


Sampler = Callable[[float], Awaitable[Measurement]]
"""Takes one load sample of the given length."""


async def _rounds(ctx: Context, samplers: dict[str, Sampler]) -> dict[str, list[Measurement]]:
    """Warm every sampler up once, then run them in alternating rounds."""
    for sampler in samplers.values():
        await sampler(ctx.settings.warmup_seconds)
    results: dict[str, list[Measurement]] = {name: [] for name in samplers}
    for _ in range(ctx.settings.rounds):
        for name, sampler in samplers.items():
            results[name].append(await sampler(ctx.settings.seconds))
    return results


def _grpc_sampler(
    ctx: Context, appender: load.Appender, server: processes.Process, fsync_count: Path | None = None
) -> Sampler:
    async def sample(seconds: float) -> Measurement:
        cpu_before = server.cpu_seconds()
        fsyncs_before = read_count(fsync_count) if fsync_count is not None else 0
        measurement = await load.drive(appender.operations(), seconds, ctx.settings.cap_per_worker)
        measurement.server_cpu_seconds = server.cpu_seconds() - cpu_before
        if fsync_count is not None:
            measurement.server_fsyncs = read_count(fsync_count) - fsyncs_before
        return measurement

    return sample


def _disk_sampler(ctx: Context, directory: Path, files: int, batch: int) -> Sampler:
    async def sample(seconds: float) -> Measurement:
        # In a thread (it runs its own event loop for the pooled case); nothing else runs meanwhile.
        return await asyncio.to_thread(
            disk.fsync_sample,
            directory,
            files,
            batch=batch,
            seconds=seconds,
            cap_per_worker=ctx.settings.cap_per_worker,
        )

    return sample


def _runs(prefix: str, concurrency: int) -> list[str]:
    return [f"{prefix}-c{concurrency}-{index:03d}" for index in range(concurrency)]


async def _unary_rows(
    ctx: Context, server: processes.Process, echo: processes.Process, disk_dir: Path, c: int, fsync_count: Path
) -> list[Row]:
    async with load.channel(server.address) as chan, load.channel(echo.address) as echo_chan:
        real = load.Appender(chan, _runs("unary", c))
        await real.create_runs()
        ceiling = load.Appender(echo_chan, _runs("unary", c), echo=True)
        synced = load.Appender(echo_chan, _runs("unary", c), synced=True)
        results = await _rounds(
            ctx,
            {
                "echo": _grpc_sampler(ctx, ceiling, echo),
                "append": _grpc_sampler(ctx, real, server, fsync_count),
                "disk": _disk_sampler(ctx, disk_dir, c, 1),
                "synced": _grpc_sampler(ctx, synced, echo),
            },
        )
    return unary_rows(c, results)


def unary_rows(c: int, results: dict[str, list[Measurement]]) -> list[Row]:
    append, echo, fsync = results["append"], results["echo"], results["disk"]
    runs = f"{c} concurrent run" + ("s" if c > 1 else "")
    files = f"write+fsync, {c} file" + ("s" if c > 1 else "")
    throughput = Row(
        1,
        f"unary Append, {runs}: appends/s",
        median([m.rate for m in append]),
        "/s",
        "echo ceiling",
        median([m.rate for m in echo]),
        samples={"figure": [m.rate for m in append], "baseline": [m.rate for m in echo]},
    )
    if c == TARGET_CONCURRENCY:
        ratio_target(throughput, ">=", UNARY_TARGET)
    rows = [
        throughput,
        Row(
            1,
            f"unary Append, {runs}: appends/s",
            throughput.figure,
            "/s",
            files,
            median([m.rate for m in fsync]),
            samples={"figure": [m.rate for m in append], "baseline": [m.rate for m in fsync]},
        ),
    ]
    for name, pick in (("p50", lambda m: m.p50_ms), ("p99", lambda m: m.p99_ms)):
        figure = median([pick(m) for m in append])
        rows.append(
            Row(1, f"unary Append, {runs}: {name}", figure, "ms", "echo", median([pick(m) for m in echo]), LOWER)
        )
        rows.append(
            Row(1, f"unary Append, {runs}: {name}", figure, "ms", files, median([pick(m) for m in fsync]), LOWER)
        )
    rows.append(_cpu_row(1, f"unary Append, {runs}: server CPU per append", append, echo, "echo server, per call"))
    rows += synced_rows(runs, append, results["synced"])
    fsyncs = Row(
        1,
        f"unary Append, {runs}: fsyncs per append (counted)",
        median([m.fsyncs_per_record for m in append]),
        "",
        "one fsync per append",
        1.0,
        LOWER,
        samples={"figure": [m.fsyncs_per_record for m in append], "baseline": [1.0 for _ in append]},
    )
    if c == TARGET_CONCURRENCY:
        ratio_target(fsyncs, "<=", FSYNC_TARGET)
    rows.append(fsyncs)
    return rows


SYNCED = "echo after write + one fsync per group, off the loop"
"""The echo server's ``SyncedEcho`` (``bench/echo.py``): the floor under a durable append over grpc.aio."""


def synced_rows(runs: str, append: list[Measurement], synced: list[Measurement]) -> list[Row]:
    """Append against the floor of any durable append over grpc.aio: how much of the gap to echo is the hop.

    No target: the issue's targets are against the bare echo; these rows say
    how far a server that only writes and fsyncs off the event loop already
    is from it, so what is left is runjournal's own work.
    """

    def against(name: str, unit: str, pick: Callable[[Measurement], float], better: str) -> Row:
        figures, floors = [pick(m) for m in append], [pick(m) for m in synced]
        return Row(
            1,
            f"unary Append, {runs}: {name}",
            median(figures),
            unit,
            SYNCED,
            median(floors),
            better,
            samples={"figure": figures, "baseline": floors},
        )

    return [
        against("appends/s", "/s", lambda m: m.rate, HIGHER),
        against("p50", "ms", lambda m: m.p50_ms, LOWER),
        _cpu_row(1, f"unary Append, {runs}: server CPU per append", append, synced, f"{SYNCED}, per call"),
    ]


def _cpu_row(section: int, name: str, figure: list[Measurement], baseline: list[Measurement], what: str) -> Row:
    """Server CPU time per record: where a throughput gap comes from, and steadier than wall time."""
    return Row(
        section,
        name,
        median([m.server_cpu_us_per_record for m in figure]),
        "us",
        what,
        median([m.server_cpu_us_per_record for m in baseline]),
        LOWER,
    )


async def _batch_rows(
    ctx: Context, server: processes.Process, echo: processes.Process, disk_dir: Path, c: int
) -> list[Row]:
    size = ctx.settings.batch_size
    async with load.channel(server.address) as chan, load.channel(echo.address) as echo_chan:
        batched = load.Appender(chan, _runs("batch", c), batch=size)
        await batched.create_runs()
        unary = load.Appender(chan, _runs("single", c))
        await unary.create_runs()
        ceiling = load.Appender(echo_chan, _runs("batch", c), batch=size, echo=True)
        results = await _rounds(
            ctx,
            {
                "echo": _grpc_sampler(ctx, ceiling, echo),
                "batch": _grpc_sampler(ctx, batched, server),
                "disk": _disk_sampler(ctx, disk_dir, c, size),
                "unary": _grpc_sampler(ctx, unary, server),
            },
        )
    return batch_rows(c, size, results)


def batch_rows(c: int, size: int, results: dict[str, list[Measurement]]) -> list[Row]:
    batch, echo, fsync, unary = results["batch"], results["echo"], results["disk"], results["unary"]
    runs = f"{c} concurrent run" + ("s" if c > 1 else "")
    name = f"AppendBatch of {size}, {runs}: records/s"
    figure = median([m.rate for m in batch])
    samples = [m.rate for m in batch]
    versus_unary = Row(
        2,
        name,
        figure,
        "/s",
        "unary Append, same runs",
        median([m.rate for m in unary]),
        samples={"figure": samples, "baseline": [m.rate for m in unary]},
    )
    ratio_target(versus_unary, ">=", BATCH_TARGET)
    files = f"write+fsync of {size} lines, {c} file" + ("s" if c > 1 else "")
    return [
        versus_unary,
        Row(2, name, figure, "/s", f"echo ceiling (batches of {size})", median([m.rate for m in echo])),
        Row(2, name, figure, "/s", files, median([m.rate for m in fsync])),
        Row(
            2,
            f"AppendBatch of {size}, {runs}: p50 per batch",
            median([m.p50_ms for m in batch]),
            "ms",
            "echo",
            median([m.p50_ms for m in echo]),
            LOWER,
        ),
        _cpu_row(2, f"AppendBatch of {size}, {runs}: server CPU per record", batch, unary, "unary Append"),
    ]


async def length_rows(
    ctx: Context,
    address: str,
    *,
    label: str,
    section: int,
    target: float | None = None,
    lengths: tuple[int, ...] = RUN_LENGTHS,
    samples: int = 0,
) -> list[Row]:
    """Median unary Append latency on runs already ``lengths`` records long; each vs the shortest."""
    samples = samples or max(20, ctx.settings.warm_samples * 5)
    latencies: dict[int, list[float]] = {}
    async with load.channel(address) as chan:
        append = load.method(chan, "Append", service_pb.AppendResponse)
        batch = load.method(chan, "AppendBatch", service_pb.AppendBatchResponse)
        tag = uuid.uuid4().hex[:8]
        run_ids = {length: f"len{length}-{tag}" for length in lengths}
        for length, run_id in run_ids.items():
            await append(workload.append_request(run_id, 1), timeout=load.RPC_TIMEOUT_SECONDS)
            for first in range(2, length + 1, FILL_BATCH):
                count = min(FILL_BATCH, length + 1 - first)
                await batch(workload.batch_request(run_id, first, count), timeout=load.RPC_TIMEOUT_SECONDS)
            latencies[length] = []
        next_seq = {length: length + 1 for length in lengths}
        for _ in range(samples):  # interleaved, so drift hits every length alike
            for length, run_id in run_ids.items():
                began = time.perf_counter()
                await append(workload.append_request(run_id, next_seq[length]), timeout=load.RPC_TIMEOUT_SECONDS)
                latencies[length].append((time.perf_counter() - began) * 1000)
                next_seq[length] += 1
    shortest = min(lengths)
    rows = []
    for length in lengths:
        if length == shortest:
            continue
        row = Row(
            section,
            f"{label}: Append latency on a {length:,}-record run (median, 1 run)",
            median(latencies[length]),
            "ms",
            f"same, {shortest:,}-record run",
            median(latencies[shortest]),
            LOWER,
        )
        if target is not None and length == max(lengths):
            ratio_target(row, "<=", target)
        rows.append(row)
    return rows
