"""The people's commands never print a journal's control characters raw (issue 10, item 19).

A journal is written by workers (and models): a deferral reason holding a
newline and a fake row forged inbox rows, an escape sequence recoloured or
cleared the terminal, an RTL override reversed what a person read. The CLI
runs here as a subprocess against a real server, and its output must show
every C0/C1 control, DEL and bidi control escaped, and nothing else changed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc, records_pb2
from tests.api.rpc import new_run_id
from tests.servers import ServerProcess
from tests.support import builders as b

UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""What must never reach the terminal (a newline is the CLI's own line structure)."""

FORGED_ROW = "run-forged-0000 c9 deploy decision on-call looks fine"
HOSTILE = "ok\x1b[2K\r\n" + FORGED_ROW + "\x07\x9b31m\u202edesrever\u2066\u200f\x7f\x00"
ESCAPED = "ok\\x1b[2K\\x0d\\x0a" + FORGED_ROW + "\\x07\\x9b31m\\u202edesrever\\u2066\\u200f\\x7f\\x00"


def cli(server: ServerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "RUNJOURNAL_TOKEN"}
    return subprocess.run(
        [sys.executable, "-m", "runjournal", *args, "--address", server.address],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env=env,
        check=False,
    )


@pytest.fixture
def server(server_factory: Callable[..., ServerProcess], tmp_path: Path) -> ServerProcess:
    return server_factory(tmp_path / "data")


def hostile_run(server: ServerProcess) -> str:
    """A run whose prompt, turn and waiting calls carry ``HOSTILE`` wherever a worker may put text."""
    run_id = new_run_id("hostile")
    asks = records_pb2.Deferral(tool_use_id="c1", reason=HOSTILE, expected_answerer="ops" + HOSTILE)
    decides = records_pb2.Deferral(tool_use_id="c2", reason=HOSTILE, expected_answerer="on-call", needs_approval=True)
    records = [
        b.meta(run_id=run_id, prompt=HOSTILE),
        b.assistant(2, 1, ["c1", "c2", "c3"], say=HOSTILE),
        records_pb2.JournalRecord(seq=3, deferral=asks),
        records_pb2.JournalRecord(seq=4, deferral=decides),
        b.deferral(5, "c3", reason="plain"),
    ]
    # JSON escapes C0 controls itself; C1 and bidi controls stay raw in the text.
    records[1].assistant.content[1].tool_use.input_json = json.dumps({"q": HOSTILE}, ensure_ascii=False)
    with grpc.insecure_channel(server.address) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=records))
        approval = pb.ApproveRequest(
            run_id=run_id, tool_use_id="c2", decision=records_pb2.DECISION_DENIED, approver="carol" + HOSTILE
        )
        approval.reason = HOSTILE
        stub.Approve(approval)
    return run_id


def finished_run(server: ServerProcess) -> str:
    """A run that ran a call and stopped, with ``HOSTILE`` in its committed turns and its terminal message."""
    run_id = new_run_id("hostile-done")
    turn = b.assistant(2, 1, ["c1"], say=HOSTILE)
    turn.assistant.content[1].tool_use.input_json = json.dumps({"q": HOSTILE}, ensure_ascii=False)
    records = [
        b.meta(run_id=run_id),
        turn,
        b.result(3, "c1", HOSTILE),
        b.assistant(4, 2, say=HOSTILE),
        b.terminal(5),
    ]
    records[-1].terminal.message = HOSTILE
    with grpc.insecure_channel(server.address) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=records))
    return run_id


def assert_safe(output: str) -> None:
    found = sorted({f"U+{ord(c):04X}" for c in UNSAFE.findall(output)})
    assert found == [], f"raw control characters reached the terminal: {found}"


def test_the_inbox_escapes_a_forged_row_and_terminal_codes(server: ServerProcess) -> None:
    run_id = hostile_run(server)
    inbox = cli(server, "inbox")
    assert inbox.returncode == 0, inbox.stderr
    assert_safe(inbox.stdout)
    # By the call column: the run id is random hex, and may hold "c1" itself.
    rows = [line for line in inbox.stdout.splitlines() if line.split()[1:2] in (["c1"], ["c9"])]
    assert len(rows) == 1 and rows[0].startswith(run_id)  # the forged row stays inside the real one
    assert rows[0].endswith(ESCAPED)
    assert not any(line.startswith("run-forged") for line in inbox.stdout.splitlines())


def test_runs_show_escapes_every_journal_text(server: ServerProcess) -> None:
    run_id = hostile_run(server)
    shown = cli(server, "runs", "show", run_id)
    assert shown.returncode == 0, shown.stderr
    assert_safe(shown.stdout)
    # In the pending batch: both deferral reasons, the approver and the approval's reason; where c1
    # waits: its expected answerer and its reason.
    assert shown.stdout.count(ESCAPED) == 6
    # Message text keeps its own line breaks, each line indented and escaped.
    assert "    ok\\x1b[2K\\x0d\n    " + FORGED_ROW + "\\x07" in shown.stdout
    assert not any(line.startswith("run-forged") for line in shown.stdout.splitlines())


def test_runs_list_and_refusals_print_nothing_raw(server: ServerProcess) -> None:
    hostile_run(server)
    listed = cli(server, "runs", "list")
    assert listed.returncode == 0, listed.stderr
    assert_safe(listed.stdout)
    refused = cli(server, "approve", "run\u202e\x1b[2K", "c1", "--deny")
    assert refused.returncode == 1 and refused.stderr.startswith("runjournal: INVALID_ARGUMENT: "), refused.stderr
    assert_safe(refused.stderr)


def test_runs_show_escapes_committed_turns_tool_calls_and_the_terminal_message(server: ServerProcess) -> None:
    run_id = finished_run(server)
    shown = cli(server, "runs", "show", run_id)
    assert shown.returncode == 0, shown.stderr
    assert_safe(shown.stdout)
    assert shown.stdout.rstrip().splitlines()[-3].endswith(ESCAPED)  # "stopped: completed: <message>"
    assert not any(line.startswith("run-forged") for line in shown.stdout.splitlines())
