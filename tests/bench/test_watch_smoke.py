"""The watch benchmark works end to end at a tiny size (no timing is asserted: tests never assert on time)."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

from bench import processes, watch


def test_watch_benchmark_times_every_append_at_its_watcher_and_reports_rows_with_baselines(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    with processes.runjournal(tmp_path / "data", tmp_path, label="watch-smoke") as server:
        appends, watched = asyncio.run(watch._sample(server.address, server.address, 0.3))

    assert len(appends) == len(watched) > 0
    rows = watch._rows(watch.ROW_NAMES[0], appends, watched)
    assert [row.name for row in rows] == [f"{watch.ROW_NAMES[0]}: p50", f"{watch.ROW_NAMES[0]}: p99"]
    for row in rows:
        assert row.figure is not None and not math.isnan(row.figure), row
        assert row.baseline is not None and row.ratio is not None, row
