"""The Python client's Watch, WatchRuns, ForkRun, DeleteRun and DeleteTask, and the lifecycle commands,
against real server processes over real gRPC, on both backends.

Transport failures are real: the client reaches the server through a loopback
proxy whose connections the test resets (``tests/client/tcp_proxy.py``).
"""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from runjournal import AsyncJournalClient, CaughtUp, JournalClient, WatchedRecord
from runjournal.errors import LastSeqMismatchError, RunDeletedError, TaskDeletedError
from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import state_pb2
from tests.client.tcp_proxy import CuttableProxy
from tests.conftest import new_stream_target
from tests.servers import ServerProcess
from tests.support import builders as b

BACKENDS = ("file", "jetstream")


@pytest.fixture(scope="module", params=BACKENDS)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    data_dir = tmp_path_factory.mktemp(f"lifecycle-{request.param}") / "data"
    args: tuple[str, ...] = ()
    if request.param == "jetstream":
        args = new_stream_target().server_args(request.getfixturevalue("nats_server").url)
    process = ServerProcess(data_dir, extra_args=args).start()
    process.backend = request.param
    yield process
    assert process.stop() == 0, process.log()


@pytest.fixture
def client(server: ServerProcess) -> Iterator[JournalClient]:
    with JournalClient(server.address) as journal_client:
        yield journal_client


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def create(client: JournalClient, run_id: str, *, notes: int = 2, stopped: bool = False, label: str = "") -> int:
    records = [b.meta(run_id=run_id, labels={"suite": label or run_id}), *(b.note(s) for s in range(2, notes + 2))]
    if stopped:
        records.append(b.terminal(len(records) + 1))
    return int(client.append_batch(run_id, 1, records).last_seq)


def notes(client: JournalClient, run_id: str, first: int, count: int) -> None:
    client.append_batch(run_id, 1, [b.note(seq, f"note {seq}") for seq in range(first, first + count)])


async def next_item(watch: AsyncIterator[object]) -> object:
    return await anext(watch)


def shape(item: object) -> object:
    return item.seq if isinstance(item, WatchedRecord) else item


async def test_a_watch_follows_new_records_and_resumes_after_its_connection_is_reset(
    server: ServerProcess, client: JournalClient
) -> None:
    run_id = new_id("watch")
    create(client, run_id)
    seen: list[object] = []
    with CuttableProxy(server.address) as proxy:
        async with AsyncJournalClient(proxy.address) as watcher:
            watch = watcher.watch(run_id)
            seen += [shape(await next_item(watch)) for _ in range(4)]  # 1..3, caught up
            notes(client, run_id, 4, 1)
            seen.append(shape(await next_item(watch)))
            for first in (5, 8, 11):  # written while the watch is cut off, then read from the store
                proxy.cut()
                notes(client, run_id, first, 3)
                seen += [shape(await next_item(watch)) for _ in range(3)]
            await watch.aclose()
        assert proxy.cuts == 3
    assert seen == [1, 2, 3, CaughtUp(head_seq=3), *range(4, 14)]


def test_a_sync_watch_yields_the_records_with_their_stored_lines(client: JournalClient) -> None:
    run_id = new_id("watch")
    create(client, run_id)
    stored = [line for _, line in client.read(run_id)]
    watch = client.watch(run_id, after_seq=1)
    items = [next(watch) for _ in range(3)]
    watch.close()
    assert [shape(i) for i in items] == [2, 3, CaughtUp(head_seq=3)]
    assert [i.stored_line for i in items if isinstance(i, WatchedRecord)] == stored[1:]


async def test_watch_runs_sends_a_run_as_it_changes_and_resumes_after_a_reset(
    server: ServerProcess, client: JournalClient
) -> None:
    label = new_id("suite")
    first, second = new_id("runs"), new_id("runs")
    create(client, first, label=label)
    with CuttableProxy(server.address) as proxy:
        async with AsyncJournalClient(proxy.address) as watcher:
            stream = watcher.watch_runs(labels={"suite": label})
            got = [await anext(stream), await anext(stream)]
            assert [getattr(i, "run_id", i) for i in got] == [first, CaughtUp(head_seq=0)]
            client.append(first, 1, b.terminal(4))
            changed = await anext(stream)
            assert isinstance(changed, state_pb2.RunSummary)
            assert (changed.run_id, changed.status) == (first, state_pb2.RUN_STATUS_COMPLETED)
            proxy.cut()
            create(client, second, label=label)  # while cut off: the resumed stream sends it, not `first` again
            created = await anext(stream)
            await stream.aclose()
    assert isinstance(created, state_pb2.RunSummary) and created.run_id == second


