"""``runjournal migrate`` run as a person would: file -> JetStream -> file, byte for byte, idempotent, with refusals.

The source is a data directory written by a real file server (AppendBatch,
Claim, Answer, Approve, SubmitTask, CompleteTask); the JetStream end is a
stream on the session's real nats-server. Folds are compared through real
servers on each copy.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from runjournal import TaskClient
from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc, records_pb2, state_pb2
from runjournal_server.core import records
from runjournal_server.core.fold import fold_stored
from tests.conftest import StreamTarget, new_stream_target
from tests.servers import ServerProcess
from tests.support import builders as b

RUNS = 200
LONG_RUN_NOTES = 1201
"""The long run: meta + 1,201 notes, more than two migration batches and more than one JetStream atomic batch."""
SUSPENDED = records_pb2.TERMINAL_REASON_SUSPENDED
UTF8 = "Grüße aus Köln — 東京 🚀 naïve café ☕"


def runjournal(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "runjournal_server.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def stream_spec(nats_url: str, target: StreamTarget, *, create: bool = False) -> str:
    return f"jetstream:{nats_url}/{target.name}?prefix={target.prefix}" + ("&create=1" if create else "")


def connect(server: ServerProcess) -> tuple[grpc.Channel, journal_service_pb2_grpc.JournalServiceStub]:
    channel = grpc.insecure_channel(server.address)
    return channel, journal_service_pb2_grpc.JournalServiceStub(channel)


# ---------------------------------------------------------------- the source: 200 runs of every shape


def _meta(run_id: str, index: int, **fields: object) -> records_pb2.JournalRecord:
    record = b.meta(run_id=run_id, labels={"shape": str(index % 7)}, **fields)  # type: ignore[arg-type]
    record.meta.created_at.FromSeconds(1_700_000_000 + index)
    return record


def _write_run(stub: journal_service_pb2_grpc.JournalServiceStub, run_id: str, index: int) -> None:
    def batch(*items: records_pb2.JournalRecord, token: int = 1) -> None:
        stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=token, records=list(items)))

    meta = _meta(run_id, index, task_id=f"task-{index % 3}" if index % 5 == 0 else "")
    match index % 7:
        case 0:  # a pending batch: one of two calls answered
            batch(meta, b.assistant(2, 1, ["a", "b"]), b.result(3, "a"))
        case 1:  # a deferral the person answered
            batch(meta, b.assistant(2, 1, ["a"]), b.deferral(3, "a"), b.terminal(4, SUSPENDED))
            stub.Answer(pb.AnswerRequest(run_id=run_id, tool_use_id="a", content=[b.text("42")]))
        case 2:  # completed
            batch(meta, b.assistant(2, 1, ["a"]), b.result(3, "a"), b.assistant(4, 2, say="done"), b.terminal(5))
        case 3:  # claimed by a second worker after a crash, then finished the batch
            batch(meta, b.assistant(2, 1, ["a"]))
            claim = pb.ClaimRequest(run_id=run_id, worker_id="worker-2", host="h", pid=7, fingerprint=b.fingerprint())
            token = stub.Claim(claim).claim_token
            batch(b.result(4, "a"), b.note(5, "resumed"), token=token)
        case 4:  # multi-byte UTF-8 everywhere
            batch(
                _meta(run_id, index, prompt=UTF8),
                b.note(2, UTF8),
                b.assistant(3, 1, say="ответ 答え 🎉"),
                b.terminal(4, message=UTF8),
            )
        case 5:  # waiting for an operator's decision, then approved
            wait = records_pb2.Deferral(tool_use_id="a", reason="deploy", expected_answerer="ops", needs_approval=True)
            deferral = records_pb2.JournalRecord(seq=3, deferral=wait)
            batch(meta, b.assistant(2, 1, ["a"]), deferral, b.terminal(4, SUSPENDED))
            stub.Approve(
                pb.ApproveRequest(run_id=run_id, tool_use_id="a", decision=records_pb2.DECISION_APPROVED, approver="al")
            )
        case _:  # still waiting for a person
            batch(meta, b.assistant(2, 1, ["a"]), b.deferral(3, "a"), b.terminal(4, SUSPENDED))


def _write_long_run(stub: journal_service_pb2_grpc.JournalServiceStub, run_id: str) -> None:
    notes = [b.note(seq, f"note {seq} {UTF8}") for seq in range(2, LONG_RUN_NOTES + 2)]
    items = [_meta(run_id, RUNS), *notes]
    for start in range(0, len(items), 1000):
        stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=items[start : start + 1000]))


@dataclass(frozen=True)
class Source:
    data_dir: Path
    run_ids: tuple[str, ...]
    task_ids: tuple[str, ...]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Source]:
    """A data directory of 200 runs and 6 tasks written by a real file server, which is stopped again."""
    data_dir = tmp_path_factory.mktemp("migrate-source") / "data"
    server = ServerProcess(data_dir).start()
    run_ids = [f"mig-{index:03d}" for index in range(RUNS - 1)] + ["mig-long"]
    task_ids = [f"task-{index}" for index in range(6)]
    try:
        channel, stub = connect(server)
        with channel:
            for index, run_id in enumerate(run_ids[:-1]):
                _write_run(stub, run_id, index)
            _write_long_run(stub, run_ids[-1])
        with TaskClient(server.address) as tasks:
            for index, task_id in enumerate(task_ids):
                tasks.submit(task_id, {"question": f"{UTF8} #{index}"}, labels={"n": str(index)})
            tasks.complete(task_ids[0], {"answer": 42})
            tasks.complete(task_ids[1], {"answer": UTF8})
            tasks.complete(task_ids[2], failure=("timeout", "gave up"))
    finally:
        assert server.stop() == 0, server.log()
    yield Source(data_dir, tuple(run_ids), tuple(task_ids))


def journal(data_dir: Path, run_id: str) -> bytes:
    return (data_dir / f"{run_id}.jsonl").read_bytes()


def task_documents(data_dir: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted((data_dir / "tasks").glob("*.json"))}


def folded(data_dir: Path, run_id: str) -> state_pb2.RunState:
    lines = journal(data_dir, run_id).split(b"\n")
    assert lines.pop() == b""
    return fold_stored(records.decode(line) for line in lines).state()


def assert_same_journals(source: Source, copy_dir: Path) -> None:
    for run_id in source.run_ids:
        assert journal(copy_dir, run_id) == journal(source.data_dir, run_id), run_id
    assert task_documents(copy_dir) == task_documents(source.data_dir)
    assert len(task_documents(copy_dir)) == 9  # 6 requests, 3 outcomes


def assert_folds_through(server: ServerProcess, source: Source) -> None:
    channel, stub = connect(server)
    with channel:
        for run_id in source.run_ids:
            assert stub.Fold(pb.FoldRequest(run_id=run_id)).state == folded(source.data_dir, run_id), run_id


# ---------------------------------------------------------------- round trips


def test_200_runs_go_file_to_jetstream_to_file_byte_identical_and_fold_the_same(
    source, nats_server, server_factory, tmp_path
):
    stream = new_stream_target()
    to_stream = runjournal(
        "migrate", "--from", f"file:{source.data_dir}", "--to", stream_spec(nats_server.url, stream, create=True)
    )
    assert to_stream.returncode == 0, to_stream.stderr
    assert "runs: 200 migrated, 0 already present, 0 failed" in to_stream.stdout
    assert "tasks: 6 migrated, 0 already present, 0 failed (9 documents copied)" in to_stream.stdout
    assert "runs: 200/200" in to_stream.stderr and "tasks: 6/6" in to_stream.stderr  # the progress lines

    back = tmp_path / "back"
    to_file = runjournal("migrate", "--from", stream_spec(nats_server.url, stream), "--to", f"file:{back}")
    assert to_file.returncode == 0, to_file.stderr
    assert "runs: 200 migrated, 0 already present, 0 failed" in to_file.stdout
    assert_same_journals(source, back)

    for spec_from, spec_to in (
        (f"file:{source.data_dir}", stream_spec(nats_server.url, stream)),
        (stream_spec(nats_server.url, stream), f"file:{back}"),
    ):
        again = runjournal("migrate", "--from", spec_from, "--to", spec_to)
        assert again.returncode == 0, again.stderr
        assert "runs: 0 migrated, 200 already present, 0 failed (0 records copied)" in again.stdout
        assert "tasks: 0 migrated, 6 already present, 0 failed (0 documents copied)" in again.stdout
    assert_same_journals(source, back)

    assert_folds_through(server_factory(back), source)
    assert_folds_through(server_factory(tmp_path / "unused", *stream.server_args(nats_server.url)), source)


def test_file_to_file_copies_everything_and_a_dry_run_writes_nothing(source, tmp_path):
    target = tmp_path / "copy"
    target.mkdir()
    dry = runjournal("migrate", "--from", f"file:{source.data_dir}", "--to", f"file:{target}", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "dry run: runs: 200 to migrate, 0 already present, 0 failed" in dry.stdout
    assert "dry run: tasks: 6 to migrate" in dry.stdout
    assert list(target.iterdir()) == []

    done = runjournal("migrate", "--from", f"file:{source.data_dir}", "--to", f"file:{target}", "--concurrency", "3")
    assert done.returncode == 0, done.stderr
    assert_same_journals(source, target)
    dry = runjournal("migrate", "--from", f"file:{source.data_dir}", "--to", f"file:{target}", "--dry-run")
    assert "dry run: runs: 0 to migrate, 200 already present, 0 failed" in dry.stdout


# ---------------------------------------------------------------- refusals


def _flip_inside_line_2(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    position = raw.index(b"turn 1", raw.index(b"\n") + 1)  # inside a string: still valid JSON after the flip
    raw[position] ^= 0x01
    path.write_bytes(bytes(raw))


def test_corrupt_and_locked_runs_are_refused_and_the_others_migrate(source, server_factory, tmp_path):
    data_dir = tmp_path / "source"
    shutil.copytree(source.data_dir, data_dir)
    corrupt, locked = "mig-000", "mig-002"
    _flip_inside_line_2(data_dir / f"{corrupt}.jsonl")
    live = server_factory(data_dir)  # a live server holding one run, as during a careless migration
    channel, stub = connect(live)
    with channel:
        stub.Append(pb.AppendRequest(run_id=locked, claim_token=1, record=b.note(6, "written while migrating")))
    target = tmp_path / "target"

    done = runjournal("migrate", "--from", f"file:{data_dir}", "--to", f"file:{target}")
    assert done.returncode == 1
    assert f"run {corrupt!r} not migrated: corrupt in the source: " in done.stderr
    assert "line 2" in done.stderr
    assert f"run {locked!r} not migrated: locked: " in done.stderr
    assert "stop that server, or retry once it has released the run" in done.stderr
    assert "runs: 198 migrated, 0 already present, 2 failed" in done.stdout
    assert not (target / f"{corrupt}.jsonl").exists() and not (target / f"{locked}.jsonl").exists()

    assert live.stop() == 0
    again = runjournal("migrate", "--from", f"file:{data_dir}", "--to", f"file:{target}")
    assert again.returncode == 1
    assert "runs: 1 migrated, 198 already present, 1 failed" in again.stdout
    assert journal(target, locked) == journal(data_dir, locked)
    assert b"written while migrating" in journal(target, locked)


def test_target_runs_that_differ_are_refused_and_a_verified_prefix_is_completed(source, server_factory, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    partial, conflicting, longer = "mig-002", "mig-009", "mig-016"
    # What an interrupted migration leaves: the first two records.
    lines = journal(source.data_dir, partial).splitlines(keepends=True)
    (target / f"{partial}.jsonl").write_bytes(b"".join(lines[:2]))
    # The same run written on both sides: the same meta, another record at seq 2; and a run that went on.
    shutil.copyfile(source.data_dir / f"{longer}.jsonl", target / f"{longer}.jsonl")
    server = server_factory(target)
    channel, stub = connect(server)
    with channel:
        meta = records.decode(journal(source.data_dir, conflicting).splitlines()[0]).record
        stub.AppendBatch(pb.AppendBatchRequest(run_id=conflicting, records=[meta, b.note(2, "elsewhere")]))
        last = stub.Fold(pb.FoldRequest(run_id=longer)).state.last_seq
        stub.Append(pb.AppendRequest(run_id=longer, claim_token=1, record=b.note(last + 1, "went on at the target")))
    with TaskClient(server.address) as tasks:
        tasks.submit("task-4", {"question": "something else"})
    assert server.stop() == 0
    before = {run_id: journal(target, run_id) for run_id in (conflicting, longer)}

    done = runjournal(
        "migrate", "--from", f"file:{source.data_dir}", "--to", f"file:{target}",
        "--run", partial, "--run", conflicting, "--run", longer, "--run", "no-such-run",
    )  # fmt: skip
    assert done.returncode == 1
    assert "runs: 1 migrated, 0 already present, 3 failed" in done.stdout
    assert "tasks:" not in done.stdout  # named runs only
    assert f"run {conflicting!r} not migrated: conflict: the target holds a different record at seq 2" in done.stderr
    assert f"run {longer!r} not migrated: conflict: the target holds {last + 1} records, the source only {last}" in (
        done.stderr
    )
    assert "run 'no-such-run' not migrated: not found in the source" in done.stderr
    assert journal(target, partial) == journal(source.data_dir, partial)
    assert {run_id: journal(target, run_id) for run_id in before} == before

    everything = runjournal("migrate", "--from", f"file:{source.data_dir}", "--to", f"file:{target}")
    assert everything.returncode == 1
    assert "runs: 197 migrated, 1 already present, 2 failed" in everything.stdout
    assert "tasks: 5 migrated, 0 already present, 1 failed" in everything.stdout
    assert "task 'task-4' not migrated: conflict: the target holds a different request" in everything.stderr


def test_conflicts_are_found_on_a_stream_target_too(source, nats_server, server_factory, tmp_path):
    stream = new_stream_target()
    server = server_factory(tmp_path / "unused", *stream.server_args(nats_server.url))
    channel, stub = connect(server)
    with channel:
        meta = records.decode(journal(source.data_dir, "mig-009").splitlines()[0]).record
        stub.AppendBatch(pb.AppendBatchRequest(run_id="mig-009", records=[meta, b.note(2, "elsewhere")]))
    done = runjournal(
        "migrate", "--from", f"file:{source.data_dir}", "--to", stream_spec(nats_server.url, stream),
        "--run", "mig-009", "--run", "mig-010",
    )  # fmt: skip
    assert done.returncode == 1
    assert "runs: 1 migrated, 0 already present, 1 failed" in done.stdout
    assert "run 'mig-009' not migrated: conflict: the target holds a different record at seq 2" in done.stderr
    channel, stub = connect(server)
    with channel:
        stored = b"".join(r.stored_line + b"\n" for r in stub.Read(pb.ReadRequest(run_id="mig-010")))
    assert stored == journal(source.data_dir, "mig-010")


@pytest.mark.parametrize(
    ("source_spec", "target_spec", "message"),
    [
        ("nowhere:x", "file:y", "a SPEC is file:DIR or jetstream:NATS_URL/STREAM"),
        ("file:", "file:y", "name the directory"),
        ("jetstream:nats://127.0.0.1:4222", "file:y", "name the stream after the URL"),
        ("jetstream:nats://127.0.0.1:4222/S?create=1", "file:y", "create=1 applies to the target only"),
        ("jetstream:nats://127.0.0.1:4222/S?colour=red", "file:y", "unknown option 'colour'"),
        ("jetstream:nats://127.0.0.1:4222/no.dots", "file:y", "stream name 'no.dots'"),
        ("file:{tmp}", "file:{tmp}/.", "are the same store"),
        ("file:{tmp}/missing", "file:y", "is not a directory"),
    ],
)
def test_a_bad_spec_is_refused_with_the_grammar(tmp_path, source_spec, target_spec, message):
    done = runjournal("migrate", "--from", source_spec.format(tmp=tmp_path), "--to", target_spec.format(tmp=tmp_path))
    assert done.returncode == 2
    assert message in done.stderr
    assert not (Path.cwd() / "y").exists()
