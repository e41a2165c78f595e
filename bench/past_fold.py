"""Other clients' appends while one client folds a long run as of a past seq, against no such load.

``python -m bench.past_fold [--records N]`` builds a run of N notes (default
10,000) and has a bystander process append small records to another run,
once with no other load (the baseline) and once while this process loops
``Fold(as_of_seq=N/2)`` on the long run. A past fold reads and folds the run's
prefix; done on the event loop it stalled every other client for its whole
length (the hardening issue measured 273 ms p99). The figure is the
bystander's slowest append; target under 100 ms, and the ratio to the
baseline is shown.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from bench.attack_memory import TOKEN, Bystander, _meta, _note, _server, _stub, _tokens_file
from bench.harness import LOWER, QUICK, Context, Row, figure_target, table
from runjournal.v1 import journal_service_pb2 as pb

SECTION = 10
LOAD_SECONDS = 3.0
BATCH = 500
TARGET_MS = 100.0
METADATA = (("authorization", f"Bearer {TOKEN}"),)


def _build(stub, run_id: str, records: int) -> None:
    stub.Append(pb.AppendRequest(run_id=run_id, record=_meta(run_id)), metadata=METADATA)
    for first in range(2, records + 1, BATCH):
        batch = [_note(seq, 200) for seq in range(first, min(first + BATCH, records + 1))]
        stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=batch), metadata=METADATA)


def _slowest_bystander_append(address: str, load: threading.Event | None) -> tuple[float, int]:
    with Bystander(address) as bystander:
        if load is not None:
            load.set()
        threading.Event().wait(LOAD_SECONDS)
        if load is not None:
            load.clear()
    return bystander.slowest_seconds * 1000, bystander.appends


def run(ctx: Context, records: int = 10_000) -> list[Row]:
    tokens = _tokens_file(ctx)
    with _server(ctx, "past-fold", ctx.new_dir("past-fold"), "--auth-tokens-file", str(tokens)) as server:
        channel, stub = _stub(server)
        with channel:
            _build(stub, "long-run", records)
            baseline_ms, _ = _slowest_bystander_append(server.address, None)
            folding = threading.Event()
            stop = threading.Event()
            folds = 0

            def fold_loop() -> None:
                nonlocal folds
                while not stop.is_set():
                    if not folding.wait(0.05):
                        continue
                    request = pb.FoldRequest(run_id="long-run", as_of_seq=records // 2)
                    stub.Fold(request, metadata=METADATA, timeout=60)
                    folds += 1

            worker = threading.Thread(target=fold_loop, daemon=True)
            worker.start()
            began = time.perf_counter()
            loaded_ms, appends = _slowest_bystander_append(server.address, folding)
            stop.set()
            worker.join()
            elapsed = time.perf_counter() - began
    row = Row(
        SECTION,
        f"slowest bystander append while Fold(as_of_seq={records // 2}) loops on a {records}-record run",
        loaded_ms,
        "ms",
        "slowest with no fold load",
        baseline_ms,
        LOWER,
        note=f"{folds} past folds in {elapsed:.1f} s; the bystander made {appends} appends meanwhile",
    )
    return [figure_target(row, "<", TARGET_MS)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.past_fold", description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000, help="length of the folded run (default 10,000)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="runjournal-past-fold-") as scratch:
        rows = run(Context(QUICK, Path(scratch)), args.records)
    print(table(rows))
    for row in rows:
        if row.note:
            print(f"- {row.name}: {row.note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
