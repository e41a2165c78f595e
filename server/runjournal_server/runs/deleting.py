"""DeleteRun: the ordering around a backend's deletion, and everything the server forgets with the run.

Under the run's lock (so no append of this server is between its check and
the deletion), the warm handle is closed first: on the file backend it holds
the run's flock, which the deletion takes itself. The backend then checks
the last seq against the caller's, keeps a durable tombstone and erases the
run (``Backend.delete_run``; on JetStream the erasure goes on in the
background after the answer, ``backends/jetstream/erasing.py``). Only after
that is every listener told (``RunEvents.deleted``), once: this deleter
forgets the corruption ledger's and past states' memory of the run, the
listing its index entry and meta cache, and the run's watchers end with
RUN_DELETED. A retry answers the tombstone's last seq with
``deleted`` false, once the erasure is complete.

Once, because the backend's news (``Backend.follow``) leaves out a deletion
it answered ``deleted`` here: on JetStream the feed skips this replica's own
tombstone from the moment the deletion returns (``own_writes.py``), so it is
told right there, in the same step of the event loop, before the run's lock
is let go (whose release may await). A deletion that failed after its
tombstone landed is not told here: the feed tells it, on every replica.
"""

from __future__ import annotations

from runjournal_server.backends.base import Backend, Deletion
from runjournal_server.core.errors import InvalidArgumentError
from runjournal_server.core.ids import validate_run_id
from runjournal_server.runs.events import RunEvents
from runjournal_server.runs.handles import RunHandles
from runjournal_server.runs.past_states import PastStates


class RunDeleter:
    """DeleteRun over one backend and the server's per-run memory."""

    def __init__(
        self,
        backend: Backend,
        handles: RunHandles,
        past_states: PastStates,
        events: RunEvents,
    ) -> None:
        self._backend = backend
        self._handles = handles
        self._past_states = past_states
        self._events = events

    async def delete(self, run_id: str, expected_last_seq: int) -> Deletion:
        validate_run_id(run_id)
        if expected_last_seq < 1:
            raise InvalidArgumentError("expected_last_seq", "must be the run's last seq (>= 1), as last read")
        async with self._handles.use(run_id) as slot:
            await self._handles.drop(slot)
            # Not waiting for the erasure: the tombstone already makes every call about the run RUN_DELETED.
            deletion = await self._backend.delete_run(run_id, expected_last_seq, wait_for_erase=False)
            if deletion.deleted:
                self._events.deleted(run_id)  # every listener, this one included, forgets the run once
            else:
                self._forget(run_id)  # a retry: the deletion was told when it happened, here or on another replica
        return deletion

    # RunListener (``runs/events.py``): a run deleted through another replica is forgotten here too.

    def stored(self, run_id: str, last_seq: int) -> None:
        pass

    def deleted(self, run_id: str) -> None:
        self._forget(run_id)

    def _forget(self, run_id: str) -> None:
        self._handles.forget_corrupt(run_id)
        self._past_states.forget(run_id)
