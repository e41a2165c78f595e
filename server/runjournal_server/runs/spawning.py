"""SpawnRun and the completion of a child run: a parent's call answered by a child's outcome, exactly once.

The rules, stated once (what counts as an outcome and what result it makes:
``core/spawning.py``):

* Spawn validates everything before writing (the parent's call is pending,
  has no result and is deferred to nobody else; the parent is format 2; the
  child's meta passes its schema; ``new_run_id`` is free or is this call's
  child already).
* Parent first: the parent's ``deferral`` naming the child is written before
  the child is created. So the deferral is the one place that says which run
  answers the call: a second spawn for the call can only name that child (a
  verified duplicate that finishes a spawn cut short), never make a second
  one, and a run's children are all found from its own journal
  (``Folder.children``: what a tree delete walks). A crash between the two
  leaves a call waiting for a child not created yet: the spawner's retry
  creates it, and until then a person may answer the call.
* The child's meta is the request's, with ``spawned_by`` set here: the
  parent, the call, the seq of the assistant record that asked for it, and
  the tree's root (the parent's root, or the parent). The child's claim token
  is 1, the spawner's.
* Completion: the durable intent is the child's terminal itself. Right after
  an Append stored a terminal in a child (``Runs.append``), and at every
  start for the children the listing finds stopped
  (``listing/completions.py``), ``deliver`` writes the parent's result if the
  call still takes it, under the parent's lock on its current state: so a
  second delivery (a retry, a start, another replica) finds the result and
  writes nothing, and on JetStream two replicas racing for the parent's next
  seq are decided by the fence (``Writer.racing``), the loser then finding
  the winner's result. A call someone else answered first keeps its answer;
  the outcome is then noted on the child (``core/spawning.outcome_note``).
* Locks are taken one run at a time, never one inside another: spawn holds
  the parent's then (after letting it go) the child's; delivery reads the
  child without a lock, then holds the parent's (or the child's, for a note).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from google.protobuf.timestamp_pb2 import Timestamp

from runjournal.v1 import records_pb2, state_pb2
from runjournal_server.core import records
from runjournal_server.core.errors import (
    AlreadyAnsweredError,
    CallNotPendingError,
    InvalidArgumentError,
    JournalError,
    RunDeletedError,
    RunExistsError,
    RunNotFoundError,
)
from runjournal_server.core.fold import Folder, fold_stored
from runjournal_server.core.ids import validate_run_id
from runjournal_server.core.kinds import SPAWN_LINKS_SINCE
from runjournal_server.core.spawning import delivery, outcome_note, outcome_of, outcome_result
from runjournal_server.runs.handles import RunHandles, Slot
from runjournal_server.runs.requests import encode_one
from runjournal_server.runs.writing import Writer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SpawnOutcome:
    """What SpawnRun answers."""

    child_last_seq: int
    origin: records_pb2.SpawnOrigin
    deferral_seq: int
    duplicate: bool


def child_meta(request_meta: records_pb2.Meta, child_run_id: str) -> records_pb2.Meta:
    """The child's meta as requested, checked for what only the server sets; ``spawned_by`` still unset."""
    if request_meta.run_id and request_meta.run_id != child_run_id:
        raise InvalidArgumentError("meta.run_id", f"must be empty or {child_run_id!r} (new_run_id)")
    if request_meta.format_version < SPAWN_LINKS_SINCE:
        raise InvalidArgumentError(
            "meta.format_version", f"a child run needs journal format {SPAWN_LINKS_SINCE} or later (its meta links)"
        )
    for name, why in (
        ("task_id", "the task is the root run's to complete"),
        ("forked_from", "only ForkRun writes it"),
        ("spawned_by", "the server writes it"),
    ):
        if request_meta.HasField(name) if name != "task_id" else request_meta.task_id:
            raise InvalidArgumentError(f"meta.{name}", f"must be empty: {why}")
    meta = records_pb2.Meta()
    meta.CopyFrom(request_meta)
    meta.run_id = child_run_id
    if not meta.HasField("created_at"):
        now = Timestamp()
        now.GetCurrentTime()
        meta.created_at.CopyFrom(now)
    return meta


