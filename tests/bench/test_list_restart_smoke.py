"""The ListRuns-after-a-restart benchmark works end to end at a small size (no timing is asserted)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from bench import listing
from bench.harness import QUICK, Context


def test_restart_rows_have_figures_and_baselines_and_the_listings_are_checked(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(listing, "RESTART_TRIALS", 1)
    monkeypatch.setattr(listing, "IDLE_BYSTANDER_SECONDS", 0.2)
    monkeypatch.setattr(listing, "INBOX_EVERY", 20)  # a few inbox runs among 120
    rows = listing.restart(Context(QUICK, tmp_path, verbose=False), runs=120)
    assert [row.section for row in rows] == [listing.RESTART_SECTION] * 6
    for row in rows:
        assert row.figure is not None and not math.isnan(row.figure), row
        assert row.baseline is not None and row.baseline_name, row
    assert (tmp_path / "list-restart").exists() is False  # the data set it wrote is removed


def test_an_indexed_restart_that_did_not_serve_from_its_index_fails_the_row() -> None:
    checked = (
        "INFO runjournal_server.listing.upkeep: listing index: 120 runs placed; their states are checked against the "
        "store next\n"
    )
    listing._assert_index_used(checked, shared=False)
    told = "INFO x: listing index: 120 runs, loaded from KV_x and told the news since\n"
    listing._assert_index_used(told, shared=True)
    for log in (
        "",  # the line never came: the index was not loaded (another process's fresh mark keeps none)
        "INFO x: listing index: the snapshot file is of another format (['format', 3]); rebuilding it from the "
        "journals\n" + checked,  # rebuilt in the background; its own check logs the line later
        "WARNING x: listing index: another server process uses this data directory; off\n" + checked,
    ):
        with pytest.raises(listing.ListingError):
            listing._assert_index_used(log, shared=False)
    with pytest.raises(listing.ListingError):
        listing._assert_index_used(checked, shared=True)
