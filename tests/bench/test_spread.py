"""``bench.spread``: rows matched by name and baseline across runs, min / median / max, derived ratios per run."""

from __future__ import annotations

from typing import Any

from bench.spread import spread_table

P50 = "unary Append, 1 concurrent run: p50"


def _run(p50: float, met: bool, load: str, *, extra: bool = False) -> dict[str, Any]:
    rows: list[dict[str, Any]] = [
        {
            "name": P50,
            "figure": p50,
            "baseline_name": "echo",
            "baseline": 0.8,
            "ratio": p50 / 0.8,
            "unit": "ms",
            "target": "ratio <= 2",
            "met": met,
        },
        {
            "name": P50,
            "figure": p50,
            "baseline_name": "write+fsync, 1 file",
            "baseline": 0.2,
            "ratio": p50 / 0.2,
            "unit": "ms",
            "met": None,
        },
    ]
    if extra:
        rows.append({"name": "only here", "figure": 5.0, "baseline": None, "ratio": None, "unit": "s", "met": None})
        rows.append({"name": "only here", "figure": 7.0, "baseline": None, "ratio": None, "unit": "s", "met": None})
    return {"machine": {"loadavg_at_start": [load, "1", "1"], "loadavg_at_end": ["2", "2", "2"]}, "rows": rows}


def test_rows_are_matched_by_name_and_baseline_and_spread_over_the_runs_that_have_them() -> None:
    text = spread_table([_run(1.5, True, "0.5"), _run(1.8, False, "3.1", extra=True), _run(1.2, True, "0.9")])
    lines = text.splitlines()
    assert (
        lines[2] == f"| {P50} | 1.2 / 1.5 / 1.8 ms | 0.8 / 0.8 / 0.8 ms (echo) | 1.5 / 1.88 / 2.25 | ratio <= 2 | yny |"
    )
    assert lines[3].startswith(
        f"| {P50} | 1.2 / 1.5 / 1.8 ms | 0.2 / 0.2 / 0.2 ms (write+fsync, 1 file) | 6 / 7.5 / 9 |"
    )
    assert lines[4] == "| only here | 5 / 5 / 5 s | - | - | - | - |"
    assert lines[5] == "| only here | 7 / 7 / 7 s | - | - | - | - |"  # a name repeated in one run is another row
    # p50 / (echo + write+fsync) of each run: 1.2, 1.5, 1.8
    assert "| unary Append, 1 run, p50 / (echo p50 + write+fsync p50) (derived) | - | - | 1.2 / 1.5 / 1.8 |" in text
    assert "ForkRun" not in text  # no run had both fork rows
    assert "run 2: 3.1 1 1 at its start, 2 2 2 at its end" in lines[-1]
