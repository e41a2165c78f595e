"""Requests to stored records: a worker's batch (or one out-of-band record) validated and encoded.

The request rules of an append live here: at least one and at most
``MAX_BATCH_RECORDS`` records, consecutive seqs, a meta naming the run it
creates, and nothing only the server writes (``core/authorship.py`` says what
and why; a claim record or a meta's ``forked_from`` is refused here whatever
the auth). Encoding a large request runs in a thread, so one client's 4 MiB
batch never stalls the other runs' calls on the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from runjournal.v1 import records_pb2
from runjournal_server.core import records
from runjournal_server.core.authorship import refuse_server_written
from runjournal_server.core.errors import InvalidArgumentError, InvalidRecordError

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
    if sum(record.ByteSize() for record in batch) < ENCODE_ON_LOOP_BYTES:
        return _encode_batch_sync(run_id, batch, max_record_bytes)
    return await asyncio.to_thread(_encode_batch_sync, run_id, batch, max_record_bytes)


async def encode_one(record: records_pb2.JournalRecord, *, max_record_bytes: int) -> records.StoredRecord:
    """Encode one record; a large one off the event loop."""
    if record.ByteSize() < ENCODE_ON_LOOP_BYTES:
        return records.encode(record, max_record_bytes=max_record_bytes)
    return await asyncio.to_thread(records.encode, record, max_record_bytes=max_record_bytes)


def _encode_batch_sync(
    run_id: str, batch: Sequence[records_pb2.JournalRecord], max_record_bytes: int
) -> list[records.StoredRecord]:
    stored = []
    for index, record in enumerate(batch):
        if index and record.seq != batch[index - 1].seq + 1:
            raise InvalidArgumentError(
                f"records[{index}].seq", f"batch records must be consecutive: expected {batch[index - 1].seq + 1}"
            )
        encoded = records.encode(record, max_record_bytes=max_record_bytes)
        refuse_server_written(record)
        if encoded.kind == records.Kind.META and record.meta.run_id != run_id:
            raise InvalidRecordError("meta.run_id", f"must equal the run id {run_id!r}, got {record.meta.run_id!r}")
        stored.append(encoded)
    return stored
