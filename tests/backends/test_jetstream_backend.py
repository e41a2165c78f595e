"""The JetStream backend against a real nats-server: stream checks, fencing, replicas, lost acks, restarts.

The behaviour both backends share is in ``test_contract.py``; this file is
what only a shared, networked store has. Nothing here mocks NATS: a second
"replica" is a second backend with its own connection, a lost ack is a real
TCP proxy that swallows one reply, an outage is a killed nats-server.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from runjournal_server.backends.base import WriteRaceError
from runjournal_server.backends.jetstream import JetStreamBackend, message_id
from runjournal_server.backends.jetstream.config import (
    StreamConfigError,
    check_max_payload,
    check_server_version,
    parse_server_version,
    stream_config,
    stream_problems,
    subject_covers,
)
from runjournal_server.backends.jetstream.ride_through import WINDOW_TIMEOUTS
from runjournal_server.core.errors import (
    CorruptJournalError,
    RunExistsError,
    StorageFullError,
    StorageUnavailableError,
)
from runjournal_server.core.records import StoredRecord
from runjournal_server.core.summary import is_inert
from tests.backends.conftest import StreamTarget, delete_stream
from tests.nats_server import AckDroppingProxy, NatsServer
from tests.support import builders as b
from tests.support.encoded import claim, meta, note, turns
from tests.support.raw_nats import RawNats, backend_for

pytestmark = pytest.mark.jetstream

RUN = b.RUN_ID
"""The run ``meta()`` is the meta of."""


# ---------------------------------------------------------------- server version, payload, subjects


@pytest.mark.parametrize(
    ("version", "accepted"),
    [
        ("2.12.4", True),
        ("2.12.10", True),
        ("2.13.0", True),
        ("3.0.0", True),
        ("v2.15.1", True),
        ("2.12.5-beta.1", True),
        ("2.12.4-RC.2", False),
        ("2.12.3", False),
        ("2.12.2", False),
        ("2.11.9", False),
        ("1.99.99", False),
    ],
)
def test_the_server_version_must_be_at_least_2_12_4(version: str, accepted: bool) -> None:
    if accepted:
        check_server_version(version)
    else:
        with pytest.raises(StreamConfigError, match=f"version {version}.*2.12.4 or newer"):
            check_server_version(version)


def test_an_unreadable_server_version_is_refused() -> None:
    with pytest.raises(StreamConfigError, match="not a semantic version"):
        parse_server_version("banana")
    assert parse_server_version("2.12.3-beta+build.7") == (2, 12, 3, False)


def test_the_server_payload_limit_must_hold_a_maximal_record_and_its_headers() -> None:
    check_max_payload(8 << 20, 1 << 20)
    with pytest.raises(StreamConfigError, match="max_payload"):
        check_max_payload(1 << 20, 1 << 20)  # the nats-server default cannot hold a 1 MiB record plus headers


@pytest.mark.parametrize(
    ("pattern", "covered"),
    [(">", True), ("rj.>", True), ("*.>", True), ("rj.*", False), ("rj", False), ("rj.a.>", False), ("xx.>", False)],
)
def test_a_stream_subject_covers_the_prefix_only_when_it_captures_every_record_subject(
    pattern: str, covered: bool
) -> None:
    assert subject_covers(pattern, "rj.>") is covered


def test_the_created_stream_configuration_has_no_problems() -> None:
    assert stream_problems(stream_config("S", "rj", replicas=3), prefix="rj", max_record_bytes=1 << 20) == []


# ---------------------------------------------------------------- stream validation at start


async def test_start_creates_a_valid_stream_when_asked(
    jetstream_backend: JetStreamBackend, raw: RawNats, nats_stream: StreamTarget
) -> None:
    info = await raw.api(f"STREAM.INFO.{nats_stream.name}")
    config = info["config"]
    assert config["subjects"] == [f"{nats_stream.prefix}.>"]
    assert (config["max_msgs_per_subject"], config["discard"], config["discard_new_per_subject"]) == (1, "new", True)
    assert (config["storage"], config["max_age"], config["allow_atomic"]) == ("file", 0, True)


async def test_start_refuses_a_missing_stream_unless_asked_to_create_it(
    nats_server: NatsServer, nats_stream: StreamTarget
) -> None:
    backend = backend_for(nats_server.url, nats_stream)
    with pytest.raises(StreamConfigError, match=r"does not exist.*--create-stream"):
        await backend.start()
    assert not backend.connected


def _bad(**changes: Any) -> dict[str, Any]:
    return changes


@pytest.mark.parametrize(
    ("changes", "fix"),
    [
        (_bad(max_age=3_600_000_000_000), "--max-age=0"),
        (_bad(max_msgs_per_subject=5), "--max-msgs-per-subject=1"),
        (_bad(max_msgs_per_subject=-1, discard_new_per_subject=False, discard="old"), "--discard=new"),
        (_bad(discard_new_per_subject=False), "--discard-per-subject"),
        (_bad(storage="memory"), "file storage"),
        (_bad(retention="interest"), "--retention limits"),
        (_bad(max_msg_size=1000), "--max-msg-size=-1"),
        (_bad(allow_rollup_hdrs=True, deny_purge=False), "--no-allow-rollup"),
        (_bad(allow_atomic=False), "--allow-batch"),
    ],
    ids=[
        "max-age",
        "msgs-per-subject",
        "discard-old",
        "not-per-subject",
        "memory",
        "interest",
        "msg-size",
        "rollup",
        "no-atomic",
    ],
)
async def test_start_refuses_a_stream_that_could_lose_or_replace_records_naming_the_fix(
    nats_server: NatsServer, nats_stream: StreamTarget, raw: RawNats, changes: dict[str, Any], fix: str
) -> None:
    config = {**stream_config(nats_stream.name, nats_stream.prefix, replicas=1), **changes}
    created = await raw.api(f"STREAM.CREATE.{nats_stream.name}", config)
    assert "error" not in created, created
    try:
        backend = backend_for(nats_server.url, nats_stream, create_stream=True)
        with pytest.raises(StreamConfigError) as refused:
            await backend.start()
        assert fix in str(refused.value)
        assert f"nats stream edit {nats_stream.name}" in str(refused.value) or "recreate" in str(refused.value)
        assert not backend.connected
    finally:
        await delete_stream(nats_server.url, nats_stream.name)


async def test_start_refuses_a_stream_whose_subjects_miss_the_prefix(
    nats_server: NatsServer, nats_stream: StreamTarget, raw: RawNats
) -> None:
    config = {**stream_config(nats_stream.name, nats_stream.prefix, replicas=1), "subjects": ["elsewhere.>"]}
    assert "error" not in await raw.api(f"STREAM.CREATE.{nats_stream.name}", config)
    try:
        with pytest.raises(StreamConfigError, match=rf"do not capture {nats_stream.prefix}\.>"):
            await backend_for(nats_server.url, nats_stream).start()
    finally:
        await delete_stream(nats_server.url, nats_stream.name)


async def test_start_refuses_a_record_size_the_server_cannot_carry(
    nats_server: NatsServer, nats_stream: StreamTarget
) -> None:
    backend = backend_for(nats_server.url, nats_stream, create_stream=True, max_record_bytes=16 << 20)
    with pytest.raises(StreamConfigError, match="max_payload"):
        await backend.start()


async def test_start_fails_clearly_when_nats_is_unreachable(nats_stream: StreamTarget) -> None:
    backend = backend_for("nats://127.0.0.1:1", nats_stream, connect_timeout_seconds=0.5)
    with pytest.raises(StorageUnavailableError, match="cannot connect to NATS"):
        await backend.start()


async def test_a_full_stream_refuses_records_as_storage_full_and_keeps_what_it_has(
    nats_server: NatsServer, nats_stream: StreamTarget, raw: RawNats
) -> None:
    config = {**stream_config(nats_stream.name, nats_stream.prefix, replicas=1), "max_msgs": 3}
    assert "error" not in await raw.api(f"STREAM.CREATE.{nats_stream.name}", config)
    backend = backend_for(nats_server.url, nats_stream)
    await backend.start()
    try:
        journal = await backend.create_journal(RUN, meta())
        await journal.append(turns(2, 3))
        with pytest.raises(StorageFullError):
            await journal.append(turns(4, 4))
        assert journal.last_seq == 3
        assert [r.seq for r in await backend.load(RUN)] == [1, 2, 3]
    finally:
        await backend.close()
        await delete_stream(nats_server.url, nats_stream.name)


# ---------------------------------------------------------------- layout and bytes


async def test_each_record_is_one_message_holding_its_stored_line_byte_for_byte(
    jetstream_backend: JetStreamBackend, raw: RawNats, nats_stream: StreamTarget
) -> None:
    first = meta()
    journal = await jetstream_backend.create_journal(RUN, first)
    later = [*turns(2, 3), note(4), claim(5)]
    await journal.append(later[:1])
    await journal.append(later[1:])
    expected = [first, *later]
    assert [r.line for r in await jetstream_backend.load(RUN)] == [r.line for r in expected]
    for item in expected:
        token = "meta" if item.seq == 1 else str(item.seq)
        message = await raw.message(nats_stream.name, f"{nats_stream.prefix}.{RUN}.{token}")
        assert message is not None
        assert base64.b64decode(message["data"]) == item.line
    assert await raw.count(nats_stream.name, f"{nats_stream.prefix}.{RUN}.>") == len(expected)


def test_the_message_id_is_deterministic_per_run_seq_and_body() -> None:
    one, same, other = note(4, "a"), note(4, "a"), note(4, "b")
    assert message_id(RUN, one) == message_id(RUN, same)
    assert message_id(RUN, one) != message_id(RUN, other)
    assert message_id(RUN, one) != message_id("run-2", one)


async def test_a_batch_is_all_or_nothing_when_a_later_slot_is_taken(
    jetstream_backend: JetStreamBackend, raw: RawNats, nats_stream: StreamTarget
) -> None:
    journal = await jetstream_backend.create_journal(RUN, meta())
    squatter = note(3, "squatter")
    await raw.publish(f"{nats_stream.prefix}.{RUN}.3", squatter.line)
    with pytest.raises(WriteRaceError):
        await journal.append(turns(2, 4))
    assert journal.last_seq == 1
    assert await raw.message(nats_stream.name, f"{nats_stream.prefix}.{RUN}.2") is None


# ---------------------------------------------------------------- creation


async def test_concurrent_creators_of_one_run_have_exactly_one_winner(
    jetstream_backend: JetStreamBackend, replica_b: JetStreamBackend
) -> None:
    for attempt in range(5):
        run_id = f"race-{attempt}"
        outcomes = await asyncio.gather(
            jetstream_backend.create_journal(run_id, meta(run_id, "from A")),
            replica_b.create_journal(run_id, meta(run_id, "from B")),
            return_exceptions=True,
        )
        winners = [o for o in outcomes if not isinstance(o, BaseException)]
        losers = [o for o in outcomes if isinstance(o, BaseException)]
        assert len(winners) == 1
        assert len(losers) == 1 and isinstance(losers[0], RunExistsError), losers
        stored_meta = (await jetstream_backend.load(run_id))[0]
        winner_prompt = "from A" if outcomes[0] is winners[0] else "from B"
        assert stored_meta.line == meta(run_id, winner_prompt).line


async def test_records_without_a_meta_that_no_staging_marked_are_corrupt_to_a_creation_and_a_read(
    jetstream_backend: JetStreamBackend, raw: RawNats, nats_stream: StreamTarget
) -> None:
    """Not provably an uncommitted creation (remains.py): never RUN_NOT_FOUND, never cleared, the subject named."""
    await raw.publish(f"{nats_stream.prefix}.{RUN}.2", turns(2, 2)[0].line)
    named = rf"'{nats_stream.prefix}\.{RUN}\.2'"
    with pytest.raises(CorruptJournalError, match=named):
        await jetstream_backend.create_journal(RUN, meta())
    with pytest.raises(CorruptJournalError, match=named):
        await jetstream_backend.load(RUN)
    with pytest.raises(CorruptJournalError, match=named):
        await jetstream_backend.meta(RUN)
    assert await raw.count(nats_stream.name, f"{nats_stream.prefix}.{RUN}.>") == 1


# ---------------------------------------------------------------- two replicas, one run


async def test_a_stale_replica_is_refused_and_refresh_adopts_what_the_other_wrote(
    jetstream_backend: JetStreamBackend, replica_b: JetStreamBackend
) -> None:
    journal_a = await jetstream_backend.create_journal(RUN, meta())
    await journal_a.append(turns(2, 3))
    journal_b, seen_by_b = await replica_b.open_journal(RUN)
    assert [r.seq for r in seen_by_b] == [1, 2, 3]
    claimed = claim(4, "worker-b")
    await journal_b.append([claimed, *turns(5, 5)])

    with pytest.raises(WriteRaceError):
        await journal_a.append(turns(4, 4))
    assert journal_a.last_seq == 3

    adopted = await journal_a.refresh()
    assert [r.line for r in adopted] == [claimed.line, turns(5, 5)[0].line]
    assert journal_a.last_seq == 5
    assert await journal_a.refresh() == []

    await journal_a.append(turns(6, 6))  # caught up, A's fence holds again
    with pytest.raises(WriteRaceError):
        await journal_b.append(turns(6, 6) + turns(7, 7))  # now B is the stale one
    assert [r.seq for r in await replica_b.load(RUN)] == [1, 2, 3, 4, 5, 6]


async def test_a_stale_replica_writing_the_identical_record_races_and_stores_it_once(
    jetstream_backend: JetStreamBackend, replica_b: JetStreamBackend, raw: RawNats, nats_stream: StreamTarget
) -> None:
    journal_a = await jetstream_backend.create_journal(RUN, meta())
    journal_b, _ = await replica_b.open_journal(RUN)
    await journal_b.append(turns(2, 2))
    # The same bytes, stored by an earlier request: a write race, so runs.py
    # catches up and answers a verified duplicate (duplicate=true), never "written".
    with pytest.raises(WriteRaceError):
        await journal_a.append(turns(2, 2))
    assert journal_a.last_seq == 1
    assert await raw.count(nats_stream.name, f"{nats_stream.prefix}.{RUN}.>") == 2


async def test_a_writer_whose_previous_record_was_removed_is_refused_by_the_fence(
    nats_server: NatsServer, nats_stream: StreamTarget, raw: RawNats
) -> None:
    config = {**stream_config(nats_stream.name, nats_stream.prefix, replicas=1), "deny_delete": False}
    assert "error" not in await raw.api(f"STREAM.CREATE.{nats_stream.name}", config)
    backend = backend_for(nats_server.url, nats_stream)
    await backend.start()
    try:
        journal = await backend.create_journal(RUN, meta())
        await journal.append(turns(2, 2))
        removed = await raw.message(nats_stream.name, f"{nats_stream.prefix}.{RUN}.2")
        assert removed is not None
        deleted = await raw.api(f"STREAM.MSG.DELETE.{nats_stream.name}", {"seq": removed["seq"]})
        assert deleted.get("success"), deleted
        with pytest.raises(WriteRaceError, match="not what this server read"):
            await journal.append(turns(3, 3))  # slot 3 is free, but record 2 is not the one the tail names
        assert await raw.message(nats_stream.name, f"{nats_stream.prefix}.{RUN}.3") is None
    finally:
        await backend.close()
        await delete_stream(nats_server.url, nats_stream.name)


async def test_refresh_adopts_nothing_when_a_new_record_is_corrupt(
    jetstream_backend: JetStreamBackend, raw: RawNats, nats_stream: StreamTarget
) -> None:
    journal = await jetstream_backend.create_journal(RUN, meta())
    await raw.publish(f"{nats_stream.prefix}.{RUN}.2", turns(2, 2)[0].line)
    await raw.publish(f"{nats_stream.prefix}.{RUN}.3", b'{"crc":"00000000","rec":{}}')
    with pytest.raises(CorruptJournalError) as corrupt:
        await journal.refresh()
    assert corrupt.value.seq == 3
    assert journal.last_seq == 1


async def test_refresh_reads_a_long_run_written_by_another_replica(
    jetstream_backend: JetStreamBackend, replica_b: JetStreamBackend
) -> None:
    journal_a = await jetstream_backend.create_journal(RUN, meta())
    journal_b, _ = await replica_b.open_journal(RUN)
    written = turns(2, 201)
    for start in range(0, len(written), 50):
        await journal_b.append(written[start : start + 50])
    adopted = await journal_a.refresh()
    assert [r.line for r in adopted] == [r.line for r in written]
    assert journal_a.last_seq == 201


# ---------------------------------------------------------------- lost acks


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


async def test_a_lost_ack_is_settled_by_reading_the_record_back(
    proxied: tuple[AckDroppingProxy, JetStreamBackend], raw: RawNats, nats_stream: StreamTarget
) -> None:
    proxy, backend = proxied
    journal = await backend.create_journal(RUN, meta())
    subject = f"{nats_stream.prefix}.{RUN}.2"
    proxy.drop_reply_to(subject)
    await journal.append(turns(2, 2))
    assert proxy.dropped == [subject]
    assert journal.last_seq == 2
    assert await raw.count(nats_stream.name, f"{nats_stream.prefix}.{RUN}.>") == 2
    await journal.append(turns(3, 3))  # the adopted tail fences the next append correctly
    assert [r.line for r in await backend.load(RUN)] == [meta().line, *(r.line for r in turns(2, 3))]


async def test_a_lost_batch_ack_and_a_lost_creation_ack_are_settled_too(
    proxied: tuple[AckDroppingProxy, JetStreamBackend], raw: RawNats, nats_stream: StreamTarget
) -> None:
    proxy, backend = proxied
    proxy.drop_reply_to(f"{nats_stream.prefix}.{RUN}.meta")
    journal = await backend.create_journal(RUN, meta())
    proxy.drop_reply_to(f"{nats_stream.prefix}.{RUN}.4")  # the commit, the last message of the batch
    await journal.append(turns(2, 4))
    assert proxy.dropped == [f"{nats_stream.prefix}.{RUN}.meta", f"{nats_stream.prefix}.{RUN}.4"]
    assert journal.last_seq == 4
    assert await raw.count(nats_stream.name, f"{nats_stream.prefix}.{RUN}.>") == 4


# ---------------------------------------------------------------- an outage


async def test_a_nats_restart_keeps_every_acknowledged_record_and_appends_fail_only_meanwhile(
    nats_binary: Path, tmp_path: Path, nats_stream: StreamTarget
) -> None:
    server = NatsServer(tmp_path / "nats", nats_binary).start()
    backend = backend_for(server.url, nats_stream, create_stream=True, request_timeout_seconds=1.0)
    try:
        await backend.start()
        journal = await backend.create_journal(RUN, meta())
        acknowledged = [meta()]
        for batch in (turns(2, 2), turns(3, 5), turns(6, 6)):
            await journal.append(batch)
            acknowledged.extend(batch)

        server.kill()  # a crash: only what was synced survives, and every ack came after a sync
        started = time.monotonic()
        with pytest.raises(StorageUnavailableError):
            await journal.append(turns(7, 7))
        # It is published again while NATS is away, for WINDOW_TIMEOUTS request timeouts (ride_through.py).
        assert time.monotonic() - started < (WINDOW_TIMEOUTS + 2) * 1.0, "an append must fail within its window"
        with pytest.raises(StorageUnavailableError):
            await backend.load(RUN)
        assert journal.last_seq == 6

        server.start()  # the same store and port
        await backend.wait_until_connected(30)
        await journal.append(turns(7, 7))  # the same append, retried, now succeeds
        acknowledged.extend(turns(7, 7))
        assert [r.line for r in await backend.load(RUN)] == [r.line for r in acknowledged]
    finally:
        await backend.close()
        server.stop()


# ---------------------------------------------------------------- reading the ends


async def test_ends_walks_back_over_an_inert_tail_reading_only_the_tail(
    jetstream_backend: JetStreamBackend, nats_server: NatsServer
) -> None:
    journal = await jetstream_backend.create_journal(RUN, meta())
    body = turns(2, 300)
    for start in range(0, len(body), 100):
        await journal.append(body[start : start + 100])
    inert: list[StoredRecord] = [note(seq) if seq % 2 else claim(seq) for seq in range(301, 321)]
    await journal.append(inert)

    before = _api_requests(nats_server)
    ends = await jetstream_backend.ends(RUN, is_inert)
    used = _api_requests(nats_server) - before
    assert (ends.meta.line, ends.last_significant.line, ends.last_seq) == (meta().line, body[-1].line, 320)
    assert used <= 5, f"ends used {used} API requests for a run of 320 records"


def _api_requests(server: NatsServer) -> int:
    jetstream = server.varz()["jetstream"]
    assert isinstance(jetstream, dict)
    return int(jetstream["stats"]["api"]["total"])


# ---------------------------------------------------------------- damage a file cannot have


async def test_a_message_on_a_subject_no_record_may_have_is_corruption(
    jetstream_backend: JetStreamBackend, raw: RawNats, nats_stream: StreamTarget
) -> None:
    await jetstream_backend.create_journal(RUN, meta())
    await raw.publish(f"{nats_stream.prefix}.{RUN}.02", turns(2, 2)[0].line)
    with pytest.raises(CorruptJournalError, match="not a record"):
        await jetstream_backend.load(RUN)


async def test_a_missing_interior_record_is_corruption_at_its_seq(
    jetstream_backend: JetStreamBackend, raw: RawNats, nats_stream: StreamTarget
) -> None:
    await jetstream_backend.create_journal(RUN, meta())
    await raw.publish(f"{nats_stream.prefix}.{RUN}.3", turns(3, 3)[0].line)
    for read in (jetstream_backend.load, jetstream_backend.open_journal):
        with pytest.raises(CorruptJournalError) as corrupt:
            await read(RUN)
        assert corrupt.value.seq == 2


async def test_a_record_on_the_wrong_subject_is_corruption(
    jetstream_backend: JetStreamBackend, raw: RawNats, nats_stream: StreamTarget
) -> None:
    await jetstream_backend.create_journal(RUN, meta())
    await raw.publish(f"{nats_stream.prefix}.{RUN}.2", turns(3, 3)[0].line)
    with pytest.raises(CorruptJournalError, match="holds seq 3") as corrupt:
        await jetstream_backend.load(RUN)
    assert corrupt.value.seq == 2


async def test_a_lost_ack_of_a_task_document_is_settled_as_stored_by_this_call(
    proxied: tuple[AckDroppingProxy, JetStreamBackend], nats_stream: StreamTarget
) -> None:
    proxy, backend = proxied
    store = backend.task_store()
    proxy.drop_reply_to(f"{nats_stream.prefix}._tasks.task-1.request")
    assert await store.create_request("task-1", b'{"ask":1}') is None
    assert proxy.dropped == [f"{nats_stream.prefix}._tasks.task-1.request"]
    assert await store.create_request("task-1", b'{"ask":1}') == b'{"ask":1}'  # a later call finds it stored
