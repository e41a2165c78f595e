"""Row 6: ListRuns, a page of 100 at a time, over runs of 1,000 records vs runs of 10 records.

Two data dirs of the same number of runs (10,000 in full mode, fewer in
quick mode, as the table heading says), one of 10-record runs and one of
1,000-record runs, each served by its own fresh server. The data sets are
written directly (``workload.write_journal``: the stored lines
``records.encode`` produces, i.e. exactly the file backend's format) instead
of through millions of RPCs; creation time is not what this row measures.
Pages are fetched alternately from the two servers so drift hits both.

The first page is reported on its own: it is where the server reads every
run's meta (for the newest-first order) and fills its meta cache. Every
listed run id is checked: a listing that lost or repeated runs fails the
benchmark instead of being timed.
"""

from __future__ import annotations

import asyncio
import math
import os
import shutil
import time
from pathlib import Path

from bench import load, processes, workload
from bench.harness import LOWER, Context, Row, median, percentile, ratio_target
from runjournal.v1 import journal_service_pb2 as service_pb

SECTION = 6
RATIO_TARGET = 1.5
MIN_PAGE_SAMPLES = 20


class ListingError(AssertionError):
    """The listing did not return every run exactly once."""


def run(ctx: Context) -> list[Row]:
    s = ctx.settings
    short, long = s.list_lengths
    dirs: dict[int, Path] = {}
    for length in (short, long):
        began = time.perf_counter()
        dirs[length] = _build(ctx, length, s.list_runs)
        ctx.facts[f"list_data_set_{length}_records_seconds"] = round(time.perf_counter() - began, 1)
        ctx.log(f"list: wrote {s.list_runs:,} runs of {length:,} records in {time.perf_counter() - began:.1f} s")
    try:
        with (
            processes.runjournal(dirs[short], ctx.work_dir, profile_dir=ctx.profile_dir, label="list-short") as a,
            processes.runjournal(dirs[long], ctx.work_dir, profile_dir=ctx.profile_dir, label="list-long") as b,
        ):
            first, pages = asyncio.run(_pages(a.address, b.address, s.list_runs, s.list_page_size))
    finally:
        for path in dirs.values():
            shutil.rmtree(path, ignore_errors=True)
        os.sync()  # let the data set's writeback finish here, not in whatever is measured next
    scale = f"{s.list_runs:,} runs"
    rows = [
        Row(
            SECTION,
            f"ListRuns first page ({scale}; reads every meta), {long:,}-record runs",
            first[1],
            "ms",
            f"{short:,}-record runs",
            first[0],
            LOWER,
        ),
        ratio_target(
            Row(
                SECTION,
                f"ListRuns page of {s.list_page_size} ({scale}), {long:,}-record runs: median",
                median(pages[1]),
                "ms",
                f"{short:,}-record runs",
                median(pages[0]),
                LOWER,
                samples={"figure": pages[1], "baseline": pages[0]},
            ),
            "<=",
            RATIO_TARGET,
        ),
        Row(
            SECTION,
            f"ListRuns page of {s.list_page_size} ({scale}), {long:,}-record runs: p90",
            percentile(pages[1], 0.9),
            "ms",
            f"{short:,}-record runs",
            percentile(pages[0], 0.9),
            LOWER,
        ),
    ]
    return rows


def _build(ctx: Context, length: int, runs: int) -> Path:
    data_dir = ctx.new_dir(f"list-{length}")
    for index in range(runs):
        workload.write_journal(
            data_dir, f"list-{index:05d}", length, created_at_seconds=workload.CREATED_AT_SECONDS + index
        )
    return data_dir


async def _pages(short: str, long: str, runs: int, page_size: int) -> tuple[list[float], list[list[float]]]:
    """The first page of each, then every page, alternating; repeated until there are enough samples."""
    pages_per_pass = math.ceil(runs / page_size)
    passes = max(1, math.ceil(MIN_PAGE_SAMPLES / pages_per_pass))
    times: list[list[float]] = [[], []]
    first: list[float] = []
    async with load.channel(short) as chan_a, load.channel(long) as chan_b:
        methods = [load.method(chan, "ListRuns", service_pb.ListRunsResponse) for chan in (chan_a, chan_b)]
        for which, list_runs in enumerate(methods):
            began = time.perf_counter()
            await list_runs(service_pb.ListRunsRequest(page_size=page_size), timeout=load.RPC_TIMEOUT_SECONDS)
            first.append((time.perf_counter() - began) * 1000)
            del which
        for _ in range(passes):
            tokens = ["", ""]
            seen: list[list[str]] = [[], []]
            for _page in range(pages_per_pass):
                for which, list_runs in enumerate(methods):
                    request = service_pb.ListRunsRequest(page_size=page_size, page_token=tokens[which])
                    began = time.perf_counter()
                    response = await list_runs(request, timeout=load.RPC_TIMEOUT_SECONDS)
                    times[which].append((time.perf_counter() - began) * 1000)
                    seen[which] += [summary.run_id for summary in response.runs]
                    tokens[which] = response.next_page_token
            for which in (0, 1):
                _check(seen[which], runs, tokens[which])
    return first, times


def _check(seen: list[str], runs: int, token: str) -> None:
    expected = [f"list-{index:05d}" for index in reversed(range(runs))]  # newest first
    if seen != expected or token:
        raise ListingError(
            f"listing returned {len(seen)} runs ({len(set(seen))} distinct), expected {runs} newest first; "
            f"next_page_token after the last page: {token!r}"
        )
