"""Row 3: opening a long run cold, JetStream against the file backend, in the bench process.

A run of ``COLD_OPEN_RECORDS`` records (the workload's lines, stored with
AppendBatch through each backend's own ``create_journal`` and ``append``) is
opened for writing (``open_journal``: every record read and decoded) by a
backend instance made for that one open, so nothing is cached in it; the two
backends alternate, ``rounds`` times. The file is in the page cache, as in the
Fold rows: cold means cold for the server, not for the disk. JetStream reads
from a local nats-server (``sync_interval: always``). Target: JetStream <= 2 x
the file backend. Before issue 14 a JetStream open asked for each record by
subject (64 requests in flight), about 2 s for 10,000 records; it now reads
them through one consumer (``backends/jetstream/fetch.py``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from bench import workload
from bench.harness import LOWER, Context, Row, median, ratio_target
from runjournal_server.backends.base import Backend
from runjournal_server.backends.file import FileBackend
from runjournal_server.core import records

SECTION = 3
COLD_OPEN_RECORDS = 10_000
COLD_OPEN_TARGET = 2.0
_BATCH = 1_000


async def cold_open_rows(ctx: Context, nats_url: str) -> list[Row]:
    from runjournal_server.backends.jetstream import JetStreamBackend

    stream = f"BENCHOPEN{uuid.uuid4().hex[:8].upper()}"
    run_id = f"open-{uuid.uuid4().hex[:8]}"
    data_dir = ctx.new_dir("cold-open-file")

    def file_backend() -> Backend:
        return FileBackend(data_dir)

    def jetstream_backend() -> Backend:
        return JetStreamBackend([nats_url], stream=stream, subject_prefix="benchopen", create_stream=True)

    for make in (file_backend, jetstream_backend):
        await _fill(make(), run_id)
    rounds = max(ctx.settings.rounds, 3)
    times: dict[str, list[float]] = {"file": [], "jetstream": []}
    for _ in range(rounds):
        times["file"].append(await _open_seconds(file_backend, run_id))
        times["jetstream"].append(await _open_seconds(jetstream_backend, run_id))
    row = Row(
        SECTION,
        f"JetStream cold open of a {COLD_OPEN_RECORDS:,}-record run (open_journal, in process)",
        median(times["jetstream"]) * 1000,
        "ms",
        "file backend, same run",
        median(times["file"]) * 1000,
        LOWER,
        samples={"figure": times["jetstream"], "baseline": times["file"]},
    )
    transport = await _transport_row(jetstream_backend, run_id, rounds)
    return [ratio_target(row, "<=", COLD_OPEN_TARGET), transport]


async def _transport_row(make: Callable[[], Backend], run_id: str, rounds: int) -> Row:
    """The messages alone, no decoding: the consumer ``load`` uses now against one request per record."""
    from runjournal_server.backends.jetstream.fetch import fetch_first

    backend: Any = make()
    await backend.start()
    try:
        api, layout = backend._api, backend._layout  # the bench looks inside: this row is about the transport
        subjects = [layout.subject(run_id, seq) for seq in range(1, COLD_OPEN_RECORDS)]
        times: dict[str, list[float]] = {"consumer": [], "by subject": []}
        for _ in range(rounds):
            began = time.perf_counter()
            bodies = await fetch_first(api, layout.run_subjects(run_id), len(subjects), lambda n: subjects[n - 1])
            times["consumer"].append(time.perf_counter() - began)
            began = time.perf_counter()
            messages = await api.get_many(subjects)
            times["by subject"].append(time.perf_counter() - began)
            assert bodies == [message.data for message in messages], "the two reads disagree"
    finally:
        await backend.close()
    return Row(
        SECTION,
        f"JetStream: the {COLD_OPEN_RECORDS - 1:,} messages before the last, through one consumer",
        median(times["consumer"]) * 1000,
        "ms",
        "one MSG.GET per record, 64 in flight (before issue 14)",
        median(times["by subject"]) * 1000,
        LOWER,
        samples={"figure": times["consumer"], "baseline": times["by subject"]},
    )


async def _fill(backend: Backend, run_id: str) -> None:
    await backend.start()
    try:
        meta = records.encode(workload.meta(run_id))
        journal = await backend.create_journal(run_id, meta)
        for first in range(2, COLD_OPEN_RECORDS + 1, _BATCH):
            last = min(first + _BATCH, COLD_OPEN_RECORDS + 1)
            await journal.append([records.encode(workload.record(run_id, seq)) for seq in range(first, last)])
        await journal.close()
    finally:
        await backend.close()


async def _open_seconds(make: Callable[[], Backend], run_id: str) -> float:
    backend = make()
    await backend.start()
    try:
        began = time.perf_counter()
        journal, stored = await backend.open_journal(run_id)
        elapsed = time.perf_counter() - began
        assert len(stored) == COLD_OPEN_RECORDS, (len(stored), COLD_OPEN_RECORDS)
        await journal.close()
        return elapsed
    finally:
        await backend.close()
