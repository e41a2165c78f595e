"""Each listener hears of a change once: the feed leaves this replica's own acknowledged writes to ``runs/``.

On JetStream ``runs/`` tells the server's listeners of every write it
acknowledged and every deletion it answered ``deleted``, and the feed tells
them of what is stored in the stream; the feed skips this replica's own
acknowledged writes and tombstones (``own_writes.py``), still tells every
other replica's write and deletion, and tells this replica's own where
``runs/`` cannot (it was not acknowledged).
"""

from __future__ import annotations

from collections import Counter

import pytest
from nats.aio.msg import Msg

from runjournal_server.backends.jetstream import JetStreamBackend
from runjournal_server.backends.jetstream.feed import stream_seq_of
from runjournal_server.backends.jetstream.layout import Layout
from runjournal_server.backends.jetstream.own_writes import OwnWrites
from runjournal_server.core import records
from runjournal_server.core.errors import StorageUnavailableError
from runjournal_server.core.records import encode
from runjournal_server.runs.runs import Runs
from tests.conftest import StreamTarget
from tests.nats_server import AckDroppingProxy, NatsServer
from tests.support import builders as b
from tests.support.raw_nats import backend_for

LAYOUT = Layout("p")
SUBJECT = LAYOUT.subject("r", 2)
TOMBSTONE = LAYOUT.tombstone("r")


class Heard:
    """A listener (``runs.events.RunListener``, or the feed's callbacks): what it was told, in order."""

    def __init__(self) -> None:
        self.records: list[tuple[str, int]] = []
        self.deletions: list[str] = []
        self.released = 0

    def stored(self, run_id: str, seq: int) -> None:
        self.records.append((run_id, seq))

    def deleted(self, run_id: str) -> None:
        self.deletions.append(run_id)

    def release(self) -> None:
        self.released += 1

    def news(self, subject: str) -> None:
        """What the feed tells of a subject (``Feed.news``), for the ledger alone."""
        record, deleted = LAYOUT.record_of(subject), LAYOUT.run_of_tombstone(subject)
        if record is not None:
            self.stored(*record)
        if deleted is not None:
            self.deleted(deleted)


def following() -> tuple[OwnWrites, Heard]:
    told = Heard()
    own = OwnWrites()
    own.follow(told.news, 0, told.release)
    return own, told


# ---------------------------------------------------------------- the ledger, each order of ack and delivery


def test_an_acknowledged_write_delivered_after_its_ack_is_skipped_and_forgotten() -> None:
    own, told = following()
    with own.writing([SUBJECT]) as write:
        write.acknowledge(10)
    assert own.delivered(SUBJECT, 10)  # the feed skips it: runs/ told it
    assert not own.delivered(SUBJECT, 10)  # and the ledger holds it no longer
    assert told.records == []


def test_a_write_delivered_before_its_ack_holds_the_position_below_it_until_it_ends() -> None:
    own, told = following()
    with own.writing([SUBJECT]) as write:
        assert own.delivered(SUBJECT, 10)
        assert own.held_below() == 10
        write.acknowledge(10)
    assert own.held_below() is None
    assert told.released == 1
    assert told.records == []  # runs/ tells it, in the same step of the loop


@pytest.mark.parametrize("how", ["refused", "cancelled"])
def test_a_write_not_acknowledged_but_delivered_is_told_when_it_ends(how: str) -> None:
    own, told = following()
    try:
        with own.writing([SUBJECT]):
            assert own.delivered(SUBJECT, 10)
            if how == "cancelled":
                raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert told.records == [("r", 2)]
    assert own.held_below() is None


def test_a_write_not_acknowledged_that_lands_later_is_the_feeds_to_tell() -> None:
    own, told = following()
    with own.writing([SUBJECT]):
        pass
    assert not own.delivered(SUBJECT, 10)
    assert told.records == []


def test_an_acknowledged_write_the_feed_passes_without_delivering_is_forgotten() -> None:
    own, _ = following()
    with own.writing([SUBJECT, LAYOUT.subject("r", 3)]) as write:
        write.acknowledge(11)
    own.passed(11)  # erased before the feed reached them
    assert not own.delivered(SUBJECT, 12)
    with own.writing([LAYOUT.subject("r", 4)]) as write:
        write.acknowledge(11)  # the feed is past it already: not kept at all
    assert not own.delivered(LAYOUT.subject("r", 4), 12)


