"""Copying one run or one task between stores: byte for byte, idempotent by verified duplicates, fold-checked."""

from __future__ import annotations

import enum
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TextIO

from runjournal.v1.state_pb2 import RunState
from runjournal_server.backends.base import Backend, Journal, TaskStore, Tombstone, WriteRaceError
from runjournal_server.core.errors import (
    CorruptJournalError,
    JournalError,
    LastSeqMismatchError,
    RunDeletedError,
    RunExistsError,
    RunLockedError,
    RunNotFoundError,
)
from runjournal_server.core.fold import JournalRuleError, fold_stored
from runjournal_server.core.records import StoredRecord
from runjournal_server.core.sequence import AppendDecision, check_append

BATCH_RECORDS = 500
"""Records per append: half of JetStream's atomic batch limit (1,000, ``jetstream.config.MAX_ATOMIC_BATCH``)."""
BATCH_BYTES = 4 * 1024 * 1024
"""Bytes per append (at least one record): keeps an atomic batch well inside the server's 10 s commit window."""
PLAIN_PROGRESS_SECONDS = 5.0
"""How often progress is printed when stderr is not a terminal (also at every tenth of the way)."""
TTY_PROGRESS_SECONDS = 0.1


# ---------------------------------------------------------------- outcomes


class Status(enum.StrEnum):
    MIGRATED = "migrated"
    PRESENT = "already present"
    FAILED = "failed"
    ABSENT = "absent"
    """Listed by the source but with no complete record: a creation that never became durable."""


@dataclass(frozen=True)
class Outcome:
    kind: str
    """``run`` or ``task``."""
    name: str
    status: Status
    copied: int = 0
    """Records (or task documents) written to the target, or that a dry run would write."""
    message: str = ""


LOCKED_ON_SOURCE = (
    "locked: another process (a server?) holds it on the source and may be writing to it; "
    "stop that server, or retry once it has released the run"
)


class _Refused(Exception):
    """This run or task cannot be migrated; the message says why and what to do."""


# ---------------------------------------------------------------- runs


async def migrate_run(source: Backend, target: Backend, run_id: str, *, dry_run: bool) -> Outcome:
    """Copy one run; the source's writer lock (where there is one) is held until the copy is verified."""
    try:
        journal, stored = await source.open_journal(run_id)
    except RunNotFoundError:
        return Outcome("run", run_id, Status.ABSENT, message="the source holds no complete record of it")
    except RunDeletedError:
        return Outcome("run", run_id, Status.ABSENT, message="deleted in the source: its tombstone is copied instead")
    except RunLockedError:
        return _failed(run_id, LOCKED_ON_SOURCE)
    except JournalError as err:
        return _failed(run_id, _source_problem(err))
    try:
        try:
            want = fold_stored(stored).state()
        except JournalRuleError as err:
            return _failed(run_id, f"corrupt in the source: seq {err.seq} breaks the journal rules: {err.detail}")
        except JournalError as err:
            return _failed(run_id, _source_problem(err))
        copied = await _copy_run(target, run_id, stored, want, dry_run=dry_run)
    except _Refused as err:
        return _failed(run_id, str(err))
    finally:
        await journal.close()
    return Outcome("run", run_id, Status.MIGRATED if copied else Status.PRESENT, copied)


async def migrate_tombstone(target: Backend, tombstone: Tombstone, *, dry_run: bool) -> Outcome:
    """Copy a deleted run's tombstone, so the run cannot be created (or copied) on the target again.

    A copy of the run that an earlier migration put on the target is deleted
    there too, if it is still as the source had it (its last seq is the
    tombstone's); one written to since is refused, and nothing is deleted.
    """
    run_id = tombstone.run_id
    if await target.tombstone(run_id) is not None:
        return Outcome("tombstone", run_id, Status.PRESENT)
    if dry_run:
        return Outcome("tombstone", run_id, Status.MIGRATED, 1)
    try:
        await target.keep_tombstone(tombstone)
    except RunExistsError:
        try:
            await target.delete_run(run_id, tombstone.last_seq)
        except LastSeqMismatchError as err:
            return Outcome(
                "tombstone",
                run_id,
                Status.FAILED,
                message=f"deleted in the source, but the target's copy moved on ({err.message}); delete it there",
            )
        return Outcome("tombstone", run_id, Status.MIGRATED, 1, message="the target's copy was deleted too")
    return Outcome("tombstone", run_id, Status.MIGRATED, 1)


