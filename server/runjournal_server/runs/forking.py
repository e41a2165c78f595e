"""ForkRun: a new run made of a prefix of another, its meta naming where it branched off.

The rules, stated once:

* The fork's records 2..at_seq are the source's records as read, reused:
  their lines are the source's stored bytes, never re-encoded, so the fork
  holds exactly what the source held (a record an older writer stored stays
  as it was).
* Its meta is the source's with the fork's run id, a new ``created_at``, no
  task (the task is the source's to complete: a fork answering it too would
  race it), no ``spawned_by`` (a fork of a child would answer the child's
  parent a second time) and ``forked_from``: the source, the seq copied up to, and the
  SHA-256 of the source's lines 1..seq, each followed by a newline, so the
  fork can prove its prefix even after the source is gone.
* Only acknowledged records are copied (``Reads.read_prefix``).
* The whole fork is folded before anything is written: a prefix that does
  not fold (a damaged source) writes nothing and is CORRUPT_JOURNAL naming
  the source. The fold is the new run's warm state afterwards.
* Claims copied from the source set nothing in the fork (``core/fold.py``):
  the fork's token is 1, the forker's.

* The fork is created whole, in one creation (``Writer.create``), under the
  new run's lock: a run of that id is RUN_EXISTS.

The prefix is held once: the records read are the fork's records, and the
fold keeps only the state.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from google.protobuf.timestamp_pb2 import Timestamp

from runjournal.v1 import records_pb2
from runjournal_server.core.errors import CorruptJournalError, InvalidArgumentError, RunExistsError
from runjournal_server.core.fold import Folder, JournalRuleError, fold_stored
from runjournal_server.core.ids import validate_run_id
from runjournal_server.core.records import StoredRecord, encode
from runjournal_server.runs.handles import FOLD_ON_LOOP_RECORDS, RunHandles
from runjournal_server.runs.reading import Reads
from runjournal_server.runs.writing import Writer

MAX_FORK_SEQ = (1 << 31) - 1
"""``ForkOrigin.seq`` is an int32, as every number in a record payload is."""


@dataclass(frozen=True)
class Prefix:
    """The source's records 1..seq as read, and the hash ``forked_from`` records of them."""

    records: list[StoredRecord]
    sha256: str

    @classmethod
    def of(cls, stored: list[StoredRecord]) -> Prefix:
        """``stored`` (records 1..N of one run) and the lower-case hex SHA-256 of their lines, each + newline."""
        digest = hashlib.sha256()
        for item in stored:
            digest.update(item.line)
            digest.update(b"\n")
        return cls(stored, digest.hexdigest())


@dataclass(frozen=True)
class Fork:
    """A fork ready to create: its records (the new meta, then the source's) and their fold."""

    records: list[StoredRecord]
    folder: Folder
    origin: records_pb2.ForkOrigin


def check_at_seq(at_seq: int) -> None:
    """Refuse an ``at_seq`` no run can be forked at (beyond the last seq is found when reading)."""
    if not 0 <= at_seq <= MAX_FORK_SEQ:
        raise InvalidArgumentError("at_seq", f"must be 0 (every record) or a seq from 1 to {MAX_FORK_SEQ}")


def fork_records(
    prefix: Prefix, source_run_id: str, new_run_id: str, *, created_at: Timestamp, max_record_bytes: int
) -> list[StoredRecord]:
    """The fork's records: its meta (encoded here), then the source's records 2..N as they are. Pure."""
    source = prefix.records[0].record
    assert source is not None and source.HasField("meta"), "a read run starts with its meta"
    meta = records_pb2.Meta()
    meta.CopyFrom(source.meta)
    meta.run_id = new_run_id
    meta.created_at.CopyFrom(created_at)
    meta.ClearField("task_id")
    meta.ClearField("spawned_by")  # a fork is nobody's child: only the source answers its parent's call
    meta.forked_from.CopyFrom(
        records_pb2.ForkOrigin(run_id=source_run_id, seq=prefix.records[-1].seq, prefix_sha256=prefix.sha256)
    )
    encoded = encode(records_pb2.JournalRecord(seq=1, meta=meta), max_record_bytes=max_record_bytes)
    return [encoded, *prefix.records[1:]]


def fold_fork(source_run_id: str, fork: Sequence[StoredRecord]) -> Folder:
    """Fold the whole fork; a rule its copied records break is the source's damage (CORRUPT_JOURNAL)."""
    try:
        return fold_stored(fork)
    except JournalRuleError as err:
        raise CorruptJournalError(source_run_id, err.detail, seq=err.seq) from err


def plan_sync(prefix: Prefix, source_run_id: str, new_run_id: str, *, max_record_bytes: int) -> Fork:
    """The fork's records and their fold, checked: nothing is written until this has passed."""
    created_at = Timestamp()
    created_at.GetCurrentTime()
    new = fork_records(prefix, source_run_id, new_run_id, created_at=created_at, max_record_bytes=max_record_bytes)
    folder = fold_fork(source_run_id, new)
    meta = new[0].record
    assert meta is not None
    return Fork(new, folder, meta.meta.forked_from)


async def plan(prefix: Prefix, source_run_id: str, new_run_id: str, *, max_record_bytes: int) -> Fork:
    """``plan_sync``, a long fork's in a thread: folding 10,000 records must not stall the other runs."""
    if len(prefix.records) < FOLD_ON_LOOP_RECORDS:
        return plan_sync(prefix, source_run_id, new_run_id, max_record_bytes=max_record_bytes)
    return await asyncio.to_thread(plan_sync, prefix, source_run_id, new_run_id, max_record_bytes=max_record_bytes)


class Forking:
    """ForkRun over the server's run handles."""

    def __init__(self, handles: RunHandles, reads: Reads, writer: Writer, *, max_record_bytes: int) -> None:
        self._handles = handles
        self._reads = reads
        self._writer = writer
        self._max_record_bytes = max_record_bytes

    async def fork(self, run_id: str, at_seq: int, new_run_id: str) -> Fork:
        """Create ``new_run_id`` from records 1..at_seq (0: every acknowledged record) of ``run_id``."""
        validate_run_id(run_id)
        validate_run_id(new_run_id, "new_run_id")
        check_at_seq(at_seq)
        found = await self._reads.read_prefix(run_id, at_seq)
        if at_seq and len(found) != at_seq:
            raise InvalidArgumentError(
                "at_seq", f"run {run_id!r} has {len(found)} records: fork at 1..{len(found)}, or 0 for every record"
            )
        fork = await plan(Prefix.of(found), run_id, new_run_id, max_record_bytes=self._max_record_bytes)
        async with self._handles.use(new_run_id) as slot:
            if slot.journal is not None:
                raise RunExistsError(new_run_id)
            await self._writer.create(slot, fork.records, fork.folder)
        return fork
