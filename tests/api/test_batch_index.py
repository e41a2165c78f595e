"""AppendBatch refusals about one record name its position in the request (issue 10, item 15).

``index`` (0-based, in the ErrorInfo metadata) is what the proto and the
client promise; a refusal about the batch as a whole or about the run (a
stale claim token) carries none, and neither does a single Append.
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc
import pytest

from runjournal.error_metadata import ERROR_METADATA
from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc
from runjournal.v1.records_pb2 import JournalRecord
from tests.api.rpc import error_info, new_run_id
from tests.support import builders as b

JournalStub = journal_service_pb2_grpc.JournalServiceStub
ONE_MIB = 1024 * 1024


def created_run(stub: JournalStub, last_seq: int = 3) -> str:
    """A run holding meta, then notes "n2".."n<last_seq>", written by its creator (claim token 1)."""
    run_id = new_run_id("batch-index")
    records = [b.meta(run_id=run_id), *(b.note(seq, f"n{seq}") for seq in range(2, last_seq + 1))]
    stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=records))
    return run_id


def refused_batch(stub: JournalStub, run_id: str, records: Sequence[JournalRecord]) -> tuple[str, dict[str, str]]:
    with pytest.raises(grpc.RpcError) as caught:
        stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=list(records)))
    info = error_info(caught.value)
    metadata = dict(info.metadata)
    assert set(metadata) <= set(ERROR_METADATA[info.reason]), metadata
    return info.reason, metadata


def test_an_invalid_record_names_its_position(stub: JournalStub) -> None:
    run_id = created_run(stub)
    bad = JournalRecord(seq=6, tool_result=b.result(6, "").tool_result)  # an empty tool_use id
    reason, metadata = refused_batch(stub, run_id, [b.note(4), b.note(5), bad])
    assert (reason, metadata["index"], metadata["seq"]) == ("INVALID_RECORD", "2", "6")


def test_an_invalid_record_in_a_creating_batch_names_its_position(stub: JournalStub) -> None:
    run_id = new_run_id("batch-index")
    reason, metadata = refused_batch(stub, run_id, [b.meta(run_id=run_id), b.note(2), JournalRecord(seq=3)])
    assert (reason, metadata["index"]) == ("INVALID_RECORD", "2")


def test_a_meta_naming_another_run_names_its_position(stub: JournalStub) -> None:
    run_id = new_run_id("batch-index")
    reason, metadata = refused_batch(stub, run_id, [b.meta(run_id=run_id + "-other"), b.note(2)])
    assert (reason, metadata["field"], metadata["index"]) == ("INVALID_RECORD", "meta.run_id", "0")


def test_a_record_out_of_sequence_names_its_position(stub: JournalStub) -> None:
    run_id = created_run(stub)
    reason, metadata = refused_batch(stub, run_id, [b.note(4), b.note(5), b.note(7)])
    assert (reason, metadata["field"], metadata["index"]) == ("INVALID_ARGUMENT", "records[2].seq", "2")


def test_an_oversized_record_names_its_position(stub: JournalStub) -> None:
    run_id = created_run(stub)
    # Just over the default 1 MiB record limit: the request itself stays within any sane message limit.
    big = b.note(5, "x" * ONE_MIB)
    reason, metadata = refused_batch(stub, run_id, [b.note(4), big])
    assert (reason, metadata["index"]) == ("RECORD_TOO_LARGE", "1")


def test_a_conflict_names_the_conflicting_record(stub: JournalStub) -> None:
    run_id = created_run(stub)
    reason, metadata = refused_batch(stub, run_id, [b.note(2, "n2"), b.note(3, "not n3"), b.note(4)])
    assert (reason, metadata["seq"], metadata["index"]) == ("SEQ_CONFLICT", "3", "1")


def test_a_gap_names_the_first_new_record(stub: JournalStub) -> None:
    run_id = created_run(stub)
    reason, metadata = refused_batch(stub, run_id, [b.note(6), b.note(7)])
    assert (reason, metadata["seq"], metadata["index"]) == ("SEQ_GAP", "6", "0")


def test_a_gap_after_verified_duplicates_names_the_first_new_record(stub: JournalStub) -> None:
    run_id = created_run(stub)
    # seq 3 is a verified duplicate; no record is refused for a gap there, so the batch is only out of sequence.
    reason, metadata = refused_batch(stub, run_id, [b.note(3, "n3"), b.note(5)])
    assert (reason, metadata["index"]) == ("INVALID_ARGUMENT", "1")


def test_a_different_meta_for_an_existing_run_names_the_meta(stub: JournalStub) -> None:
    run_id = created_run(stub)
    reason, metadata = refused_batch(stub, run_id, [b.meta(run_id=run_id, prompt="another"), b.note(2)])
    assert (reason, metadata["index"]) == ("RUN_EXISTS", "0")


def test_a_stale_claim_token_is_about_the_run_not_a_record(stub: JournalStub) -> None:
    run_id = created_run(stub)
    stub.Claim(pb.ClaimRequest(run_id=run_id, worker_id="w2", fingerprint=b.fingerprint()))
    reason, metadata = refused_batch(stub, run_id, [b.note(5), b.note(6)])
    assert reason == "RUN_CLAIMED" and "index" not in metadata


def test_a_single_append_refusal_carries_no_index(stub: JournalStub) -> None:
    run_id = created_run(stub)
    with pytest.raises(grpc.RpcError) as caught:
        stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(9)))
    info = error_info(caught.value)
    assert info.reason == "SEQ_GAP" and "index" not in info.metadata
