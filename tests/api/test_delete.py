"""DeleteRun and DeleteTask (issue 13, item 4): nothing of a deleted run stays in the store, and it never comes back.

A run is written with a random canary in a note and in a batch (whose intent
the file backend keeps in the lock file); after DeleteRun the canary is found
nowhere under the data directory (file) or the nats-server store directory
(JetStream, whose message delete overwrites the bytes), and every call on the
run, even a stale retry of its meta, answers RUN_DELETED, also after a
restart. The check of ``expected_last_seq``, the idempotent retry and the
operator scope are here too.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc, records_pb2, task_service_pb2_grpc
from runjournal.v1 import task_service_pb2 as tpb
from tests.api.conftest import BACKENDS
from tests.api.rpc import error_info, new_run_id, reason
from tests.api.test_operator_scope import bearer, token_file
from tests.conftest import new_stream_target
from tests.nats_server import NatsServer
from tests.servers import ServerProcess
from tests.support import builders as b

JournalStub = journal_service_pb2_grpc.JournalServiceStub
TaskStub = task_service_pb2_grpc.TaskServiceStub
CALL_TIMEOUT_SECONDS = 20


class Store:
    """A server of its own and the directory that holds everything its backend stores."""

    def __init__(self, server: ServerProcess, root: Path) -> None:
        self.server = server
        self.root = root

    def canaries(self, canary: bytes) -> int:
        """How often ``canary`` occurs in every file under the store's directory (lock and intent files too)."""
        return sum(path.read_bytes().count(canary) for path in self.root.rglob("*") if path.is_file())

    def restart(self) -> None:
        assert self.server.stop() == 0, self.server.log()
        self.server.start()

    def stub(self) -> Iterator[JournalStub]:
        with grpc.insecure_channel(self.server.address) as channel:
            yield JournalStub(channel)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path, server_factory: Callable[..., ServerProcess]) -> Store:
    if request.param == "file":
        server = server_factory(tmp_path / "data")
        server.backend = "file"
        return Store(server, tmp_path / "data")
    nats_server = request.getfixturevalue("nats_server")
    server = server_factory(tmp_path / "data", *new_stream_target().server_args(nats_server.url))
    server.backend = "jetstream"
    return Store(server, nats_server.store_dir)


def written_run(stub: JournalStub, canary: str) -> tuple[str, records_pb2.JournalRecord, int]:
    """A run holding ``canary`` in its labels, a note and a batch ending in a terminal; its id, meta and last seq.

    The labels and the terminal message are what a listing keeps of a run (its persisted index too).
    """
    run_id = new_run_id("doomed")
    meta = b.meta(run_id=run_id, labels={"secret": canary})
    stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=meta))
    stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(2, f"secret {canary}")))
    batch = [b.assistant(3, 1, ["c1"], say=canary), b.result(4, "c1", canary), b.terminal(5, message=canary)]
    stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=batch))
    return run_id, meta, 5


def refusal(call: Callable[[], object]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value


def assert_deleted_everywhere(stub: JournalStub, run_id: str, meta: records_pb2.JournalRecord, last_seq: int) -> None:
    """Every RPC on the run answers RUN_DELETED with the last seq it had; the listing does not show it."""
    t = CALL_TIMEOUT_SECONDS
    calls: dict[str, Callable[[], object]] = {
        "Append": lambda: stub.Append(
            pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(last_seq + 1)), timeout=t
        ),
        "Append of its meta again": lambda: stub.Append(
            pb.AppendRequest(run_id=run_id, claim_token=1, record=meta), timeout=t
        ),
        "AppendBatch creating it again": lambda: stub.AppendBatch(
            pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=[meta, b.note(2)]), timeout=t
        ),
        "Claim": lambda: stub.Claim(
            pb.ClaimRequest(run_id=run_id, worker_id="w2", fingerprint=b.fingerprint()), timeout=t
        ),
        "Fold": lambda: stub.Fold(pb.FoldRequest(run_id=run_id), timeout=t),
        "Fold as of seq 2": lambda: stub.Fold(pb.FoldRequest(run_id=run_id, as_of_seq=2), timeout=t),
        "Read": lambda: list(stub.Read(pb.ReadRequest(run_id=run_id), timeout=t)),
        "Watch": lambda: next(iter(stub.Watch(pb.WatchRequest(run_id=run_id), timeout=t))),
        "Answer": lambda: stub.Answer(
            pb.AnswerRequest(run_id=run_id, tool_use_id="c1", content=[b.text("late")]), timeout=t
        ),
        "ForkRun": lambda: stub.ForkRun(
            pb.ForkRunRequest(run_id=run_id, at_seq=2, new_run_id=new_run_id("fork")), timeout=t
        ),
    }
    for name, call in calls.items():
        err = refusal(call)
        assert reason(err) == "RUN_DELETED", (name, err.details())
        assert err.code() == grpc.StatusCode.NOT_FOUND, name
        assert error_info(err).metadata["last_seq"] == str(last_seq), name
    listed = stub.ListRuns(pb.ListRunsRequest(page_size=1000), timeout=t).runs
    assert run_id not in {summary.run_id for summary in listed}