def check_spawnable(parent_run_id: str, tool_use_id: str, child_run_id: str, parent: Folder) -> int:
    """Refuse a spawn the parent's state does not allow; the seq of its deferral naming this child, or 0."""
    meta = parent.meta
    assert meta is not None
    if meta.format_version < SPAWN_LINKS_SINCE:
        raise InvalidArgumentError(
            "run_id",
            f"run {parent_run_id!r} has journal format {meta.format_version}; spawning needs "
            f"{SPAWN_LINKS_SINCE} or later, whose readers know the links",
        )
    answered_at = parent.result_seq(tool_use_id)
    if answered_at is not None:
        raise AlreadyAnsweredError(parent_run_id, tool_use_id, answered_at)
    status = parent.call_status(tool_use_id)
    if status is None or not status.in_open_turn:
        raise CallNotPendingError(parent_run_id, tool_use_id)
    deferral = parent.call_deferral(tool_use_id)
    if deferral is None:
        return 0
    if deferral.child_run_id == child_run_id:
        return status.deferral_seq
    if deferral.child_run_id:
        raise InvalidArgumentError(
            "new_run_id",
            f"call {tool_use_id!r} was delegated to child run {deferral.child_run_id!r} at seq "
            f"{status.deferral_seq}; a call has one child: spawn again with that id to finish or confirm it",
        )
    raise InvalidArgumentError(
        "tool_use_id", f"call {tool_use_id!r} was deferred to a person at seq {status.deferral_seq}"
    )


def origin_of(parent_run_id: str, tool_use_id: str, parent: Folder) -> records_pb2.SpawnOrigin:
    """The child's link: the parent, the call, the seq of its assistant record and the tree's root."""
    status = parent.call_status(tool_use_id)
    meta = parent.meta
    assert status is not None and meta is not None
    root = meta.spawned_by.root_run_id if meta.HasField("spawned_by") else parent_run_id
    return records_pb2.SpawnOrigin(
        run_id=parent_run_id, tool_use_id=tool_use_id, seq=status.assistant_seq, root_run_id=root
    )


def same_child(stored: records_pb2.Meta | None, wanted: records_pb2.Meta) -> bool:
    """Whether a stored meta is the child this spawn would create (all but the creation time)."""
    if stored is None:
        return False
    a, b = records_pb2.Meta(), records_pb2.Meta()
    a.CopyFrom(stored)
    b.CopyFrom(wanted)
    a.ClearField("created_at")
    b.ClearField("created_at")
    return a.SerializeToString(deterministic=True) == b.SerializeToString(deterministic=True)


