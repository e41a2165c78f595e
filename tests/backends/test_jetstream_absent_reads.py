"""A read that finds no run, on one nats-server: "absent" is believed only behind a barrier (``barrier.py``).

A creation racing the read is the common case there: the run is created between
the read and the barrier. That is no node behind the stream; the read is made
again and finds the run (before, the caller was told STORAGE_UNAVAILABLE, which
the OpenAI Agents session's concurrent writers met in CI).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import pytest

from runjournal_server.backends.jetstream import JetStreamBackend
from runjournal_server.core.errors import RunNotFoundError
from runjournal_server.core.records import StoredRecord
from tests.support import builders as b
from tests.support.encoded import meta, turns

pytestmark = [pytest.mark.jetstream, pytest.mark.timeout(60)]

RUN = b.RUN_ID


async def test_a_load_that_raced_the_runs_creation_reads_again_and_finds_it(
    jetstream_backend: JetStreamBackend, replica_b: JetStreamBackend
) -> None:
    reader = jetstream_backend._reader
    real = reader.load
    calls = 0

    async def racing(run_id: str) -> Any:
        nonlocal calls
        calls += 1
        try:
            return await real(run_id)
        except RunNotFoundError:
            if calls == 1:  # the creation lands after this read and before the barrier
                await replica_b.create_journal(RUN, meta(), turns(2, 3))
            raise

    reader.load = racing  # type: ignore[method-assign]
    assert [record.seq for record in await jetstream_backend.load(RUN)] == [1, 2, 3]
    assert calls == 2


async def test_a_stream_that_raced_the_runs_creation_reads_again_and_yields_it(
    jetstream_backend: JetStreamBackend, replica_b: JetStreamBackend
) -> None:
    reader = jetstream_backend._reader
    real = reader.stream
    calls = 0

    async def racing(run_id: str, from_seq: int) -> AsyncGenerator[StoredRecord, None]:
        nonlocal calls
        calls += 1
        try:
            async for stored in real(run_id, from_seq):
                yield stored
        except RunNotFoundError:
            if calls == 1:
                await replica_b.create_journal(RUN, meta(), turns(2, 3))
            raise

    reader.stream = racing  # type: ignore[method-assign]
    assert [stored.seq async for stored in jetstream_backend.stream(RUN, 1)] == [1, 2, 3]
    assert calls == 2


async def test_a_run_still_absent_behind_the_barrier_is_run_not_found_after_one_read(
    jetstream_backend: JetStreamBackend,
) -> None:
    reader = jetstream_backend._reader
    real = reader.load
    calls = 0

    async def counted(run_id: str) -> Any:
        nonlocal calls
        calls += 1
        return await real(run_id)

    reader.load = counted  # type: ignore[method-assign]
    with pytest.raises(RunNotFoundError):
        await jetstream_backend.load("never-created")
    assert calls == 1
