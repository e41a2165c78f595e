"""Append at seq 1, creation batches and appended reconfigures, over real gRPC on both backends.

* A non-meta record at seq 1 of an existing run is a SEQ_CONFLICT, not RUN_EXISTS.
* A reconfigure a worker appends obeys the resume gate's classes, as Claim does
  without force: a provider change (hard) or a model change (blocking) is
  refused, and its ``changed_fields`` must be the truth.
* A creation batch (meta and more) is stored whole or not at all.
"""

from __future__ import annotations

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from tests.api.rpc import error_info, journal_bytes, new_run_id, reason
from tests.support import builders as b


def create(stub, run_id: str) -> None:
    stub.Append(pb.AppendRequest(run_id=run_id, record=b.meta(run_id=run_id)))


def refused(call) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value


def test_non_meta_record_at_seq_1_of_an_existing_run_is_a_seq_conflict(stub, journal_server):
    run_id = new_run_id()
    create(stub, run_id)
    stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.assistant(2, 1)))
    before = journal_bytes(journal_server, run_id)
    err = refused(lambda: stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(1))))
    assert err.code() == grpc.StatusCode.ABORTED
    assert reason(err) == "SEQ_CONFLICT"
    assert error_info(err).metadata["last_seq"] == "2"
    assert journal_bytes(journal_server, run_id) == before


def test_a_different_meta_at_seq_1_is_still_run_exists(stub, journal_server):
    run_id = new_run_id()
    create(stub, run_id)
    err = refused(lambda: stub.Append(pb.AppendRequest(run_id=run_id, record=b.meta(run_id=run_id, prompt="other"))))
    assert reason(err) == "RUN_EXISTS"


def test_appended_reconfigure_changing_the_provider_is_refused_and_force_claim_stays_refused(stub, journal_server):
    run_id = new_run_id()
    create(stub, run_id)
    before = journal_bytes(journal_server, run_id)
    switch = b.reconfigure(2, b.fingerprint(provider="openai"), changed=["provider"])
    err = refused(lambda: stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=switch)))
    assert reason(err) == "RESUME_REFUSED"
    assert "provider" in error_info(err).metadata["fields"]
    assert journal_bytes(journal_server, run_id) == before
    # The provider in force is still the meta's: a forced claim under the other one is refused.
    claim = pb.ClaimRequest(run_id=run_id, worker_id="w2", fingerprint=b.fingerprint(provider="openai"), force=True)
    assert reason(refused(lambda: stub.Claim(claim))) == "RESUME_REFUSED"
    assert journal_bytes(journal_server, run_id) == before


def test_appended_reconfigure_crossing_a_blocking_field_needs_the_force_only_claim_carries(stub, journal_server):
    run_id = new_run_id()
    create(stub, run_id)
    before = journal_bytes(journal_server, run_id)
    switch = b.reconfigure(2, b.fingerprint(model="claude-y"), changed=["model"])
    err = refused(lambda: stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=switch)))
    assert reason(err) == "RESUME_REFUSED"
    assert journal_bytes(journal_server, run_id) == before


def test_appended_reconfigure_of_a_budget_is_allowed_when_it_names_exactly_what_changed(stub, journal_server):
    run_id = new_run_id()
    create(stub, run_id)
    lying = b.reconfigure(2, b.fingerprint(max_tokens=1234), changed=["max_tokens", "model"])
    err = refused(lambda: stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=lying)))
    assert reason(err) == "INVALID_RECORD"
    honest = b.reconfigure(2, b.fingerprint(max_tokens=1234), changed=["max_tokens"])
    assert stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=honest)).last_seq == 2
    state = stub.Fold(pb.FoldRequest(run_id=run_id)).state
    assert state.effective_fingerprint.max_tokens == 1234


def test_creation_batch_refused_in_its_last_record_leaves_no_run(stub, journal_server):
    run_id = new_run_id()
    batch = [b.meta(run_id=run_id), b.assistant(2, 1, ["c1"]), b.result(3, "c-unknown")]
    err = refused(lambda: stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, records=batch)))
    assert reason(err) == "INVALID_RECORD"
    assert journal_bytes(journal_server, run_id) == b""
    listed = stub.ListRuns(pb.ListRunsRequest(page_size=1000)).runs
    assert run_id not in {summary.run_id for summary in listed}


def test_creation_batch_lands_whole_and_its_retry_is_a_verified_duplicate(stub, journal_server):
    run_id = new_run_id()
    batch = [b.meta(run_id=run_id), b.assistant(2, 1, ["c1"]), b.result(3, "c1")]
    first = stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, records=batch))
    assert (first.first_seq, first.duplicates, first.last_seq) == (1, 0, 3)
    again = stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, records=batch))
    assert (again.duplicates, again.last_seq) == (3, 3)
    assert [r.record.seq for r in stub.Read(pb.ReadRequest(run_id=run_id))] == [1, 2, 3]


def test_creation_batch_with_a_token_other_than_the_creators_is_refused(stub, journal_server):
    run_id = new_run_id()
    batch = [b.meta(run_id=run_id), b.assistant(2, 1, ["c1"])]
    err = refused(lambda: stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=7, records=batch)))
    assert reason(err) == "RUN_CLAIMED"
    assert journal_bytes(journal_server, run_id) == b""


def test_fold_as_of_a_past_seq_reads_only_that_prefix(stub, journal_server):
    run_id = new_run_id()
    create(stub, run_id)
    for seq in range(2, 12):
        stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(seq, f"n{seq}")))
    past = stub.Fold(pb.FoldRequest(run_id=run_id, as_of_seq=5)).state
    assert past.last_seq == 5
    err = refused(lambda: stub.Fold(pb.FoldRequest(run_id=run_id, as_of_seq=12)))
    assert reason(err) == "INVALID_ARGUMENT"
