"""The streamed-append prototype (bench/stream_append.py) runs end to end at a tiny size; no timing is asserted."""

from __future__ import annotations

import math
from pathlib import Path

from bench import stream_append
from bench.harness import Context, Settings

TINY = Settings(mode="smoke", seconds=0.2, warmup_seconds=0.05, rounds=1, concurrency=(1, 3))


def test_the_prototype_stores_every_streamed_record_and_reports_it_beside_unary(tmp_path: Path) -> None:
    ctx = Context(TINY, tmp_path, verbose=False)

    rows = stream_append.run(ctx)

    assert [row.name.split(": ")[1] for row in rows[:3]] == ["records/s", "p50", "server CPU per record"]
    assert len(rows) == 6  # three rows at each of the two concurrencies
    for row in rows:
        assert row.figure is not None and not math.isnan(row.figure), row
        assert row.baseline is not None and row.ratio is not None, row
    # Every acknowledged record is in its run's journal, in order, unary and streamed alike.
    journals = sorted((tmp_path / "stream-append-data").glob("stream-c3-*.jsonl"))
    assert len(journals) == 3
    for journal in journals:
        seqs = [int(line.split(b'"seq":')[1].split(b",")[0].rstrip(b"}")) for line in journal.read_bytes().splitlines()]
        assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) > 2
