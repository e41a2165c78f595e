"""The task index reads a document once (issue 28, item 3): a listing reads the page's tasks and nothing else.

Before, every ListTasks read every task's documents (a state filter matching none read them all, each
time): 10,000 tasks took 7.7 s a page. Counted here at the store, never timed.
"""

from __future__ import annotations

import asyncio
import collections
from pathlib import Path

from runjournal.v1 import task_service_pb2 as tpb
from runjournal_server.backends.file.tasks import FileTaskStore
from runjournal_server.backends.task_store import TaskNames
from runjournal_server.tasks import Tasks

TASKS = 60


class CountingStore(FileTaskStore):
    """The file task store, counting the documents read (``get``) and the listings of names."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__(data_dir, None)
        self.reads: collections.Counter[str] = collections.Counter()
        self.listings = 0

    async def get(self, task_id: str) -> tuple[bytes | None, bytes | None]:
        self.reads[task_id] += 1
        return await super().get(task_id)

    async def names(self) -> TaskNames:
        self.listings += 1
        return await super().names()


async def _fill(tasks: Tasks) -> None:
    for n in range(TASKS):
        await tasks.submit(f"t-{n:03d}", "{}", {"team": "a" if n % 2 else "b"})
        if n % 3 == 0:
            await tasks.complete(f"t-{n:03d}", tpb.TaskOutcome(result_json="1"))


async def _listings(data_dir: Path) -> tuple[CountingStore, CountingStore]:
    writer = Tasks(CountingStore(data_dir))
    await _fill(writer)
    store = CountingStore(data_dir)  # another server's view: every task is new to it
    tasks = Tasks(store)
    first, _ = await tasks.list(page_size=10, page_token="", state=0, labels={})
    assert len(first) == 10
    assert max(store.reads.values()) == 2  # each task read once to learn it, the page's once more
    store.reads.clear()
    page, token = await tasks.list(page_size=10, page_token="", state=0, labels={})
    assert [t.task_id for t in page] == [t.task_id for t in first] and token
    assert set(store.reads) == {t.task_id for t in page}  # the page's tasks, and nothing else
    store.reads.clear()
    none, _ = await tasks.list(page_size=10, page_token="", state=tpb.TASK_STATE_FAILED, labels={})
    assert none == [] and not store.reads  # a filter matching nothing reads no document
    await tasks.close()
    restarted = CountingStore(data_dir)
    again = Tasks(restarted)
    labelled, _ = await again.list(page_size=5, page_token="", state=tpb.TASK_STATE_SUCCEEDED, labels={})
    assert set(restarted.reads) == {t.task_id for t in labelled}  # the kept index: no task read to learn it
    return store, restarted


def test_a_listing_reads_only_its_page_once_the_index_knows_the_tasks(tmp_path: Path) -> None:
    store, restarted = asyncio.run(_listings(tmp_path))
    assert store.listings == 3 and restarted.listings == 1
