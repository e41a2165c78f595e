"""``bench.spread``: rows matched by name across runs, min / median / max, each run's verdict and load."""

from __future__ import annotations

from bench.spread import spread_table


def _run(ratio: float, met: bool, load: str, *, extra: bool = False) -> dict:
    rows = [
        {
            "name": "unary Append",
            "figure": ratio * 2,
            "baseline": 2.0,
            "ratio": ratio,
            "unit": "ms",
            "target": "ratio <= 1.5",
            "met": met,
        }
    ]
    if extra:
        rows.append({"name": "only here", "figure": 5.0, "baseline": None, "ratio": None, "unit": "s", "met": None})
    return {"machine": {"loadavg_at_start": [load, "1", "1"], "loadavg_at_end": ["2", "2", "2"]}, "rows": rows}


def test_the_spread_is_min_median_max_of_the_runs_that_have_the_row() -> None:
    text = spread_table([_run(1.4, True, "0.5"), _run(1.7, False, "3.1", extra=True), _run(1.2, True, "0.9")])
    lines = text.splitlines()
    assert lines[2] == "| unary Append | 2.4 / 2.8 / 3.4 ms | 2 / 2 / 2 ms | 1.2 / 1.4 / 1.7 | ratio <= 1.5 | yny |"
    assert lines[3] == "| only here | 5 / 5 / 5 s | - s | - | - | - |"
    assert "run 2: 3.1 1 1 at its start, 2 2 2 at its end" in lines[-1]