def test_deleted_run_leaves_no_canary_in_the_store_and_stays_deleted_after_a_restart(store: Store) -> None:
    canary = secrets.token_urlsafe(24)  # 32 random characters
    needle = canary.encode()
    with grpc.insecure_channel(store.server.address) as channel:
        stub = JournalStub(channel)
        run_id, meta, last_seq = written_run(stub, canary)
        kept_id, _, _ = written_run(stub, "a-run-that-stays")
        assert store.canaries(needle) >= 3  # the note and the batch: really in the store before
        answer = stub.DeleteRun(pb.DeleteRunRequest(run_id=run_id, expected_last_seq=last_seq))
        # File: erased before the answer. JetStream: erased in the background after it.
        assert (answer.last_seq, answer.deleted, answer.erased) == (last_seq, True, store.server.backend == "file")
        assert_deleted_everywhere(stub, run_id, meta, last_seq)  # at once, however far the erasure got
        done = stub.DeleteRun(pb.DeleteRunRequest(run_id=run_id, expected_last_seq=last_seq))  # waits for it
        assert (done.last_seq, done.deleted, done.erased) == (last_seq, False, True)
        assert store.canaries(needle) == 0
        assert stub.Fold(pb.FoldRequest(run_id=kept_id)).state.last_seq == 5  # only that run went
    store.restart()
    with grpc.insecure_channel(store.server.address) as channel:
        stub = JournalStub(channel)
        assert_deleted_everywhere(stub, run_id, meta, last_seq)
        again = stub.DeleteRun(pb.DeleteRunRequest(run_id=run_id, expected_last_seq=last_seq))
        assert (again.last_seq, again.deleted) == (last_seq, False)
    assert store.canaries(needle) == 0


def test_delete_refuses_a_last_seq_the_run_moved_past_and_deletes_nothing(stub: JournalStub) -> None:
    run_id, _, last_seq = written_run(stub, "moved")
    err = refusal(lambda: stub.DeleteRun(pb.DeleteRunRequest(run_id=run_id, expected_last_seq=last_seq - 1)))
    assert reason(err) == "LAST_SEQ_MISMATCH"
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    info = error_info(err).metadata
    assert (info["last_seq"], info["expected_last_seq"], info["run_id"]) == (str(last_seq), str(last_seq - 1), run_id)
    assert stub.Fold(pb.FoldRequest(run_id=run_id)).state.last_seq == last_seq  # nothing was deleted
    stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(last_seq + 1)))
    answer = stub.DeleteRun(pb.DeleteRunRequest(run_id=run_id, expected_last_seq=last_seq + 1))
    assert answer.deleted and answer.last_seq == last_seq + 1


def test_delete_refuses_a_missing_run_and_an_unset_last_seq(stub: JournalStub) -> None:
    err = refusal(lambda: stub.DeleteRun(pb.DeleteRunRequest(run_id=new_run_id("absent"), expected_last_seq=1)))
    assert reason(err) == "RUN_NOT_FOUND"
    run_id, _, _ = written_run(stub, "unset")
    err = refusal(lambda: stub.DeleteRun(pb.DeleteRunRequest(run_id=run_id)))
    assert reason(err) == "INVALID_ARGUMENT"
    assert stub.Fold(pb.FoldRequest(run_id=run_id)).state.last_seq == 5


def test_deleting_again_answers_the_tombstone_to_a_retry_and_run_deleted_to_another_seq(stub: JournalStub) -> None:
    run_id, _, last_seq = written_run(stub, "twice")
    first = stub.DeleteRun(pb.DeleteRunRequest(run_id=run_id, expected_last_seq=last_seq))
    second = stub.DeleteRun(pb.DeleteRunRequest(run_id=run_id, expected_last_seq=last_seq))
    assert (first.deleted, second.deleted) == (True, False)
    assert first.last_seq == second.last_seq == last_seq
    for other_seq in (1, last_seq + 1):  # not a retry: its caller saw another run than the one deleted
        request = pb.DeleteRunRequest(run_id=run_id, expected_last_seq=other_seq)
        err = refusal(lambda request=request: stub.DeleteRun(request))
        assert err.code() == grpc.StatusCode.NOT_FOUND
        info = error_info(err)
        assert (info.reason, info.metadata["last_seq"]) == ("RUN_DELETED", str(last_seq))


