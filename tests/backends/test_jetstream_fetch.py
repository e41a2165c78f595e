"""Opening a long JetStream run through one consumer (``fetch.py``), and what it does when the consumer falls short.

Real nats-server; the records are compared with what was appended, byte for byte.
"""

from __future__ import annotations

import pytest

from runjournal_server.backends.jetstream import JetStreamBackend, fetch, reading
from runjournal_server.backends.jetstream.reading import BY_SUBJECT_MAX
from runjournal_server.core.records import StoredRecord, encode
from tests.support import builders as b

pytestmark = pytest.mark.jetstream

RUN = "long-run"
LENGTH = 3 * BY_SUBJECT_MAX + 7


def long_run() -> list[StoredRecord]:
    stored = [encode(b.meta(run_id=RUN))]
    stored += [encode(b.assistant(seq, seq - 1, say=f"turn {seq} é 🙂")) for seq in range(2, LENGTH + 1)]
    return stored


async def written(backend: JetStreamBackend) -> list[StoredRecord]:
    stored = long_run()
    journal = await backend.create_journal(RUN, stored[0])
    await journal.append(stored[1:])
    await journal.close()
    return stored


async def test_a_long_run_opens_whole_and_in_order_through_pulls_of_a_consumer(
    jetstream_backend: JetStreamBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = await written(jetstream_backend)
    monkeypatch.setattr(reading, "CONSUMER_WINDOW_MAX", 50)  # several pull requests, one short last one
    windows = counting_windows(monkeypatch)
    journal, found = await jetstream_backend.open_journal(RUN)
    assert [item.line for item in found] == [item.line for item in stored]
    assert sum(windows) == LENGTH - 2 and max(windows) <= 50  # all but the meta and the last, by pulls
    assert journal.last_seq == LENGTH
    await journal.append([encode(b.note(LENGTH + 1))])  # the tail it fenced on is the real one
    assert [item.line for item in await jetstream_backend.load(RUN)][-1] == encode(b.note(LENGTH + 1)).line


def counting_windows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many records each pull of a consumer delivered, from now on."""
    windows: list[int] = []
    real = fetch.ConsumerRead.window

    async def counted(self: fetch.ConsumerRead, batch: int) -> list[bytes]:
        found = await real(self, batch)
        windows.append(len(found))
        return found

    monkeypatch.setattr(fetch.ConsumerRead, "window", counted)
    return windows


def stopping_at(monkeypatch: pytest.MonkeyPatch, cut: int) -> None:
    """Consumers expect a wrong subject at seq ``cut``: they must stop there, as at a stray message."""
    real = fetch.ConsumerRead.__init__

    def init(self: fetch.ConsumerRead, api, filter_subject, expected_subject, **kw):  # type: ignore[no-untyped-def]
        real(self, api, filter_subject, lambda n: "elsewhere" if n == cut else expected_subject(n), **kw)

    monkeypatch.setattr(fetch.ConsumerRead, "__init__", init)


async def test_the_consumer_stops_at_a_subject_out_of_place_and_the_rest_is_read_by_subject(
    jetstream_backend: JetStreamBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = await written(jetstream_backend)
    cut = BY_SUBJECT_MAX + 3
    stopping_at(monkeypatch, cut)
    windows = counting_windows(monkeypatch)
    journal, found = await jetstream_backend.open_journal(RUN)
    assert sum(windows) == cut - 2  # seqs 2 .. cut - 1 came from the consumer, the rest by subject
    assert [item.line for item in found] == [item.line for item in stored]
    await journal.close()


async def streamed(backend: JetStreamBackend, run_id: str, from_seq: int) -> list[bytes]:
    return [item.line async for item in backend.stream(run_id, from_seq)]


@pytest.mark.parametrize("from_seq", [1, 5, LENGTH - BY_SUBJECT_MAX - 2], ids=["whole", "from seq 5", "a short tail"])
async def test_a_long_run_streams_in_order_through_windows_of_a_consumer(
    jetstream_backend: JetStreamBackend, monkeypatch: pytest.MonkeyPatch, from_seq: int
) -> None:
    stored = await written(jetstream_backend)
    monkeypatch.setattr(reading, "CONSUMER_WINDOW_MAX", 16)  # many pulls, the last one short
    windows = counting_windows(monkeypatch)
    assert await streamed(jetstream_backend, RUN, from_seq) == [item.line for item in stored[from_seq - 1 :]]
    assert windows and max(windows) <= 16  # the records came through the consumer, a bounded window at a time


async def test_a_streamed_read_goes_on_by_subject_where_the_consumer_stops(
    jetstream_backend: JetStreamBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = await written(jetstream_backend)
    cut = BY_SUBJECT_MAX // 2
    stopping_at(monkeypatch, cut)
    assert await streamed(jetstream_backend, RUN, 1) == [item.line for item in stored]


async def test_a_staged_creation_streams_whole_though_its_meta_is_stored_last(
    jetstream_backend: JetStreamBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("runjournal_server.backends.jetstream.staging.MAX_ATOMIC_BATCH", 50)
    monkeypatch.setattr("runjournal_server.backends.jetstream.creating.needs_staging", lambda batch: True)
    stored = long_run()
    journal = await jetstream_backend.create_journal(RUN, stored[0], stored[1:])
    await journal.close()
    delivered = counting_windows(monkeypatch)
    for from_seq in (1, 3, 120):  # from the meta, and from staged records (stored before it)
        delivered.clear()
        assert await streamed(jetstream_backend, RUN, from_seq) == [item.line for item in stored[from_seq - 1 :]]
        # Through the consumer, past the meta stored after the staged records: all but the first and last.
        assert sum(delivered) == LENGTH - from_seq - 1
    delivered.clear()
    journal, found = await jetstream_backend.open_journal(RUN)  # the open of a fork: through the consumer too
    assert [item.line for item in found] == [item.line for item in stored]
    assert sum(delivered) == LENGTH - 2
    await journal.close()
