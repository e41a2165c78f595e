"""After a restart, a listing page reads the runs it lists, not every run (the persisted listing index)."""

from __future__ import annotations

from pathlib import Path

from runjournal.v1 import state_pb2
from runjournal_server.backends.base import BackwardWalk
from runjournal_server.backends.file import FileBackend
from runjournal_server.core import records
from runjournal_server.core.records import StoredRecord
from runjournal_server.listing import RunFilter
from runjournal_server.runs import Runs
from tests.support import builders as b

RUNS = 300


class CountingBackend(FileBackend):
    """A file backend that records which runs were read (meta, ends or tail)."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__(data_dir)
        self.read: set[str] = set()

    async def _walk_back(self, run_id: str, walk: BackwardWalk) -> StoredRecord:
        self.read.add(run_id)
        return await super()._walk_back(run_id, walk)

    async def meta(self, run_id: str) -> StoredRecord:
        self.read.add(run_id)
        return await super().meta(run_id)


async def started(data_dir: Path) -> tuple[CountingBackend, Runs]:
    backend = CountingBackend(data_dir)
    await backend.start()
    runs = Runs(backend, max_record_bytes=records.DEFAULT_MAX_RECORD_BYTES, max_open_journals=16)
    await runs.start()
    return backend, runs


async def stop(backend: FileBackend, runs: Runs) -> None:
    await runs.close()
    await backend.close()


async def test_the_first_pages_after_a_restart_read_only_what_they_list(tmp_path: Path):
    backend, runs = await started(tmp_path)
    try:
        for index in range(RUNS):
            meta = b.meta(run_id=f"run-{index:03d}")
            meta.meta.created_at.FromSeconds(1_700_000_000 + index)
            await runs.append(f"run-{index:03d}", 0, [meta])
            if index == 7:
                await runs.append("run-007", 1, [b.assistant(2, 1, ["c1"]), b.deferral(3, "c1")])
        await runs._listing.upkeep.wait_repaired()
    finally:
        await stop(backend, runs)

    backend, runs = await started(tmp_path)
    try:
        assert runs._listing.upkeep.ready
        backend.read.clear()
        page, token = await runs.list_runs(page_size=10, page_token="", where=RunFilter())
        assert [s.run_id for s in page] == [f"run-{n:03d}" for n in range(RUNS - 1, RUNS - 11, -1)] and token
        assert backend.read == {f"run-{n:03d}" for n in range(RUNS - 1, RUNS - 12, -1)}  # the page and one more
        backend.read.clear()
        inbox, token = await runs.list_runs(page_size=10, page_token="", where=RunFilter(waiting_for_person=True))
        assert [s.run_id for s in inbox] == ["run-007"] and not token
        assert [c.tool_use_id for c in inbox[0].waiting_calls] == ["c1"]
        assert backend.read == {"run-007"}
        backend.read.clear()
        opened, _ = await runs.list_runs(page_size=5, page_token="", where=RunFilter(status=state_pb2.RUN_STATUS_OPEN))
        assert len(opened) == 5 and len(backend.read) == 6
    finally:
        await stop(backend, runs)


async def test_an_index_missing_most_runs_is_completed_in_the_background_not_before_serving(tmp_path: Path):
    """A rebuild a crash cut short leaves an index of a few runs: the start must not read all the others first."""
    from runjournal_server.listing_index_store import FileIndexStore
    from runjournal_server.listing_upkeep import INDEX_DIR, INLINE_NEW_RUNS

    many = INLINE_NEW_RUNS + 50
    for index in range(many):
        meta = b.meta(run_id=f"run-{index:04d}")
        meta.meta.created_at.FromSeconds(1_700_000_000 + index)
        (tmp_path / f"run-{index:04d}.jsonl").write_bytes(records.encode(meta).line + b"\n")
    backend, runs = await started(tmp_path)
    try:
        await runs._listing.upkeep.wait_repaired()
    finally:
        await stop(backend, runs)
    store = FileIndexStore(tmp_path / INDEX_DIR)
    assert store.open()
    kept = store.load().entries[:10]
    store.compact(kept)  # as if the rebuild had placed ten runs when the process died
    store.close()

    backend, runs = await started(tmp_path)
    try:
        assert not runs._listing.upkeep.ready  # the start did not wait for a thousand reads
        assert len(backend.read) < many
        page, _ = await runs.list_runs(page_size=5, page_token="", where=RunFilter())  # every run read meanwhile
        assert [s.run_id for s in page] == [f"run-{n:04d}" for n in range(many - 1, many - 6, -1)]
        await runs._listing.upkeep.wait_repaired()
        assert runs._listing.upkeep.ready and len(runs._listing._index) == many
    finally:
        await stop(backend, runs)
