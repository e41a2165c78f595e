"""Parity: the same RPC sequence on a file server and a JetStream server gives the same answers and the same bytes.

Every RPC of the sequence is sent to both servers and their responses are
compared, then every run is read (stored lines), folded (now and as of an
earlier seq) and listed (with every filter, and page by page). Creation times
come from the metas the test sends, so both backends get identical metas; the
claims name their host and pid, so the claim records are identical too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc, records_pb2, state_pb2
from tests.conftest import new_stream_target
from tests.servers import ServerProcess
from tests.support import builders as b

SUSPENDED = records_pb2.TERMINAL_REASON_SUSPENDED


@dataclass
class Twins:
    """The file server's stub and the JetStream server's, driven in lockstep."""

    file: journal_service_pb2_grpc.JournalServiceStub
    jetstream: journal_service_pb2_grpc.JournalServiceStub
    compared: list[str] = field(default_factory=list)

    def call(self, rpc: str, request: Message) -> Message:
        """Send ``request`` to both; the answers (or the refusals) must be the same. Returns the answer."""
        on_file = _answer(getattr(self.file, rpc), request)
        on_stream = _answer(getattr(self.jetstream, rpc), request)
        assert on_file == on_stream, f"{rpc}({request}) differs:\nfile:      {on_file}\njetstream: {on_stream}"
        self.compared.append(rpc)
        assert not isinstance(on_file, tuple), f"{rpc} was refused on both: {on_file}"
        return on_file

    def read(self, run_id: str, from_seq: int = 0) -> list[pb.ReadResponse]:
        on_file = list(self.file.Read(pb.ReadRequest(run_id=run_id, from_seq=from_seq)))
        on_stream = list(self.jetstream.Read(pb.ReadRequest(run_id=run_id, from_seq=from_seq)))
        assert on_file == on_stream, run_id
        self.compared.append("Read")
        return on_file


def _answer(method: Callable[[Message], Any], request: Message) -> Message | tuple[str, str]:
    try:
        answer = method(request)
        for summary in getattr(answer, "runs", ()):
            # When each store stamped the last record: a time, not part of what the backends must agree on.
            assert summary.HasField("updated_at")
            summary.ClearField("updated_at")
        return answer  # type: ignore[no-any-return]
    except grpc.RpcError as err:
        return (err.code().name, err.details() or "")


@pytest.fixture
def twins(nats_server, server_factory, tmp_path) -> Iterator[Twins]:
    file_server: ServerProcess = server_factory(tmp_path / "file")
    stream_server: ServerProcess = server_factory(
        tmp_path / "unused", *new_stream_target().server_args(nats_server.url)
    )
    with grpc.insecure_channel(file_server.address) as a, grpc.insecure_channel(stream_server.address) as c:
        yield Twins(journal_service_pb2_grpc.JournalServiceStub(a), journal_service_pb2_grpc.JournalServiceStub(c))


def meta(run_id: str, minute: int, labels: dict[str, str], task_id: str = "") -> records_pb2.JournalRecord:
    record = b.meta(run_id=run_id, labels=labels, task_id=task_id, prompt=f"help with {run_id} — ✓")
    record.meta.created_at.FromSeconds(1_700_000_000 + 60 * minute)
    return record


def claim(run_id: str, worker: str, **fingerprint: object) -> pb.ClaimRequest:
    return pb.ClaimRequest(
        run_id=run_id,
        worker_id=worker,
        host="host-1",
        pid=4242,
        reason="resume after a crash",
        fingerprint=b.fingerprint(**fingerprint),
        force=bool(fingerprint),
    )


def append(run_id: str, token: int, *records: records_pb2.JournalRecord) -> Message:
    if len(records) == 1:
        return pb.AppendRequest(run_id=run_id, claim_token=token, record=records[0])
    return pb.AppendBatchRequest(run_id=run_id, claim_token=token, records=list(records))


def needs_approval(seq: int, call_id: str) -> records_pb2.JournalRecord:
    deferral = records_pb2.Deferral(tool_use_id=call_id, reason="touches production", expected_answerer="ops")
    deferral.needs_approval = True
    return records_pb2.JournalRecord(seq=seq, deferral=deferral)


def play(twins: Twins) -> None:
    """The sequence: one long run through every kind of write, and four short ones in other states."""

    def send(request: Message) -> Message:
        return twins.call("AppendBatch" if isinstance(request, pb.AppendBatchRequest) else "Append", request)

    run = "par-main"
    send(append(run, 1, meta(run, 1, {"team": "a", "kind": "main"}, task_id="task-1")))
    send(append(run, 1, b.assistant(2, 1, ["c1", "c2"]), b.result(3, "c1")))
    token = twins.call("Claim", claim(run, "worker-2")).claim_token  # type: ignore[attr-defined]
    assert token == 4
    send(append(run, token, b.result(5, "c2", "ünïcödé result ✓")))
    send(append(run, token, b.assistant(6, 2, ["c3", "c4"])))
    send(append(run, token, b.deferral(7, "c3")))
    send(append(run, token, needs_approval(8, "c4")))
    send(append(run, token, b.terminal(9, SUSPENDED, "waiting for ops")))
    twins.call("Answer", pb.AnswerRequest(run_id=run, tool_use_id="c3", content=[b.text("the answer")]))
    twins.call(
        "Approve",
        pb.ApproveRequest(
            run_id=run, tool_use_id="c4", decision=records_pb2.DECISION_APPROVED, approver="alice", reason="ok"
        ),
    )
    reconfigured = twins.call("Claim", claim(run, "worker-3", model="claude-y"))  # forced: writes a reconfigure
    assert reconfigured.gate.reconfigured and reconfigured.last_seq == 13  # type: ignore[attr-defined]
    token = reconfigured.claim_token  # type: ignore[attr-defined]
    send(append(run, token, b.result(14, "c4")))
    send(append(run, token, b.note(15, "halfway — 50 %")))
    send(append(run, token, b.assistant(16, 3, say="all done"), b.terminal(17)))
    send(append(run, token, b.user(18, "and one more thing")))
    send(append(run, token, b.assistant(19, 4, say="done again"), b.terminal(20)))
    # Refusals are answered alike too: a stale token, a conflict, a gap.
    for request in (
        append(run, 1, b.note(21)),
        append(run, token, b.note(20)),
        append(run, token, b.note(23)),
    ):
        assert isinstance(_answer(twins.file.Append, request), tuple)
        assert _answer(twins.file.Append, request) == _answer(twins.jetstream.Append, request)
    send(append(run, token, b.terminal(20)))  # a retried record: a verified duplicate on both

    send(append("par-waiting", 1, meta("par-waiting", 2, {"team": "a"}, "task-2"), b.assistant(2, 1, ["w1"])))
    send(append("par-waiting", 1, b.deferral(3, "w1"), b.terminal(4, SUSPENDED)))
    send(append("par-approval", 1, meta("par-approval", 3, {"team": "b"}), b.assistant(2, 1, ["x1"])))
    send(append("par-approval", 1, needs_approval(3, "x1"), b.terminal(4, SUSPENDED)))
    send(append("par-pending", 1, meta("par-pending", 4, {"team": "b"}, "task-1"), b.assistant(2, 1, ["p1", "p2"])))
    send(append("par-pending", 1, b.result(3, "p1")))
    send(append("par-error", 1, meta("par-error", 5, {}), b.assistant(2, 1)))
    send(append("par-error", 1, b.terminal(3, records_pb2.TERMINAL_REASON_ERROR, "the model API is down")))


RUNS = ("par-main", "par-waiting", "par-approval", "par-pending", "par-error")


def test_the_same_rpcs_give_the_same_bytes_folds_reads_and_listings_on_both_backends(twins):
    play(twins)
    for run_id in RUNS:
        stored = twins.read(run_id)
        assert [r.record.seq for r in stored] == list(range(1, len(stored) + 1))
        assert all(r.stored_line for r in stored)
        twins.call("Fold", pb.FoldRequest(run_id=run_id))
    assert len(twins.read("par-main")) == 20
    assert [r.record.WhichOneof("payload") for r in twins.read("par-main", from_seq=12)][:2] == [
        "claim",
        "reconfigure",
    ]
    for as_of in (3, 8, 11, 13, 17):
        twins.call("Fold", pb.FoldRequest(run_id="par-main", as_of_seq=as_of))
    assert twins.call("Fold", pb.FoldRequest(run_id="par-main")).state.effective_fingerprint.model == "claude-y"  # type: ignore[attr-defined]

    listings = {
        "all": pb.ListRunsRequest(),
        "suspended": pb.ListRunsRequest(status=state_pb2.RUN_STATUS_SUSPENDED),
        "open": pb.ListRunsRequest(status=state_pb2.RUN_STATUS_OPEN),
        "completed": pb.ListRunsRequest(status=state_pb2.RUN_STATUS_COMPLETED),
        "error": pb.ListRunsRequest(status=state_pb2.RUN_STATUS_ERROR),
        "team a": pb.ListRunsRequest(labels={"team": "a"}),
        "team b, kind main": pb.ListRunsRequest(labels={"team": "b", "kind": "main"}),
        "inbox": pb.ListRunsRequest(waiting_for_person=True),
        "inbox of team b": pb.ListRunsRequest(waiting_for_person=True, labels={"team": "b"}),
        "task-1": pb.ListRunsRequest(task_id="task-1"),
        "task-1, open": pb.ListRunsRequest(task_id="task-1", status=state_pb2.RUN_STATUS_OPEN),
    }
    seen = {name: [s.run_id for s in twins.call("ListRuns", request).runs] for name, request in listings.items()}  # type: ignore[attr-defined]
    assert seen == {
        "all": ["par-error", "par-pending", "par-approval", "par-waiting", "par-main"],
        "suspended": ["par-approval", "par-waiting"],
        "open": ["par-pending"],
        "completed": ["par-main"],
        "error": ["par-error"],
        "team a": ["par-waiting", "par-main"],
        "team b, kind main": [],
        "inbox": ["par-approval", "par-waiting"],
        "inbox of team b": ["par-approval"],
        "task-1": ["par-pending", "par-main"],
        "task-1, open": ["par-pending"],
    }
    paged: list[str] = []
    token = ""
    while True:
        page = twins.call("ListRuns", pb.ListRunsRequest(page_size=2, page_token=token))
        paged += [s.run_id for s in page.runs]  # type: ignore[attr-defined]
        token = page.next_page_token  # type: ignore[attr-defined]
        if not token:
            break
    assert paged == seen["all"]
    assert twins.compared.count("ListRuns") == len(listings) + 3
