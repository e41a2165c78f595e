"""The README's performance table, rendered from ``bench/results.json`` so it cannot disagree with it.

``results.json`` holds the figures published in the README: for each row the
figure, its baseline measured in the same run, the ratio (computed from the
two unless the run measured it itself, as a ratio of medians), the target if
the row has one, and which measuring run it comes from (``runs``: when, how,
on what machine). The verdict is computed here from the numbers, so a row
cannot say "met" beside a figure that misses its target. ``docs/performance.md``
explains every row and keeps the notes of each session.

``python -m bench.results_table`` prints the table; ``scripts/generate_docs.py``
writes it into the README between its markers, and CI fails when the README
differs. To publish new figures, edit ``results.json`` (``python -m bench``
writes every figure of a run to ``bench/results/latest.json``) and run the
generator.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).with_name("results.json")

OPERATORS = {">=": ("≥", float.__ge__), "<=": ("≤", float.__le__), "<": ("<", float.__lt__)}
"""A target's operator -> how the table writes it, and the test of one value against the target."""


def load(path: Path = RESULTS) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def number(value: float) -> str:
    """``1,200``, ``59.4``, ``0.133``: as measured, with thousands separated."""
    return f"{value:,}"


def quantity(part: Mapping[str, Any] | None) -> str:
    """A figure or baseline cell: its values joined by `` / ``, its unit, and what it is."""
    if part is None:
        return "—"
    values = " / ".join(number(value) for value in part.get("values", []))
    measured = f"{values} {part.get('unit', '')}".strip()
    what = part.get("what", "")
    return ", ".join(text for text in (measured, what) if text)


def ratios(row: Mapping[str, Any]) -> list[float]:
    """The row's ratios: as given, else figure / baseline value by value (one baseline serves every figure)."""
    if "ratio" in row:
        return list(row["ratio"] or [])
    figure, baseline = row.get("figure") or {}, row.get("baseline") or {}
    values, bases = figure.get("values", []), baseline.get("values", [])
    if not values or not bases:
        return []
    if len(bases) == 1:
        bases = bases * len(values)
    if len(bases) != len(values):
        raise ValueError(f"{row['benchmark']}: {len(values)} figures against {len(bases)} baselines; give the ratio")
    return [value / base for value, base in zip(values, bases, strict=True)]


def verdict(row: Mapping[str, Any]) -> str:
    """The target cell: the target, and whether each measured value meets it."""
    target = row.get("target")
    if target is None:
        return ""
    sign, meets = OPERATORS[target["op"]]
    on = target["on"]
    values: Sequence[float] = ratios(row) if on == "ratio" else row["figure"]["values"]
    unit = "" if on == "ratio" else f" {row['figure'].get('unit', '')}".rstrip()
    met = sum(1 for value in values if meets(float(value), float(target["value"])))
    if not values:
        raise ValueError(f"{row['benchmark']}: a target with no measured value")
    outcome = "met" if met == len(values) else "**missed**" if met == 0 else f"met in {met} of {len(values)}"
    subject = "ratio " if on == "ratio" else ""
    return f"{subject}{sign} {number(target['value'])}{unit}: {outcome}"


def render(results: Mapping[str, Any]) -> str:
    """The Markdown table and, below it, the measuring runs its last column names."""
    runs: Mapping[str, Mapping[str, str]] = results["runs"]
    lines = [
        "| benchmark | figure | baseline (same run) | ratio | target | run |",
        "|---|---|---|---|---|---|",
    ]
    for row in results["rows"]:
        if row["run"] not in runs:
            raise ValueError(f"{row['benchmark']}: no run {row['run']!r} in 'runs'")
        shown = " / ".join(f"{ratio:.2f}" for ratio in ratios(row)) or "—"
        cells = [row["benchmark"], quantity(row.get("figure")), quantity(row.get("baseline")), shown]
        lines.append("| " + " | ".join([*cells, verdict(row), row["run"]]) + " |")
    lines.append("")
    lines += [f"- **{key}**: {run['date']}, {run['what']}" for key, run in runs.items()]
    return "\n".join(lines)


def main() -> int:
    print(render(load()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
