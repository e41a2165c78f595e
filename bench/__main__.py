"""``python -m bench [--quick] [--only NAME[,NAME]] [--json PATH]``: run the benchmarks, print the table.

See docs/performance.md for what each row measures and how its baseline is
taken.
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.harness import FULL, QUICK, Context, Row, Settings, machine, notes, table, to_json, unavailable

DEFAULT_JSON = Path(__file__).parent / "results" / "latest.json"

BENCHMARKS: dict[str, tuple[int, str, str]] = {
    "append": (1, "bench.append:run_unary", "unary Append vs the echo ceiling and write+fsync"),
    "batch": (2, "bench.append:run_batch", "AppendBatch of 16 vs unary, echo and write+fsync"),
    "jetstream": (3, "bench.jetstream:run", "JetStream backend vs raw fenced publishes, and by run length"),
    "sqlite": (8, "bench.sqlite:run", "SQLite (WAL, synchronous=FULL) vs unary Append"),
    "fold": (4, "bench.fold:run", "Fold cold and warm at 100, 1,000 and 10,000 records"),
    "claim": (5, "bench.claim:run", "Claim on a 10,000-record run vs a 100-record run"),
    "memory": (7, "bench.memory:run", "server RSS after touching many runs"),
    "list": (6, "bench.listing:run", "ListRuns pages: 1,000-record runs vs 10-record runs"),
    "attack": (9, "bench.attack_memory:run", "server RSS and bystander stalls under the hardening issue's attacks"),
    "past_fold": (10, "bench.past_fold:run", "other clients' appends while Fold(as_of_seq) loops on a long run"),
    "watch": (13, "bench.watch:run", "append-to-watcher latency with 64 watched runs vs the append's own"),
    "fork": (12, "bench.fork:run", "ForkRun of a 10,000-record run vs a Read of all its records, both backends"),
    "list_restart": (15, "bench.listing:restart", "first ListRuns page, inbox and a status filter after a restart"),
    "warm": (16, "bench.warm_memory:run", "server RSS growth with warm states held at max_warm_bytes, vs the setting"),
    "task_list": (17, "bench.task_listing:run", "ListTasks first page and a filter matching none at 10,000 tasks"),
}
"""Name -> (table section, ``module:function``, what it measures); modules are imported only when run.

Run in this order, the disk-heavy ones last (the ListRuns data set is 8 GiB of
writes), so their writeback does not land in the fsync-bound samples of the
others; the table is always in section order.
"""


def load_benchmark(name: str) -> Callable[[Context], list[Row]]:
    module_name, _, function = BENCHMARKS[name][1].partition(":")
    return getattr(importlib.import_module(module_name), function)  # type: ignore[no-any-return]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and short samples (under 2 minutes)")
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated benchmarks to run: " + ", ".join(BENCHMARKS),
    )
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help=f"results file (default {DEFAULT_JSON})")
    parser.add_argument(
        "--work-dir",
        type=Path,
        help="where to make the scratch directory (default: the system temp dir); pick the filesystem to measure",
    )
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    parser.add_argument(
        "--profile", type=Path, metavar="DIR", help="run every runjournal server under pyinstrument; profiles go here"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()] or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    settings = QUICK if args.quick else FULL
    if args.work_dir is not None:
        args.work_dir.mkdir(parents=True, exist_ok=True)
    # Always a new directory of our own (inside --work-dir when given): it is deleted at the end.
    work_dir = Path(tempfile.mkdtemp(prefix="runjournal-bench-", dir=args.work_dir))
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    ctx = Context(settings, work_dir, profile_dir=args.profile)
    info = machine(work_dir)
    ctx.log(f"{settings.mode} mode; scratch {work_dir} ({info['data_filesystem']})")
    started = time.time()
    rows: list[Row] = []
    durations: dict[str, float] = {}
    try:
        for name in names:
            began = time.perf_counter()
            try:
                rows += load_benchmark(name)(ctx)
            except Exception as err:
                # Report it as a row and go on: one broken benchmark must not hide the others.
                ctx.log(f"{name} failed: {err!r}")
                rows.append(unavailable(BENCHMARKS[name][0], name, f"FAILED: {err!r}"))
            durations[name] = round(time.perf_counter() - began, 1)
            ctx.log(f"{name} took {durations[name]} s")
    finally:
        if not args.keep:
            shutil.rmtree(work_dir, ignore_errors=True)
    info["loadavg_at_end"] = Path("/proc/loadavg").read_text().split()[:3]
    rows.sort(key=lambda row: row.section)
    print(f"\nrunjournal benchmarks, {settings.mode} mode ({_scale(settings)})")
    print(f"load average at start {' '.join(info['loadavg_at_start'])}, at end {' '.join(info['loadavg_at_end'])}\n")
    print(table(rows))
    extra = notes(rows)
    if extra:
        print("\nNotes:\n" + extra)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        to_json(
            rows,
            mode=settings.mode,
            settings=settings.__dict__,
            machine=info,
            started_unix=started,
            seconds_per_benchmark=durations,
            facts=ctx.facts,
        )
    )
    print(f"\nresults written to {args.json}; took {time.time() - started:.0f} s")
    return 0


def _scale(settings: Settings) -> str:
    return (
        f"{settings.seconds:g} s samples x {settings.rounds} rounds; ListRuns over {settings.list_runs:,} runs; "
        f"memory after {settings.memory_runs:,} runs"
    )


if __name__ == "__main__":
    raise SystemExit(main())