def test_an_acknowledged_tombstone_is_skipped_and_one_not_acknowledged_is_told_as_a_deletion() -> None:
    own, told = following()
    with own.writing([TOMBSTONE]) as write:
        write.acknowledge(10)  # the deletion answers deleted: runs/ tells it
    assert own.delivered(TOMBSTONE, 10)
    with pytest.raises(KeyboardInterrupt), own.writing([LAYOUT.tombstone("s")]):
        assert own.delivered(LAYOUT.tombstone("s"), 11)  # landed, then the deletion failed
        raise KeyboardInterrupt
    assert (told.records, told.deletions) == ([], ["s"])


def test_nothing_is_kept_while_no_feed_follows() -> None:
    own = OwnWrites()
    with own.writing([SUBJECT]) as write:
        assert not own.delivered(SUBJECT, 10)
        write.acknowledge(10)
    assert not own.delivered(SUBJECT, 10)


# ---------------------------------------------------------------- two replicas on a real nats-server


async def caught_up(*backends: JetStreamBackend) -> None:
    """Every message stored so far has been delivered by each backend's feed (the listing's barrier)."""
    for backend in backends:
        feed = backend._feed
        assert feed is not None and await feed.caught_up(backend._api, timeout_seconds=30)


async def replica(backend: JetStreamBackend) -> tuple[Runs, Heard]:
    """A server replica's runs over ``backend``, its news followed, and a listener of what it is told."""
    runs = Runs(backend, max_record_bytes=records.DEFAULT_MAX_RECORD_BYTES, max_open_journals=16)
    listener = Heard()
    runs.events.listen(listener)
    await backend.follow(runs.events.stored, runs.events.deleted)
    return runs, listener


async def test_a_write_through_a_replica_is_told_once_to_its_listeners_and_once_to_the_others(
    jetstream_backend: JetStreamBackend, replica_b: JetStreamBackend
) -> None:
    replicas = [await replica(backend) for backend in (jetstream_backend, replica_b)]
    (via_a, told_a), (via_b, told_b) = replicas
    try:
        await via_a.append("r", 0, [b.meta(run_id="r")])
        await via_a.append("r", 1, [b.note(2, "one")])
        await via_a.append("r", 1, [b.note(3, "two"), b.note(4, "three")])
        await caught_up(jetstream_backend, replica_b)
        await via_b.append("r", 1, [b.note(5, "four")])
        await caught_up(jetstream_backend, replica_b)
        # A: its own three writes from runs/ (a batch as its last seq), B's write from the feed; each once.
        assert Counter(told_a.records) == Counter({("r", 1): 1, ("r", 2): 1, ("r", 4): 1, ("r", 5): 1})
        # B: A's records from the feed, one by one, and its own write from runs/; each once.
        assert Counter(told_b.records) == Counter({("r", seq): 1 for seq in range(1, 6)})
        await via_a.delete("r", 5)
        await caught_up(jetstream_backend, replica_b)
        assert told_b.deletions == ["r"]
    finally:
        for runs, _ in replicas:
            await runs.close()


async def test_a_deletion_through_a_replica_is_told_once_to_its_listeners_and_once_to_the_others(
    jetstream_backend: JetStreamBackend, replica_b: JetStreamBackend
) -> None:
    (via_a, told_a), (via_b, told_b) = replicas = [await replica(b) for b in (jetstream_backend, replica_b)]
    try:
        await via_a.append("r", 0, [b.meta(run_id="r")])
        await via_a.append("r", 1, [b.note(2, "one")])
        await via_b.append("s", 0, [b.meta(run_id="s")])
        await caught_up(jetstream_backend, replica_b)
        assert (await via_a.delete("r", 2)).deleted
        assert (await via_b.delete("s", 1)).deleted
        await caught_up(jetstream_backend, replica_b)
        # Each replica: its own deletion from runs/ (the feed skips its tombstone), the other's from the feed.
        assert Counter(told_a.deletions) == Counter(told_b.deletions) == Counter({"r": 1, "s": 1})
    finally:
        for runs, _ in replicas:
            await runs.close()


async def test_the_feed_tells_other_replicas_writes_and_deletions_and_none_of_its_own(
    jetstream_backend: JetStreamBackend, replica_b: JetStreamBackend
) -> None:
    told_a, told_b = Heard(), Heard()
    await jetstream_backend.follow(told_a.stored, told_a.deleted)
    await replica_b.follow(told_b.stored, told_b.deleted)
    stored = [encode(b.meta(run_id="r")), encode(b.note(2, "x")), encode(b.note(3, "y"))]
    journal = await jetstream_backend.create_journal("r", stored[0], stored[1:2])
    await journal.append(stored[2:])
    await journal.close()
    assert (await jetstream_backend.delete_run("r", 3)).deleted  # its caller, not the feed, tells A's listeners
    await caught_up(jetstream_backend, replica_b)
    assert (told_a.records, told_a.deletions) == ([], [])
    assert (told_b.records, told_b.deletions) == ([("r", 1), ("r", 2), ("r", 3)], ["r"])


