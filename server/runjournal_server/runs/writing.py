"""Writing records under a run's lock: checked on the fold, made durable, then adopted and told.

The one write step Append, Claim, Answer, Approve and ForkRun share. Rules
kept here:

* Validate before writing: the records are applied to the run's fold before
  any byte reaches the store, so a refusal changes nothing, the warm state
  included. A batch is applied to a scratch copy (``Folder.copy``); one
  record, on a store whose writer lock is exclusive (the file backend), to
  the warm state itself, since the fold refuses a record without changing
  anything (``tests/unit/test_fold.py`` pins it): a copy costs pointers for
  every message of the run, so on a long run it was most of an append's CPU
  (docs/perf-round3-file.md).
* Nobody sees the warm state run ahead of the store: a scratch becomes the
  warm state only once the store has made its records durable, and a warm
  state written in place is hidden from lock-free readers (``Slot.ahead``)
  until then. A refused batch (even one refused at its tenth record) and a
  lost write race leave the warm state as it was, at the journal's tail:
  the run is neither reopened nor refolded (a race needs shared writers, so
  never meets a warm state written in place). After a storage failure or a
  cancelled write the handle is closed and the next call opens the run
  again from the store: a cancelled write may still land (the file
  backend's thread finishes it), and after a failed write the server lets go
  of the journal and reads it back from disk
  (``tests/durability/test_fsync_failure.py`` pins this).
* A run is created with its whole first batch in one creation (``create``),
  never as "meta, then the rest": a failure between the two would leave a
  listed run with only its meta.
* Listeners hear of records only once they are durable (``RunEvents.stored``).
* A write that loses a race to another replica (``WriteRaceError``: nothing
  of it stored) catches up with the tail and is decided again, at most
  ``MAX_WRITE_RACES`` times. A race the tail does not explain (nothing new
  after it: a stray message stored before it) reopens the run, whose full
  read reports what is there.
* A record a worker appends that is a ``reconfigure`` passes the resume gate
  as Claim does, without force (only Claim carries force): otherwise a
  worker could record a provider change and then claim under the other
  provider. Claim's own reconfigure passed it already (``gated`` False).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from runjournal_server.backends.base import Backend, WriteRaceError
from runjournal_server.core import records
from runjournal_server.core.errors import InvalidRecordError, StorageUnavailableError
from runjournal_server.core.fold import Folder, JournalRuleError
from runjournal_server.core.resume import check_appended_reconfigure
from runjournal_server.observability.observer import Observer
from runjournal_server.runs.events import RunEvents
from runjournal_server.runs.handles import RunHandles, Slot, stored_bytes

MAX_WRITE_RACES = 3

T = TypeVar("T")


def check_records(run_id: str, folder: Folder, new: Sequence[records.StoredRecord], *, gated: bool = True) -> None:
    """Apply incoming records to ``folder`` (a scratch copy); a rule one breaks is the client's INVALID_RECORD."""
    for candidate in new:
        try:
            if gated and candidate.kind == records.Kind.RECONFIGURE and candidate.record is not None:
                check_appended_reconfigure(run_id, folder, candidate.record)
            folder.apply_stored(candidate)
        except JournalRuleError as err:
            raise InvalidRecordError(str(candidate.kind), err.detail, seq=err.seq) from err


class Writer:
    """The write step of every operation that stores records, over one backend."""

    def __init__(self, backend: Backend, handles: RunHandles, events: RunEvents, observer: Observer) -> None:
        self._backend = backend
        self._handles = handles
        self._events = events
        self._observer = observer

    async def racing(self, slot: Slot, attempt: Callable[[], Awaitable[T]]) -> T:
        """Run a locked write; after losing a write race, catch up with the winner's records and run it again.

        ``attempt`` decides on the slot's warm state (``RunHandles.held``)
        each time: what the winner stored makes it a duplicate, a conflict,
        RUN_CLAIMED, or simply the next seq.
        """
        for _ in range(MAX_WRITE_RACES):
            try:
                return await attempt()
            except WriteRaceError:
                if not self._handles.usable(slot) or not await self._handles.catch_up(slot):
                    await self._handles.drop(slot)
                    await self._handles.open(slot)
        raise StorageUnavailableError(slot.run_id, f"lost {MAX_WRITE_RACES} write races in a row to other replicas")

    async def write(self, slot: Slot, new: Sequence[records.StoredRecord], *, gated: bool = True) -> Folder:
        """Check ``new`` on the slot's warm state (a copy, but for one record on an exclusive writer lock), store it
        durably, adopt it; the new warm state."""
        journal, folder = self._handles.held(slot)
        in_place = len(new) == 1 and not self._backend.shared_writers
        scratch = folder if in_place else folder.copy()
        check_records(slot.run_id, scratch, new, gated=gated)
        slot.ahead = in_place
        try:
            await journal.append(new, observer=self._observer)
        except WriteRaceError:
            if in_place:  # not on an exclusive lock; were it ever, the warm state holds what was not stored
                await self._handles.drop(slot)
            raise  # nothing stored and the journal as it was: ``racing`` catches up with the tail
        except BaseException:
            await self._handles.drop(slot)  # the store says what it holds when the run is opened next
            raise
        finally:
            slot.ahead = False
        self._handles.advance(slot, scratch, stored_bytes(new))
        self._events.stored(slot.run_id, journal.last_seq)
        return scratch

    async def create(self, slot: Slot, new: Sequence[records.StoredRecord], folder: Folder) -> int:
        """Create the run with ``new`` whole; ``folder`` (their fold, checked) becomes its warm state; its last seq.

        ``RunExistsError`` when the run exists already.
        """
        journal = await self._backend.create_journal(slot.run_id, new[0], new[1:], observer=self._observer)
        self._handles.adopt(slot, journal, folder, stored_bytes(new))
        self._events.stored(slot.run_id, journal.last_seq)
        return journal.last_seq
