"""The deletion contract (``Backend.delete_run``, tombstones) kept the same by both backends.

After a deletion every reader and writer of the run answers RUN_DELETED, the
listing leaves it out, deleting again answers the tombstone, and a migrated
tombstone keeps a run id that was never created here from being created. A
JetStream deletion interrupted between its tombstone and its erasure is
finished by the next replica that starts.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from runjournal_server.backends.base import Backend, Tombstone
from runjournal_server.backends.jetstream import JetStreamBackend
from runjournal_server.backends.tombstone import decode_tombstone, encode_tombstone
from runjournal_server.core.errors import LastSeqMismatchError, RunDeletedError, RunExistsError, RunNotFoundError
from runjournal_server.core.records import StoredRecord, encode
from runjournal_server.core.summary import is_inert
from tests.conftest import StreamTarget
from tests.nats_server import NatsServer
from tests.support import builders as b
from tests.support.raw_nats import RawNats, backend_for


@pytest.fixture(params=["file", "jetstream"])
def backend(request: pytest.FixtureRequest) -> Backend:
    return request.getfixturevalue(f"{request.param}_backend")  # type: ignore[no-any-return]


def _records(run_id: str) -> list[StoredRecord]:
    return [encode(r) for r in (b.meta(run_id=run_id), b.note(2, "x"), b.note(3, "y"))]


async def _create(backend: Backend, run_id: str) -> list[StoredRecord]:
    stored = _records(run_id)
    journal = await backend.create_journal(run_id, stored[0], stored[1:])
    await journal.close()
    return stored


async def _assert_deleted(backend: Backend, run_id: str, last_seq: int) -> None:
    meta = _records(run_id)[0]
    reads = {
        "load": backend.load(run_id),
        "open_journal": backend.open_journal(run_id),
        "ends": backend.ends(run_id, is_inert),
        "tail": backend.tail(run_id, lambda stored: False),
        "meta": backend.meta(run_id),
        "create_journal": backend.create_journal(run_id, meta),
    }
    for name, call in reads.items():
        with pytest.raises(RunDeletedError) as refused:
            await call
        assert refused.value.typed_metadata["last_seq"] == last_seq, name
    with pytest.raises(RunDeletedError):
        async for _ in backend.stream(run_id, 1):
            pass
    assert run_id not in await backend.list_run_ids()


async def test_a_deleted_run_is_run_deleted_for_every_reader_and_writer(backend: Backend) -> None:
    await _create(backend, "gone")
    await _create(backend, "stays")
    deletion = await backend.delete_run("gone", 3)
    tombstone = deletion.tombstone
    assert deletion.deleted and deletion.erased and (tombstone.run_id, tombstone.last_seq) == ("gone", 3)
    await _assert_deleted(backend, "gone", 3)
    assert await backend.list_run_ids() == ["stays"]
    assert [t.run_id for t in await backend.tombstones()] == ["gone"]
    again = await backend.delete_run("gone", 1)
    assert (again.tombstone, again.deleted, again.erased) == (tombstone, False, True)


async def test_the_file_backend_erases_before_it_answers_even_when_it_need_not(file_backend: Backend) -> None:
    await _create(file_backend, "now")
    deletion = await file_backend.delete_run("now", 3, wait_for_erase=False)
    assert (deletion.deleted, deletion.erased) == (True, True)  # a truncate and an unlink: never worth a background


async def test_a_jetstream_erasure_in_the_background_answers_first_and_deleting_again_waits_for_it(
    jetstream_backend: JetStreamBackend, raw: RawNats, nats_stream: StreamTarget
) -> None:
    await _create(jetstream_backend, "later")
    deletion = await jetstream_backend.delete_run("later", 3, wait_for_erase=False)
    assert (deletion.deleted, deletion.erased) == (True, False)
    await _assert_deleted(jetstream_backend, "later", 3)  # RUN_DELETED at once, erased or not
    again = await jetstream_backend.delete_run("later", 3)  # waits for the erasure in flight
    assert (again.deleted, again.erased) == (False, True)
    assert await raw.count(nats_stream.name, f"{nats_stream.prefix}.later.>") == 1  # only the tombstone


async def test_a_wrong_last_seq_or_a_missing_run_deletes_nothing(backend: Backend) -> None:
    stored = await _create(backend, "moved")
    with pytest.raises(LastSeqMismatchError) as refused:
        await backend.delete_run("moved", 2)
    assert refused.value.typed_metadata["last_seq"] == 3
    assert [r.line for r in await backend.load("moved")] == [r.line for r in stored]
    assert await backend.tombstone("moved") is None
    with pytest.raises(RunNotFoundError):
        await backend.delete_run("never", 1)
    assert await backend.tombstones() == []


async def test_a_kept_tombstone_bars_the_id_and_never_replaces_a_run(backend: Backend) -> None:
    await backend.keep_tombstone(Tombstone("migrated", 7, 1_700_000_000.0))
    await backend.keep_tombstone(Tombstone("migrated", 7, 1_700_000_000.0))  # idempotent
    await _assert_deleted(backend, "migrated", 7)
    await _create(backend, "present")
    with pytest.raises(RunExistsError):
        await backend.keep_tombstone(Tombstone("present", 3, 1_700_000_000.0))
    assert len(await backend.load("present")) == 3


async def test_a_jetstream_deletion_cut_before_its_erasure_is_finished_by_the_next_start(
    jetstream_backend: JetStreamBackend, nats_server: NatsServer, nats_stream: StreamTarget, raw: RawNats
) -> None:
    await _create(jetstream_backend, "half")

    async def crash(run_id: str) -> None:
        raise ConnectionError("the process died here")

    jetstream_backend._erasures._erase = crash  # type: ignore[method-assign]
    with pytest.raises(ConnectionError):
        await jetstream_backend.delete_run("half", 3)
    # The last record went before the answer (appends through other replicas are fenced on it); two are left.
    assert await raw.count(nats_stream.name, f"{nats_stream.prefix}.half.>") == 3
    await _assert_deleted(jetstream_backend, "half", 3)
    replica = backend_for(nats_server.url, nats_stream)
    await replica.start()
    try:
        assert replica._erasures.begun == 1  # the start began the erasure (in the background: it serves meanwhile)
        await _assert_deleted(replica, "half", 3)
        finished = await replica.delete_run("half", 3)  # joins the erasure the start began
        assert (finished.deleted, finished.erased) == (False, True)
        assert await raw.count(nats_stream.name, f"{nats_stream.prefix}.half.>") == 1  # only the tombstone
    finally:
        await replica.close()


async def test_a_stop_during_a_background_erasure_leaves_it_for_the_next_start(
    jetstream_backend: JetStreamBackend, nats_server: NatsServer, nats_stream: StreamTarget, raw: RawNats
) -> None:
    stored = [encode(b.meta(run_id="long"))] + [encode(b.note(seq, "x" * 100)) for seq in range(2, 301)]
    journal = await jetstream_backend.create_journal("long", stored[0], stored[1:])
    await journal.close()
    deletion = await jetstream_backend.delete_run("long", 300, wait_for_erase=False)
    assert (deletion.deleted, deletion.erased) == (True, False)
    await jetstream_backend.close()  # cancels the erasure wherever it got to
    replica = backend_for(nats_server.url, nats_stream)
    await replica.start()
    try:
        await _assert_deleted(replica, "long", 300)
        finished = await replica.delete_run("long", 300)
        assert (finished.deleted, finished.erased) == (False, True)
        assert await raw.count(nats_stream.name, f"{nats_stream.prefix}.long.>") == 1
    finally:
        await replica.close()


@pytest.mark.parametrize("erased", [False, True])
async def test_a_replica_holding_the_run_hears_from_its_refresh_that_another_deleted_it(
    jetstream_backend: JetStreamBackend, replica_b: JetStreamBackend, erased: bool
) -> None:
    await _create(jetstream_backend, "held")
    held, _ = await replica_b.open_journal("held")
    await jetstream_backend.delete_run("held", 3, wait_for_erase=erased)
    with pytest.raises(RunDeletedError) as refused:
        await held.refresh()
    assert refused.value.typed_metadata["last_seq"] == 3
    await held.close()


async def test_both_backends_store_the_tombstone_as_the_one_document(
    file_backend: Backend, jetstream_backend: JetStreamBackend, data_dir: Path, raw: RawNats, nats_stream: StreamTarget
) -> None:
    stored: dict[str, bytes] = {}
    for backend in (file_backend, jetstream_backend):
        await _create(backend, "same")
        await backend.delete_run("same", 3)
    stored["file"] = (data_dir / "deleted" / "same.json").read_bytes()
    message = await raw.message(nats_stream.name, f"{nats_stream.prefix}.same.deleted")
    assert message is not None
    stored["jetstream"] = base64.b64decode(message["data"])
    for backend in (file_backend, jetstream_backend):
        tombstone = await backend.tombstone("same")
        assert tombstone is not None and tombstone.last_seq == 3
        assert stored[backend.name] == encode_tombstone(tombstone), backend.name
        assert decode_tombstone("same", stored[backend.name], "read back") == tombstone