def test_only_an_operator_deletes(server_factory: Callable[..., ServerProcess], tmp_path: Path) -> None:
    server = server_factory(tmp_path / "data", "--auth-tokens-file", str(token_file(tmp_path / "tokens.toml")))
    with grpc.insecure_channel(server.address) as channel:
        stub, tasks = JournalStub(channel), TaskStub(channel)
        run_id = new_run_id("guarded")
        stub.Append(
            pb.AppendRequest(run_id=run_id, claim_token=1, record=b.meta(run_id=run_id)), metadata=bearer("worker-7")
        )
        tasks.SubmitTask(tpb.SubmitTaskRequest(task_id="t-guarded", request_json="{}"), metadata=bearer("worker-7"))
        request = pb.DeleteRunRequest(run_id=run_id, expected_last_seq=1)
        err = refusal(lambda: stub.DeleteRun(request, metadata=bearer("worker-7")))
        assert err.code() == grpc.StatusCode.PERMISSION_DENIED
        assert error_info(err).metadata["scope"] == "operator"
        err = refusal(lambda: tasks.DeleteTask(tpb.DeleteTaskRequest(task_id="t-guarded"), metadata=bearer("worker-7")))
        assert err.code() == grpc.StatusCode.PERMISSION_DENIED
        assert stub.Fold(pb.FoldRequest(run_id=run_id), metadata=bearer("worker-7")).state.last_seq == 1
        assert stub.DeleteRun(request, metadata=bearer("ops")).deleted
        assert tasks.DeleteTask(tpb.DeleteTaskRequest(task_id="t-guarded"), metadata=bearer("ops")).deleted


def test_deleted_task_is_refused_everywhere_and_leaves_no_canary(store: Store) -> None:
    canary = secrets.token_urlsafe(24)
    task_id = new_run_id("task")
    with grpc.insecure_channel(store.server.address) as channel:
        tasks = TaskStub(channel)
        submit = tpb.SubmitTaskRequest(task_id=task_id, request_json=f'{{"ask": "{canary}"}}')
        tasks.SubmitTask(submit)
        outcome = tpb.TaskOutcome(result_json=f'{{"answer": "{canary}"}}')
        tasks.CompleteTask(tpb.CompleteTaskRequest(task_id=task_id, outcome=outcome))
        assert store.canaries(canary.encode()) >= 2
        assert tasks.DeleteTask(tpb.DeleteTaskRequest(task_id=task_id)).deleted
        assert not tasks.DeleteTask(tpb.DeleteTaskRequest(task_id=task_id)).deleted
        assert store.canaries(canary.encode()) == 0
        for name, call in {
            "SubmitTask": lambda: tasks.SubmitTask(submit),
            "CompleteTask": lambda: tasks.CompleteTask(tpb.CompleteTaskRequest(task_id=task_id, outcome=outcome)),
            "GetTask": lambda: tasks.GetTask(tpb.GetTaskRequest(task_id=task_id)),
        }.items():
            err = refusal(call)
            assert reason(err) == "TASK_DELETED", name
            assert err.code() == grpc.StatusCode.NOT_FOUND, name
        assert task_id not in {task.task_id for task in tasks.ListTasks(tpb.ListTasksRequest(page_size=1000)).tasks}
        err = refusal(lambda: tasks.DeleteTask(tpb.DeleteTaskRequest(task_id=new_run_id("never"))))
        assert reason(err) == "TASK_NOT_FOUND"


