"""What every benchmark shares: settings per mode, rows, statistics, the table and the JSON.

Every figure is reported next to a baseline measured in the same run on the
same machine, and their ratio, because absolute times on a shared machine
drift. Where a figure and its baseline are both load measurements, they are
taken in alternating rounds and each is the median of its rounds, so a noisy
neighbour hits both.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HIGHER = "higher"
LOWER = "lower"


@dataclass(frozen=True)
class Settings:
    """How big and how long; ``QUICK`` and ``FULL`` are the two modes, tests make tiny ones."""

    mode: str
    seconds: float
    """Length of one load sample."""
    warmup_seconds: float
    rounds: int
    """Alternating rounds of figure and baseline; each reported value is the median of its rounds."""
    concurrency: tuple[int, ...] = (1, 64)
    batch_size: int = 16
    fold_lengths: tuple[int, ...] = (100, 1_000, 10_000)
    fold_copies: int = 3
    """Runs of each length folded cold in each fresh server."""
    cold_rounds: int = 2
    """Fresh server processes for the cold folds and claims."""
    warm_samples: int = 20
    claim_lengths: tuple[int, ...] = (100, 10_000)
    list_runs: int = 10_000
    list_lengths: tuple[int, int] = (10, 1_000)
    list_page_size: int = 100
    memory_runs: int = 10_000
    sqlite_writers: tuple[int, ...] = (1, 8)
    cap_per_worker: int = 200_000
    """Upper bound on operations per worker in one sample (every loop is bounded)."""


QUICK = Settings(
    mode="quick",
    seconds=1.0,
    warmup_seconds=0.3,
    rounds=2,
    fold_copies=1,
    cold_rounds=1,
    warm_samples=5,
    list_runs=500,
    memory_runs=1_000,
)
FULL = Settings(mode="full", seconds=2.0, warmup_seconds=1.0, rounds=5)


@dataclass
class Row:
    """One line of the table: a figure, its baseline, their ratio, and the target if there is one."""

    section: int
    name: str
    figure: float | None
    unit: str
    baseline_name: str
    baseline: float | None
    better: str = HIGHER
    """Which way the figure is better: ``higher`` (a rate) or ``lower`` (a time, a size)."""
    target: str = ""
    met: bool | None = None
    note: str = ""
    ratio: float | None = None
    samples: dict[str, list[float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.ratio is None and self.figure is not None and self.baseline:
            self.ratio = self.figure / self.baseline

    @property
    def round_ratios(self) -> list[float]:
        """figure / baseline of each round, when both were sampled in the same rounds."""
        figure, baseline = self.samples.get("figure", []), self.samples.get("baseline", [])
        if len(figure) != len(baseline):
            return []
        return [f / b for f, b in zip(figure, baseline, strict=True) if b]


def ratio_target(row: Row, op: str, value: float) -> Row:
    """Set a target on the ratio: ``op`` is ``>=`` or ``<=``.

    The verdict is on the ratio of the medians; the spread of the per-round
    ratios goes into the note, so a verdict that one noisy round could flip
    is visible as such.
    """
    row.target = f"ratio {op} {value:g}"
    if row.ratio is not None:
        row.met = row.ratio >= value if op == ">=" else row.ratio <= value
    rounds = row.round_ratios
    if len(rounds) > 1:
        spread = f"per-round ratios {min(rounds):.2f}-{max(rounds):.2f}"
        row.note = f"{row.note}; {spread}" if row.note else spread
    return row


def figure_target(row: Row, op: str, value: float) -> Row:
    """Set a target on the figure itself, in its unit."""
    row.target = f"{op} {value:g} {row.unit}"
    if row.figure is not None:
        row.met = row.figure >= value if op == ">=" else row.figure <= value
    return row


def unavailable(section: int, name: str, why: str) -> Row:
    return Row(section, name, None, "", "", None, note=why)


# ------------------------------------------------------------------ statistics


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile (``fraction`` in 0..1); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass
class Measurement:
    """One load sample: operations completed in a time window, with per-operation latencies."""

    operations: int
    records: int
    seconds: float
    latencies: list[float] = field(repr=False, default_factory=list)
    server_cpu_seconds: float | None = None
    """CPU time the server process used during the sample, when measured."""
    server_fsyncs: int | None = None
    """fsync calls the server's file backend made during the sample, when counted (``fsync_count.py``)."""

    @property
    def fsyncs_per_record(self) -> float:
        if self.server_fsyncs is None or not self.records:
            return math.nan
        return self.server_fsyncs / self.records

    @property
    def server_cpu_us_per_record(self) -> float:
        if self.server_cpu_seconds is None or not self.records:
            return math.nan
        return self.server_cpu_seconds / self.records * 1e6

    @property
    def rate(self) -> float:
        """Records per second."""
        return self.records / self.seconds if self.seconds > 0 else math.nan

    @property
    def p50_ms(self) -> float:
        return percentile(self.latencies, 0.50) * 1000

    @property
    def p99_ms(self) -> float:
        return percentile(self.latencies, 0.99) * 1000


