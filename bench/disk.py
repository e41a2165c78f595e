"""The disk limit: raw write + fsync of the workload's stored lines, in the bench process.

One file: a plain loop, ``os.write`` then ``os.fsync``, nothing else. Several
files: the server's I/O model without the server — one asyncio coroutine per
file hands each write + fsync to a ``ThreadPoolExecutor`` of ``IO_THREADS``
threads (the server's default ``io_threads``), so the fsyncs of different
files overlap exactly as far as they can in the server. A batch is its lines
joined, written with one write and one fsync, as ``AppendBatch`` stores it.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench import workload
from bench.harness import Measurement

IO_THREADS = 32
"""The server's default ``io_threads``."""


def _write_fsync(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def _payloads(batch: int) -> list[bytes]:
    pool = workload.line_pool()
    lines = itertools.cycle(pool)
    return [b"".join(next(lines) + b"\n" for _ in range(batch)) for _ in range(len(pool))]


def fsync_sample(directory: Path, files: int, *, batch: int, seconds: float, cap_per_worker: int) -> Measurement:
    """Write + fsync lines (``batch`` per fsync) to ``files`` new files for ``seconds``."""
    payloads = _payloads(batch)
    fds = [
        os.open(directory / f"disk-{index}.jsonl", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC)
        for index in range(files)
    ]
    try:
        if files == 1:
            return _single(fds[0], payloads, batch, seconds, cap_per_worker)
        return asyncio.run(_pooled(fds, payloads, batch, seconds, cap_per_worker))
    finally:
        for index, fd in enumerate(fds):
            os.close(fd)
            os.unlink(directory / f"disk-{index}.jsonl")


def _single(fd: int, payloads: list[bytes], batch: int, seconds: float, cap: int) -> Measurement:
    latencies: list[float] = []
    start = time.perf_counter()
    deadline = start + seconds
    for data in itertools.cycle(payloads):
        if len(latencies) >= cap or time.perf_counter() >= deadline:
            break
        began = time.perf_counter()
        _write_fsync(fd, data)
        latencies.append(time.perf_counter() - began)
    elapsed = time.perf_counter() - start
    return Measurement(len(latencies), len(latencies) * batch, elapsed, latencies)


async def _pooled(fds: list[int], payloads: list[bytes], batch: int, seconds: float, cap: int) -> Measurement:
    loop = asyncio.get_running_loop()
    with ThreadPoolExecutor(max_workers=IO_THREADS, thread_name_prefix="bench-io") as pool:
        start = time.perf_counter()
        deadline = start + seconds

        async def worker(fd: int) -> list[float]:
            latencies: list[float] = []
            for data in itertools.cycle(payloads):
                if len(latencies) >= cap or time.perf_counter() >= deadline:
                    break
                began = time.perf_counter()
                await loop.run_in_executor(pool, _write_fsync, fd, data)
                latencies.append(time.perf_counter() - began)
            return latencies

        results = await asyncio.gather(*(worker(fd) for fd in fds))
        elapsed = time.perf_counter() - start
    latencies = [value for values in results for value in values]
    return Measurement(len(latencies), len(latencies) * batch, elapsed, latencies)
