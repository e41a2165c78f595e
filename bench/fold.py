"""Row 4: Fold, cold and warm, on runs of 100, 1,000 and 10,000 records.

* Cold: the journal is not open on the server. Each round starts a fresh
  server process on the data dir and times the first Fold of each run (the
  file is in the page cache: cold means cold for the server, not for the
  disk). Baseline: reading the same file and ``records.decode``-ing every line
  in the bench process — the least a server that stores lines must do.
  Target: cold fold <= 2 x read-and-parse.
* Warm: a Fold right after an Append of one record, so the server has the run
  open and its state folded. Baseline: the same on a 100-record run. Target:
  <= 2 ms on a 10,000-record run, absolute.

Fold returns the whole conversation, so the response grows with the run; its
size is reported next to the journal's. Fold is called with a raw-bytes
deserializer: the figures are the server's work plus the transfer, not the
client's parsing, which is reported separately. The in-process rows split the
warm figure into its parts (``Folder.state()`` and serializing the response),
measured in the bench process on the same journal.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from bench import load, processes, workload
from bench.harness import LOWER, Context, Row, figure_target, median, ratio_target
from runjournal.v1 import journal_service_pb2 as service_pb
from runjournal_server.core import records
from runjournal_server.core.fold import fold_stored

SECTION = 4
COLD_TARGET = 2.0
WARM_TARGET_MS = 2.0


def _run_id(length: int, copy: int) -> str:
    return f"fold-{length}-{copy}"


def run(ctx: Context) -> list[Row]:
    s = ctx.settings
    data_dir = ctx.new_dir("fold-data")
    began = time.perf_counter()
    workload.write_warmup_run(data_dir)
    sizes = {length: workload.write_journal(data_dir, _run_id(length, 0), length) for length in s.fold_lengths}
    for length in s.fold_lengths:
        for copy in range(1, s.fold_copies):
            workload.write_journal(data_dir, _run_id(length, copy), length)
    ctx.facts["fold_data_set_seconds"] = round(time.perf_counter() - began, 2)
    ctx.facts["fold_journal_bytes"] = sizes

    cold: dict[int, list[float]] = {length: [] for length in s.fold_lengths}
    parse: dict[int, list[float]] = {length: [] for length in s.fold_lengths}
    for round_number in range(s.cold_rounds):
        ctx.log(f"fold: cold round {round_number + 1} of {s.cold_rounds}")
        with processes.runjournal(data_dir, ctx.work_dir, profile_dir=ctx.profile_dir, label="fold-cold") as server:
            asyncio.run(_cold_folds(server.address, data_dir, s.fold_lengths, s.fold_copies, cold, parse))

    ctx.log("fold: warm")
    with (
        processes.runjournal(data_dir, ctx.work_dir, profile_dir=ctx.profile_dir, label="fold-warm") as server,
        processes.echo(ctx.work_dir) as echo,
    ):
        warm, tail, response_bytes, blob = asyncio.run(
            _warm_folds(server.address, echo.address, s.fold_lengths, s.warm_samples)
        )
    rows = _rows(ctx, cold, parse, warm, response_bytes, sizes, blob)
    rows += _tail_rows(tail)
    rows += _in_process_rows(data_dir, max(s.fold_lengths))
    return rows


def read_and_parse_ms(path: Path) -> float:
    began = time.perf_counter()
    workload.read_and_parse(path)
    return (time.perf_counter() - began) * 1000


async def _cold_folds(
    address: str,
    data_dir: Path,
    lengths: tuple[int, ...],
    copies: int,
    cold: dict[int, list[float]],
    parse: dict[int, list[float]],
) -> None:
    """Each run's first Fold, right after its read-and-parse baseline; shortest runs first.

    Shortest first, so no short run is folded just after a server process
    built (and must collect) the objects of a 10,000-record one.
    """
    async with load.channel(address) as chan:
        fold = load.method(chan, "Fold", None)
        await fold(service_pb.FoldRequest(run_id=workload.WARMUP_RUN_ID), timeout=load.RPC_TIMEOUT_SECONDS)
        for length in sorted(lengths):
            for copy in range(copies):
                parse[length].append(read_and_parse_ms(data_dir / f"{_run_id(length, copy)}.jsonl"))
                began = time.perf_counter()
                await fold(service_pb.FoldRequest(run_id=_run_id(length, copy)), timeout=load.RPC_TIMEOUT_SECONDS)
                cold[length].append((time.perf_counter() - began) * 1000)


async def _warm_folds(
    address: str, echo_address: str, lengths: tuple[int, ...], samples: int
) -> tuple[dict[int, list[float]], dict[int, list[float]], dict[int, int], list[float]]:
    """Append one record (not timed), then Fold (timed); interleaved across lengths.

    After each Fold of the longest run, the echo server's Blob returns as
    many bytes as that Fold did: the gRPC ceiling for a response that size.
    The incremental Folds (``conversation_from``) are sampled in a loop of
    their own, after these: right after a 6.4 MiB Fold on the same channel a
    small call is slowed by its aftermath (about 0.25 ms here, outside the
    server's handler; docs/perf-round3-fold-memory.md), which a worker that
    keeps its conversation never pays, since it never fetches it whole.
    """
    warm: dict[int, list[float]] = {length: [] for length in lengths}
    tail: dict[int, list[float]] = {length: [] for length in lengths}
    response_bytes: dict[int, int] = {}
    known: dict[int, int] = {}
    blob: list[float] = []
    longest = max(lengths)
    async with load.channel(address) as chan, load.channel(echo_address) as echo_chan:
        fetch_blob = load.blob_method(echo_chan)
        fold = load.method(chan, "Fold", None)
        append = load.method(chan, "Append", service_pb.AppendResponse)
        next_seq = {length: length + 1 for length in lengths}
        for _ in range(samples):
            for length in lengths:
                run_id = _run_id(length, 0)
                await append(workload.append_request(run_id, next_seq[length]), timeout=load.RPC_TIMEOUT_SECONDS)
                next_seq[length] += 1
                began = time.perf_counter()
                raw = await fold(service_pb.FoldRequest(run_id=run_id), timeout=load.RPC_TIMEOUT_SECONDS)
                warm[length].append((time.perf_counter() - began) * 1000)
                response_bytes[length] = len(raw)
                known[length] = service_pb.FoldResponse.FromString(raw).state.conversation_size
                if length == longest:
                    began = time.perf_counter()
                    await fetch_blob(len(raw))
                    blob.append((time.perf_counter() - began) * 1000)
        # The client's side, for the record: parsing the largest response.
        raw = await fold(service_pb.FoldRequest(run_id=_run_id(longest, 0)), timeout=load.RPC_TIMEOUT_SECONDS)
        began = time.perf_counter()
        service_pb.FoldResponse.FromString(raw)
        response_bytes[-1] = int((time.perf_counter() - began) * 1e6)  # client parse time, us
        del raw
        for _ in range(samples):
            for length in lengths:
                # A worker that keeps the conversation asks only for what it lacks: append, then fold from
                # its last known message (the only one that may still change).
                run_id = _run_id(length, 0)
                await append(workload.append_request(run_id, next_seq[length]), timeout=load.RPC_TIMEOUT_SECONDS)
                next_seq[length] += 1
                request = service_pb.FoldRequest(run_id=run_id, conversation_from=max(known[length] - 1, 0))
                began = time.perf_counter()
                raw = await fold(request, timeout=load.RPC_TIMEOUT_SECONDS)
                tail[length].append((time.perf_counter() - began) * 1000)
                known[length] = service_pb.FoldResponse.FromString(raw).state.conversation_size
    return warm, tail, response_bytes, blob


def _rows(
    ctx: Context,
    cold: dict[int, list[float]],
    parse: dict[int, list[float]],
    warm: dict[int, list[float]],
    response_bytes: dict[int, int],
    sizes: dict[int, int],
    blob: list[float],
) -> list[Row]:
    rows = []
    shortest, longest = min(warm), max(warm)
    for length in sorted(cold):
        row = Row(
            SECTION,
            f"cold Fold, {length:,} records",
            median(cold[length]),
            "ms",
            "read + records.decode every line",
            median(parse[length]),
            LOWER,
            samples={"figure": cold[length], "baseline": parse[length]},
        )
        rows.append(ratio_target(row, "<=", COLD_TARGET))
    for length in sorted(warm):
        if length == shortest:
            continue
        row = Row(
            SECTION,
            f"warm Fold after 1 append, {length:,} records",
            median(warm[length]),
            "ms",
            f"same, {shortest:,} records",
            median(warm[shortest]),
            LOWER,
            samples={"figure": warm[length]},
        )
        rows.append(row)
    rows.append(
        Row(
            SECTION,
            f"warm Fold after 1 append, {longest:,} records",
            median(warm[longest]),
            "ms",
            f"echo server returning {response_bytes[longest] / 1024:,.0f} KiB",
            median(blob),
            LOWER,
            note="the gRPC ceiling for a response of the same size: no state, no serialization",
        )
    )
    for length in sorted(warm):
        rows.append(
            Row(
                SECTION,
                f"Fold response size, {length:,} records",
                response_bytes[length] / 1024,
                "KiB",
                "journal file",
                sizes[length] / 1024,
                LOWER,
            )
        )
    rows.append(
        Row(
            SECTION,
            f"client: parse the {longest:,}-record FoldResponse",
            response_bytes[-1] / 1000,
            "ms",
            f"warm Fold, {longest:,} records",
            median(warm[longest]),
            LOWER,
            note="FoldResponse.FromString in the bench process; not part of the Fold figures",
        )
    )
    return rows


def _tail_rows(tail: dict[int, list[float]]) -> list[Row]:
    """Warm Fold with ``conversation_from``: the target row (a full conversation cannot travel in 2 ms)."""
    rows = []
    shortest, longest = min(tail), max(tail)
    for length in sorted(tail):
        row = Row(
            SECTION,
            f"warm Fold after 1 append, {length:,} records, conversation from the client's last message",
            median(tail[length]),
            "ms",
            f"same, {shortest:,} records",
            median(tail[shortest]),
            LOWER,
            samples={"figure": tail[length]},
        )
        if length == longest:
            figure_target(row, "<=", WARM_TARGET_MS)
        rows.append(row)
    return rows


def _in_process_rows(data_dir: Path, length: int) -> list[Row]:
    """Where the warm time goes: snapshot the folded state, then serialize it (bench process, no gRPC)."""
    data = (data_dir / f"{_run_id(length, 0)}.jsonl").read_bytes()
    folder = fold_stored(records.decode(raw) for raw in data.split(b"\n") if raw)
    state_ms, serialize_ms = [], []
    for _ in range(5):
        began = time.perf_counter()
        state = folder.state()
        state_ms.append((time.perf_counter() - began) * 1000)
        began = time.perf_counter()
        service_pb.FoldResponse(state=state).SerializeToString()
        serialize_ms.append((time.perf_counter() - began) * 1000)
    budget = f"the {WARM_TARGET_MS:g} ms warm target"
    return [
        Row(
            SECTION,
            f"in-process: Folder.state() of a {length:,}-record run",
            median(state_ms),
            "ms",
            budget,
            WARM_TARGET_MS,
            LOWER,
            note="the folded run snapshotted into a new RunState, in the bench process",
        ),
        Row(
            SECTION,
            f"in-process: serialize its FoldResponse ({length:,} records)",
            median(serialize_ms),
            "ms",
            budget,
            WARM_TARGET_MS,
            LOWER,
            note="FoldResponse.SerializeToString of that state, as grpc does for every Fold",
        ),
    ]