# ------------------------------------------------------------------ context


@dataclass
class Context:
    """The run a benchmark belongs to: its settings, a scratch directory, progress output."""

    settings: Settings
    work_dir: Path
    profile_dir: Path | None = None
    verbose: bool = True
    facts: dict[str, Any] = field(default_factory=dict)
    """Things worth reporting that are not rows (data-set build times, line sizes)."""

    def new_dir(self, name: str) -> Path:
        path = self.work_dir / name
        suffix = 1
        while path.exists():
            suffix += 1
            path = self.work_dir / f"{name}-{suffix}"
        path.mkdir(parents=True)
        return path

    def log(self, message: str) -> None:
        if self.verbose:
            print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ machine


def _first_line_with(path: str, prefix: str) -> str:
    try:
        for text in Path(path).read_text().splitlines():
            if text.startswith(prefix):
                return text.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def filesystem_of(path: Path) -> str:
    """``type (device) mounted on X`` for the mount that holds ``path``, from /proc/mounts."""
    resolved = str(path.resolve())
    best = ("", "unknown", "unknown")
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return "unknown"
    for entry in mounts:
        parts = entry.split()
        if len(parts) < 3:
            continue
        device, mount_point, fs_type = parts[0], parts[1], parts[2]
        inside = resolved == mount_point or resolved.startswith(mount_point.rstrip("/") + "/")
        if inside and len(mount_point) >= len(best[0]):
            best = (mount_point, fs_type, device)
    return f"{best[1]} ({best[2]}) mounted on {best[0]}"


def machine(work_dir: Path) -> dict[str, Any]:
    import google.protobuf
    import grpc

    try:
        git = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10, check=False
        ).stdout.strip()
    except OSError:
        git = ""
    return {
        "nproc": len(os.sched_getaffinity(0)),
        "cpu_model": _first_line_with("/proc/cpuinfo", "model name"),
        "memory": _first_line_with("/proc/meminfo", "MemTotal"),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "grpcio": grpc.__version__,
        "protobuf": google.protobuf.__version__,
        "data_filesystem": filesystem_of(work_dir),
        "loadavg_at_start": Path("/proc/loadavg").read_text().split()[:3],
        "git_commit": git,
    }


# ------------------------------------------------------------------ output


def _number(value: float | None, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if abs(value) >= 1000:
        text = f"{value:,.0f}"
    elif abs(value) >= 100:
        text = f"{value:.0f}"
    elif abs(value) >= 10:
        text = f"{value:.1f}"
    else:
        text = f"{value:.3g}"
    return f"{text} {unit}".strip()


def table(rows: Sequence[Row]) -> str:
    """A Markdown table, so the same text goes into the docs."""
    header = ["#", "benchmark", "figure", "baseline", "ratio", "target", "result"]
    lines = [header]
    for row in rows:
        baseline = f"{_number(row.baseline, row.unit)} ({row.baseline_name})" if row.baseline_name else "-"
        result = "" if row.met is None else ("met" if row.met else "MISSED")
        note = " ".join(row.note.split())
        if len(note) > 160:
            note = note[:157] + "..."
        name = row.name + (f" — {note}" if note and row.figure is None else "")
        ratio = "-" if row.ratio is None else f"{row.ratio:.2f}"
        lines.append(
            [str(row.section), name, _number(row.figure, row.unit), baseline, ratio, row.target or "-", result]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for index, line in enumerate(lines):
        out.append("| " + " | ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)) + " |")
        if index == 0:
            out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(out)


def notes(rows: Sequence[Row]) -> str:
    return "\n".join(f"- [{row.section}] {row.name}: {row.note}" for row in rows if row.note and row.figure is not None)


def to_json(rows: Sequence[Row], **extra: Any) -> str:
    def clean(value: Any) -> Any:
        if isinstance(value, float) and math.isnan(value):
            return None
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v) for v in value]
        return value

    payload = {
        **extra,
        "rows": [clean({**dataclasses.asdict(row), "round_ratios": row.round_ratios}) for row in rows],
    }
    return json.dumps(clean(payload), indent=2, sort_keys=False)
