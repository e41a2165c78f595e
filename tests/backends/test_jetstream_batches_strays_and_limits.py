"""The JetStream backend: atomic creation batches, refusals that are write races,
stray messages in a run's subjects, bounded streaming reads, and the server's payload limit.

Real nats-server only: a second replica is a second backend with its own
connection, a stray message is published with a plain nats-py client, a lost
ack is a TCP proxy that swallows one reply.
"""

from __future__ import annotations

import contextlib
import logging
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import tests.nats_server as nats_server_module
from runjournal_server.backends.base import WriteRaceError
from runjournal_server.backends.jetstream import JetStreamBackend
from runjournal_server.backends.jetstream.config import (
    HEADER_ALLOWANCE_BYTES,
    StreamConfigError,
    record_limit,
    stream_config,
)
from runjournal_server.core import records
from runjournal_server.core.errors import (
    CorruptJournalError,
    RunExistsError,
    RunNotFoundError,
    StorageFullError,
    StorageUnavailableError,
)
from runjournal_server.core.records import StoredRecord, encode
from runjournal_server.core.summary import is_inert
from tests.backends.conftest import StreamTarget, delete_stream
from tests.nats_server import AckDroppingProxy, NatsServer
from tests.support import builders as b
from tests.support.encoded import meta, notes, turns
from tests.support.raw_nats import RawNats, backend_for

pytestmark = [pytest.mark.jetstream, pytest.mark.timeout(60)]

RUN = b.RUN_ID
"""The run ``meta()`` is the meta of."""


@pytest.fixture
async def proxied(
    nats_server: NatsServer, nats_stream: StreamTarget, jetstream_backend: JetStreamBackend
) -> AsyncIterator[tuple[AckDroppingProxy, JetStreamBackend]]:
    """A backend whose connection runs through a proxy that can lose one ack; short request timeout."""
    proxy = await AckDroppingProxy(nats_server.port).start()
    backend = backend_for(proxy.url, nats_stream, request_timeout_seconds=0.5)
    await backend.start()
    yield proxy, backend
    await backend.close()
    await proxy.close()


def subject(target: StreamTarget, token: str, run_id: str = RUN) -> str:
    return f"{target.prefix}.{run_id}.{token}"


# ---------------------------------------------------------------- item 9: creation batches


async def test_a_creation_batch_stores_the_meta_and_the_rest_together(jetstream_backend: JetStreamBackend) -> None:
    journal = await jetstream_backend.create_journal(RUN, meta(), turns(2, 4))
    assert journal.last_seq == 4
    assert [r.line for r in await jetstream_backend.load(RUN)] == [meta().line, *(r.line for r in turns(2, 4))]
    await journal.append(turns(5, 5))  # the journal is fenced on the batch's last record
    assert (await jetstream_backend.ends(RUN, is_inert)).last_seq == 5


async def test_a_creation_batch_the_stream_cannot_take_whole_leaves_no_run(
    nats_server: NatsServer, nats_stream: StreamTarget, raw: RawNats
) -> None:
    config = {**stream_config(nats_stream.name, nats_stream.prefix, replicas=1), "max_msgs": 3}
    assert "error" not in await raw.api(f"STREAM.CREATE.{nats_stream.name}", config)
    backend = backend_for(nats_server.url, nats_stream)
    await backend.start()
    try:
        with pytest.raises(StorageFullError):
            await backend.create_journal(RUN, meta(), turns(2, 5))  # 5 messages, room for 3
        with pytest.raises(RunNotFoundError):
            await backend.load(RUN)
        assert await backend.list_run_ids() == []
        assert await raw.count(nats_stream.name, f"{nats_stream.prefix}.>") == 0
        journal = await backend.create_journal(RUN, meta(), turns(2, 3))  # what fits is then created whole
        assert journal.last_seq == 3
    finally:
        await backend.close()
        await delete_stream(nats_server.url, nats_stream.name)


