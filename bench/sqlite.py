"""Row 8: what a user would pick instead — SQLite in WAL mode with ``synchronous=FULL``.

Each writer is a thread with its own connection, appending the workload's
stored lines (the same bytes runjournal stores) to its own run in one table,
``INSERT`` in autocommit mode, i.e. one transaction and one durable commit per
record. That is the least a durable embedded store must do; it skips what
runjournal does on every append (schema validation, canonical encoding, the
fold check, claim tokens, a gRPC hop). Compared, in alternating rounds, with
runjournal's unary Append at the same number of concurrent runs, and with
the bare grpc.aio echo server (``echo.py``) called the same way: the most
any unary gRPC call from Python reaches here, so a ratio to SQLite above
the echo's is out of reach for Append whatever it does.
"""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import threading
import time
from pathlib import Path

from bench import load, processes, workload
from bench.harness import Context, Measurement, Row, median

SECTION = 8
BUSY_TIMEOUT_SECONDS = 30.0
SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    line BLOB NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID
"""


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")  # a per-connection setting
    return conn


def sqlite_sample(path: Path, writers: int, *, seconds: float, cap_per_worker: int, start_seq: int) -> Measurement:
    """``writers`` threads, each inserting its run's next records, one commit each, for ``seconds``."""
    with connect(path) as setup:
        setup.execute(SCHEMA)
    pool = workload.line_pool()
    barrier = threading.Barrier(writers + 1)
    results: list[list[float]] = [[] for _ in range(writers)]
    deadline = [0.0]

    def writer(index: int) -> None:
        conn = connect(path)
        latencies = results[index]
        run_id = f"sqlite-w{writers}-{index:02d}"
        lines = itertools.cycle(pool)
        try:
            barrier.wait()
            for seq in itertools.count(start_seq):
                if len(latencies) >= cap_per_worker or time.perf_counter() >= deadline[0]:
                    break
                began = time.perf_counter()
                conn.execute("INSERT INTO records (run_id, seq, line) VALUES (?, ?, ?)", (run_id, seq, next(lines)))
                latencies.append(time.perf_counter() - began)
        finally:
            conn.close()

    threads = [threading.Thread(target=writer, args=(i,), name=f"sqlite-writer-{i}") for i in range(writers)]
    for thread in threads:
        thread.start()
    start = time.perf_counter()
    deadline[0] = start + seconds
    barrier.wait()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    latencies = [value for values in results for value in values]
    return Measurement(len(latencies), len(latencies), elapsed, latencies)


def run(ctx: Context) -> list[Row]:
    return asyncio.run(_run(ctx))


async def _run(ctx: Context) -> list[Row]:
    s = ctx.settings
    data_dir = ctx.new_dir("sqlite-runjournal-data")
    sqlite_dir = ctx.new_dir("sqlite")
    rows = []
    server = processes.runjournal(data_dir, ctx.work_dir, profile_dir=ctx.profile_dir, label="sqlite-rj")
    with server, processes.echo(ctx.work_dir) as echo:
        async with load.channel(server.address) as chan, load.channel(echo.address) as echo_chan:
            for writers in s.sqlite_writers:
                ctx.log(f"sqlite: {writers} writer(s)")
                run_ids = [f"rj-w{writers}-{i:02d}" for i in range(writers)]
                appender = load.Appender(chan, run_ids)
                await appender.create_runs()
                ceiling = load.Appender(echo_chan, run_ids, echo=True)
                lite: list[Measurement] = []
                ours: list[Measurement] = []
                bare: list[Measurement] = []
                for number in range(s.rounds + 1):  # the first round is the warm-up
                    seconds = s.warmup_seconds if number == 0 else s.seconds
                    sample = await asyncio.to_thread(
                        sqlite_sample,
                        sqlite_dir / f"w{writers}-round{number}.db",  # a fresh database each round
                        writers,
                        seconds=seconds,
                        cap_per_worker=s.cap_per_worker,
                        start_seq=1,
                    )
                    mine = await load.drive(appender.operations(), seconds, s.cap_per_worker)
                    echoed = await load.drive(ceiling.operations(), seconds, s.cap_per_worker)
                    if number:
                        lite.append(sample)
                        ours.append(mine)
                        bare.append(echoed)
                noun = "writer" if writers == 1 else "writers"
                runs = "run" if writers == 1 else "runs"
                rows.append(
                    Row(
                        SECTION,
                        f"unary Append, {writers} concurrent {runs}: records/s",
                        median([m.rate for m in ours]),
                        "/s",
                        f"SQLite WAL+FULL, {writers} {noun}, commit per record",
                        median([m.rate for m in lite]),
                        samples={"figure": [m.rate for m in ours], "baseline": [m.rate for m in lite]},
                        note=(
                            f"p50 {median([m.p50_ms for m in ours]):.2f} ms vs SQLite "
                            f"{median([m.p50_ms for m in lite]):.2f} ms"
                        ),
                    )
                )
                rows.append(
                    Row(
                        SECTION,
                        f"echo ceiling (no work), {writers} concurrent {runs}: calls/s",
                        median([m.rate for m in bare]),
                        "/s",
                        f"SQLite WAL+FULL, {writers} {noun}, commit per record",
                        median([m.rate for m in lite]),
                        samples={"figure": [m.rate for m in bare], "baseline": [m.rate for m in lite]},
                        note="the most a unary gRPC call from Python reaches: Append's ratio is below this",
                    )
                )
    return rows
