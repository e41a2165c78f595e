"""The ListRuns-after-a-restart benchmark works end to end at a small size (no timing is asserted)."""

from __future__ import annotations

import math
from pathlib import Path

from bench import listing
from bench.harness import QUICK, Context


def test_restart_rows_have_figures_and_baselines_and_the_listings_are_checked(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(listing, "RESTART_TRIALS", 1)
    monkeypatch.setattr(listing, "IDLE_BYSTANDER_SECONDS", 0.2)
    monkeypatch.setattr(listing, "INBOX_EVERY", 20)  # a few inbox runs among 120
    rows = listing.restart(Context(QUICK, tmp_path, verbose=False), runs=120)
    assert [row.section for row in rows] == [listing.RESTART_SECTION] * 5
    for row in rows:
        assert row.figure is not None and not math.isnan(row.figure), row
        assert row.baseline is not None and row.baseline_name, row
    assert (tmp_path / "list-restart").exists() is False  # the data set it wrote is removed