async def test_a_creation_batch_is_refused_whole_when_the_run_has_any_message(
    jetstream_backend: JetStreamBackend, raw: RawNats, nats_stream: StreamTarget
) -> None:
    await raw.publish(subject(nats_stream, "7"), turns(7, 7)[0].line)  # not even a meta: still occupied
    with pytest.raises(CorruptJournalError, match=subject(nats_stream, "7")):  # and no creation's remains
        await jetstream_backend.create_journal(RUN, meta(), turns(2, 3))
    assert await raw.count(nats_stream.name, f"{nats_stream.prefix}.{RUN}.>") == 1


async def test_a_second_creation_batch_is_run_exists_and_the_first_is_intact(
    jetstream_backend: JetStreamBackend, replica_b: JetStreamBackend
) -> None:
    await jetstream_backend.create_journal(RUN, meta(), turns(2, 3))
    with pytest.raises(RunExistsError):  # the same batch again (a retry): runs.py then verifies the duplicates
        await replica_b.create_journal(RUN, meta(), turns(2, 3))
    with pytest.raises(RunExistsError):  # a rival's different meta
        await replica_b.create_journal(RUN, meta(prompt="other"), notes(2, 2))
    assert [r.line for r in await replica_b.load(RUN)] == [meta().line, *(r.line for r in turns(2, 3))]


async def test_a_lost_ack_of_a_creation_batch_is_settled_by_reading_it_back(
    proxied: tuple[AckDroppingProxy, JetStreamBackend], raw: RawNats, nats_stream: StreamTarget
) -> None:
    proxy, backend = proxied
    proxy.drop_reply_to(subject(nats_stream, "3"))  # the commit: the batch's last message
    journal = await backend.create_journal(RUN, meta(), turns(2, 3))
    assert proxy.dropped == [subject(nats_stream, "3")]
    assert journal.last_seq == 3
    await journal.append(turns(4, 4))
    assert await raw.count(nats_stream.name, f"{nats_stream.prefix}.{RUN}.>") == 4


async def test_recreating_a_removed_run_within_the_duplicate_window_stores_nothing_and_says_why(
    nats_server: NatsServer, nats_stream: StreamTarget, raw: RawNats
) -> None:
    """The stream answers "duplicate" for the meta's message id: nothing is stored, and the run is not there."""
    config = {**stream_config(nats_stream.name, nats_stream.prefix, replicas=1), "deny_delete": False}
    assert "error" not in await raw.api(f"STREAM.CREATE.{nats_stream.name}", config)
    backend = backend_for(nats_server.url, nats_stream)
    await backend.start()
    try:
        await backend.create_journal(RUN, meta())
        removed = await raw.api(f"STREAM.MSG.GET.{nats_stream.name}", {"last_by_subj": subject(nats_stream, "meta")})
        deleted = await raw.api(f"STREAM.MSG.DELETE.{nats_stream.name}", {"seq": removed["message"]["seq"]})
        assert deleted.get("success"), deleted
        with pytest.raises(StorageUnavailableError, match="duplicate window"):
            await backend.create_journal(RUN, meta())
        with pytest.raises(RunNotFoundError):
            await backend.load(RUN)
    finally:
        await backend.close()
        await delete_stream(nats_server.url, nats_stream.name)


# ---------------------------------------------------------------- item 10: refusals are write races


async def test_a_refused_append_whose_bytes_another_request_stored_is_a_write_race_not_adopted(
    jetstream_backend: JetStreamBackend, replica_b: JetStreamBackend, raw: RawNats, nats_stream: StreamTarget
) -> None:
    """The retry arrived through another replica: this call stored nothing, so it must not claim the write.

    runs.py then catches up and its append rule answers a verified duplicate.
    """
    journal_a = await jetstream_backend.create_journal(RUN, meta())
    journal_b, _ = await replica_b.open_journal(RUN)
    await journal_b.append(turns(2, 2))
    with pytest.raises(WriteRaceError):
        await journal_a.append(turns(2, 2))  # the same bytes, the same message id
    assert journal_a.last_seq == 1
    assert [r.line for r in await journal_a.refresh()] == [turns(2, 2)[0].line]
    assert await raw.count(nats_stream.name, f"{nats_stream.prefix}.{RUN}.>") == 2


