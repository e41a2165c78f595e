"""Group commit under kill -9 and a simulated power cut: 20 SIGKILLs under 32 writers, no acknowledged record lost.

The writers are the kill -9 suite's (``test_kill9.py``): 32 clients, each on
its own run, so the server commits their appends in groups whose one durable
sync is the commit log's. A SIGKILL alone keeps the journals' unsynced pages
(they are in the page cache), so after each kill this test also takes away
what a power cut could: every journal region that only the dead server's
commit log made durable is zeroed, and a journal whose last region it is is
cut short there. The next server must bring every acknowledged record back
from the log before it serves, byte for byte.
"""

from __future__ import annotations

import asyncio
import random
import signal
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from runjournal_server.backends.file.commit_log import LOG_DIR, Entry, read_entries
from tests.durability.harness import LaunchedServer, journal_path, make_seed
from tests.durability.test_kill9 import (
    CLIENTS,
    EPOCH_SECONDS,
    Client,
    Epoch,
    check_on_disk,
    check_through_server,
    drive,
)

KILLS = 20


def logged_entries(data_dir: Path) -> int:
    """How many entries the commit logs in ``data_dir`` hold (a torn last one is not counted)."""
    return sum(1 for path in (data_dir / LOG_DIR).glob("*.log") for _ in read_entries(path.read_bytes()))


@dataclass
class GroupEpoch(Epoch):
    """An epoch whose kill also waits until the live server's log holds more entries than there are clients.

    Only an append that shared its group with another run's has an entry (one
    alone fsyncs its journal, as does each run's first append after a start),
    and how many shared one depends on how the 32 writers' calls happened to
    overlap, which load changes: at a load average of 18 a run once fell short
    of the bar at the end of the test. Waiting here for entries makes every
    kill take away appends that only the log kept, whatever the timing.
    """

    data_dir: Path = field(kw_only=True)

    def may_end(self) -> bool:
        return logged_entries(self.data_dir) > CLIENTS


def lose_what_only_the_log_kept(data_dir: Path, rng: random.Random, stats: Counter[str]) -> None:
    """Zero every journal region that a dead server's log covers; cut a journal short where its last one starts.

    Only those regions can be lost by a power cut: the rest of a journal was
    fsynced (its creation, the first append of each server, an append that
    was alone in its group).
    """
    logs = sorted((data_dir / LOG_DIR).glob("*.log"))
    by_run: dict[str, list[Entry]] = {}
    for path in logs:
        for entry in read_entries(path.read_bytes()):
            by_run.setdefault(entry.run_id, []).append(entry)
    for run_id, entries in by_run.items():
        path = journal_path(data_dir, run_id)
        data = bytearray(path.read_bytes())
        last = max(entries, key=lambda entry: entry.offset)
        for entry in entries:
            assert data[entry.offset : entry.offset + len(entry.data)] == entry.data, (run_id, entry.offset)
            data[entry.offset : entry.offset + len(entry.data)] = bytes(len(entry.data))
            stats["logged appends taken away"] += 1
        if last.offset + len(last.data) == len(data) and rng.random() < 0.5:
            del data[last.offset :]  # the size update never reached the disk
            stats["journals cut short"] += 1
        path.write_bytes(bytes(data))


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_group_commit_loses_no_acknowledged_record_over_20_sigkills_and_lost_pages(tmp_path):
    seed = make_seed()
    print(f"group commit suite: seed {seed} (set RUNJOURNAL_TEST_SEED={seed} to replay)")
    rng = random.Random(seed)
    data_dir = tmp_path / "data"
    clients = [Client(f"group-{i:02d}", random.Random(rng.getrandbits(64))) for i in range(CLIENTS)]
    stats: Counter[str] = Counter()
    server = LaunchedServer(data_dir).start()
    try:
        for number in range(KILLS + 1):
            final = number == KILLS
            threshold = rng.randint(CLIENTS, 400)
            epoch = GroupEpoch(number, server, threshold, final, data_dir=data_dir)
            await asyncio.wait_for(asyncio.gather(*(drive(c, epoch) for c in clients)), EPOCH_SECONDS)
            assert epoch.ended, f"epoch {number} ran out of appends before its kill (seed {seed})"
            if final:
                assert server.stop() == 0, server.log()
                break
            assert server.process is not None
            assert server.process.wait(timeout=EPOCH_SECONDS) == -signal.SIGKILL
            stats["kills"] += 1
            stats["acknowledged appends"] += epoch.acked
            on_disk = check_on_disk(data_dir, clients, stats)
            lose_what_only_the_log_kept(data_dir, rng, stats)
            # Starting replays the dead server's log: every run reads back as it was before the loss.
            server = LaunchedServer(data_dir).start()
            await check_through_server(server, clients, on_disk, whole=number == KILLS - 1)
            assert check_on_disk(data_dir, clients, Counter()) == on_disk
    finally:
        if server.alive():
            server.kill()
    print(f"group commit suite (seed {seed}): {dict(stats)}")
    assert stats["kills"] == KILLS
    assert stats["logged appends taken away"] > KILLS * CLIENTS, "the appends were not committed in groups"
