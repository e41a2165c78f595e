"""Prototype, not in the proto: a streamed append (one bidirectional call per worker) against unary Append.

Issue 25, item 3: would one long-lived call per worker, each record
acknowledged in order under the same rule and reasons as Append, beat unary
Append by 2x in records/s at 64 runs? This answers it without touching the
proto: ``--serve`` runs a prototype server process (the file backend and
``Runs`` as ``runjournal serve`` builds them, no interceptors) with two
methods on the same ``Runs``:

* ``Unary``: one ``AppendRequest`` in, one ``AppendResponse`` out, the body
  of ``JournalServicer.Append``;
* ``Stream``: ``AppendRequest`` after ``AppendRequest`` on one call, each
  answered by its ``AppendResponse`` once durable, in order; a refusal ends
  the call with Append's status and reason.

Both are driven the same way (a worker waits for each answer before sending
its next record, as an agent worker does), in alternating rounds, so the
ratio is the per-call cost of gRPC against a stream message's.
``python -m bench.stream_append [--quick]`` prints the table.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc

from bench import load, processes, workload
from bench.harness import FULL, QUICK, Context, Measurement, Row, median, table
from runjournal.v1 import journal_service_pb2 as service_pb
from runjournal_server.api.status import abort
from runjournal_server.backends.file import FileBackend
from runjournal_server.runs.runs import Runs

SECTION = 1
SERVICE = "runjournal.bench.StreamAppend"
UNARY = f"/{SERVICE}/Unary"
STREAM = f"/{SERVICE}/Stream"
READY = "stream-append listening on "
WORTH_IT = 2.0
"""The issue's bar: a streamed append goes into the proto only if it beats unary by this much at 64 runs."""


# ------------------------------------------------------------------ the prototype server


def _answer(outcome: object) -> bytes:
    return service_pb.AppendResponse(
        seq=outcome.first_seq,  # type: ignore[attr-defined]
        duplicate=outcome.duplicates == 1,  # type: ignore[attr-defined]
        last_seq=outcome.last_seq,  # type: ignore[attr-defined]
    ).SerializeToString()


def _handlers(runs: Runs) -> grpc.GenericRpcHandler:
    async def unary(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        append = service_pb.AppendRequest.FromString(request)
        try:
            return _answer(await runs.append(append.run_id, append.claim_token, [append.record]))
        except Exception as err:
            await abort(context, err, "Append")

    async def stream(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
        async for request in requests:
            append = service_pb.AppendRequest.FromString(request)
            try:
                outcome = await runs.append(append.run_id, append.claim_token, [append.record])
            except Exception as err:
                await abort(context, err, "Append")
            yield _answer(outcome)

    return grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "Unary": grpc.unary_unary_rpc_method_handler(unary),
            "Stream": grpc.stream_stream_rpc_method_handler(stream),
        },
    )


async def serve(data_dir: Path) -> None:
    executor = ThreadPoolExecutor(max_workers=16, thread_name_prefix="runjournal-io")
    backend = FileBackend(data_dir, executor=executor)
    await backend.start()
    runs = Runs(backend, max_record_bytes=1 << 20, max_open_journals=1024)
    server = grpc.aio.server()
    server.add_generic_rpc_handlers([_handlers(runs)])
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    print(f"{READY}127.0.0.1:{port}", flush=True)
    await stop.wait()
    await server.stop(1)
    await runs.backend.close()
    executor.shutdown(wait=True)


# ------------------------------------------------------------------ the clients


def _serialize(request: service_pb.AppendRequest) -> bytes:
    return request.SerializeToString()


