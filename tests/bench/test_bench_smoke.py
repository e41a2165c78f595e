"""The benchmark harness works end to end at a tiny size (no timing is asserted: tests never assert on time)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from bench import fold, jetstream, sqlite
from bench.__main__ import main
from bench.harness import Context, Settings, table, to_json

TINY = Settings(
    mode="smoke",
    seconds=0.2,
    warmup_seconds=0.05,
    rounds=1,
    fold_lengths=(3, 6),
    fold_copies=1,
    cold_rounds=1,
    warm_samples=2,
)


def test_fold_benchmark_starts_servers_and_reports_every_row_with_its_baseline(tmp_path: Path) -> None:
    ctx = Context(TINY, tmp_path, verbose=False)

    rows = fold.run(ctx)

    names = [row.name for row in rows]
    assert "cold Fold, 6 records" in names
    assert "warm Fold after 1 append, 6 records" in names
    for row in rows:
        assert row.figure is not None and not math.isnan(row.figure), row
        assert row.baseline_name and row.baseline is not None, row
        assert row.ratio is not None, row
    warm_target = next(row for row in rows if row.target.endswith("ms"))
    assert warm_target.met is not None
    assert "| cold Fold, 3 records" in table(rows)
    assert json.loads(to_json(rows, mode="smoke"))["rows"][0]["section"] == 4


def test_sqlite_baseline_commits_every_record_it_counts(tmp_path: Path) -> None:
    sample = sqlite.sqlite_sample(tmp_path / "db.sqlite", 2, seconds=0.2, cap_per_worker=50, start_seq=1)

    with sqlite.connect(tmp_path / "db.sqlite") as conn:
        stored = conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    assert sample.records == stored > 0
    assert len(sample.latencies) == sample.operations


def test_cli_writes_the_json_and_marks_an_unavailable_benchmark(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(jetstream, "available", lambda: (False, "not in this test"))
    out = tmp_path / "results.json"

    assert main(["--quick", "--only", "jetstream", "--json", str(out), "--work-dir", str(tmp_path / "w")]) == 0

    results = json.loads(out.read_text())
    assert results["mode"] == "quick"
    assert results["machine"]["nproc"] >= 1
    assert results["rows"] and all(row["section"] == 3 for row in results["rows"])
    assert "| 3 |" in capsys.readouterr().out


def test_jetstream_rows_say_why_when_the_backend_cannot_run(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(jetstream, "available", lambda: (False, "no backend in this test"))

    rows = jetstream.run(Context(TINY, tmp_path, verbose=False))

    assert rows and all(row.figure is None and "no backend in this test" in row.note for row in rows)


def test_the_synced_echo_answers_only_what_it_wrote_to_its_file(tmp_path: Path) -> None:
    """The floor baseline of the unary rows (``SyncedEcho``): the bytes of every answered call are in its file."""
    import asyncio

    from bench import load, processes, workload

    async def calls(address: str) -> list[bytes]:
        async with load.channel(address) as chan:
            call = load.echo_method(chan, synced=True)
            requests = [workload.append_request(f"run-{n}", 2) for n in range(8)]
            return await asyncio.gather(*(call(request, timeout=30) for request in requests))

    with processes.echo(tmp_path) as echo:
        answers = asyncio.run(calls(echo.address))
    (log,) = tmp_path.glob("echo-*/synced-echo.log")
    written = log.read_bytes()
    assert len(answers) == 8 and all(answer and answer in written for answer in answers)
    assert len(written) == sum(len(answer) for answer in answers)