async def test_a_refused_batch_whose_bytes_are_all_stored_is_a_write_race_too(
    jetstream_backend: JetStreamBackend, replica_b: JetStreamBackend
) -> None:
    journal_a = await jetstream_backend.create_journal(RUN, meta())
    journal_b, _ = await replica_b.open_journal(RUN)
    await journal_b.append(turns(2, 4))
    with pytest.raises(WriteRaceError):
        await journal_a.append(turns(2, 4))
    assert journal_a.last_seq == 1


async def test_an_append_whose_ack_was_lost_is_still_adopted(
    proxied: tuple[AckDroppingProxy, JetStreamBackend], nats_stream: StreamTarget
) -> None:
    proxy, backend = proxied
    journal = await backend.create_journal(RUN, meta())
    proxy.drop_reply_to(subject(nats_stream, "2"))
    await journal.append(turns(2, 2))  # no answer: our own publish in flight, read back and adopted
    assert proxy.dropped == [subject(nats_stream, "2")] and journal.last_seq == 2


# ---------------------------------------------------------------- item 11: stray messages in a run's subjects

STRAY_TOKENS = ["9", "x", "07", "1", "0", "8.5"]
"""With the run at 7: a gap, a word, a leading zero, seq 1 as a number, zero, a deeper subject."""


async def _run_at_7(backend: JetStreamBackend) -> None:
    await backend.create_journal(RUN, meta(), turns(2, 7))


def _reads(backend: JetStreamBackend) -> dict[str, Callable[[], Awaitable[object]]]:
    """Every way to read a run without holding it."""

    async def streamed() -> list[StoredRecord]:
        return [r async for r in backend.stream(RUN, 1)]

    return {
        "load": lambda: backend.load(RUN),
        "open": lambda: backend.open_journal(RUN),
        "ends": lambda: backend.ends(RUN, is_inert),
        "tail": lambda: backend.tail(RUN, lambda r: r.seq == 1),
        "stream": streamed,
    }


async def _check_every_read_names(backend: JetStreamBackend, stray: str) -> None:
    for name, read in _reads(backend).items():
        with pytest.raises(CorruptJournalError) as corrupt:
            await read()
        assert stray in corrupt.value.problem, (name, corrupt.value.problem)


@pytest.mark.parametrize("token", STRAY_TOKENS)
async def test_a_stray_message_after_the_last_record_is_corruption_naming_its_subject(
    jetstream_backend: JetStreamBackend, raw: RawNats, nats_stream: StreamTarget, token: str
) -> None:
    await _run_at_7(jetstream_backend)
    held, _ = await jetstream_backend.open_journal(RUN)
    stray = subject(nats_stream, token)
    await raw.publish(stray, turns(9, 9)[0].line)
    await _check_every_read_names(jetstream_backend, stray)
    with pytest.raises(CorruptJournalError) as corrupt:
        await held.refresh()  # a replica holding the run warm hears of it too
    assert stray in corrupt.value.problem
    assert held.last_seq == 7


@pytest.mark.parametrize("token", STRAY_TOKENS)
async def test_a_stray_message_hidden_behind_a_later_record_is_still_corruption(
    jetstream_backend: JetStreamBackend, raw: RawNats, nats_stream: StreamTarget, token: str
) -> None:
    """The append fence looks at the previous record only, so seq 8 lands after the stray.

    Before the fix the stray was then invisible until seq 9 collided with it
    (``.9``) and every append failed STORAGE_UNAVAILABLE; now every read says
    CORRUPT_JOURNAL and names the subject.
    """
    await _run_at_7(jetstream_backend)
    held, _ = await jetstream_backend.open_journal(RUN)
    stray = subject(nats_stream, token)
    await raw.publish(stray, turns(9, 9)[0].line)
    await held.append(turns(8, 8))
    await _check_every_read_names(jetstream_backend, stray)


