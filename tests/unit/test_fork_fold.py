"""Fork, as pure functions: Fold(Fork(r, N)) is the fold of r's first N records, but for the run's names and claim.

The fork's records are built and folded by the same functions ForkRun uses
(``forking.fork_records`` and ``forking.fold_fork``), over records encoded by
``core/records.py``, with no server, store or clock in between.
"""

from __future__ import annotations

import hashlib

import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import given, settings
from hypothesis import strategies as st

from runjournal.v1 import records_pb2, state_pb2
from runjournal_server.core import records
from runjournal_server.core.authorship import refuse_server_written
from runjournal_server.core.errors import InvalidRecordError
from runjournal_server.core.fold import fold_stored
from runjournal_server.runs.forking import Prefix, fold_fork, fork_records
from tests.support import builders as b
from tests.support.journals import valid_journals

FORK_ID = "fork-1"
CREATED_AT = Timestamp(seconds=1_800_000_000)
NAMING_FIELDS = ("run_id", "claim_token", "claimed_by")
"""What a fork changes on purpose: the run it is, and who holds it."""
META_NAMING_FIELDS = ("run_id", "created_at", "task_id", "forked_from")


def encoded(journal: list[records_pb2.JournalRecord]) -> list[records.StoredRecord]:
    """The journal as stored. ``valid_journals`` folds; storing also needs every field the schema requires."""
    for record in journal:
        if record.HasField("assistant") and not record.assistant.stop_reason:
            record.assistant.stop_reason = records_pb2.STOP_REASON_END_TURN
    return [records.encode(record) for record in journal]


def fork_of(stored: list[records.StoredRecord], at_seq: int) -> list[records.StoredRecord]:
    return fork_records(
        Prefix.of(stored[:at_seq]),
        b.RUN_ID,
        FORK_ID,
        created_at=CREATED_AT,
        max_record_bytes=records.DEFAULT_MAX_RECORD_BYTES,
    )


def without_names(state: state_pb2.RunState) -> state_pb2.RunState:
    copy = state_pb2.RunState()
    copy.CopyFrom(state)
    for name in NAMING_FIELDS:
        copy.ClearField(name)
    for name in META_NAMING_FIELDS:
        copy.meta.ClearField(name)
    return copy


@settings(max_examples=150, deadline=None)
@given(journal=valid_journals(max_records=30), data=st.data())
def test_the_fold_of_a_fork_is_the_fold_of_the_prefix_but_for_its_names_and_claim(journal, data) -> None:
    stored = encoded(journal)
    for at_seq in range(1, len(stored) + 1):
        fork = fork_of(stored, at_seq)
        state = fold_fork(b.RUN_ID, fork).state()
        expected = fold_stored(stored[:at_seq]).state()
        assert without_names(state) == without_names(expected), at_seq
        assert (state.run_id, state.meta.run_id, state.last_seq) == (FORK_ID, FORK_ID, at_seq)
        assert (state.claim_token, state.claimed_by) == (1, "")  # the source's claims never hold the fork
        assert state.meta.created_at == CREATED_AT
        assert [item.line for item in fork[1:]] == [item.line for item in stored[1:at_seq]]


@settings(max_examples=50, deadline=None)
@given(journal=valid_journals(max_records=20))
def test_forked_from_names_the_source_its_seq_and_the_hash_of_its_lines(journal) -> None:
    stored = encoded(journal)
    at_seq = len(stored)
    meta = fork_of(stored, at_seq)[0]
    assert meta.record is not None
    origin = meta.record.meta.forked_from
    digest = hashlib.sha256(b"".join(item.line + b"\n" for item in stored)).hexdigest()
    assert (origin.run_id, origin.seq, origin.prefix_sha256) == (b.RUN_ID, at_seq, digest)
    assert records.decode(meta.line).record == meta.record  # the fork's meta reads back as written


def test_the_fork_drops_the_task_and_keeps_the_rest_of_the_meta() -> None:
    source = b.meta(task_id="task-9", labels={"team": "a"})
    (meta,) = fork_of(encoded([source]), 1)
    assert meta.record is not None
    assert meta.record.meta.task_id == ""
    assert meta.record.meta.labels == source.meta.labels
    assert meta.record.meta.prompt == source.meta.prompt
    assert meta.record.meta.fingerprint == source.meta.fingerprint


def test_a_claim_in_the_fork_itself_holds_it() -> None:
    stored = encoded([b.meta(), b.claim(2, "w-source"), b.assistant(3, 1, ["c1"])])
    fork = [*fork_of(stored, 3), records.encode(b.claim(4, "w-fork"))]
    state = fold_fork(b.RUN_ID, fork).state()
    assert (state.claim_token, state.claimed_by) == (4, "w-fork")
    assert state.pending.assistant_seq == 3  # the claim after the fork left the pending batch alone


def test_a_forks_source_claims_below_its_seq_set_nothing_and_a_fork_of_a_fork_counts_its_own() -> None:
    stored = encoded([b.meta(), b.claim(2, "w-source")])
    fork = [*fork_of(stored, 2), records.encode(b.claim(3, "w-fork"))]
    again = fork_records(
        Prefix.of(fork), FORK_ID, "fork-2", created_at=CREATED_AT, max_record_bytes=records.DEFAULT_MAX_RECORD_BYTES
    )
    state = fold_fork(FORK_ID, again).state()
    assert (state.claim_token, state.claimed_by, state.meta.forked_from.run_id) == (1, "", FORK_ID)


def test_a_meta_a_client_sends_with_forked_from_is_refused() -> None:
    record = b.meta()
    record.meta.forked_from.CopyFrom(records_pb2.ForkOrigin(run_id="src", seq=3, prefix_sha256="0" * 64))
    records.encode(record)  # well-formed: a stored fork's meta is valid
    with pytest.raises(InvalidRecordError) as refused:
        refuse_server_written(record)
    assert refused.value.field == "meta.forked_from"


@pytest.mark.parametrize(
    ("origin", "field"),
    [
        (records_pb2.ForkOrigin(run_id="a.b", seq=3, prefix_sha256="0" * 64), "meta.forked_from.run_id"),
        (records_pb2.ForkOrigin(run_id="src", seq=0, prefix_sha256="0" * 64), "meta.forked_from.seq"),
        (records_pb2.ForkOrigin(run_id="src", seq=3, prefix_sha256="A" * 64), "meta.forked_from.prefix_sha256"),
    ],
)
def test_a_malformed_forked_from_is_an_invalid_record(origin: records_pb2.ForkOrigin, field: str) -> None:
    record = b.meta()
    record.meta.forked_from.CopyFrom(origin)
    with pytest.raises(InvalidRecordError) as refused:
        records.encode(record)
    assert refused.value.field == field
