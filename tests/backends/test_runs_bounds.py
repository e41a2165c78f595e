"""runs.py on a real file backend: warm state is bounded in bytes, not only in runs; past folds read a prefix."""

from __future__ import annotations

from pathlib import Path

from runjournal_server import records
from runjournal_server.backends.file import FileBackend
from runjournal_server.runs import Runs
from tests.unit import builders as b

NOTE_CHARS = 20_000
NOTES_PER_RUN = 10


async def test_warm_states_stay_under_the_byte_bound_however_few_runs(tmp_path: Path):
    bound = 600_000  # about three runs of ~200 KB each, far fewer than max_open_journals
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