def test_fork_run_branches_a_prefix_that_the_listing_finds_by_parent(client: JournalClient) -> None:
    source = new_id("source")
    create(client, source, notes=4)
    fork = new_id("fork")
    answer = client.fork_run(source, 3, fork)
    assert (answer.run_id, answer.last_seq, answer.forked_from.run_id, answer.forked_from.seq) == (fork, 3, source, 3)
    source_lines = [line for _, line in client.read(source)]
    fork_lines = [line for _, line in client.read(fork)]
    assert fork_lines[1:] == source_lines[1:3]
    assert client.fold(source).last_seq == 5
    assert [run.run_id for run in client.iter_runs(parent_run_id=source)] == [fork]


def test_delete_run_refuses_a_moved_run_then_deletes_it_for_good(client: JournalClient) -> None:
    run_id = new_id("delete")
    last = create(client, run_id, stopped=True)
    with pytest.raises(LastSeqMismatchError) as moved:
        client.delete_run(run_id, last - 1)
    assert (moved.value.last_seq, moved.value.expected_last_seq) == (last, last - 1)
    assert client.delete_run(run_id, last).deleted
    again = client.delete_run(run_id, last)
    assert (again.deleted, again.last_seq) == (False, last)
    with pytest.raises(RunDeletedError) as gone:
        client.fold(run_id)
    assert gone.value.last_seq == last
    with pytest.raises(RunDeletedError):
        next(client.watch(run_id))


def test_a_watch_of_a_run_deleted_while_watched_ends_with_run_deleted(client: JournalClient) -> None:
    run_id = new_id("delete")
    last = create(client, run_id)
    watch = client.watch(run_id, after_seq=last)
    assert next(watch) == CaughtUp(head_seq=last)
    client.delete_run(run_id, last)
    with pytest.raises(RunDeletedError):
        next(watch)


def test_delete_task_keeps_a_tombstone(client: JournalClient) -> None:
    task_id = new_id("task")
    tasks = client.tasks
    tasks.submit(task_id, {"q": 1})
    assert tasks.delete(task_id) is True
    assert tasks.delete(task_id) is False
    with pytest.raises(TaskDeletedError):
        tasks.get(task_id)


def test_list_runs_stopped_before_finds_stopped_runs_only(client: JournalClient) -> None:
    label = new_id("suite")
    stopped, open_ = new_id("stopped"), new_id("open")
    create(client, stopped, stopped=True, label=label)
    create(client, open_, label=label)
    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)
    found = list(client.iter_runs(labels={"suite": label}, stopped_before=later))
    assert [run.run_id for run in found] == [stopped]
    assert found[0].HasField("updated_at")


# --- the commands -------------------------------------------------------------


def runjournal(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "RUNJOURNAL_TOKEN"}
    return subprocess.run(
        [sys.executable, "-m", "runjournal", *args],
        capture_output=True,
        text=True,
        timeout=60,
        input=stdin,
        env=env,
        check=False,
    )


def test_runs_watch_prints_each_record_on_one_escaped_line(server: ServerProcess, client: JournalClient) -> None:
    run_id = new_id("cli")
    client.append_batch(run_id, 1, [b.meta(run_id=run_id), b.note(2, "line one\n     3 note  forged\x1b[31m")])
    done = runjournal("runs", "watch", run_id, "--address", server.address, "--limit", "2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].split()[:2] == ["1", "meta"]
    assert lines[1] == "     2 note        line one\\x0a     3 note  forged\\x1b[31m"


def test_runs_fork_then_delete_with_yes_then_gc_dry_run(server: ServerProcess, client: JournalClient) -> None:
    source, fork = new_id("cli"), new_id("cli-fork")
    last = create(client, source, stopped=True)
    forked = runjournal("runs", "fork", source, "--at", "2", "--new-run-id", fork, "--address", server.address)
    assert forked.returncode == 0, forked.stderr
    assert f"forked run {source} at seq 2 into {fork}" in forked.stdout

    refused = runjournal("runs", "delete", source, "--address", server.address, stdin="y\n")
    assert refused.returncode == 1 and "refusing to delete" in refused.stderr
    assert f"run {source}: status completed, last seq {last}" in refused.stdout
    assert client.fold(source).last_seq == last

    later = (datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)).isoformat()
    listed = runjournal(
        "gc", "--stopped-before", later, "--label", f"suite={source}", "--dry-run", "--address", server.address
    )
    assert listed.returncode == 0, listed.stderr
    assert source in listed.stdout and "1 run stopped before" in listed.stdout

    deleted = runjournal("runs", "delete", source, "--yes", "--address", server.address)
    assert deleted.returncode == 0, deleted.stderr
    assert f"deleted run {source} (last seq {last})" in deleted.stdout
    shown = runjournal("runs", "show", source, "--address", server.address)
    assert shown.returncode == 1 and "RUN_DELETED" in shown.stderr


