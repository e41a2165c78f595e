"""Token scopes: only an operator token answers and approves, and its name is recorded (issue 10, item 18).

Before scopes, a worker's own token could approve its own call and write any
name as the approver. Now, with token auth on, Answer and Approve need the
``operator`` scope; the approval's ``approver`` is the token's name (a request
naming someone else is refused) and the answer's ``tool_result`` carries it in
``answered_by``; a worker cannot slip either record in through Append. With
auth off nothing changes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc, records_pb2
from runjournal_server.api.auth import token_sha256
from tests.api.rpc import error_info, new_run_id
from tests.servers import ServerProcess
from tests.support import builders as b

JournalStub = journal_service_pb2_grpc.JournalServiceStub

TOKENS = {
    "worker-7": ("w-secret", '["worker"]'),
    "ops": ("o-secret", '["operator"]'),
    "lead": ("l-secret", '["worker", "operator"]'),
    "legacy": ("old-secret", None),  # a token file written before scopes existed
}


def bearer(name: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {TOKENS[name][0]}"),)


def token_file(path: Path) -> Path:
    entries = []
    for name, (secret, scopes) in TOKENS.items():
        entry = f'[[tokens]]\nname = "{name}"\nsha256 = "{token_sha256(secret)}"\nrun_id_prefixes = [""]\n'
        if scopes is not None:
            entry += f"scopes = {scopes}\n"
        entries.append(entry)
    path.write_text("\n".join(entries))
    return path


@pytest.fixture
def authed_server(server_factory: Callable[..., ServerProcess], tmp_path: Path) -> ServerProcess:
    return server_factory(tmp_path / "data", "--auth-tokens-file", str(token_file(tmp_path / "tokens.toml")))


@pytest.fixture
def authed(authed_server: ServerProcess) -> Iterator[JournalStub]:
    with grpc.insecure_channel(authed_server.address) as channel:
        yield JournalStub(channel)


def waiting_run(stub: JournalStub, metadata: tuple[tuple[str, str], ...] = ()) -> str:
    """A run whose call c1 waits for an answer and c2 for a decision."""
    run_id = new_run_id("scoped")
    approval = records_pb2.Deferral(tool_use_id="c2", reason="risky", expected_answerer="ops", needs_approval=True)
    records = [
        b.meta(run_id=run_id),
        b.assistant(2, 1, ["c1", "c2"]),
        b.deferral(3, "c1"),
        records_pb2.JournalRecord(seq=4, deferral=approval),
    ]
    stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=records), metadata=metadata)
    return run_id


def answer(stub: JournalStub, run_id: str, who: str | None) -> int:
    request = pb.AnswerRequest(run_id=run_id, tool_use_id="c1", content=[b.text("42")])
    return stub.Answer(request, metadata=bearer(who) if who else ()).seq


def approve(stub: JournalStub, run_id: str, who: str | None, approver: str = "") -> int:
    request = pb.ApproveRequest(
        run_id=run_id, tool_use_id="c2", decision=records_pb2.DECISION_APPROVED, approver=approver, reason="fine"
    )
    return stub.Approve(request, metadata=bearer(who) if who else ()).seq


def record_at(stub: JournalStub, run_id: str, seq: int, who: str | None = "lead") -> records_pb2.JournalRecord:
    items = list(stub.Read(pb.ReadRequest(run_id=run_id, from_seq=seq), metadata=bearer(who) if who else ()))
    return items[0].record


def last_seq(stub: JournalStub, run_id: str) -> int:
    return stub.Fold(pb.FoldRequest(run_id=run_id), metadata=bearer("lead")).state.last_seq


def refused(call: Callable[[], object]) -> tuple[grpc.StatusCode, str, dict[str, str]]:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    info = error_info(caught.value)
    return caught.value.code(), info.reason, dict(info.metadata)


@pytest.mark.parametrize("who", ["worker-7", "legacy"])
def test_a_worker_token_can_neither_answer_nor_approve_and_nothing_is_written(authed: JournalStub, who: str) -> None:
    run_id = waiting_run(authed, bearer(who))  # a worker writes its own run...
    for call in (lambda: answer(authed, run_id, who), lambda: approve(authed, run_id, who, approver="alice")):
        code, reason, metadata = refused(call)  # ...but cannot decide or answer for a person
        assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED, "PERMISSION_DENIED")
        assert metadata == {"principal": who, "run_id": run_id, "scope": "operator"}
    assert last_seq(authed, run_id) == 4


def test_an_operator_approval_records_the_token_name_as_approver(authed: JournalStub) -> None:
    run_id = waiting_run(authed, bearer("worker-7"))
    seq = approve(authed, run_id, "ops")
    assert record_at(authed, run_id, seq).approval.approver == "ops"


def test_an_operator_may_name_itself_but_nobody_else(authed: JournalStub) -> None:
    run_id = waiting_run(authed, bearer("worker-7"))
    code, reason, metadata = refused(lambda: approve(authed, run_id, "ops", approver="alice"))
    assert (code, reason, metadata["principal"]) == (grpc.StatusCode.PERMISSION_DENIED, "PERMISSION_DENIED", "ops")
    assert last_seq(authed, run_id) == 4
    seq = approve(authed, run_id, "ops", approver="ops")
    assert record_at(authed, run_id, seq).approval.approver == "ops"


def test_an_operator_answer_records_who_answered(authed: JournalStub) -> None:
    run_id = waiting_run(authed, bearer("worker-7"))
    seq = answer(authed, run_id, "ops")
    result = record_at(authed, run_id, seq, "ops").tool_result
    assert (result.tool_use_id, result.remote, result.answered_by) == ("c1", True, "ops")


def test_an_operator_reads_but_does_not_write_as_a_worker(authed: JournalStub) -> None:
    run_id = waiting_run(authed, bearer("worker-7"))
    assert authed.Fold(pb.FoldRequest(run_id=run_id), metadata=bearer("ops")).state.last_seq == 4
    assert [r.run_id for r in authed.ListRuns(pb.ListRunsRequest(), metadata=bearer("ops")).runs] == [run_id]
    code, reason, metadata = refused(
        lambda: authed.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(5)), metadata=bearer("ops"))
    )
    assert (code, reason, metadata["scope"]) == (grpc.StatusCode.PERMISSION_DENIED, "PERMISSION_DENIED", "worker")


def test_a_worker_cannot_append_an_approval_or_a_signed_answer_itself(authed: JournalStub) -> None:
    run_id = waiting_run(authed, bearer("lead"))
    forged_approval = records_pb2.JournalRecord(
        seq=5, approval=records_pb2.Approval(tool_use_id="c2", decision=records_pb2.DECISION_APPROVED, approver="ops")
    )
    forged_answer = b.result(5, "c1", "42", remote=True)
    forged_answer.tool_result.answered_by = "ops"
    for record in (forged_approval, forged_answer):
        request = pb.AppendRequest(run_id=run_id, claim_token=1, record=record)
        for who in ("worker-7", "lead"):  # even a token that holds both scopes: Approve/Answer record the name
            code, reason, metadata = refused(
                lambda request=request, who=who: authed.Append(request, metadata=bearer(who))
            )
            assert (code, reason, metadata["principal"]) == (
                grpc.StatusCode.PERMISSION_DENIED,
                "PERMISSION_DENIED",
                who,
            )
    assert last_seq(authed, run_id) == 4
    # The worker's own ordinary result for a call it ran is still its to write.
    authed.Append(
        pb.AppendRequest(run_id=run_id, claim_token=1, record=b.result(5, "c1", "ran it")), metadata=bearer("worker-7")
    )


def test_without_auth_answers_and_approvals_are_as_before(stub: JournalStub) -> None:
    run_id = waiting_run(stub)
    answered = answer(stub, run_id, None)
    assert record_at(stub, run_id, answered, None).tool_result.answered_by == ""
    approved = approve(stub, run_id, None, approver="alice")
    assert record_at(stub, run_id, approved, None).approval.approver == "alice"


def cli_approve(server: ServerProcess, run_id: str, who: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RUNJOURNAL_TOKEN": TOKENS[who][0]}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "runjournal",
            "approve",
            run_id,
            "c2",
            "--approve",
            "--address",
            server.address,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env=env,
        check=False,
    )


def test_the_command_line_sends_its_token_and_the_server_names_the_approver(
    authed: JournalStub, authed_server: ServerProcess
) -> None:
    run_id = waiting_run(authed, bearer("worker-7"))
    denied = cli_approve(authed_server, run_id, "worker-7")
    assert denied.returncode == 1 and denied.stderr.startswith("runjournal: PERMISSION_DENIED: "), denied.stderr
    done = cli_approve(authed_server, run_id, "ops")
    assert done.returncode == 0, done.stderr
    assert record_at(authed, run_id, 5).approval.approver == "ops"
