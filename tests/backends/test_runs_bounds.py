"""runs.py on a real file backend: warm state is bounded in bytes, not only in runs; past folds read a prefix."""

from __future__ import annotations

from pathlib import Path

import pytest

from runjournal.v1 import state_pb2
from runjournal_server.backends.file import FileBackend
from runjournal_server.core import records
from runjournal_server.core.errors import CorruptJournalError
from runjournal_server.listing.filter import RunFilter
from runjournal_server.listing.pages import RunListing
from runjournal_server.runs.past_states import PastStates
from runjournal_server.runs.runs import Runs
from tests.support import builders as b

NOTE_CHARS = 20_000
NOTES_PER_RUN = 10


async def test_warm_states_stay_under_the_byte_bound_however_few_runs(tmp_path: Path):
    bound = 2_100_000  # about three runs of ~200 KB each at 3.5 bytes a stored byte; far fewer than max_open_journals
    backend = FileBackend(tmp_path)
    await backend.start()
    runs = Runs(
        backend, max_record_bytes=records.DEFAULT_MAX_RECORD_BYTES, max_open_journals=1000, max_warm_bytes=bound
    )
    try:
        for index in range(8):
            run_id = f"big-{index}"
            await runs.append(run_id, 0, [b.meta(run_id=run_id)])
            for seq in range(2, 2 + NOTES_PER_RUN):
                await runs.append(run_id, 1, [b.note(seq, "x" * NOTE_CHARS)])
            assert runs.warm_bytes <= bound
        assert 1 <= runs.open_journals < 8
        # An evicted run comes back from the store, whole.
        state = await runs.fold("big-0")
        assert state.last_seq == 1 + NOTES_PER_RUN
        assert runs.warm_bytes <= bound
    finally:
        await runs.close()
        await backend.close()


async def test_fold_as_of_a_past_seq_does_not_read_past_it(tmp_path: Path):
    backend = FileBackend(tmp_path)
    await backend.start()
    runs = Runs(backend, max_record_bytes=records.DEFAULT_MAX_RECORD_BYTES, max_open_journals=8)
    try:
        await runs.append("r", 0, [b.meta(run_id="r"), *[b.note(seq, f"n{seq}") for seq in range(2, 20)]])
        await runs.close()
        # Damage line 15: a fold as of seq 10 never gets there; the whole-run fold does.
        path = tmp_path / "r.jsonl"
        lines = path.read_bytes().split(b"\n")
        lines[14] = lines[14].replace(b"n15", b"nXY")
        path.write_bytes(b"\n".join(lines))
        assert (await runs.fold("r", 10)).last_seq == 10
    finally:
        await runs.close()
        await backend.close()


async def test_a_repeated_past_fold_reads_the_store_once_and_equals_the_first(tmp_path: Path):
    backend = FileBackend(tmp_path)
    await backend.start()
    reads: list[int] = []
    real_stream = backend.stream

    def counting_stream(run_id: str, from_seq: int):
        reads.append(from_seq)
        return real_stream(run_id, from_seq)

    backend.stream = counting_stream  # type: ignore[method-assign]
    runs = Runs(backend, max_record_bytes=records.DEFAULT_MAX_RECORD_BYTES, max_open_journals=8)
    try:
        await runs.append("r", 0, [b.meta(run_id="r"), *[b.note(seq, f"n{seq}") for seq in range(2, 40)]])
        first = await runs.fold("r", 20)
        again = await runs.fold("r", 20)
        assert again == first and again.last_seq == 20
        assert len(reads) == 1
        assert (await runs.fold("r", 20, conversation_from=1)).conversation_offset == 1
        assert len(reads) == 2  # another slice is another entry
    finally:
        await runs.close()
        await backend.close()


def test_past_states_stay_within_their_byte_bound_least_recently_used_first():
    states = PastStates(max_bytes=400)
    for seq in range(1, 6):
        states.put(("r", seq, 0), bytes(100))
    assert states.size_bytes <= 400
    assert states.get(("r", 1, 0)) is None and states.get(("r", 5, 0)) is not None
    states.put(("big", 1, 0), bytes(101))  # over a quarter of the bound: not kept
    assert states.get(("big", 1, 0)) is None
    states.forget("r")
    assert states.size_bytes == 0


async def test_a_clean_past_fold_of_a_damaged_run_leaves_it_listed_as_corrupt(tmp_path: Path):
    """Only a read of the whole journal may clear the damage the listing shows; a prefix says nothing of the rest.

    The damage is a rule broken by well-formed lines (a result for a call nobody made, at seq 12), which the
    listing's cheap read of a run's ends cannot see: only the ledger of full reads reports it.
    """
    journal = [b.meta(run_id="r"), *[b.note(seq, f"n{seq}") for seq in range(2, 12)], b.result(12, "nobody-asked")]
    journal += [b.note(seq, f"n{seq}") for seq in range(13, 20)]
    (tmp_path / "r.jsonl").write_bytes(b"".join(records.encode(r).line + b"\n" for r in journal))
    backend = FileBackend(tmp_path)
    await backend.start()
    runs = Runs(backend, max_record_bytes=records.DEFAULT_MAX_RECORD_BYTES, max_open_journals=8)
    listing = RunListing.of(runs)
    try:
        with pytest.raises(CorruptJournalError):
            await runs.fold("r")
        assert (await runs.fold("r", 10)).last_seq == 10
        listed, _ = await listing.page(page_size=10, page_token="", where=RunFilter())
        assert [summary.status for summary in listed] == [state_pb2.RUN_STATUS_CORRUPT]
    finally:
        await runs.close()
        await backend.close()
