"""Row 16: server RSS held by warm states against ``max_warm_bytes``, the bound an operator sets.

A fresh file-backend server with ``--max-warm-bytes`` of ``SETTING_MIB``; its
VmRSS right after it is ready is the baseline. Workers then create runs of
``RECORDS_PER_RUN`` benchmark records (``workload.py``: assistant turns with a
tool call and their results, ~1 KiB each) until the stored bytes are
``OVERFILL`` times the setting, so the warm states are held at their bound and
the least recently used are closed beyond it. The figure is the RSS growth
over the idle server, as a multiple of the setting: 1.0 means the setting is
what the warm states cost. Before issue 28 the bound counted stored bytes, and
the server grew about three times the setting (256 MiB: 56 -> 793 MiB).

``python -m bench.warm_memory`` runs this row alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench import load, processes, workload
from bench.harness import LOWER, QUICK, Context, Row, figure_target
from runjournal.v1 import journal_service_pb2 as service_pb

SECTION = 16
SETTING_MIB = 64
OVERFILL = 3
RECORDS_PER_RUN = 200
WORKERS = 16
TARGET_MULTIPLE = 1.5
MIB = 1024 * 1024


def run(ctx: Context) -> list[Row]:
    data_dir = ctx.new_dir("warm-memory-data")
    setting = SETTING_MIB * MIB
    args = ("--max-warm-bytes", str(setting))
    with processes.runjournal(data_dir, ctx.work_dir, extra_args=args, label="warm-memory") as server:
        idle = server.rss_bytes()
        stored = asyncio.run(_fill(server.address, OVERFILL * setting))
        held = server.rss_bytes()
    growth = held - idle
    ctx.log(f"warm memory: {stored / MIB:.0f} MiB stored, RSS {idle / MIB:.0f} -> {held / MIB:.0f} MiB")
    return [
        figure_target(
            Row(
                SECTION,
                f"server RSS growth with warm states held at max_warm_bytes {SETTING_MIB} MiB, as a multiple of it",
                growth / setting,
                "x",
                "idle fresh server",
                idle / MIB,
                LOWER,
                note=f"RSS {idle / MIB:.0f} -> {held / MIB:.0f} MiB after {stored / MIB:.0f} MiB stored",
            ),
            "<=",
            TARGET_MULTIPLE,
        )
    ]


async def _fill(address: str, stored_bytes: int) -> int:
    per_run = sum(len(workload.line(seq)) for seq in range(2, RECORDS_PER_RUN + 2))
    runs = stored_bytes // per_run + 1
    pending = list(reversed(range(runs)))
    async with load.channel(address) as chan:
        append = load.method(chan, "Append", service_pb.AppendResponse)
        batch = load.method(chan, "AppendBatch", service_pb.AppendBatchResponse)

        async def worker() -> None:
            while pending:
                run_id = f"warm-{pending.pop():05d}"
                await append(workload.append_request(run_id, 1), timeout=load.RPC_TIMEOUT_SECONDS)
                await batch(workload.batch_request(run_id, 2, RECORDS_PER_RUN), timeout=load.RPC_TIMEOUT_SECONDS)

        await asyncio.gather(*(worker() for _ in range(WORKERS)))
    return runs * per_run


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-warm-") as scratch:
        ctx = Context(settings=QUICK, work_dir=args.work_dir or Path(scratch))
        rows = run(ctx)
    print(json.dumps([row.__dict__ for row in rows], indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