async def test_a_gap_is_reported_at_the_first_missing_seq(
    jetstream_backend: JetStreamBackend, raw: RawNats, nats_stream: StreamTarget
) -> None:
    await _run_at_7(jetstream_backend)
    await raw.publish(subject(nats_stream, "9"), turns(9, 9)[0].line)
    with pytest.raises(CorruptJournalError) as corrupt:
        await jetstream_backend.load(RUN)
    assert corrupt.value.seq == 8 and subject(nats_stream, "9") in corrupt.value.problem


class ApiCounter:
    """Counts the JetStream API requests the given backends send, at their API client (every request goes there).

    Not a second subscriber on ``$JS.API.>``: under load it sometimes missed
    the first requests another connection sent right after it subscribed
    (flushed), and the count came out short (39 of 41, about one run in ten).
    """

    def __init__(self, *backends: JetStreamBackend) -> None:
        self._count = 0
        self._taken = 0
        for backend in backends:
            api = backend._api
            send = api._request

            async def counted(*args: Any, _send: Any = send) -> Any:
                self._count += 1
                return await _send(*args)

            api._request = counted  # type: ignore[method-assign]

    def take(self) -> int:
        """Requests sent since the last take."""
        taken, self._taken = self._count - self._taken, self._count
        return taken


async def test_a_healthy_run_costs_the_stray_check_one_extra_request_per_read(
    jetstream_backend: JetStreamBackend, replica_b: JetStreamBackend
) -> None:
    journal = await jetstream_backend.create_journal(RUN, meta(), turns(2, 40))
    counter = ApiCounter(jetstream_backend, replica_b)
    assert [r.seq for r in await replica_b.load(RUN)] == list(range(1, 41))
    assert counter.take() == 40 + 1  # every record, and the count of the run's subjects
    assert await journal.refresh() == []
    # Nothing after our tail: one lookup, then, before that is believed, a barrier's publish and erasure
    # (barrier.py; its two stream-info reads go to the connection, past this counter).
    assert counter.take() == 1 + 2


async def test_a_tail_that_stops_above_the_meta_does_not_read_the_meta(jetstream_backend: JetStreamBackend) -> None:
    """The inbox reads only the trailing turn; the meta, which ``ends`` needs, would be one more request per run."""
    await jetstream_backend.create_journal(RUN, meta(), turns(2, 40))
    counter = ApiCounter(jetstream_backend)
    tail = await jetstream_backend.tail(RUN, lambda stored: stored.seq == 38)
    assert [r.seq for r in tail] == [38, 39, 40]
    with_tail = counter.take()
    ends = await jetstream_backend.ends(RUN, lambda stored: stored.seq > 38)  # the same walk: it stops at 38
    assert ends.meta.seq == 1 and ends.last_significant.seq == 38
    assert counter.take() == with_tail + 1  # the same walk, plus the meta that ends reports


# ---------------------------------------------------------------- stream(): bounded reads


async def test_stream_yields_the_records_from_a_seq_in_order(jetstream_backend: JetStreamBackend) -> None:
    await jetstream_backend.create_journal(RUN, meta(), turns(2, 150))
    assert [r.seq async for r in jetstream_backend.stream(RUN, 1)] == list(range(1, 151))
    assert [r.seq async for r in jetstream_backend.stream(RUN, 0)] == list(range(1, 151))
    assert [r.seq async for r in jetstream_backend.stream(RUN, 120)] == list(range(120, 151))
    assert [r.seq async for r in jetstream_backend.stream(RUN, 151)] == []
    with pytest.raises(RunNotFoundError):
        [r async for r in jetstream_backend.stream("no-such-run", 1)]


