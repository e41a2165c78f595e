"""The backend contract (``backends/base.py``), one suite run against every backend.

Each test states a promise of the contract that is not about one kind of
storage, and runs on the file backend and on the JetStream backend (a real
nats-server). What only one backend has — torn tails and flocks, fences and
lost acks — is tested in that backend's own file.

Damage is made the way it would arrive in each store: a file with a bad line
written by hand, or a message published straight to a record subject.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import nats
import pytest

from runjournal_server.backends.base import Backend, Journal
from runjournal_server.backends.file import FileBackend
from runjournal_server.backends.jetstream import JetStreamBackend
from runjournal_server.core.errors import (
    CorruptJournalError,
    InvalidArgumentError,
    RunExistsError,
    RunLockedError,
    RunNotFoundError,
    StorageUnavailableError,
)
from runjournal_server.core.records import StoredRecord
from runjournal_server.core.summary import is_inert
from tests.support import builders as b
from tests.support.encoded import claim, meta, note, turns

RUN = b.RUN_ID
"""The run ``meta()`` is the meta of."""


@dataclass
class Harness:
    """A started backend plus what a test needs to reach around it."""

    backend: Backend
    write_lines: Callable[[str, Sequence[bytes]], Awaitable[None]]
    """Store exactly these lines as the run's records 1, 2, ..., bypassing the backend."""
    make_backend: Callable[[], Backend]
    """Another backend instance on the same storage (not started)."""

    @contextlib.asynccontextmanager
    async def restarted(self) -> AsyncIterator[Backend]:
        """Close the backend and start a fresh instance on the same storage, as after a server restart."""
        await self.backend.close()
        backend = self.make_backend()
        await backend.start()
        try:
            yield backend
        finally:
            await backend.close()


