"""What the warm-state bound counts (issue 28, item 4): memory, as the stored bytes folded times the measured
factor, so ``max_warm_bytes`` means the memory an operator reads in it.

Before, the bound counted stored bytes alone and the server held about three times the setting
(256 MiB: RSS 56 -> 793 MiB). Checked here by accounting, never by timing or by RSS (the bench row
``bench/warm_memory.py`` measures RSS against the setting).
"""

from __future__ import annotations

from pathlib import Path

from runjournal_server.backends.file import FileBackend
from runjournal_server.core import records
from runjournal_server.runs.handles import WARM_BYTES_PER_STORED_BYTE, warm_cost
from runjournal_server.runs.runs import Runs
from tests.support import builders as b

NOTE_CHARS = 10_000


def _stored(run: list) -> int:
    return sum(len(records.encode(record).line) for record in run)


async def test_the_warm_bytes_are_the_folded_stored_bytes_at_their_memory_cost(tmp_path: Path) -> None:
    assert WARM_BYTES_PER_STORED_BYTE >= 3  # measured: 3.6x on the benchmark's runs (bench/warm_memory.py)
    backend = FileBackend(tmp_path)
    await backend.start()
    runs = Runs(backend, max_record_bytes=records.DEFAULT_MAX_RECORD_BYTES, max_open_journals=100)
    try:
        written = []
        for run_id in ("a", "b"):
            run = [b.meta(run_id=run_id), *[b.note(seq, "x" * NOTE_CHARS) for seq in range(2, 6)]]
            await runs.append(run_id, 0, run[:1])
            await runs.append(run_id, 1, run[1:])
            written.append(run)
        expected = sum(warm_cost(_stored(run[:1])) + warm_cost(_stored(run[1:])) for run in written)
        assert runs.warm_bytes == expected
        assert runs.warm_bytes > 3 * sum(_stored(run) for run in written)
    finally:
        await runs.close()
        await backend.close()


async def test_the_bound_closes_warm_states_once_their_memory_cost_passes_it(tmp_path: Path) -> None:
    run_bytes = _stored([b.meta(run_id="r-0"), *[b.note(seq, "x" * NOTE_CHARS) for seq in range(2, 6)]])
    bound = 4 * run_bytes  # four runs' stored bytes: about one run's memory, at 3.5 a byte
    backend = FileBackend(tmp_path)
    await backend.start()
    runs = Runs(backend, max_record_bytes=records.DEFAULT_MAX_RECORD_BYTES, max_open_journals=100, max_warm_bytes=bound)
    try:
        for index in range(4):
            run_id = f"r-{index}"
            await runs.append(
                run_id, 0, [b.meta(run_id=run_id), *[b.note(seq, "x" * NOTE_CHARS) for seq in range(2, 6)]]
            )
            assert runs.warm_bytes <= bound
        # Counting stored bytes, all four would have stayed warm; counting memory, one does.
        assert runs.open_journals == 1
    finally:
        await runs.close()
        await backend.close()
