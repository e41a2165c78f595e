"""After a restart, a listing page reads the runs it lists, not every run (the persisted listing index)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from runjournal.v1 import state_pb2
from runjournal_server.backends.base import BackwardWalk
from runjournal_server.backends.file import FileBackend
from runjournal_server.core import records
from runjournal_server.core.records import StoredRecord
from runjournal_server.listing.filter import RunFilter
from runjournal_server.listing.pages import RunListing
from runjournal_server.runs.runs import Runs
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


async def started(data_dir: Path) -> tuple[CountingBackend, Runs, RunListing]:
    backend = CountingBackend(data_dir)
    await backend.start()
    runs = Runs(backend, max_record_bytes=records.DEFAULT_MAX_RECORD_BYTES, max_open_journals=16)
    listing = RunListing.of(runs)
    await listing.start()
    return backend, runs, listing


async def stop(backend: FileBackend, runs: Runs, listing: RunListing) -> None:
    await listing.close()
    await runs.close()
    await backend.close()


async def test_the_first_pages_after_a_restart_read_only_what_they_list(tmp_path: Path):
    backend, runs, listing = await started(tmp_path)
    try:
        for index in range(RUNS):
            meta = b.meta(run_id=f"run-{index:03d}")
            meta.meta.created_at.FromSeconds(1_700_000_000 + index)
            await runs.append(f"run-{index:03d}", 0, [meta])
            if index == 7:
                await runs.append("run-007", 1, [b.assistant(2, 1, ["c1"]), b.deferral(3, "c1")])
        await listing.upkeep.wait_repaired()
    finally:
        await stop(backend, runs, listing)

    backend, runs, listing = await started(tmp_path)
    try:
        assert listing.upkeep.ready
        backend.read.clear()
        page, token = await listing.page(page_size=10, page_token="", where=RunFilter())
        assert [s.run_id for s in page] == [f"run-{n:03d}" for n in range(RUNS - 1, RUNS - 11, -1)] and token
        assert backend.read == {f"run-{n:03d}" for n in range(RUNS - 1, RUNS - 12, -1)}  # the page and one more
        backend.read.clear()
        inbox, token = await listing.page(page_size=10, page_token="", where=RunFilter(waiting_for_person=True))
        assert [s.run_id for s in inbox] == ["run-007"] and not token
        assert [c.tool_use_id for c in inbox[0].waiting_calls] == ["c1"]
        assert backend.read == {"run-007"}
        backend.read.clear()
        opened, _ = await listing.page(page_size=5, page_token="", where=RunFilter(status=state_pb2.RUN_STATUS_OPEN))
        assert len(opened) == 5 and len(backend.read) == 6
    finally:
        await stop(backend, runs, listing)


async def test_an_index_missing_most_runs_is_completed_in_the_background_not_before_serving(tmp_path: Path):
    """A rebuild a crash cut short leaves an index of a few runs: the start must not read all the others first."""
    from runjournal_server.backends.file.index_store import FileIndexStore
    from runjournal_server.listing.persistence import INDEX_DIR
    from runjournal_server.listing.upkeep import INLINE_NEW_RUNS

    many = INLINE_NEW_RUNS + 50
    for index in range(many):
        meta = b.meta(run_id=f"run-{index:04d}")
        meta.meta.created_at.FromSeconds(1_700_000_000 + index)
        (tmp_path / f"run-{index:04d}.jsonl").write_bytes(records.encode(meta).line + b"\n")
    backend, runs, listing = await started(tmp_path)
    try:
        await listing.upkeep.wait_repaired()
    finally:
        await stop(backend, runs, listing)
    store = FileIndexStore(tmp_path / INDEX_DIR)
    assert store.open()
    kept = store.load().entries[:10]
    store.compact(kept)  # as if the rebuild had placed ten runs when the process died
    store.close()

    backend, runs, listing = await started(tmp_path)
    try:
        assert not listing.upkeep.ready  # the start did not wait for a thousand reads
        assert len(backend.read) < many
        page, _ = await listing.page(page_size=5, page_token="", where=RunFilter())  # every run read meanwhile
        assert [s.run_id for s in page] == [f"run-{n:04d}" for n in range(many - 1, many - 6, -1)]
        await listing.upkeep.wait_repaired()
        assert listing.upkeep.ready and len(listing._index) == many
    finally:
        await stop(backend, runs, listing)


class HeldVersionsBackend(CountingBackend):
    """A file backend whose journals' versions are answered only once the test lets them."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__(data_dir)
        self.versions_asked = asyncio.Event()
        self.let_versions = asyncio.Event()

    async def run_versions(self, run_ids: Sequence[str]) -> dict[str, object]:
        self.versions_asked.set()
        await self.let_versions.wait()
        return await super().run_versions(run_ids)


async def test_a_state_filter_waits_for_the_states_check_after_a_start_and_other_pages_do_not(tmp_path: Path):
    """The start serves once every run is placed; the states are checked right after (a stat per journal).

    A run that moved while no server ran (here: a call deferred to a person)
    must be in the first inbox page even though the persisted index says it
    waits for nothing: that page waits for the check. A page without a state
    filter reads every summary it lists, so it is answered meanwhile.
    """
    backend, runs, listing = await started(tmp_path)
    try:
        for index in range(20):
            meta = b.meta(run_id=f"run-{index:03d}")
            meta.meta.created_at.FromSeconds(1_700_000_000 + index)
            await runs.append(f"run-{index:03d}", 0, [meta])
        await listing.upkeep.place_pending()  # in the persisted index, with its state
    finally:
        await stop(backend, runs, listing)
    offline = FileBackend(tmp_path)  # another process, while no server runs: no listing hears of it
    await offline.start()
    other = Runs(offline, max_record_bytes=records.DEFAULT_MAX_RECORD_BYTES, max_open_journals=4)
    await other.append("run-007", 1, [b.assistant(2, 1, ["c1"]), b.deferral(3, "c1")])
    await other.close()
    await offline.close()

    backend = HeldVersionsBackend(tmp_path)
    await backend.start()
    runs = Runs(backend, max_record_bytes=records.DEFAULT_MAX_RECORD_BYTES, max_open_journals=16)
    listing = RunListing.of(runs)
    try:
        await listing.start()  # returns with the versions not yet asked: they are not part of the start
        assert listing.upkeep.ready and not backend.versions_asked.is_set()
        inbox = asyncio.ensure_future(
            listing.page(page_size=10, page_token="", where=RunFilter(waiting_for_person=True))
        )
        await backend.versions_asked.wait()
        page, _ = await listing.page(page_size=3, page_token="", where=RunFilter())
        assert [s.run_id for s in page] == ["run-019", "run-018", "run-017"]
        assert not inbox.done()
        backend.let_versions.set()
        waiting, _ = await inbox
        assert [s.run_id for s in waiting] == ["run-007"]
        await listing.upkeep.wait_repaired()
    finally:
        backend.let_versions.set()
        await stop(backend, runs, listing)
