"""A JetStream creation larger than one atomic batch (staging.py): whole or absent, and resumable after a crash.

A crashed staging is played by publishing some of the creation's records
straight to the stream, with the staging mark, as a creator that died after
its first stages would have left them; the next creation resumes them when
they are its own and clears them otherwise (clearing.py). Records without
the mark are not provably a creation's: CORRUPT_JOURNAL (remains.py).
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator

import pytest

from runjournal_server.backends.jetstream import JetStreamBackend
from runjournal_server.backends.jetstream.api import HEADER_STAGED
from runjournal_server.backends.jetstream.config import MAX_ATOMIC_BATCH
from runjournal_server.backends.jetstream.staging import StagedCreation
from runjournal_server.core.errors import CorruptJournalError, RunExistsError, RunNotFoundError
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


async def stage(raw: RawNats, target: StreamTarget, records: list[StoredRecord]) -> None:
    """Publish ``records`` as a staged creation stores them: each on its subject, with the staging mark."""
    for stored in records:
        reply = await raw.nc.request(
            f"{target.prefix}.{RUN}.{stored.seq}", stored.line, timeout=10, headers={HEADER_STAGED: "1"}
        )
        assert b"error" not in reply.data, reply.data


async def run_count(raw: RawNats, target: StreamTarget) -> int:
    return await raw.count(target.name, f"{target.prefix}.{RUN}.>")


async def test_staged_records_without_a_meta_are_no_run_and_a_retry_finishes_the_creation(
    jetstream_backend: JetStreamBackend, raw: RawNats, nats_stream: StreamTarget
) -> None:
    batch = creation()
    await stage(raw, nats_stream, batch[1:1200])  # a creator died after staging records 2..1200
    with pytest.raises(RunNotFoundError):
        await jetstream_backend.load(RUN)
    with pytest.raises(RunNotFoundError):
        await jetstream_backend.meta(RUN)
    assert RUN not in await jetstream_backend.list_run_ids()
    journal = await jetstream_backend.create_journal(RUN, batch[0], batch[1:])
    assert journal.last_seq == RECORDS
    assert [stored.line for stored in await jetstream_backend.load(RUN)] == [stored.line for stored in batch]
    assert await run_count(raw, nats_stream) == RECORDS


@pytest.mark.parametrize("count", [1, RECORDS], ids=["a meta alone", "a staged creation"])
async def test_the_staged_records_of_another_creation_are_cleared_by_the_next_creation(
    jetstream_backend: JetStreamBackend, raw: RawNats, nats_stream: StreamTarget, count: int
) -> None:
    await stage(raw, nats_stream, [encode(b.note(seq, "someone else")) for seq in range(2, 40)])
    batch = creation(count=count)
    journal = await jetstream_backend.create_journal(RUN, batch[0], batch[1:])
    assert journal.last_seq == count
    assert [stored.line for stored in await jetstream_backend.load(RUN)] == [stored.line for stored in batch]
    assert await run_count(raw, nats_stream) == count  # nothing of the other creation is left


async def test_unmarked_records_without_a_meta_are_corrupt_to_a_staged_creation_and_nothing_is_cleared(
    jetstream_backend: JetStreamBackend, raw: RawNats, nats_stream: StreamTarget
) -> None:
    """A meta erased by hand, or a staging by a version that did not mark it: not provably a creation's."""
    for stored in creation()[1:5]:
        await raw.publish(f"{nats_stream.prefix}.{RUN}.{stored.seq}", stored.line)
    batch = creation()
    with pytest.raises(CorruptJournalError, match=rf"4 message\(s\).*'{nats_stream.prefix}\.{RUN}\.5'"):
        await jetstream_backend.create_journal(RUN, batch[0], batch[1:])
    with pytest.raises(CorruptJournalError):
        await jetstream_backend.load(RUN)
    assert await run_count(raw, nats_stream) == 4


async def test_a_clearing_cut_short_is_no_run_and_the_next_creation_finishes_it(
    jetstream_backend: JetStreamBackend, raw: RawNats, nats_stream: StreamTarget
) -> None:
    await stage(raw, nats_stream, [encode(b.note(seq, "abandoned")) for seq in range(2, 30)])
    await raw.publish(f"{nats_stream.prefix}.{RUN}.clearing", b"{}")  # the marker of a clearing that then died
    found = await raw.message(nats_stream.name, f"{nats_stream.prefix}.{RUN}.29")
    assert found is not None
    await raw.api(f"STREAM.MSG.DELETE.{nats_stream.name}", {"seq": found["seq"]})  # some erased already
    for read in (jetstream_backend.load, jetstream_backend.meta):
        with pytest.raises(RunNotFoundError):
            await read(RUN)
    batch = creation(count=3)
    journal = await jetstream_backend.create_journal(RUN, batch[0], batch[1:])
    assert journal.last_seq == 3
    assert await run_count(raw, nats_stream) == 3


async def test_a_staging_whose_stages_a_rival_cleared_loses_the_id_and_leaves_the_rival_alone(
    jetstream_backend: JetStreamBackend, raw: RawNats, nats_stream: StreamTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After our first stage landed, a rival cleared it and staged its own (played here by hand)."""
    rival = [encode(b.note(seq, "the rival")) for seq in range(2, 10)]
    publish = StagedCreation._publish

    async def then_a_rival(self: StagedCreation, messages: list[StoredRecord], after: int) -> int | None:
        stream_seq = await publish(self, messages, after)
        if stream_seq is not None and messages[0].seq == 2:
            for stored in messages:
                found = await raw.message(nats_stream.name, f"{nats_stream.prefix}.{RUN}.{stored.seq}")
                assert found is not None
                await raw.api(f"STREAM.MSG.DELETE.{nats_stream.name}", {"seq": found["seq"]})
            await stage(raw, nats_stream, rival)
        return stream_seq

    monkeypatch.setattr(StagedCreation, "_publish", then_a_rival)
    batch = creation()
    with pytest.raises(RunExistsError):
        await jetstream_backend.create_journal(RUN, batch[0], batch[1:])
    assert await run_count(raw, nats_stream) == len(rival)
    held = await raw.message(nats_stream.name, f"{nats_stream.prefix}.{RUN}.2")
    assert held is not None and base64.b64decode(held["data"]) == rival[0].line


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
