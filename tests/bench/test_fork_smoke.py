"""The fork benchmark works end to end at a small size (no timing is asserted: tests never assert on time)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bench import fork, processes


def test_fork_benchmark_forks_and_reads_the_whole_run_each_round(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    with processes.runjournal(tmp_path / "data", tmp_path, label="fork-smoke") as server:
        forks, reads = asyncio.run(fork._rounds(server.address, 2, records=1_200))
    assert len(forks) == len(reads) == 2
    assert all(value > 0 for value in (*forks, *reads))
