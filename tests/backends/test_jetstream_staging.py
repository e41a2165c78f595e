"""A JetStream creation larger than one atomic batch (staging.py): whole or absent, and resumable after a crash.

A crashed staging is played by publishing some of the creation's records
straight to the stream, as a creator that died after its first stages would
have left them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from runjournal_server.backends.jetstream import JetStreamBackend
from runjournal_server.backends.jetstream.config import MAX_ATOMIC_BATCH
from runjournal_server.core.errors import RunExistsError, RunNotFoundError
from runjournal_server.core.records import StoredRecord, encode
from tests.backends.conftest import StreamTarget
from tests.nats_server import AckDroppingProxy, NatsServer
from tests.support import builders as b
from tests.support.raw_nats import RawNats, backend_for

pytestmark = pytest.mark.jetstream

RUN = "run-staged"
RECORDS = 2 * MAX_ATOMIC_BATCH + 500


def creation(prompt: str = "hello", count: int = RECORDS) -> list[StoredRecord]:
    return [
        encode(b.meta(run_id=RUN, prompt=prompt)),
        *(encode(b.note(seq, f"step {seq}")) for seq in range(2, count + 1)),
    ]


async def test_a_creation_of_more_records_than_one_batch_is_stored_whole(jetstream_backend: JetStreamBackend) -> None:
    batch = creation()
    journal = await jetstream_backend.create_journal(RUN, batch[0], batch[1:])
    assert journal.last_seq == RECORDS
    assert [stored.line for stored in await jetstream_backend.load(RUN)] == [stored.line for stored in batch]
    assert RUN in await jetstream_backend.list_run_ids()
    await journal.append([encode(b.note(RECORDS + 1))])  # the tail is where the next append is fenced
    assert (await jetstream_backend.ends(RUN, lambda _: True)).last_seq == RECORDS + 1


async def test_staged_records_without_a_meta_are_no_run_and_a_retry_finishes_the_creation(
    jetstream_backend: JetStreamBackend, raw: RawNats, nats_stream: StreamTarget
) -> None:
    batch = creation()
    for stored in batch[1:1200]:  # a creator died after staging records 2..1200
        await raw.publish(f"{nats_stream.prefix}.{RUN}.{stored.seq}", stored.line)
    with pytest.raises(RunNotFoundError):
        await jetstream_backend.load(RUN)
    assert RUN not in await jetstream_backend.list_run_ids()
    journal = await jetstream_backend.create_journal(RUN, batch[0], batch[1:])
    assert journal.last_seq == RECORDS
    assert [stored.line for stored in await jetstream_backend.load(RUN)] == [stored.line for stored in batch]
    assert await raw.count(nats_stream.name, f"{nats_stream.prefix}.{RUN}.>") == RECORDS


async def test_staged_records_of_another_creation_leave_the_id_taken_and_add_nothing(
    jetstream_backend: JetStreamBackend, raw: RawNats, nats_stream: StreamTarget
) -> None:
    other = encode(b.note(2, "someone else"))
    await raw.publish(f"{nats_stream.prefix}.{RUN}.2", other.line)
    batch = creation()
    with pytest.raises(RunExistsError):
        await jetstream_backend.create_journal(RUN, batch[0], batch[1:])
    assert await raw.count(nats_stream.name, f"{nats_stream.prefix}.{RUN}.>") == 1


async def test_of_two_staged_creations_of_one_run_exactly_one_lands_whole(
    jetstream_backend: JetStreamBackend, replica_b: JetStreamBackend
) -> None:
    first, second = creation("from A"), creation("from B")  # the same records 2..N, different metas
    outcomes = await asyncio.gather(
        jetstream_backend.create_journal(RUN, first[0], first[1:]),
        replica_b.create_journal(RUN, second[0], second[1:]),
        return_exceptions=True,
    )
    winners = [index for index, outcome in enumerate(outcomes) if not isinstance(outcome, BaseException)]
    assert len(winners) == 1, outcomes
    assert isinstance(outcomes[1 - winners[0]], RunExistsError), outcomes
    expected = (first, second)[winners[0]]
    assert [stored.line for stored in await jetstream_backend.load(RUN)] == [stored.line for stored in expected]


@pytest.fixture
async def proxied(
    nats_server: NatsServer, nats_stream: StreamTarget, jetstream_backend: JetStreamBackend
) -> AsyncIterator[tuple[AckDroppingProxy, JetStreamBackend]]:
    """A second backend on the stream (``jetstream_backend`` made it), through a proxy that can lose one ack."""
    proxy = await AckDroppingProxy(nats_server.port).start()
    backend = backend_for(proxy.url, nats_stream, request_timeout_seconds=2.0)
    await backend.start()
    yield proxy, backend
    await backend.close()
    await proxy.close()


@pytest.mark.parametrize("lost", [1001, RECORDS], ids=["a stage", "the commit"])
async def test_a_lost_ack_of_a_stage_or_of_the_commit_is_settled_by_reading_it_back(
    proxied: tuple[AckDroppingProxy, JetStreamBackend], raw: RawNats, nats_stream: StreamTarget, lost: int
) -> None:
    proxy, backend = proxied
    batch = creation()
    subject = f"{nats_stream.prefix}.{RUN}.{lost}"  # the last message of its batch: the one answered
    proxy.drop_reply_to(subject)
    journal = await backend.create_journal(RUN, batch[0], batch[1:])
    assert proxy.dropped == [subject]
    assert journal.last_seq == RECORDS
    assert [stored.line for stored in await backend.load(RUN)] == [stored.line for stored in batch]
    assert await raw.count(nats_stream.name, f"{nats_stream.prefix}.{RUN}.>") == RECORDS
