"""``python -m bench.spread RUN.json RUN.json ...``: the spread of several full runs, row by row.

One run on a shared machine can land on a noisy minute; a figure worth
publishing is the median of several, with its min and max beside it, and each
run's load average, so a reader sees how far one run can move a verdict. Rows
are matched by name, baseline (one figure is often set against two
baselines) and the order of rows so named; a row missing from a run is shown with the runs that have it.

Two figures the performance issue sets targets on are combinations of rows, so
they are derived here from each run's own rows (``DERIVED``), never across runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

Row = dict[str, Any]


def _figure(rows: Sequence[Row], name: str, baseline_starts: str = "") -> tuple[float, float] | None:
    """(figure, baseline) of the row named ``name`` whose baseline's name starts with ``baseline_starts``."""
    for row in rows:
        named = row["name"] == name and str(row.get("baseline_name", "")).startswith(baseline_starts)
        if named and row.get("figure") is not None:
            return float(row["figure"]), float(row.get("baseline") or 0.0)
    return None


def _append_p50_over_echo_and_fsync(rows: Sequence[Row]) -> float | None:
    name = "unary Append, 1 concurrent run: p50"
    echo, fsync = _figure(rows, name, "echo"), _figure(rows, name, "write+fsync")
    if echo is None or fsync is None or not echo[1] + fsync[1]:
        return None
    return echo[0] / (echo[1] + fsync[1])


def _fork_jetstream_over_file(rows: Sequence[Row]) -> float | None:
    jetstream = _figure(rows, "ForkRun of a 10,000-record run (JetStream)")
    file = _figure(rows, "ForkRun of a 10,000-record run (file)")
    if jetstream is None or file is None or not file[0]:
        return None
    return jetstream[0] / file[0]


DERIVED: list[tuple[str, str, Callable[[Sequence[Row]], float | None]]] = [
    ("unary Append, 1 run, p50 / (echo p50 + write+fsync p50)", "ratio <= 1.5", _append_p50_over_echo_and_fsync),
    ("ForkRun of 10,000 records, JetStream / file", "ratio <= 1.5", _fork_jetstream_over_file),
]
"""(name, target, how to compute the ratio from one run's rows)."""


def _spread(values: Sequence[float]) -> str:
    if not values:
        return "-"
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{_short(low)} / {_short(mid)} / {_short(high)}"


def _short(value: float) -> str:
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def spread_table(runs: Sequence[dict[str, Any]]) -> str:
    """A Markdown table: for each row, min / median / max of its figure, baseline and ratio, and the verdicts."""
    keys: list[tuple[str, str, int]] = []
    by_key: dict[tuple[str, str, int], list[Row]] = {}
    for run in runs:
        seen: dict[tuple[str, str], int] = {}
        for row in run["rows"]:
            named = (row["name"], str(row.get("baseline_name") or ""))
            seen[named] = seen.get(named, 0) + 1  # a benchmark may repeat a row's name for another data set
            key = (*named, seen[named])
            if key not in by_key:
                keys.append(key)
            by_key.setdefault(key, []).append(row)
    lines = [
        "| benchmark | figure (min / median / max) | baseline (same) | ratio (same) | target | met |",
        "|---|---|---|---|---|---|",
    ]
    for key in keys:
        rows = by_key[key]
        figures = [row["figure"] for row in rows if row.get("figure") is not None]
        baselines = [row["baseline"] for row in rows if row.get("baseline") is not None]
        ratios = [row["ratio"] for row in rows if row.get("ratio") is not None]
        unit = rows[0].get("unit", "")
        baseline = f"{_spread(baselines)} {unit} ({key[1]})" if key[1] else "-"
        verdicts = "".join("-" if row.get("met") is None else ("y" if row["met"] else "n") for row in rows)
        lines.append(
            f"| {key[0]} | {_spread(figures)} {unit} | {baseline} | {_spread(ratios)} "
            f"| {rows[0].get('target') or '-'} | {verdicts} |"
        )
    for name, target, derive in DERIVED:
        ratios = [value for value in (derive(run["rows"]) for run in runs) if value is not None]
        if ratios:
            lines.append(f"| {name} (derived) | - | - | {_spread(ratios)} | {target} | - |")
    loads = "; ".join(
        f"run {index + 1}: {' '.join(run['machine'].get('loadavg_at_start', ['?']))} at its start, "
        f"{' '.join(run['machine'].get('loadavg_at_end', ['?']))} at its end"
        for index, run in enumerate(runs)
    )
    return "\n".join([*lines, "", f"Load average (1, 5, 15 min): {loads}."])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("runs", nargs="+", type=Path, help="results files written by `python -m bench --json`")
    args = parser.parse_args(argv)
    print(spread_table([json.loads(path.read_text()) for path in args.runs]))


if __name__ == "__main__":
    main()