class _Workers:
    """One run per worker; each appends its run's next record and waits for the answer."""

    def __init__(self, chan: grpc.aio.Channel, run_ids: list[str]) -> None:
        self.run_ids = run_ids
        self.next_seq = dict.fromkeys(run_ids, 2)
        self._unary = chan.unary_unary(
            UNARY, request_serializer=_serialize, response_deserializer=service_pb.AppendResponse.FromString
        )
        self._stream = chan.stream_stream(
            STREAM, request_serializer=_serialize, response_deserializer=service_pb.AppendResponse.FromString
        )

    async def create(self) -> None:
        for run_id in self.run_ids:
            meta = service_pb.AppendRequest(run_id=run_id, claim_token=1, record=workload.meta(run_id))
            await self._unary(meta, timeout=load.RPC_TIMEOUT_SECONDS)

    async def unary(self, seconds: float) -> Measurement:
        async def worker(run_id: str) -> list[float]:
            latencies: list[float] = []
            deadline = time.perf_counter() + seconds
            while time.perf_counter() < deadline:
                began = time.perf_counter()
                await self._unary(
                    workload.append_request(run_id, self.next_seq[run_id]), timeout=load.RPC_TIMEOUT_SECONDS
                )
                latencies.append(time.perf_counter() - began)
                self.next_seq[run_id] += 1
            return latencies

        return await self._measure(worker, seconds)

    async def streamed(self, seconds: float) -> Measurement:
        async def worker(run_id: str) -> list[float]:
            latencies: list[float] = []
            call = self._stream(timeout=load.RPC_TIMEOUT_SECONDS + seconds)
            deadline = time.perf_counter() + seconds
            while time.perf_counter() < deadline:
                began = time.perf_counter()
                await call.write(workload.append_request(run_id, self.next_seq[run_id]))
                answer = await call.read()
                if answer is grpc.aio.EOF:
                    raise RuntimeError(f"the stream of {run_id} ended early: {await call.code()}")
                latencies.append(time.perf_counter() - began)
                self.next_seq[run_id] += 1
            await call.done_writing()
            if await call.read() is not grpc.aio.EOF:
                raise RuntimeError(f"the stream of {run_id} answered a record it was not sent")
            return latencies

        return await self._measure(worker, seconds)

    async def _measure(self, worker: object, seconds: float) -> Measurement:
        start = time.perf_counter()
        results = await asyncio.gather(*(worker(run_id) for run_id in self.run_ids))  # type: ignore[operator]
        elapsed = time.perf_counter() - start
        latencies = [value for values in results for value in values]
        return Measurement(len(latencies), len(latencies), elapsed, latencies)


async def _rows(ctx: Context, address: str, concurrency: int, server: processes.Process) -> list[Row]:
    async with load.channel(address) as chan:
        workers = _Workers(chan, [f"stream-c{concurrency}-{index:03d}" for index in range(concurrency)])
        await workers.create()
        await workers.unary(ctx.settings.warmup_seconds)
        await workers.streamed(ctx.settings.warmup_seconds)
        unary: list[Measurement] = []
        streamed: list[Measurement] = []
        for _ in range(ctx.settings.rounds):
            for sampler, into in ((workers.unary, unary), (workers.streamed, streamed)):
                cpu = server.cpu_seconds()
                sample = await sampler(ctx.settings.seconds)
                sample.server_cpu_seconds = server.cpu_seconds() - cpu
                into.append(sample)
    runs = f"{concurrency} concurrent run" + ("s" if concurrency > 1 else "")
    return [
        Row(
            SECTION,
            f"streamed append (prototype), {runs}: records/s",
            median([m.rate for m in streamed]),
            "/s",
            "unary Append, same prototype server",
            median([m.rate for m in unary]),
            samples={"figure": [m.rate for m in streamed], "baseline": [m.rate for m in unary]},
            note=f"worth adding to the proto at >= {WORTH_IT:g}x at 64 runs",
        ),
        Row(
            SECTION,
            f"streamed append (prototype), {runs}: p50",
            median([m.p50_ms for m in streamed]),
            "ms",
            "unary Append",
            median([m.p50_ms for m in unary]),
            "lower",
        ),
        Row(
            SECTION,
            f"streamed append (prototype), {runs}: server CPU per record",
            median([m.server_cpu_us_per_record for m in streamed]),
            "us",
            "unary Append",
            median([m.server_cpu_us_per_record for m in unary]),
            "lower",
        ),
    ]


def run(ctx: Context) -> list[Row]:
    data_dir = ctx.new_dir("stream-append-data")
    command = [sys.executable, "-m", "bench.stream_append", "--serve", str(data_dir)]
    server = processes.Process(command, READY, ctx.work_dir / "stream-append.log")
    rows: list[Row] = []
    with server:
        for concurrency in ctx.settings.concurrency:
            ctx.log(f"stream append prototype: {concurrency} concurrent runs")
            rows += asyncio.run(_rows(ctx, server.address, concurrency, server))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        asyncio.run(serve(args.serve))
        return 0
    with tempfile.TemporaryDirectory(prefix="runjournal-stream-append-") as scratch:
        ctx = Context(QUICK if args.quick else FULL, Path(scratch))
        rows = run(ctx)
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
