"""Row 5: Claim latency on a 10,000-record run, against the same on a 100-record run.

* Cold: the server does not hold the run (a fresh server process, as after a
  crash or a deploy): the claim must read and fold the journal before it can
  gate, write the claim record and answer with the folded state.
* Warm: the server holds the run open (repeated claims, each by a new
  worker): the claim gates on the warm state, writes and fsyncs one record and
  returns the folded state.

Like Fold, a Claim returns the whole folded state; the response is read as
raw bytes and its size reported.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from bench import load, processes, workload
from bench.fold import read_and_parse_ms
from bench.harness import LOWER, Context, Row, median
from runjournal.v1 import journal_service_pb2 as service_pb

SECTION = 5


def _run_id(length: int, copy: int) -> str:
    return f"claim-{length}-{copy}"


def claim_request(run_id: str, worker: str) -> service_pb.ClaimRequest:
    return service_pb.ClaimRequest(
        run_id=run_id,
        worker_id=worker,
        host="bench-host",
        pid=os.getpid(),
        reason="benchmark",
        fingerprint=workload.FINGERPRINT,
    )


def run(ctx: Context) -> list[Row]:
    s = ctx.settings
    data_dir = ctx.new_dir("claim-data")
    copies = max(1, s.fold_copies)
    workload.write_warmup_run(data_dir)
    for length in s.claim_lengths:
        for copy in range(s.cold_rounds * copies):
            workload.write_journal(data_dir, _run_id(length, copy), length)
    parse: dict[int, list[float]] = {length: [] for length in s.claim_lengths}
    cold: dict[int, list[float]] = {length: [] for length in s.claim_lengths}
    warm: dict[int, list[float]] = {length: [] for length in s.claim_lengths}
    sizes: dict[int, int] = {}
    for round_number in range(s.cold_rounds):
        ctx.log(f"claim: round {round_number + 1} of {s.cold_rounds}")
        first_copy = round_number * copies
        with processes.runjournal(data_dir, ctx.work_dir, profile_dir=ctx.profile_dir, label="claim") as server:
            sizes = asyncio.run(
                _claims(
                    server.address,
                    data_dir,
                    s.claim_lengths,
                    range(first_copy, first_copy + copies),
                    s.warm_samples,
                    (cold, warm, parse),
                )
            )
    shortest = min(s.claim_lengths)
    file_bytes = {length: (data_dir / f"{_run_id(length, 0)}.jsonl").stat().st_size for length in s.claim_lengths}
    rows = []
    for length in s.claim_lengths:
        if length == shortest:
            continue
        for kind, values in (("cold", cold), ("warm", warm)):
            rows.append(
                Row(
                    SECTION,
                    f"{kind} Claim, {length:,} records",
                    median(values[length]),
                    "ms",
                    f"{kind} Claim, {shortest:,} records",
                    median(values[shortest]),
                    LOWER,
                    samples={"figure": values[length], "baseline": values[shortest]},
                )
            )
        rows.append(
            Row(
                SECTION,
                f"cold Claim, {length:,} records",
                median(cold[length]),
                "ms",
                "read + records.decode every line",
                median(parse[length]),
                LOWER,
                samples={"figure": cold[length], "baseline": parse[length]},
            )
        )
        rows.append(
            Row(
                SECTION,
                f"Claim response size, {length:,} records",
                sizes[length] / 1024,
                "KiB",
                "journal file",
                file_bytes[length] / 1024,
                LOWER,
            )
        )
    return rows


async def _claims(
    address: str,
    data_dir: Path,
    lengths: tuple[int, ...],
    copies: range,
    samples: int,
    out: tuple[dict[int, list[float]], dict[int, list[float]], dict[int, list[float]]],
) -> dict[int, int]:
    """Cold claims (each after its read-and-parse baseline, shortest runs first), then warm ones."""
    cold, warm, parse = out
    sizes: dict[int, int] = {}
    async with load.channel(address) as chan:
        claim = load.method(chan, "Claim", None)
        # First calls of a fresh process (connection, threads) land on a run nobody measures.
        for _ in range(2):
            await claim(claim_request(workload.WARMUP_RUN_ID, "warmup"), timeout=load.RPC_TIMEOUT_SECONDS)
        for length in sorted(lengths):
            for copy in copies:
                parse[length].append(read_and_parse_ms(data_dir / f"{_run_id(length, copy)}.jsonl"))
                began = time.perf_counter()
                await claim(claim_request(_run_id(length, copy), "cold-worker"), timeout=load.RPC_TIMEOUT_SECONDS)
                cold[length].append((time.perf_counter() - began) * 1000)
        for sample in range(samples):
            for length in lengths:
                request = claim_request(_run_id(length, copies[0]), f"warm-worker-{sample}")
                began = time.perf_counter()
                raw = await claim(request, timeout=load.RPC_TIMEOUT_SECONDS)
                warm[length].append((time.perf_counter() - began) * 1000)
                sizes[length] = len(raw)
    return sizes
