"""Requests to stored records: a worker's batch (or one out-of-band record) validated and encoded.

The request rules of an append live here: at least one and at most
``MAX_BATCH_RECORDS`` records, consecutive seqs, a meta naming the run it
creates, and nothing only the server writes (``core/authorship.py`` says what
and why; a claim record or a meta's ``forked_from`` is refused here whatever
the auth). Encoding a large request runs in a thread, so one client's 4 MiB
batch never stalls the other runs' calls on the event loop.

A refusal of an AppendBatch names the record it refuses by its position in the
request (``indexing_refusals``), found from what the error already says, so no
rule has to know it runs in a batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Iterator, Sequence

from runjournal.v1 import records_pb2
from runjournal_server.core import records
from runjournal_server.core.authorship import refuse_server_written
from runjournal_server.core.errors import InvalidArgumentError, InvalidRecordError, JournalError, Reason

MAX_BATCH_RECORDS = 1000
ENCODE_ON_LOOP_BYTES = 64 * 1024
"""Requests smaller than this (protobuf wire bytes) are encoded on the event loop: a thread hop costs more."""


async def encode_batch(
    run_id: str, batch: Sequence[records_pb2.JournalRecord], *, max_record_bytes: int
) -> list[records.StoredRecord]:
    """Validate and encode a worker's batch; a large one off the event loop."""
    if not batch:
        raise InvalidArgumentError("records", "at least one record is required")
    if len(batch) > MAX_BATCH_RECORDS:
        raise InvalidArgumentError("records", f"at most {MAX_BATCH_RECORDS} records per batch, got {len(batch)}")
    # Sized once: upb sizes a record by serializing it, and ``encode`` needs the size again.
    sizes = [record.ByteSize() for record in batch]
    if sum(sizes) < ENCODE_ON_LOOP_BYTES:
        return _encode_batch_sync(run_id, batch, sizes, max_record_bytes)
    return await asyncio.to_thread(_encode_batch_sync, run_id, batch, sizes, max_record_bytes)


async def encode_one(record: records_pb2.JournalRecord, *, max_record_bytes: int) -> records.StoredRecord:
    """Encode one record; a large one off the event loop."""
    size = record.ByteSize()
    if size < ENCODE_ON_LOOP_BYTES:
        return records.encode(record, max_record_bytes=max_record_bytes, wire_size=size)
    return await asyncio.to_thread(records.encode, record, max_record_bytes=max_record_bytes, wire_size=size)


def _encode_batch_sync(
    run_id: str, batch: Sequence[records_pb2.JournalRecord], sizes: Sequence[int], max_record_bytes: int
) -> list[records.StoredRecord]:
    stored = []
    for index, record in enumerate(batch):
        if index and record.seq != batch[index - 1].seq + 1:
            raise InvalidArgumentError(
                f"records[{index}].seq", f"batch records must be consecutive: expected {batch[index - 1].seq + 1}"
            )
        encoded = records.encode(record, max_record_bytes=max_record_bytes, wire_size=sizes[index])
        refuse_server_written(record)
        if encoded.kind == records.Kind.META and record.meta.run_id != run_id:
            raise InvalidRecordError("meta.run_id", f"must equal the run id {run_id!r}, got {record.meta.run_id!r}")
        stored.append(encoded)
    return stored


@contextlib.contextmanager
def indexing_refusals(batch: Sequence[records_pb2.JournalRecord]) -> Iterator[None]:
    """Annotate a refusal raised inside with the ``index`` of the batch record it refuses (``refused_index``)."""
    try:
        yield
    except JournalError as err:
        err.annotate(index=refused_index(err, batch))
        raise


_ABOUT_ONE_RECORD = frozenset({Reason.INVALID_RECORD, Reason.RECORD_TOO_LARGE, Reason.SEQ_GAP, Reason.SEQ_CONFLICT})
_BATCH_FIELD = re.compile(r"records\[(\d+)\]")


def refused_index(err: JournalError, batch: Sequence[records_pb2.JournalRecord]) -> int | None:
    """The 0-based position in an AppendBatch request of the record ``err`` refuses; None when it refuses no one record.

    Found from what the error already names: the refused record's seq (the
    batch's seqs are consecutive, or it is refused before that matters), seq 1
    for RUN_EXISTS (a different meta), the ``records[i]`` of a refused request
    field, or, for a refused record field without a seq (``meta.run_id``), the
    batch's one record of that kind. A stale claim token, a damaged journal or
    a full store concern the run, not a record.
    """
    seq: object = None
    if err.reason in _ABOUT_ONE_RECORD:
        seq = err.typed_metadata.get("seq")
        if seq is None:
            return _only_record_of_kind(str(err.typed_metadata.get("field", "")), batch)
    elif err.reason is Reason.RUN_EXISTS:
        seq = 1
    elif err.reason is Reason.INVALID_ARGUMENT:
        found = _BATCH_FIELD.match(str(err.typed_metadata.get("field", "")))
        return int(found.group(1)) if found and int(found.group(1)) < len(batch) else None
    if not isinstance(seq, int) or not batch:
        return None
    index = seq - batch[0].seq
    return index if 0 <= index < len(batch) and batch[index].seq == seq else None


def _only_record_of_kind(field: str, batch: Sequence[records_pb2.JournalRecord]) -> int | None:
    """For a refusal naming a field (``meta.run_id``) but no seq: the one record of that kind, if only one."""
    kind = field.split(".", 1)[0]
    found = [index for index, record in enumerate(batch) if record.WhichOneof("payload") == kind]
    return found[0] if len(found) == 1 else None