@pytest.fixture(params=["file", "jetstream"])
def harness(request: pytest.FixtureRequest, data_dir: Path) -> Harness:
    """The backend under test, started on fresh storage (the JetStream one needs a real nats-server)."""
    if request.param == "file":
        backend: Backend = request.getfixturevalue("file_backend")

        async def write_file(run_id: str, lines: Sequence[bytes]) -> None:
            data_dir.mkdir(parents=True, exist_ok=True)
            (data_dir / f"{run_id}.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))

        return Harness(backend, write_file, lambda: FileBackend(data_dir))

    backend = request.getfixturevalue("jetstream_backend")
    server, target = request.getfixturevalue("nats_server"), request.getfixturevalue("nats_stream")

    async def publish(run_id: str, lines: Sequence[bytes]) -> None:
        nc = await nats.connect(server.url)
        try:
            for seq, line in enumerate(lines, start=1):
                token = "meta" if seq == 1 else str(seq)
                await nc.request(f"{target.prefix}.{run_id}.{token}", line, timeout=10)
        finally:
            await nc.close()

    return Harness(
        backend,
        publish,
        lambda: JetStreamBackend([server.url], stream=target.name, subject_prefix=target.prefix),
    )


def lines(items: Sequence[StoredRecord]) -> list[bytes]:
    return [item.line for item in items]


def flip(line: bytes) -> bytes:
    """The line with one bit of its body changed: still JSON, but the checksum must catch it."""
    at = line.index(b'"payload"') + 2
    return line[:at] + bytes([line[at] ^ 0x01]) + line[at + 1 :]


async def create(harness: Harness, items: Sequence[StoredRecord], run_id: str = RUN) -> Journal:
    journal = await harness.backend.create_journal(run_id, items[0])
    if len(items) > 1:
        await journal.append(items[1:])
    return journal


# ---------------------------------------------------------------- creating and reading


async def test_a_created_run_reads_back_as_its_meta(harness: Harness) -> None:
    journal = await harness.backend.create_journal(RUN, meta())
    assert journal.last_seq == 1
    assert lines(await harness.backend.load(RUN)) == [meta().line]
    ends = await harness.backend.ends(RUN, is_inert)
    assert (ends.meta.line, ends.last_significant.line, ends.last_seq) == (meta().line, meta().line, 1)
    await journal.close()
    reopened, found = await harness.backend.open_journal(RUN)
    assert (reopened.last_seq, lines(found)) == (1, [meta().line])
    await reopened.append(turns(2, 4))
    assert (await harness.backend.meta(RUN)).line == meta().line  # the first record alone, however long the run
    await reopened.close()


async def test_appended_records_read_back_as_the_exact_encoded_lines(harness: Harness) -> None:
    everything = [meta(), *turns(2, 3), note(4), *turns(5, 9)]
    journal = await harness.backend.create_journal(RUN, everything[0])
    await journal.append(everything[1:2])
    await journal.append(everything[2:4])
    await journal.append(everything[4:])
    assert journal.last_seq == 9
    for item in everything:
        assert (await journal.stored_line(item.seq)).line == item.line
    await journal.close()
    assert lines(await harness.backend.load(RUN)) == lines(everything)
    reopened, found = await harness.backend.open_journal(RUN)
    assert (reopened.last_seq, lines(found)) == (9, lines(everything))
    await reopened.close()


async def test_acknowledged_records_survive_a_new_backend_instance(harness: Harness) -> None:
    everything = [meta(), *turns(2, 6)]
    journal = await create(harness, everything)
    await journal.close()
    async with harness.restarted() as backend:
        assert lines(await backend.load(RUN)) == lines(everything)
        journal, _ = await backend.open_journal(RUN)
        await journal.append(turns(7, 7))
        assert journal.last_seq == 7


async def test_an_append_with_the_wrong_numbering_is_refused_and_stores_nothing(harness: Harness) -> None:
    journal = await create(harness, [meta(), *turns(2, 2)])
    for wrong in ([turns(4, 4)[0]], [turns(2, 2)[0]], [turns(3, 3)[0], turns(5, 5)[0]]):
        with pytest.raises(ValueError, match="expected seq"):
            await journal.append(wrong)
    assert journal.last_seq == 2
    assert lines(await harness.backend.load(RUN)) == lines([meta(), *turns(2, 2)])


async def test_a_batch_is_stored_once_whole_and_in_order(harness: Harness) -> None:
    batch = [*turns(2, 40), claim(41), note(42)]
    journal = await create(harness, [meta()])
    await journal.append(batch)
    assert journal.last_seq == 42
    assert lines(await harness.backend.load(RUN)) == lines([meta(), *batch])
    assert await journal.refresh() == []


async def test_refresh_finds_nothing_when_this_journal_is_the_only_writer(harness: Harness) -> None:
    journal = await create(harness, [meta(), *turns(2, 4)])
    assert await journal.refresh() == []
    assert journal.last_seq == 4


async def test_stored_line_is_refused_outside_the_journal(harness: Harness) -> None:
    journal = await create(harness, [meta(), *turns(2, 3)])
    for seq in (0, 4):
        with pytest.raises(ValueError, match="outside"):
            await journal.stored_line(seq)


async def test_a_closed_journal_refuses_appends(harness: Harness) -> None:
    journal = await create(harness, [meta()])
    await journal.close()
    await journal.close()  # idempotent
    with pytest.raises(StorageUnavailableError):
        await journal.append(turns(2, 2))


# ---------------------------------------------------------------- absent, existing, invalid


async def test_a_missing_run_is_not_found(harness: Harness) -> None:
    with pytest.raises(RunNotFoundError):
        await harness.backend.load("nobody")
    with pytest.raises(RunNotFoundError):
        await harness.backend.open_journal("nobody")
    with pytest.raises(RunNotFoundError):
        await harness.backend.ends("nobody", is_inert)
    with pytest.raises(RunNotFoundError):
        await harness.backend.meta("nobody")


async def test_creation_refuses_an_existing_run_and_leaves_it_alone(harness: Harness) -> None:
    journal = await create(harness, [meta(), *turns(2, 3)])
    await journal.close()
    for again in (meta(), meta(prompt="a different meta")):
        with pytest.raises(RunExistsError):
            await harness.backend.create_journal(RUN, again)
    assert lines(await harness.backend.load(RUN)) == lines([meta(), *turns(2, 3)])


async def test_concurrent_creations_of_one_run_have_exactly_one_winner(harness: Harness) -> None:
    candidates = [meta(prompt=f"creator {n}") for n in range(6)]
    outcomes = await asyncio.gather(
        *(harness.backend.create_journal(RUN, candidate) for candidate in candidates), return_exceptions=True
    )
    winners = [n for n, outcome in enumerate(outcomes) if isinstance(outcome, Journal)]
    assert len(winners) == 1
    # The file backend may also answer "locked" while the winner holds the run's lock.
    assert all(isinstance(o, RunExistsError | RunLockedError) for o in outcomes if not isinstance(o, Journal))
    assert lines(await harness.backend.load(RUN)) == [candidates[winners[0]].line]


@pytest.mark.parametrize("bad", ["../escape", "a.b", "a*", "a>", "", "-leading-dash", "x" * 129])
async def test_an_invalid_run_id_is_refused_before_touching_the_store(harness: Harness, bad: str) -> None:
    attempts: list[Callable[[], Awaitable[object]]] = [
        lambda: harness.backend.load(bad),
        lambda: harness.backend.open_journal(bad),
        lambda: harness.backend.ends(bad, is_inert),
        lambda: harness.backend.create_journal(bad, meta()),
    ]
    for attempt in attempts:
        with pytest.raises(InvalidArgumentError):
            await attempt()


async def test_list_run_ids_names_every_run(harness: Harness) -> None:
    run_ids = {f"run-{n}" for n in range(12)}
    for run_id in run_ids:
        await (await create(harness, [meta(run_id)], run_id)).close()
    assert set(await harness.backend.list_run_ids()) == run_ids


# ---------------------------------------------------------------- the ends of a run


async def test_ends_gives_the_meta_the_last_significant_record_and_the_last_seq(harness: Harness) -> None:
    tail = [claim(7), note(8), claim(9)]
    await create(harness, [meta(), *turns(2, 6), *tail])
    ends = await harness.backend.ends(RUN, is_inert)
    assert (ends.meta.line, ends.last_significant.line, ends.last_seq) == (meta().line, turns(6, 6)[0].line, 9)


async def test_ends_falls_back_to_the_meta_when_everything_after_it_is_inert(harness: Harness) -> None:
    await create(harness, [meta(), *(note(seq) for seq in range(2, 25))])
    ends = await harness.backend.ends(RUN, is_inert)
    assert (ends.last_significant.seq, ends.last_seq) == (1, 24)


async def test_ends_of_a_long_run_with_a_long_inert_tail(harness: Harness) -> None:
    body = turns(2, 400)
    journal = await create(harness, [meta()])
    for start in range(0, len(body), 100):
        await journal.append(body[start : start + 100])
    await journal.append([note(seq) for seq in range(401, 450)])
    ends = await harness.backend.ends(RUN, is_inert)
    assert (ends.last_significant.line, ends.last_seq) == (body[-1].line, 449)


# ---------------------------------------------------------------- corruption


async def test_a_damaged_interior_record_is_corruption_at_its_seq(harness: Harness) -> None:
    good = [meta(), *turns(2, 4)]
    await harness.write_lines(RUN, [good[0].line, good[1].line, flip(good[2].line), good[3].line])
    for read in (harness.backend.load, harness.backend.open_journal):
        with pytest.raises(CorruptJournalError) as corrupt:
            await read(RUN)
        assert 3 in (corrupt.value.seq, corrupt.value.line)


async def test_a_record_holding_another_seq_is_corruption_where_it_is_stored(harness: Harness) -> None:
    good = [meta(), *turns(2, 4)]
    await harness.write_lines(RUN, [good[0].line, good[2].line, good[3].line])
    with pytest.raises(CorruptJournalError) as corrupt:
        await harness.backend.load(RUN)
    assert 2 in (corrupt.value.seq, corrupt.value.line)


async def test_ends_reports_damage_it_walks_over(harness: Harness) -> None:
    good = [meta(), *turns(2, 3), note(4)]
    await harness.write_lines(RUN, [good[0].line, good[1].line, flip(good[2].line), good[3].line])
    with pytest.raises(CorruptJournalError):
        await harness.backend.ends(RUN, is_inert)


# ---------------------------------------------------------------- the tail of a run


async def test_tail_gives_the_records_from_the_last_start_to_the_end(harness: Harness) -> None:
    everything = [meta(), *turns(2, 4), claim(5), note(6)]
    await create(harness, everything)
    tail = await harness.backend.tail(RUN, lambda item: item.kind == "assistant")
    assert lines(tail) == lines(everything[3:])


async def test_tail_reaches_back_to_the_meta_when_nothing_starts_a_turn(harness: Harness) -> None:
    everything = [meta(), *(note(seq) for seq in range(2, 20))]
    await create(harness, everything)
    assert lines(await harness.backend.tail(RUN, lambda item: item.kind == "assistant")) == lines(everything)
    with pytest.raises(RunNotFoundError):
        await harness.backend.tail("nobody", lambda item: True)


# ---------------------------------------------------------------- tasks


async def test_task_documents_are_create_only_and_read_back_as_stored(harness: Harness) -> None:
    store = harness.backend.task_store()
    assert await store.get("task-1") == (None, None)
    assert await store.create_request("task-1", b'{"ask":1}') is None
    assert await store.create_request("task-1", b'{"ask":2}') == b'{"ask":1}'
    assert await store.get("task-1") == (b'{"ask":1}', None)
    assert await store.create_outcome("task-1", b'{"ok":true}') is None
    assert await store.create_outcome("task-1", b'{"ok":false}') == b'{"ok":true}'
    assert await store.get("task-1") == (b'{"ask":1}', b'{"ok":true}')
    await store.create_request("task-2", b"{}")
    assert set(await store.list_task_ids()) == {"task-1", "task-2"}


async def test_of_concurrent_completions_exactly_one_is_stored(harness: Harness) -> None:
    store = harness.backend.task_store()
    await store.create_request("task-1", b"{}")
    outcomes = [f'{{"worker":{n}}}'.encode() for n in range(8)]
    answers = await asyncio.gather(*(store.create_outcome("task-1", outcome) for outcome in outcomes))
    winners = [n for n, answer in enumerate(answers) if answer is None]
    assert len(winners) == 1
    assert all(answer == outcomes[winners[0]] for answer in answers if answer is not None)
    assert (await store.get("task-1"))[1] == outcomes[winners[0]]


async def test_tasks_survive_a_new_backend_instance_and_are_not_runs(harness: Harness) -> None:
    await create(harness, [meta()])
    await harness.backend.task_store().create_request("task-1", b"{}")
    async with harness.restarted() as backend:
        assert await backend.task_store().get("task-1") == (b"{}", None)
        assert await backend.list_run_ids() == [RUN]


async def test_an_invalid_task_id_is_refused(harness: Harness) -> None:
    for bad in ("../escape", "a.b", "a*", ""):
        with pytest.raises(ValueError):
            await harness.backend.task_store().create_request(bad, b"{}")