async def test_a_write_whose_ack_was_lost_and_read_back_is_left_to_runs_too(
    nats_server: NatsServer, nats_stream: StreamTarget, jetstream_backend: JetStreamBackend
) -> None:
    proxy = await AckDroppingProxy(nats_server.port).start()
    backend = backend_for(proxy.url, nats_stream, request_timeout_seconds=0.5)
    await backend.start()
    try:
        told, others = Heard(), Heard()
        await backend.follow(told.stored, told.deleted)
        await jetstream_backend.follow(others.stored, others.deleted)
        journal = await backend.create_journal("r", encode(b.meta(run_id="r")))
        proxy.drop_reply_to(f"{nats_stream.prefix}.r.2")
        await journal.append([encode(b.note(2, "x"))])  # acknowledged by reading it back
        assert proxy.dropped == [f"{nats_stream.prefix}.r.2"]
        await caught_up(backend, jetstream_backend)
        assert told.records == []
        assert others.records == [("r", 1), ("r", 2)]
    finally:
        await backend.close()
        await proxy.close()


async def test_a_tombstone_whose_ack_was_lost_and_read_back_is_told_once_by_runs(
    nats_server: NatsServer, nats_stream: StreamTarget, jetstream_backend: JetStreamBackend
) -> None:
    proxy = await AckDroppingProxy(nats_server.port).start()
    backend = backend_for(proxy.url, nats_stream, request_timeout_seconds=0.5)
    await backend.start()
    (via_a, told_a), (_, told_b) = replicas = [await replica(b) for b in (backend, jetstream_backend)]
    try:
        await via_a.append("r", 0, [b.meta(run_id="r")])
        proxy.drop_reply_to(f"{nats_stream.prefix}.r.deleted")
        assert (await via_a.delete("r", 1)).deleted  # acknowledged by reading the tombstone back
        assert proxy.dropped == [f"{nats_stream.prefix}.r.deleted"]
        await caught_up(backend, jetstream_backend)
        assert told_a.deletions == told_b.deletions == ["r"]
    finally:
        for runs, _ in replicas:
            await runs.close()
        await backend.close()
        await proxy.close()


async def test_a_deletion_that_fails_after_its_tombstone_landed_is_told_by_the_feed(
    nats_server: NatsServer, nats_stream: StreamTarget, jetstream_backend: JetStreamBackend
) -> None:
    """The tombstone is stored but the deletion raises (erasing the last record got no answer): runs/ tells
    nothing, so the feed of the deleting replica tells it, once, as every other replica's does."""
    proxy = await AckDroppingProxy(nats_server.port).start()
    backend = backend_for(proxy.url, nats_stream, request_timeout_seconds=0.5)
    await backend.start()
    (via_a, told_a), (_, told_b) = replicas = [await replica(b) for b in (backend, jetstream_backend)]
    try:
        await via_a.append("r", 0, [b.meta(run_id="r")])
        proxy.drop_reply_to(f"$JS.API.STREAM.MSG.DELETE.{nats_stream.name}")
        with pytest.raises(StorageUnavailableError, match="the run is deleted"):
            await via_a.delete("r", 1)
        assert proxy.dropped == [f"$JS.API.STREAM.MSG.DELETE.{nats_stream.name}"]
        await caught_up(backend, jetstream_backend)
        assert told_a.deletions == told_b.deletions == ["r"]
    finally:
        for runs, _ in replicas:
            await runs.close()
        await backend.close()
        await proxy.close()


@pytest.mark.parametrize(
    "reply",
    [
        "$JS.ACK.RUNS.feed.1.77.3.1700000000000000000.0",
        "$JS.ACK._.ACCHASH.RUNS.feed.1.78.3.1700000000000000000.0.rnd",
        "$JS.ACK._.ACCHASH.RUNS.feed.1.79.3.1700000000000000000.0",
        "$JS.ACK.RUNS.feed.1.x.3.1.0",
        "$JS.ACK.RUNS.feed.1.2",
        "_INBOX.abc",
        "",
    ],
)
def test_the_feed_reads_a_deliverys_stream_seq_as_nats_py_does(reply: str) -> None:
    try:
        expected: int | None = Msg.Metadata._from_reply(reply).sequence.stream
    except Exception:  # nats-py: not a JetStream delivery
        expected = None
    assert stream_seq_of(reply) == expected
