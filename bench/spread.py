"""``python -m bench.spread RUN.json RUN.json ...``: the spread of several full runs, row by row.

One run on a shared machine can land on a noisy minute; a figure worth
publishing is the median of several, with its min and max beside it, and each
run's load average, so a reader sees how far one run can move a verdict. The
rows are matched by name; a row missing from a run is shown with the runs that
have it.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any


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
    names: list[str] = []
    by_name: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        for row in run["rows"]:
            if row["name"] not in by_name:
                names.append(row["name"])
            by_name.setdefault(row["name"], []).append(row)
    lines = [
        "| benchmark | figure (min / median / max) | baseline (same) | ratio (same) | target | met |",
        "|---|---|---|---|---|---|",
    ]
    for name in names:
        rows = by_name[name]
        figures = [row["figure"] for row in rows if row.get("figure") is not None]
        baselines = [row["baseline"] for row in rows if row.get("baseline") is not None]
        ratios = [row["ratio"] for row in rows if row.get("ratio") is not None]
        unit = rows[0].get("unit", "")
        verdicts = "".join("-" if row.get("met") is None else ("y" if row["met"] else "n") for row in rows)
        lines.append(
            f"| {name} | {_spread(figures)} {unit} | {_spread(baselines)} {unit} | {_spread(ratios)} "
            f"| {rows[0].get('target') or '-'} | {verdicts} |"
        )
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