async def migrate_task_tombstone(target: TaskStore, task_id: str, *, dry_run: bool) -> Outcome:
    """Copy a deleted task's tombstone; a copy of the task an earlier migration made is deleted with it."""
    if await target.is_deleted(task_id):
        return Outcome("task tombstone", task_id, Status.PRESENT)
    if not dry_run:
        await target.delete(task_id)
    return Outcome("task tombstone", task_id, Status.MIGRATED, 1)


def _failed(run_id: str, message: str) -> Outcome:
    return Outcome("run", run_id, Status.FAILED, message=message)


def _source_problem(err: JournalError) -> str:
    if isinstance(err, CorruptJournalError):
        return f"corrupt in the source: {err.message}"
    return f"cannot read it from the source ({err.reason}): {err.message}"


async def _copy_run(target: Backend, run_id: str, stored: list[StoredRecord], want: RunState, *, dry_run: bool) -> int:
    """Append what the target lacks and verify the result; the number of records written."""
    journal: Journal | None = None
    try:
        try:
            if dry_run:
                present = await target.load(run_id)
            else:
                journal, present = await target.open_journal(run_id)
        except RunNotFoundError:
            present = []
        except RunLockedError as err:
            raise _Refused(
                "locked on the target: a server there holds it; stop it and run the migration again"
            ) from err
        except JournalError as err:
            raise _Refused(f"cannot read it from the target ({err.reason}): {err.message}") from err
        missing = stored[verified_prefix(stored, present) :]
        if dry_run or not missing:
            return len(missing)
        try:
            if journal is None:
                journal = await target.create_journal(run_id, missing[0])
                missing = missing[1:]
            for batch in batches(missing):
                await journal.append(batch)
        except RunExistsError as err:
            raise _Refused("it was created on the target while this migration ran; run the migration again") from err
        except WriteRaceError as err:
            raise _Refused(
                f"another writer appended to it on the target meanwhile ({err}); run the migration again"
            ) from err
        except JournalError as err:
            raise _Refused(
                f"writing it to the target failed ({err.reason}): {err.message}; run the migration again"
            ) from err
        await _verify(target, run_id, stored, want)
        return len(stored) - len(present)
    finally:
        if journal is not None:
            await journal.close()


def verified_prefix(source: Sequence[StoredRecord], present: Sequence[StoredRecord]) -> int:
    """How many of the source's records the target already holds, each verified byte for byte.

    The append rule's duplicate test at every occupied seq: the same line is a
    duplicate (skipped), a different one a conflict (the run is refused).
    """
    last = len(present)
    for record in source[:last]:
        if check_append(last, record.seq, record.line, present[record.seq - 1].line) is AppendDecision.CONFLICT:
            raise _Refused(
                f"conflict: the target holds a different record at seq {record.seq}; the run was written on both "
                "sides: keep one (move the other away) and run the migration again"
            )
    if last > len(source):
        raise _Refused(
            f"conflict: the target holds {last} records, the source only {len(source)} (did the run go on at the "
            "target?); nothing was written"
        )
    return last