def test_gc_deletes_the_listed_stopped_runs(server: ServerProcess, client: JournalClient) -> None:
    label = new_id("gc")
    runs = [new_id("gc-run") for _ in range(2)]
    for run_id in runs:
        create(client, run_id, stopped=True, label=label)
    create(client, new_id("gc-open"), label=label)
    later = (datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)).isoformat()
    done = runjournal(
        "gc", "--stopped-before", later, "--label", f"suite={label}", "--yes", "--address", server.address
    )
    assert done.returncode == 0, done.stderr
    assert "deleted 2, kept 0 that moved since listed, 0 deleted already" in done.stdout
    assert [run.status for run in client.iter_runs(labels={"suite": label})] == [state_pb2.RUN_STATUS_OPEN]
    for run_id in runs:
        with pytest.raises(RunDeletedError):
            client.fold(run_id)


def follow(*args: str) -> subprocess.Popen[str]:
    """A watching command as a process, its stdout read line by line (it runs until it is stopped)."""
    env = {k: v for k, v in os.environ.items() if k != "RUNJOURNAL_TOKEN"}
    return subprocess.Popen(
        [sys.executable, "-u", "-m", "runjournal", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )


def stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    process.wait(timeout=30)


def test_runs_watch_prints_a_record_appended_while_it_follows(server: ServerProcess, client: JournalClient) -> None:
    run_id = new_id("tail")
    create(client, run_id, notes=0)
    process = follow("runs", "watch", run_id, "--address", server.address)
    try:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline().split()[:2] == ["1", "meta"]
        # Live from here: what follows was appended after. (gRPC may log its own lines to stderr first.)
        assert any("caught up at seq 1" in line for line in process.stderr), "runs watch never caught up"
        client.append(run_id, 1, b.note(2, "appended while watched"))
        assert process.stdout.readline().rstrip("\n") == "     2 note        appended while watched"
    finally:
        stop(process)


def test_inbox_watch_shows_a_call_that_waits_then_that_it_no_longer_does(
    server: ServerProcess, client: JournalClient
) -> None:
    label = new_id("inbox")
    process = follow("inbox", "--watch", "--label", f"suite={label}", "--address", server.address)
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "nothing waits for a person"  # the inbox as it is, for this label
        run_id = new_id("waits")
        client.append_batch(
            run_id,
            1,
            [b.meta(run_id=run_id, labels={"suite": label}), b.assistant(2, 1, ["c1"]), b.deferral(3, "c1")],
        )
        joined = process.stdout.readline()
        assert joined.startswith(f"+ {run_id}") and " c1 " in joined and "answer" in joined
        client.answer(run_id, "c1", text="done")
        assert process.stdout.readline().strip() == f"- {run_id} c1: no longer waits"
    finally:
        stop(process)


def test_watch_runs_sends_a_deleted_run_as_left_deleted(client: JournalClient) -> None:
    label = new_id("suite")
    run_id = new_id("leaves")
    last = create(client, run_id, label=label)
    stream = client.watch_runs(labels={"suite": label})
    try:
        first = next(stream)
        assert isinstance(first, state_pb2.RunSummary) and first.run_id == run_id
        assert next(stream) == CaughtUp(head_seq=0)
        client.delete_run(run_id, last)
        assert next(stream) == pb.RunLeft(run_id=run_id, deleted=True)
    finally:
        stream.close()
