"""The durability suite: crashes, damaged files, full disks, failing fsync, racing claimants, hostile input."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: takes tens of seconds; deselect with -m 'not slow' for a quick loop")
