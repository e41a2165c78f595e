"""ForkRun over real gRPC, on both backends (issue 13, item 3).

A fork's records 2..N are its source's stored bytes; its meta names the
source, the seq and the hash of the source's lines; the source is unchanged;
a pending batch survives and can be answered differently in the fork; the
source's claims do not hold the fork; ListRuns finds forks by parent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from hypothesis import HealthCheck, given, settings

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc, records_pb2, state_pb2
from runjournal_server.api.auth import token_sha256
from tests.api.rpc import error_info, new_run_id
from tests.servers import ServerProcess
from tests.support import builders as b
from tests.support.journals import valid_journals

JournalStub = journal_service_pb2_grpc.JournalServiceStub
BATCH = 1000


def create(stub: JournalStub, run_id: str, journal: list[records_pb2.JournalRecord]) -> None:
    """Store ``journal`` (its meta renamed to ``run_id``) in batches, as a worker would."""
    journal[0].meta.run_id = run_id
    for first in range(0, len(journal), BATCH):
        stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=journal[first : first + BATCH]))


def lines(stub: JournalStub, run_id: str) -> list[bytes]:
    return [item.stored_line for item in stub.Read(pb.ReadRequest(run_id=run_id))]


def fold(stub: JournalStub, run_id: str, as_of_seq: int = 0) -> state_pb2.RunState:
    return stub.Fold(pb.FoldRequest(run_id=run_id, as_of_seq=as_of_seq)).state


def fork(stub: JournalStub, run_id: str, at_seq: int, new_id: str, **kw: object) -> pb.ForkRunResponse:
    return stub.ForkRun(pb.ForkRunRequest(run_id=run_id, at_seq=at_seq, new_run_id=new_id), **kw)  # type: ignore[arg-type]


def refused(call: Callable[[], object]) -> tuple[grpc.StatusCode, str, dict[str, str]]:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    info = error_info(caught.value)
    return caught.value.code(), info.reason, dict(info.metadata)


def without_names(state: state_pb2.RunState) -> state_pb2.RunState:
    copy = state_pb2.RunState()
    copy.CopyFrom(state)
    for name in ("run_id", "claim_token", "claimed_by"):
        copy.ClearField(name)
    for name in ("run_id", "created_at", "task_id", "forked_from"):
        copy.meta.ClearField(name)
    return copy


def waiting_run(stub: JournalStub) -> str:
    """A run claimed by a worker, whose call c1 waits for an answer (a pending batch)."""
    run_id = new_run_id("source")
    create(stub, run_id, [b.meta(task_id="task-1"), b.assistant(2, 1, ["c1", "c2"]), b.result(3, "c2", "done")])
    claim = stub.Claim(pb.ClaimRequest(run_id=run_id, worker_id="w-source", fingerprint=b.fingerprint()))
    assert claim.claim_token == 4
    stub.Append(pb.AppendRequest(run_id=run_id, claim_token=4, record=b.deferral(5, "c1")))
    return run_id


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(journal=valid_journals(max_records=12))
def test_the_fold_of_a_fork_is_the_sources_fold_at_its_seq_but_for_its_names(stub: JournalStub, journal) -> None:
    for index, record in enumerate(journal):  # valid_journals folds; storing also needs every field the schema requires
        if record.HasField("assistant") and not record.assistant.stop_reason:
            record.assistant.stop_reason = records_pb2.STOP_REASON_END_TURN
        if record.HasField("claim") or record.HasField("reconfigure"):
            # Only Claim writes claims, and the gate refuses an appended model change; the unit
            # property (tests/unit/test_fork_fold.py) folds both.
            journal[index] = b.note(record.seq, "a claim or reconfigure was here")
    source = new_run_id("prop")
    create(stub, source, journal)
    for at_seq in range(1, len(journal) + 1):
        forked = new_run_id("fork")
        assert fork(stub, source, at_seq, forked).last_seq == at_seq
        state = fold(stub, forked)
        assert without_names(state) == without_names(fold(stub, source, at_seq))
        assert (state.run_id, state.claim_token, state.claimed_by) == (forked, 1, "")


def test_the_fork_copies_the_sources_bytes_and_leaves_the_source_as_it_was(stub: JournalStub) -> None:
    source = waiting_run(stub)
    before = lines(stub, source)
    answer = fork(stub, source, 0, forked := new_run_id("fork"))
    copied = lines(stub, forked)
    assert lines(stub, source) == before
    assert copied[1:] == before[1:]
    assert (answer.run_id, answer.last_seq) == (forked, 5)
    digest = hashlib.sha256(b"".join(line + b"\n" for line in before)).hexdigest()
    assert (answer.forked_from.run_id, answer.forked_from.seq, answer.forked_from.prefix_sha256) == (source, 5, digest)
    meta = fold(stub, forked).meta
    assert meta.forked_from == answer.forked_from
    assert (meta.run_id, meta.task_id) == (forked, "")


def test_a_fork_at_a_seq_copies_only_that_prefix_and_its_hash_covers_it(stub: JournalStub) -> None:
    source = waiting_run(stub)
    answer = fork(stub, source, 3, forked := new_run_id("fork"))
    prefix = lines(stub, source)[:3]
    assert lines(stub, forked)[1:] == prefix[1:]
    assert answer.forked_from.prefix_sha256 == hashlib.sha256(b"".join(line + b"\n" for line in prefix)).hexdigest()
    assert fold(stub, forked).last_seq == 3


def test_a_pending_batch_survives_the_fork_and_is_answered_differently_there(stub: JournalStub) -> None:
    source = waiting_run(stub)
    fork(stub, source, 0, forked := new_run_id("fork"))
    assert [call.tool_use.id for call in fold(stub, forked).pending.calls] == ["c1", "c2"]
    for run_id, said in ((source, "yes"), (forked, "no")):
        stub.Answer(pb.AnswerRequest(run_id=run_id, tool_use_id="c1", content=[b.text(said)]))
    answers = {run_id: fold(stub, run_id).conversation[-1].content[-1].tool_result for run_id in (source, forked)}
    assert answers[source].content[0].text.text == "yes"
    assert answers[forked].content[0].text.text == "no"


def test_the_sources_claim_token_is_refused_on_the_fork_and_the_forkers_token_is_1(stub: JournalStub) -> None:
    source = waiting_run(stub)
    fork(stub, source, 0, forked := new_run_id("fork"))
    assert fold(stub, forked).claim_token == 1
    _, why, metadata = refused(lambda: stub.Append(pb.AppendRequest(run_id=forked, claim_token=4, record=b.note(6))))
    assert (why, metadata["claim_token"]) == ("RUN_CLAIMED", "1")
    assert stub.Append(pb.AppendRequest(run_id=forked, claim_token=1, record=b.note(6))).seq == 6
    claim = stub.Claim(pb.ClaimRequest(run_id=forked, worker_id="w-fork", fingerprint=b.fingerprint()))
    assert (claim.claim_token, fold(stub, forked).claimed_by) == (7, "w-fork")


def test_fork_refusals_write_nothing(stub: JournalStub) -> None:
    source = waiting_run(stub)
    taken = new_run_id("taken")
    create(stub, taken, [b.meta()])
    before = lines(stub, taken)
    for at_seq in (6, -1):
        code, why, metadata = refused(lambda at_seq=at_seq: fork(stub, source, at_seq, new_run_id("fork")))
        assert (code, why, metadata["field"]) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT", "at_seq")
    assert refused(lambda: fork(stub, source, 0, "bad.id"))[2]["field"] == "new_run_id"
    assert refused(lambda: fork(stub, source, 0, taken))[1] == "RUN_EXISTS"
    assert refused(lambda: fork(stub, source, 0, source))[1] == "RUN_EXISTS"
    missing = new_run_id("fork")
    assert refused(lambda: fork(stub, new_run_id("absent"), 0, missing))[1] == "RUN_NOT_FOUND"
    assert lines(stub, taken) == before
    assert refused(lambda: fold(stub, missing))[1] == "RUN_NOT_FOUND"


def test_a_deleted_source_cannot_be_forked_and_a_deleted_id_cannot_be_forked_into(stub: JournalStub) -> None:
    source, gone = waiting_run(stub), waiting_run(stub)
    stub.DeleteRun(pb.DeleteRunRequest(run_id=gone, expected_last_seq=5))
    assert refused(lambda: fork(stub, gone, 0, new_run_id("fork")))[1] == "RUN_DELETED"
    assert refused(lambda: fork(stub, source, 0, gone))[1] == "RUN_DELETED"
    assert refused(lambda: fold(stub, gone))[1] == "RUN_DELETED"


def test_a_meta_appended_with_forked_from_is_an_invalid_record(stub: JournalStub) -> None:
    run_id = new_run_id("spoof")
    record = b.meta(run_id=run_id)
    record.meta.forked_from.CopyFrom(records_pb2.ForkOrigin(run_id="someone", seq=1, prefix_sha256="0" * 64))
    _, why, metadata = refused(lambda: stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=record)))
    assert (why, metadata["field"]) == ("INVALID_RECORD", "meta.forked_from")
    assert refused(lambda: fold(stub, run_id))[1] == "RUN_NOT_FOUND"


def test_list_runs_finds_the_forks_of_a_parent(stub: JournalStub) -> None:
    source = waiting_run(stub)
    forks = {new_run_id("fork") for _ in range(2)}
    for forked in forks:
        fork(stub, source, 3, forked)
    fork(stub, next(iter(forks)), 0, grandchild := new_run_id("fork"))
    listed = stub.ListRuns(pb.ListRunsRequest(parent_run_id=source, page_size=100)).runs
    assert {summary.run_id for summary in listed} == forks
    assert {summary.parent_run_id for summary in listed} == {source}
    (only,) = stub.ListRuns(pb.ListRunsRequest(parent_run_id=next(iter(forks)))).runs
    assert only.run_id == grandchild


def test_a_fork_of_10000_records_is_created_whole(stub: JournalStub) -> None:
    source = new_run_id("long")
    create(stub, source, [b.meta(), *(b.note(seq, f"step {seq}") for seq in range(2, 10_001))])
    answer = fork(stub, source, 0, forked := new_run_id("fork"))
    assert answer.last_seq == 10_000
    assert lines(stub, forked)[1:] == lines(stub, source)[1:]
    assert stub.Append(pb.AppendRequest(run_id=forked, claim_token=1, record=b.note(10_001))).seq == 10_001
    assert fold(stub, forked).last_seq == 10_001


# ---------------------------------------------------------------- auth

TOKENS = {"team-a": "a-secret", "team-a-ops": "ao-secret"}


@pytest.fixture
def authed(server_factory: Callable[..., ServerProcess], tmp_path: Path) -> Iterator[JournalStub]:
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(
        f'[[tokens]]\nname = "team-a"\nsha256 = "{token_sha256(TOKENS["team-a"])}"\n'
        'run_id_prefixes = ["team-a-"]\nscopes = ["worker"]\n\n'
        f'[[tokens]]\nname = "team-a-ops"\nsha256 = "{token_sha256(TOKENS["team-a-ops"])}"\n'
        'run_id_prefixes = ["team-a-"]\nscopes = ["operator"]\n'
    )
    server = server_factory(tmp_path / "data", "--auth-tokens-file", str(tokens))
    with grpc.insecure_channel(server.address) as channel:
        yield JournalStub(channel)


def bearer(name: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {TOKENS[name]}"),)


def test_a_fork_needs_the_worker_scope_and_both_runs_within_the_tokens_prefixes(authed: JournalStub) -> None:
    source = new_run_id("team-a-src")
    authed.Append(pb.AppendRequest(run_id=source, record=b.meta(run_id=source)), metadata=bearer("team-a"))
    outside = new_run_id("team-b-fork")
    assert refused(lambda: fork(authed, source, 0, outside, metadata=bearer("team-a")))[:2] == (
        grpc.StatusCode.PERMISSION_DENIED,
        "PERMISSION_DENIED",
    )
    foreign = new_run_id("team-b-src")
    assert refused(lambda: fork(authed, foreign, 0, new_run_id("team-a-f"), metadata=bearer("team-a")))[1] == (
        "PERMISSION_DENIED"
    )
    _, why, metadata = refused(lambda: fork(authed, source, 0, new_run_id("team-a-f"), metadata=bearer("team-a-ops")))
    assert (why, metadata.get("scope")) == ("PERMISSION_DENIED", "worker")
    assert authed.ListRuns(pb.ListRunsRequest(), metadata=bearer("team-a")).runs[0].run_id == source  # nothing forked
    inside = new_run_id("team-a-fork")
    assert fork(authed, source, 0, inside, metadata=bearer("team-a")).run_id == inside
