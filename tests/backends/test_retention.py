"""Retention (issue 13, item 4): only stopped runs older than the duration go, at most N a pass, on both backends.

The pass's clock is the test's (``now``): the cutoff is placed just after a
chosen run's last record, as the store stamped it (file: the journal's mtime,
set back an hour so the two sides of the cutoff are apart; JetStream: the
message timestamp), so no test waits for time to pass.
"""

from __future__ import annotations

import os

import pytest

from runjournal_server.backends.base import Backend
from runjournal_server.core import records
from runjournal_server.core.errors import RunDeletedError
from runjournal_server.listing.filter import RunFilter
from runjournal_server.listing.pages import RunListing
from runjournal_server.retention import Retention
from runjournal_server.runs.runs import Runs
from tests.support import builders as b

RETENTION_SECONDS = 30 * 86400.0


@pytest.fixture(params=["file", "jetstream"])
def backend(request: pytest.FixtureRequest) -> Backend:
    return request.getfixturevalue(f"{request.param}_backend")  # type: ignore[no-any-return]


async def _runs(backend: Backend) -> tuple[Runs, RunListing]:
    runs = Runs(backend, max_record_bytes=records.DEFAULT_MAX_RECORD_BYTES, max_open_journals=64)
    listing = RunListing.of(runs)
    await listing.start()
    return runs, listing


async def _stopped(runs: Runs, run_id: str) -> None:
    await runs.append(run_id, 0, [b.meta(run_id=run_id), b.assistant(2, 1), b.terminal(3)])


async def _updated_at(listing: RunListing, run_id: str) -> float:
    (summary,) = [
        s for s in (await listing.page(page_size=1000, page_token="", where=RunFilter()))[0] if s.run_id == run_id
    ]
    return summary.updated_at.ToNanoseconds() / 1e9


async def _age(backend: Backend, run_id: str) -> None:
    """Make the run's last record an hour older where the store's time is the file's (file backend)."""
    data_dir = getattr(backend, "data_dir", None)
    if data_dir is not None:
        path = data_dir / f"{run_id}.jsonl"
        stat = path.stat()
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns - 3600 * 10**9))


async def test_retention_deletes_only_stopped_runs_older_than_the_duration(backend: Backend) -> None:
    runs, listing = await _runs(backend)
    try:
        for run_id in ("old-1", "old-2"):
            await _stopped(runs, run_id)
            await _age(backend, run_id)
        await runs.append("old-open", 0, [b.meta(run_id="old-open"), b.assistant(2, 1, ["c1"])])
        await _age(backend, "old-open")
        await _stopped(runs, "young")
        cutoff = await _updated_at(listing, "young")  # strictly after the old runs' last records
        retention = Retention(
            runs,
            listing,
            older_than_seconds=RETENTION_SECONDS,
            max_deletions=10,
            now=lambda: cutoff + RETENTION_SECONDS,
        )
        assert sorted(await retention.tick()) == ["old-1", "old-2"]
        for run_id in ("old-1", "old-2"):
            with pytest.raises(RunDeletedError):
                await runs.fold(run_id)
        assert (await runs.fold("old-open")).last_seq == 2  # open: never a retention candidate
        assert (await runs.fold("young")).last_seq == 3  # stopped, but not before the cutoff
        assert await retention.tick() == []
    finally:
        await listing.close()
        await runs.close()


async def test_retention_deletes_at_most_its_bound_per_pass(backend: Backend) -> None:
    runs, listing = await _runs(backend)
    try:
        for index in range(5):
            await _stopped(runs, f"batch-{index}")
        retention = Retention(runs, listing, older_than_seconds=RETENTION_SECONDS, max_deletions=2, now=lambda: 2e10)
        passes = [len(await retention.tick()) for _ in range(4)]
        assert passes == [2, 2, 1, 0]
    finally:
        await listing.close()
        await runs.close()


async def test_retention_skips_a_run_that_moved_after_it_was_listed(backend: Backend) -> None:
    runs, listing = await _runs(backend)
    try:
        await _stopped(runs, "moving")
        original = runs.delete

        async def delete_after_a_follow_up(run_id: str, expected_last_seq: int):  # type: ignore[no-untyped-def]
            await runs.append(run_id, 1, [b.user(expected_last_seq + 1, "one more thing")])  # reopens it
            return await original(run_id, expected_last_seq)

        runs.delete = delete_after_a_follow_up  # type: ignore[method-assign]
        retention = Retention(runs, listing, older_than_seconds=RETENTION_SECONDS, max_deletions=10, now=lambda: 2e10)
        assert await retention.tick() == []
        assert (await runs.fold("moving")).last_seq == 4
    finally:
        await listing.close()
        await runs.close()