def batches(records: Sequence[StoredRecord]) -> Iterator[list[StoredRecord]]:
    """Consecutive slices of at most ``BATCH_RECORDS`` records and ``BATCH_BYTES`` bytes (one record at least)."""
    batch: list[StoredRecord] = []
    size = 0
    for record in records:
        if batch and (len(batch) == BATCH_RECORDS or size + len(record.line) > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(record)
        size += len(record.line)
    if batch:
        yield batch


async def _verify(target: Backend, run_id: str, stored: list[StoredRecord], want: RunState) -> None:
    """The target's copy, read back, is the source's lines and folds to the source's state."""
    try:
        copy = await target.load(run_id)
        same_state = fold_stored(copy).state() == want
    except (JournalError, JournalRuleError) as err:
        raise _Refused(f"reading the copy back from the target failed: {err}") from err
    if [r.line for r in copy] != [r.line for r in stored]:
        raise _Refused("the copy read back from the target differs from the source")
    if not same_state:
        raise _Refused("the copy on the target folds to a different state than the source")


# ---------------------------------------------------------------- tasks


async def migrate_task(source: TaskStore, target: TaskStore, task_id: str, *, dry_run: bool) -> Outcome:
    """Copy a task's request and outcome documents, byte for byte, create-only."""
    try:
        request, outcome = await source.get(task_id)
        if request is None:
            return Outcome("task", task_id, Status.ABSENT, message="the source holds no request for it")
        have_request, have_outcome = await target.get(task_id)
        _check_document(task_id, "request", request, have_request)
        if have_outcome is not None:
            _check_document(task_id, "outcome", outcome, have_outcome)
        todo = [
            (kind, body)
            for kind, body, have in (("request", request, have_request), ("outcome", outcome, have_outcome))
            if body is not None and have is None
        ]
        if dry_run or not todo:
            return Outcome("task", task_id, Status.MIGRATED if todo else Status.PRESENT, len(todo))
        for kind, body in todo:
            create = target.create_request if kind == "request" else target.create_outcome
            _check_document(task_id, kind, body, await create(task_id, body))
    except _Refused as err:
        return Outcome("task", task_id, Status.FAILED, message=str(err))
    except JournalError as err:
        return Outcome("task", task_id, Status.FAILED, message=f"{err.reason}: {err.message}")
    return Outcome("task", task_id, Status.MIGRATED, len(todo))


def _check_document(task_id: str, kind: str, want: bytes | None, stored: bytes | None) -> None:
    """A document the target holds must be the source's, byte for byte."""
    if stored is None:
        return
    if want is None:
        raise _Refused("conflict: the target holds an outcome the source does not have (completed at the target?)")
    if stored != want:
        raise _Refused(f"conflict: the target holds a different {kind} under this task id; keep one and run again")


# ---------------------------------------------------------------- progress


class Progress:
    """Counts on stderr: one line rewritten in place on a terminal, a plain line now and then otherwise."""

    def __init__(self, what: str, total: int, stream: TextIO) -> None:
        self._what = what
        self._total = total
        self._stream = stream
        self._tty = stream.isatty()
        self._counts = dict.fromkeys(Status, 0)
        self._done = 0
        self._shown_at = time.monotonic()
        self._shown_tenth = 0

    def add(self, outcome: Outcome) -> None:
        self._counts[outcome.status] += 1
        self._done += 1
        now = time.monotonic()
        tenth = self._done * 10 // max(self._total, 1)
        if self._tty:
            due = now - self._shown_at >= TTY_PROGRESS_SECONDS
        else:
            due = tenth > self._shown_tenth or now - self._shown_at >= PLAIN_PROGRESS_SECONDS
        if due or self._done == self._total:
            self._shown_tenth = tenth
            self._show(now)

    def _show(self, now: float) -> None:
        self._shown_at = now
        line = f"{self._what}: {self._done}/{self._total}  " + "  ".join(
            f"{status.value} {count}" for status, count in self._counts.items() if count or status != Status.ABSENT
        )
        end = "\n" if not self._tty or self._done == self._total else ""
        self._stream.write(("\r\x1b[K" if self._tty else "") + line + end)
        self._stream.flush()