def _migrate(source: str, target: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "runjournal_server.cli", "migrate", "--from", source, "--to", target],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_deleted_run_never_reappears_through_migrate(
    server_factory: Callable[..., ServerProcess], tmp_path: Path, nats_server: NatsServer
) -> None:
    canary = secrets.token_urlsafe(24)
    source = server_factory(tmp_path / "source")
    with grpc.insecure_channel(source.address) as channel:
        stub = JournalStub(channel)
        kept, _, _ = written_run(stub, "kept")
        doomed, meta, last_seq = written_run(stub, canary)
        task = tpb.SubmitTaskRequest(task_id="doomed-task", request_json=f'{{"ask": "{canary}"}}')
        TaskStub(channel).SubmitTask(task)
    assert source.stop() == 0
    stream = new_stream_target()
    spec = f"jetstream:{nats_server.url}/{stream.name}?prefix={stream.prefix}"
    _migrate(f"file:{source.data_dir}", spec + "&create=1")  # both runs reach the stream
    assert canaries_under(nats_server.store_dir, canary) >= 3
    source.start()
    with grpc.insecure_channel(source.address) as channel:
        JournalStub(channel).DeleteRun(pb.DeleteRunRequest(run_id=doomed, expected_last_seq=last_seq))
        TaskStub(channel).DeleteTask(tpb.DeleteTaskRequest(task_id="doomed-task"))
    assert source.stop() == 0
    out = _migrate(f"file:{source.data_dir}", spec)  # the tombstones follow, and the copies go
    assert "\ntombstones: 1 migrated" in out and "task tombstones: 1 migrated" in out
    assert canaries_under(nats_server.store_dir, canary) == 0
    back = tmp_path / "back"
    back.mkdir()
    out = _migrate(spec, f"file:{back}")
    assert "runs: 1 migrated" in out and "tombstones: 1 migrated" in out
    assert canaries_under(back, canary) == 0
    for server in (server_factory(back), server_factory(tmp_path / "unused", *stream.server_args(nats_server.url))):
        with grpc.insecure_channel(server.address) as channel:
            stub = JournalStub(channel)
            assert_deleted_everywhere(stub, doomed, meta, last_seq)
            assert stub.Fold(pb.FoldRequest(run_id=kept)).state.last_seq == 5
            err = refusal(lambda: TaskStub(channel).SubmitTask(task))
            assert reason(err) == "TASK_DELETED"


def canaries_under(root: Path, canary: str) -> int:
    return sum(path.read_bytes().count(canary.encode()) for path in root.rglob("*") if path.is_file())


def test_a_run_deleted_through_one_replica_is_deleted_on_another_that_held_it(
    server_factory: Callable[..., ServerProcess], tmp_path: Path, nats_server: NatsServer
) -> None:
    stream = new_stream_target()
    one = server_factory(tmp_path / "one", *stream.server_args(nats_server.url))
    other = server_factory(tmp_path / "other", *stream.server_args(nats_server.url))
    with grpc.insecure_channel(one.address) as a, grpc.insecure_channel(other.address) as c:
        deleter, holder = JournalStub(a), JournalStub(c)
        run_id, meta, last_seq = written_run(holder, "held")  # the other replica holds it warm
        assert holder.Fold(pb.FoldRequest(run_id=run_id)).state.last_seq == last_seq
        assert deleter.DeleteRun(pb.DeleteRunRequest(run_id=run_id, expected_last_seq=last_seq)).deleted
        assert_deleted_everywhere(holder, run_id, meta, last_seq)


def test_deleting_a_run_wipes_its_lines_from_the_file_backends_commit_log(
    server_factory: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    """Appends to many runs at once share a commit log (``group_commit.py``) that keeps their lines for a while."""
    canary = secrets.token_urlsafe(24)
    server = server_factory(tmp_path / "data")
    run_ids = [new_run_id("grouped") for _ in range(16)]
    with grpc.insecure_channel(server.address) as channel:
        stub = JournalStub(channel)
        for run_id in run_ids:
            stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.meta(run_id=run_id)))

        def notes(run_id: str) -> None:
            for seq in range(2, 30):
                say = canary if run_id == run_ids[0] else "x"
                stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(seq, say)))

        with ThreadPoolExecutor(len(run_ids)) as pool:
            list(pool.map(notes, run_ids))
        assert canaries_under(tmp_path / "data" / ".commit-log", canary) > 0  # groups formed: the log holds them
        stub.DeleteRun(pb.DeleteRunRequest(run_id=run_ids[0], expected_last_seq=29))
        assert canaries_under(tmp_path / "data", canary) == 0
        for run_id in run_ids[1:]:  # the other runs' appends stay durable and readable
            assert stub.Fold(pb.FoldRequest(run_id=run_id)).state.last_seq == 29
            stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(30)))


def test_a_read_the_deletion_overtakes_ends_with_run_deleted_not_a_short_end(stub: JournalStub) -> None:
    """A Read of a long run is still streaming when the run is deleted: it must not end as if the run ended there."""
    run_id = new_run_id("long")
    stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.meta(run_id=run_id)))
    last_seq = 1
    for _ in range(4):  # about 8 MiB: far more than gRPC and one read chunk hold ahead of the reader
        batch = [b.note(seq, "n" * 64_000) for seq in range(last_seq + 1, last_seq + 33)]
        stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=batch))
        last_seq += len(batch)
    reader = iter(stub.Read(pb.ReadRequest(run_id=run_id), timeout=CALL_TIMEOUT_SECONDS))
    assert next(reader).seq == 1
    assert stub.DeleteRun(pb.DeleteRunRequest(run_id=run_id, expected_last_seq=last_seq)).deleted
    seen = 1
    with pytest.raises(grpc.RpcError) as ended:
        for item in reader:
            seen = item.seq
    assert reason(ended.value) == "RUN_DELETED"
    assert seen < last_seq