class Spawning:
    """SpawnRun and the delivery of a child's outcome, over the server's run handles."""

    def __init__(self, handles: RunHandles, writer: Writer, *, max_record_bytes: int) -> None:
        self._handles = handles
        self._writer = writer
        self._max_record_bytes = max_record_bytes

    async def spawn(
        self, parent_run_id: str, tool_use_id: str, child_run_id: str, meta: records_pb2.Meta, reason: str
    ) -> SpawnOutcome:
        validate_run_id(parent_run_id)
        validate_run_id(child_run_id, "new_run_id")
        if child_run_id == parent_run_id:
            raise InvalidArgumentError("new_run_id", "a run cannot be its own child")
        wanted = child_meta(meta, child_run_id)
        parent, cold = await self._handles.pre_read(parent_run_id)
        check_spawnable(parent_run_id, tool_use_id, child_run_id, parent)
        wanted.spawned_by.CopyFrom(origin_of(parent_run_id, tool_use_id, parent))
        # The child's meta is checked (INVALID_RECORD naming its field) before anything is written.
        first = records_pb2.JournalRecord(seq=1, meta=wanted)
        encoded = await encode_one(first, max_record_bytes=self._max_record_bytes)
        existing = await self._child_meta(child_run_id)
        if existing is not None and not same_child(existing, wanted):
            raise RunExistsError(child_run_id)
        async with self._handles.use(parent_run_id) as slot:
            await self._handles.current(slot, cold)
            deferral_seq, duplicate = await self._writer.racing(
                slot, lambda: self._defer_locked(slot, tool_use_id, child_run_id, reason)
            )
        last_seq = await self._create_child(child_run_id, encoded, wanted)
        return SpawnOutcome(last_seq or 1, wanted.spawned_by, deferral_seq, duplicate and last_seq == 0)

    async def _defer_locked(self, slot: Slot, tool_use_id: str, child_run_id: str, reason: str) -> tuple[int, bool]:
        journal, folder = self._handles.held(slot)
        found = check_spawnable(slot.run_id, tool_use_id, child_run_id, folder)
        if found:
            return found, True
        deferral = records_pb2.Deferral(
            tool_use_id=tool_use_id,
            reason=reason or f"delegated to child run {child_run_id}",
            expected_answerer=f"run {child_run_id}",
            child_run_id=child_run_id,
        )
        record = records_pb2.JournalRecord(seq=journal.last_seq + 1, deferral=deferral)
        stored = await encode_one(record, max_record_bytes=self._max_record_bytes)
        await self._writer.write(slot, [stored])
        return record.seq, False

    async def _create_child(self, child_run_id: str, encoded: records.StoredRecord, wanted: records_pb2.Meta) -> int:
        """Create the child; 0 when it exists already as this very child (a retry)."""
        async with self._handles.use(child_run_id) as slot:
            if slot.journal is None:
                try:
                    return await self._writer.create(slot, [encoded], fold_stored([encoded]))
                except RunExistsError:
                    pass
        if not same_child(await self._child_meta(child_run_id), wanted):
            raise RunExistsError(child_run_id)
        return 0

    async def _child_meta(self, child_run_id: str) -> records_pb2.Meta | None:
        try:
            folder, _ = await self._handles.pre_read(child_run_id)
        except RunNotFoundError:
            return None
        return folder.meta

    async def show_children(self, state: state_pb2.RunState) -> None:
        """Fill ``child_status`` of each pending call delegated to a child, as the child reads now.

        Shown, never decided on: a client shows it beside the call instead of
        folding the child itself. A child not created yet, deleted or
        unreadable shows RUN_STATUS_UNAVAILABLE.
        """
        for call in state.pending.calls:
            if not call.child_run_id:
                continue
            try:
                child, _ = await self._handles.pre_read(call.child_run_id)
                call.child_status = child.status
            except JournalError:
                call.child_status = state_pb2.RUN_STATUS_UNAVAILABLE

    # -- completion ------------------------------------------------------------

    async def deliver(self, child_run_id: str) -> bool:
        """Write the child's outcome into its parent's call if the call still takes it; True when written.

        Safe to call any number of times, from anywhere: it writes the result
        only on the parent's current state, under its lock (module docstring).
        """
        try:
            child, _ = await self._handles.pre_read(child_run_id)
        except (RunNotFoundError, RunDeletedError):
            return False
        meta = child.meta
        terminal = outcome_of(child)
        if meta is None or not meta.HasField("spawned_by") or terminal is None:
            return False
        origin = meta.spawned_by
        result = outcome_result(child_run_id, origin.tool_use_id, child, terminal)
        try:
            parent, cold = await self._handles.pre_read(origin.run_id)
        except (RunNotFoundError, RunDeletedError):
            return False  # a deleted parent takes no answer
        decided = delivery(parent, origin, child_run_id)
        if decided.note:
            await self._note_on_child(child_run_id, origin, parent.result_seq(origin.tool_use_id) or 0, result)
            return False
        if not decided.write:
            return False
        async with self._handles.use(origin.run_id) as slot:
            await self._handles.current(slot, cold)
            written = await self._writer.racing(slot, lambda: self._answer_locked(slot, origin, child_run_id, result))
        if written is None:
            # Answered by someone else while this waited for the lock: the outcome goes on the child.
            parent, _ = await self._handles.pre_read(origin.run_id)
            await self._note_on_child(child_run_id, origin, parent.result_seq(origin.tool_use_id) or 0, result)
            return False
        if not written:
            return False
        log.info("child %s answered call %r of %s at seq %d", child_run_id, origin.tool_use_id, origin.run_id, written)
        return True

    async def _answer_locked(
        self, slot: Slot, origin: records_pb2.SpawnOrigin, child_run_id: str, result: records_pb2.ToolResult
    ) -> int | None:
        journal, folder = self._handles.held(slot)
        decided = delivery(folder, origin, child_run_id)
        if not decided.write:
            return None if decided.note else 0
        record = records_pb2.JournalRecord(seq=journal.last_seq + 1, tool_result=result)
        stored = await encode_one(record, max_record_bytes=self._max_record_bytes)
        await self._writer.write(slot, [stored])
        return record.seq

    async def _note_on_child(
        self, child_run_id: str, origin: records_pb2.SpawnOrigin, answered_at: int, result: records_pb2.ToolResult
    ) -> None:
        note = outcome_note(origin, answered_at, result)
        try:
            async with self._handles.use(child_run_id) as slot:
                journal, folder = await self._handles.current(slot)
                if folder.last_seq != folder.terminal_seq or outcome_of(folder) is None:
                    return  # noted already (the note follows the terminal), or the child moved on
                record = records_pb2.JournalRecord(seq=journal.last_seq + 1, optional=True, note=note)
                stored = await encode_one(record, max_record_bytes=self._max_record_bytes)
                await self._writer.write(slot, [stored])
        except JournalError as err:
            log.warning("run %s: its outcome note was not written: %s", child_run_id, err.message)
