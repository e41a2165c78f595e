"""runs/writing.py on real backends: a refused batch and a lost write race keep the run open and its fold warm.

A batch is checked on a scratch copy of the warm state (one record on the
file backend on the warm state itself, hidden from lock-free readers until
it is durable), so neither a refused record nor another replica winning the
race for a seq makes the server reopen the run and fold it again: it catches
up with the tail. Counted at the two costly steps, ``Backend.open_journal`` and the
fold of a whole journal.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from runjournal_server.backends.base import Backend
from runjournal_server.backends.file import FileBackend
from runjournal_server.backends.file.journal import FileJournal
from runjournal_server.backends.jetstream import JetStreamBackend
from runjournal_server.backends.journal import Journal
from runjournal_server.core import records
from runjournal_server.core.errors import CorruptJournalError, InvalidRecordError, SeqConflictError
from runjournal_server.runs import handles as handles_module
from runjournal_server.runs.runs import Runs
from tests.support import builders as b


@dataclass
class Reopens:
    """How often the runs opened a journal and folded a whole one."""

    opens: list[str] = field(default_factory=list)
    folds: list[int] = field(default_factory=list)


@pytest.fixture
def count_folds(monkeypatch: pytest.MonkeyPatch) -> Iterator[Reopens]:
    counted = Reopens()
    real_fold = handles_module.fold_stored

    def counting(stored):
        counted.folds.append(len(stored))
        return real_fold(stored)

    monkeypatch.setattr(handles_module, "fold_stored", counting)
    yield counted


def count_opens(backend: Backend, counted: Reopens) -> None:
    real_open = backend.open_journal

    async def counting(run_id, known=()):
        counted.opens.append(run_id)
        return await real_open(run_id, known)

    backend.open_journal = counting  # type: ignore[method-assign]


def new_runs(backend: Backend) -> Runs:
    return Runs(backend, max_record_bytes=records.DEFAULT_MAX_RECORD_BYTES, max_open_journals=8)


async def test_a_batch_refused_at_its_second_record_leaves_the_warm_state_in_use(
    file_backend: FileBackend, count_folds: Reopens
):
    runs = new_runs(file_backend)
    count_opens(file_backend, count_folds)
    try:
        await runs.append("r", 0, [b.meta(run_id="r"), b.assistant(2, 1, ["c1"])])
        with pytest.raises(InvalidRecordError):
            # The result lands on the scratch copy; the second result for the same call is refused.
            await runs.append("r", 1, [b.result(3, "c1"), b.result(4, "c1")])
        assert (await runs.append("r", 1, [b.result(3, "c1")])).last_seq == 3
        state = await runs.fold("r")
        assert (state.last_seq, state.counters.tool_calls) == (3, 1)
        assert (count_folds.opens, count_folds.folds) == ([], [])  # created warm, never reopened nor refolded
    finally:
        await runs.close()


async def test_a_lost_race_catches_up_with_the_winners_records_instead_of_reopening(
    jetstream_backend: JetStreamBackend, replica_b: JetStreamBackend, count_folds: Reopens
):
    here, there = new_runs(jetstream_backend), new_runs(replica_b)
    count_opens(jetstream_backend, count_folds)
    try:
        await here.append("r", 0, [b.meta(run_id="r"), b.note(2)])
        await there.append("r", 1, [b.note(3)])  # the other replica opens the run and moves the tail
        count_folds.folds.clear()
        # Here the warm state says seq 3 is next: the fenced write loses, the tail is caught up with,
        # and the append rule, decided again, finds another record at seq 3.
        with pytest.raises(SeqConflictError):
            await here.append("r", 1, [b.note(3, "mine")])
        await there.append("r", 1, [b.note(4)])
        assert (await here.append("r", 1, [b.note(5)])).last_seq == 5  # races once more, catches up, lands
        assert (await here.fold("r")).last_seq == 5
        assert (count_folds.opens, count_folds.folds) == ([], [])  # "here" created the run: never reopened
    finally:
        await here.close()
        await there.close()


@pytest.fixture(params=["file", "jetstream"])
def either_backend(request: pytest.FixtureRequest) -> Backend:
    return request.getfixturevalue(f"{request.param}_backend")  # type: ignore[no-any-return]


async def test_a_retry_is_a_duplicate_by_its_stored_bytes_without_decoding_them(
    either_backend: Backend, monkeypatch: pytest.MonkeyPatch
):
    runs = new_runs(either_backend)
    try:
        await runs.append("retried", 0, [b.meta(run_id="retried"), b.assistant(2, 1, ["c1"])])

        async def refuse_decoding(self: Journal, seq: int) -> None:
            raise AssertionError(f"seq {seq} was decoded to check a retry")

        monkeypatch.setattr(Journal, "stored_line", refuse_decoding)
        outcome = await runs.append("retried", 1, [b.assistant(2, 1, ["c1"])])
        assert (outcome.duplicates, outcome.last_seq) == (1, 2)
        monkeypatch.undo()
        with pytest.raises(SeqConflictError):  # a different record at that seq: decoded, then refused
            await runs.append("retried", 1, [b.assistant(2, 1, ["c2"])])
    finally:
        await runs.close()


async def test_a_retry_over_a_damaged_stored_line_is_corruption_not_a_conflict(file_backend: FileBackend):
    runs = new_runs(file_backend)
    try:
        await runs.append("flipped", 0, [b.meta(run_id="flipped"), b.note(2, "abc"), b.note(3, "end")])
        path = file_backend.data_dir / "flipped.jsonl"
        data = path.read_bytes()
        path.write_bytes(data.replace(b'"abc"', b'"abd"'))  # same length: the line's checksum no longer holds
        with pytest.raises(CorruptJournalError):
            await runs.append("flipped", 1, [b.note(2, "abc")])
    finally:
        await runs.close()


async def test_one_record_refused_on_the_warm_state_itself_leaves_it_as_it_was(
    file_backend: FileBackend, count_folds: Reopens
):
    # One record on the file backend is checked on the warm state, not on a copy: the fold's refusal changes nothing.
    runs = new_runs(file_backend)
    count_opens(file_backend, count_folds)
    try:
        await runs.append("r", 0, [b.meta(run_id="r"), b.assistant(2, 1, ["c1"])])
        before = await runs.fold("r")
        with pytest.raises(InvalidRecordError):
            await runs.append("r", 1, [b.result(3, "c2")])  # no call c2 is open
        assert await runs.fold("r") == before
        assert (await runs.append("r", 1, [b.result(3, "c1")])).last_seq == 3
        assert (await runs.fold("r")).counters.tool_calls == 1
        assert (count_folds.opens, count_folds.folds) == ([], [])
    finally:
        await runs.close()


async def test_a_warm_state_written_in_place_is_not_read_before_the_record_is_durable(
    file_backend: FileBackend, monkeypatch: pytest.MonkeyPatch
):
    runs = new_runs(file_backend)
    try:
        await runs.append("r", 0, [b.meta(run_id="r"), b.note(2)])
        stored = asyncio.Event()
        release = asyncio.Event()
        real_store = FileJournal._store

        async def held_store(self: FileJournal, batch: list[records.StoredRecord]) -> None:
            stored.set()
            await release.wait()
            await real_store(self, batch)

        monkeypatch.setattr(FileJournal, "_store", held_store)
        appending = asyncio.create_task(runs.append("r", 1, [b.note(3)]))
        await stored.wait()  # seq 3 is applied to the warm state and not durable yet
        try:
            folder, cold = await runs._handles.pre_read("r")
        finally:
            release.set()  # whatever the read found: the append holds the run's lock until it is stored
        assert (folder.last_seq, cold is not None) == (2, True)  # read from the store, not the warm state
        assert (await appending).last_seq == 3
        folder, cold = await runs._handles.pre_read("r")
        assert (folder.last_seq, cold) == (3, None)  # durable: the warm state again
    finally:
        await runs.close()
