"""The commands for people, run as a person would, against a real server."""

from __future__ import annotations

import subprocess
import sys

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import records_pb2
from tests.api.rpc import new_run_id
from tests.support import builders as b


def runjournal(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "runjournal", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def suspended_run(stub) -> str:
    run_id = new_run_id("cli")
    batch = [
        b.meta(run_id=run_id, labels={"suite": run_id}),
        b.assistant(2, 1, ["call-a"]),
        b.deferral(3, "call-a"),
        b.terminal(4, records_pb2.TERMINAL_REASON_SUSPENDED, "waiting for ops"),
    ]
    stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, records=batch))
    return run_id


def test_answer_from_the_command_line_writes_the_result(stub, journal_server, tmp_path):
    run_id = suspended_run(stub)
    answer = tmp_path / "answer.txt"
    answer.write_text("approved by ops")
    done = runjournal("answer", run_id, "call-a", "--result-file", str(answer), "--address", journal_server.address)
    assert done.returncode == 0, done.stderr
    assert "seq 5" in done.stdout
    state = stub.Fold(pb.FoldRequest(run_id=run_id)).state
    assert state.conversation[-1].content[0].tool_result.content[0].text.text == "approved by ops"
    again = runjournal("answer", run_id, "call-a", "--result", "twice", "--address", journal_server.address)
    assert again.returncode != 0
    assert "runjournal: ALREADY_ANSWERED:" in again.stderr


def test_runs_list_and_show_are_readable(stub, journal_server):
    run_id = suspended_run(stub)
    listed = runjournal("runs", "list", "--label", f"suite={run_id}", "--address", journal_server.address)
    assert listed.returncode == 0, listed.stderr
    assert run_id in listed.stdout and "suspended" in listed.stdout
    shown = runjournal("runs", "show", run_id, "--address", journal_server.address)
    assert shown.returncode == 0, shown.stderr
    assert "pending batch" in shown.stdout and "call-a" in shown.stdout and "deferred" in shown.stdout
    assert "waiting for ops" in shown.stdout


def test_serve_refuses_a_bad_setting_naming_it(tmp_path):
    done = runjournal("serve", "--data-dir", str(tmp_path), "--max-record-bytes", "-1")
    assert done.returncode == 2
    assert "--max-record-bytes" in done.stderr


def test_runs_show_draws_the_sub_agent_tree_and_the_inbox_names_a_childs_root(stub, journal_server):
    parent, child, grandchild = new_run_id("cli-parent"), new_run_id("cli-child"), new_run_id("cli-grandchild")
    stub.AppendBatch(pb.AppendBatchRequest(run_id=parent, records=[b.meta(run_id=parent), b.assistant(2, 1, ["c1"])]))
    child_meta = b.meta(run_id="").meta
    stub.SpawnRun(pb.SpawnRunRequest(run_id=parent, tool_use_id="c1", new_run_id=child, meta=child_meta))
    asks = [b.assistant(2, 1, ["g1", "ask"]), b.deferral(3, "ask", "which region?")]
    stub.AppendBatch(pb.AppendBatchRequest(run_id=child, claim_token=1, records=asks))
    stub.SpawnRun(pb.SpawnRunRequest(run_id=child, tool_use_id="g1", new_run_id=grandchild, meta=child_meta))
    shown = runjournal("runs", "show", parent, "--address", journal_server.address)
    assert shown.returncode == 0, shown.stderr
    assert f"delegated to child run {child} (open)" in shown.stdout
    lines = shown.stdout.splitlines()
    tree = lines[lines.index(f"child runs of {parent}:") :]
    assert tree[1:3] == [f"    └─ {child}  open", f"        └─ {grandchild}  open"]
    shown_child = runjournal("runs", "show", child, "--address", journal_server.address)
    assert f"spawned by run {parent} for call c1 (root {parent})" in shown_child.stdout
    inbox = runjournal("inbox", "--address", journal_server.address)
    assert inbox.returncode == 0, inbox.stderr
    row = next(line for line in inbox.stdout.splitlines() if line.startswith(child))
    assert "which region?" in row and f"(sub-agent of {parent})" in row


def test_serve_runs_on_uvloop_by_default_and_on_the_standard_loop_when_set(journal_server, tmp_path):
    assert "serving on the uvloop event loop" in journal_server.log()  # the session's servers: the default

    from grpc import insecure_channel

    from runjournal.v1 import journal_service_pb2_grpc
    from tests.servers import ServerProcess

    server = ServerProcess(tmp_path / "data", extra_args=("--event-loop", "asyncio", "--log-level", "INFO")).start()
    try:
        run_id = new_run_id("asyncio-loop")
        with insecure_channel(server.address) as channel:
            reply = journal_service_pb2_grpc.JournalServiceStub(channel).Append(
                pb.AppendRequest(run_id=run_id, record=b.meta(run_id=run_id)), timeout=30
            )
        assert reply.last_seq == 1
    finally:
        assert server.stop() == 0, server.log()
    assert "serving on the asyncio event loop" in server.log()
