"""Row 13: append-to-watcher latency with 64 watched runs, against the append latency itself.

``python -m bench.watch`` opens one Watch on each of 64 runs (one channel
for the watchers, one for the writer), then appends one small record at a
time, to each run in turn, and times two things from the moment the Append
is sent: its ack (the baseline: what the writer waits for anyway) and the
moment the run's watcher receives that record. The ratio says what watching
adds on top of the write. Appends are sequential, so neither latency is
queueing behind other appends; every wait has a deadline and the loop is
bounded by time and by a count.

Rows: the file backend, and the JetStream backend (when a nats-server is
found) with the watchers on the writer's server and on a second replica of
the same stream, which hears of the record through its feed (a consumer of
the stream) instead of from its own write.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import grpc

from bench import jetstream, processes
from bench.harness import LOWER, QUICK, Context, Row, percentile, table, unavailable
from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc as pb_grpc
from runjournal.v1 import records_pb2 as rpb

SECTION = 13
WATCHED_RUNS = 64
CALL_TIMEOUT_SECONDS = 30.0
MAX_APPENDS = 20_000
ROW_NAMES = (
    "append-to-watcher latency, 64 watched runs, file",
    "append-to-watcher latency, 64 watched runs, JetStream (same replica)",
    "append-to-watcher latency, 64 watched runs, JetStream (other replica)",
)


def _meta(run_id: str) -> rpb.JournalRecord:
    meta = rpb.Meta(format_version=1, run_id=run_id, fingerprint=rpb.Fingerprint(provider="p", model="m"))
    meta.prompt.add().text.text = "hello"
    meta.created_at.FromSeconds(1_700_000_000)
    return rpb.JournalRecord(seq=1, meta=meta)


class Watchers:
    """One Watch per run; ``arrived(run, seq)`` resolves when that record reaches its watcher."""

    def __init__(self, stub: pb_grpc.JournalServiceStub, run_ids: Sequence[str]) -> None:
        self._stub = stub
        self._run_ids = run_ids
        self._waiting: dict[tuple[str, int], asyncio.Future[float]] = {}
        self._caught_up = {run_id: asyncio.get_running_loop().create_future() for run_id in run_ids}
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> Watchers:
        self._tasks = [asyncio.create_task(self._watch(run_id)) for run_id in self._run_ids]
        await asyncio.wait_for(asyncio.gather(*self._caught_up.values()), CALL_TIMEOUT_SECONDS)
        return self

    async def __aexit__(self, *exc: object) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def expect(self, run_id: str, seq: int) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._waiting[(run_id, seq)] = future
        return future

    async def _watch(self, run_id: str) -> None:
        call = self._stub.Watch(pb.WatchRequest(run_id=run_id))
        async for item in call:
            now = time.perf_counter()
            if item.WhichOneof("event") == "caught_up":
                self._caught_up[run_id].set_result(now)
                continue
            future = self._waiting.pop((run_id, item.record.seq), None)
            if future is not None and not future.done():
                future.set_result(now)


async def _sample(writer_address: str, watcher_address: str, seconds: float) -> tuple[list[float], list[float]]:
    """(append latencies, append-to-watcher latencies) in seconds, one pair per append."""
    run_ids = [f"watch-{index:02d}-{time.monotonic_ns()}" for index in range(WATCHED_RUNS)]
    appends: list[float] = []
    watched: list[float] = []
    async with (
        grpc.aio.insecure_channel(writer_address) as writer_channel,
        grpc.aio.insecure_channel(watcher_address) as watcher_channel,
    ):
        writer = pb_grpc.JournalServiceStub(writer_channel)
        for run_id in run_ids:
            await writer.Append(pb.AppendRequest(run_id=run_id, record=_meta(run_id)), timeout=CALL_TIMEOUT_SECONDS)
        async with Watchers(pb_grpc.JournalServiceStub(watcher_channel), run_ids) as watchers:
            seqs = dict.fromkeys(run_ids, 1)
            deadline = time.perf_counter() + seconds
            for count in range(MAX_APPENDS):
                if time.perf_counter() >= deadline:
                    break
                run_id = run_ids[count % WATCHED_RUNS]
                seqs[run_id] += 1
                record = rpb.JournalRecord(seq=seqs[run_id], optional=True, note=rpb.Note(text="watched"))
                arrival = watchers.expect(run_id, seqs[run_id])
                sent = time.perf_counter()
                await writer.Append(
                    pb.AppendRequest(run_id=run_id, claim_token=1, record=record), timeout=CALL_TIMEOUT_SECONDS
                )
                acked = time.perf_counter()
                received = await asyncio.wait_for(arrival, CALL_TIMEOUT_SECONDS)
                appends.append(acked - sent)
                watched.append(received - sent)
    return appends, watched


def _rows(name: str, appends: list[float], watched: list[float]) -> list[Row]:
    note = f"{len(appends)} appends, one at a time, to {WATCHED_RUNS} runs in turn"
    return [
        Row(
            SECTION,
            f"{name}: p{label}",
            percentile(watched, fraction) * 1000,
            "ms",
            f"Append ack p{label}",
            percentile(appends, fraction) * 1000,
            LOWER,
            note=note,
        )
        for label, fraction in (("50", 0.50), ("99", 0.99))
    ]


def run(ctx: Context) -> list[Row]:
    seconds = ctx.settings.seconds * ctx.settings.rounds
    with processes.runjournal(
        ctx.new_dir("watch-file"), ctx.work_dir, profile_dir=ctx.profile_dir, label="watch"
    ) as server:
        ctx.log("watch: file backend")
        rows = _rows(ROW_NAMES[0], *asyncio.run(_sample(server.address, server.address, seconds)))
    rows += _jetstream_rows(ctx, seconds)
    return rows


def _jetstream_rows(ctx: Context, seconds: float) -> list[Row]:
    ok, why = jetstream.available()
    if not ok:
        return [unavailable(SECTION, name, f"not available yet: {why}") for name in ROW_NAMES[1:]]
    try:
        with jetstream._wire(ctx) as (start_server, _):
            first = start_server()
            second = start_server()
            try:
                ctx.log("watch: JetStream, watchers on the writer's replica")
                rows = _rows(ROW_NAMES[1], *asyncio.run(_sample(first.address, first.address, seconds)))
                ctx.log("watch: JetStream, watchers on another replica")
                rows += _rows(ROW_NAMES[2], *asyncio.run(_sample(first.address, second.address, seconds)))
            finally:
                second.stop()
                first.stop()
    except jetstream.JetStreamUnavailableError as err:
        return [unavailable(SECTION, name, f"not available here: {err}") for name in ROW_NAMES[1:]]
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    del argv
    with tempfile.TemporaryDirectory(prefix="runjournal-watch-") as scratch:
        rows = run(Context(QUICK, Path(scratch)))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
