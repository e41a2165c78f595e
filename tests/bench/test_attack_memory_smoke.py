"""The hostile-load memory figures (``python -m bench.attack_memory``) work end to end at a tiny scale.

No figure is asserted against its target here (tests never assert on time or
RSS of a shared machine); the refusals they depend on are.
"""

from __future__ import annotations

import math
from pathlib import Path

from bench import attack_memory
from bench.harness import Context, table
from tests.bench.test_bench_smoke import TINY


def test_every_hostile_load_is_measured_and_the_oversized_ones_are_refused(tmp_path: Path) -> None:
    rows = attack_memory.run(Context(TINY, tmp_path, verbose=False), scale=1 / 64)

    assert len(rows) == 9
    for row in rows:
        assert row.figure is not None and not math.isnan(row.figure), row
        assert row.target and row.met is not None, row
    refused = [row for row in rows if "Append" in row.name and row.name.startswith("RSS growth")]
    assert len(refused) == 3
    anonymous, *too_large = refused
    # Without a token: refused before the body is read (admission), so never by the receive limit.
    assert anonymous.note == "answers: UNAUTHENTICATED", anonymous
    assert all("RESOURCE_EXHAUSTED" in row.note and "OK" not in row.note for row in too_large), too_large
    assert "stalled readers" in table(rows)