async def test_stream_includes_records_appended_while_it_reads(
    jetstream_backend: JetStreamBackend, replica_b: JetStreamBackend
) -> None:
    journal = await jetstream_backend.create_journal(RUN, meta(), turns(2, 3))
    seen = []
    async with contextlib.aclosing(replica_b.stream(RUN, 1)) as reading:
        async for stored in reading:
            seen.append(stored.seq)
            if stored.seq == 1:
                await journal.append(turns(4, 5))
    assert seen == [1, 2, 3, 4, 5]


async def test_stream_holds_one_bounded_window_of_a_large_run(jetstream_backend: JetStreamBackend) -> None:
    """A slow reader of a 24 MiB run holds a few MiB, not the run."""
    big = 512 * 1024
    journal = await jetstream_backend.create_journal(RUN, meta())
    for seq in range(2, 50):
        await journal.append(notes(seq, seq, size=big))
    tracemalloc.start()
    try:
        peak = 0
        count = 0
        async with contextlib.aclosing(jetstream_backend.stream(RUN, 1)) as reading:
            async for _ in reading:
                count += 1
                peak = max(peak, tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
    assert count == 49
    assert peak < 8 * big * 2, f"streaming held {peak / 2**20:.1f} MiB at once"  # a 48 x 0.5 MiB run is 24 MiB


# ---------------------------------------------------------------- item 20: the server's payload limit


def test_the_record_limit_follows_the_server_unless_set() -> None:
    assert record_limit(8 << 20, None) == records.DEFAULT_MAX_RECORD_BYTES
    assert record_limit(1 << 20, None) == (1 << 20) - HEADER_ALLOWANCE_BYTES  # the nats-server default
    assert record_limit(8 << 20, 4 << 20) == 4 << 20
    assert record_limit(1 << 20, 512 * 1024) == 512 * 1024
    with pytest.raises(StreamConfigError, match="max_payload"):
        record_limit(1 << 20, 1 << 20)  # set explicitly, too large for this server: refused


@pytest.fixture
def default_nats_server(nats_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[NatsServer]:
    """A nats-server with its default max_payload (1 MB), otherwise as the test helper starts it."""
    monkeypatch.setattr(nats_server_module, "MAX_PAYLOAD", "1MB")
    server = NatsServer(tmp_path / "nats-default", nats_binary).start()
    yield server
    server.stop()


async def test_a_default_nats_server_is_used_with_a_record_limit_derived_from_its_max_payload(
    default_nats_server: NatsServer, nats_stream: StreamTarget, caplog: pytest.LogCaptureFixture
) -> None:
    backend = backend_for(default_nats_server.url, nats_stream, create_stream=True)
    caplog.set_level(logging.INFO, logger="runjournal_server.backends.jetstream")
    await backend.start()
    try:
        limit = (1 << 20) - HEADER_ALLOWANCE_BYTES
        assert backend.max_record_bytes == limit
        assert any("max_payload" in r.getMessage() and str(limit) in r.getMessage() for r in caplog.records)
        largest = encode(b.note(2, "n" * (limit - 200)), max_record_bytes=limit)
        assert limit - 1000 < len(largest.line) <= limit
        journal = await backend.create_journal(RUN, meta())
        await journal.append([largest])
        assert (await backend.load(RUN))[-1].line == largest.line
        task_limit = backend.max_task_document_bytes
        assert task_limit <= limit
        assert await backend.task_store().create_request("task-1", b"x" * task_limit) is None
    finally:
        await backend.close()


async def test_a_default_nats_server_refuses_an_explicit_record_limit_it_cannot_carry(
    default_nats_server: NatsServer, nats_stream: StreamTarget
) -> None:
    backend = backend_for(default_nats_server.url, nats_stream, create_stream=True, max_record_bytes=1 << 20)
    with pytest.raises(StreamConfigError, match="max_payload"):
        await backend.start()
