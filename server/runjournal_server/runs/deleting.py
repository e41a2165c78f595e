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
RUN_DELETED. A retry (the same ``expected_last_seq``) answers the
tombstone's last seq with ``deleted`` false, once the erasure is complete;
a deletion of a deleted run at another last seq is RUN_DELETED, as any
other call about it: it is not a retry of the deletion that happened, and
its caller saw another run than the one deleted (records it never saw, or
not the last ones), which a success would hide.

Once, because the backend's news (``Backend.follow``) leaves out a deletion
it answered ``deleted`` here: on JetStream the feed skips this replica's own
tombstone from the moment the deletion returns (``own_writes.py``), so it is
told right there, in the same step of the event loop, before the run's lock
is let go (whose release may await). A deletion that failed after its
tombstone landed is not told here: the feed tells it, on every replica.

A run with children (``Folder.children``: every child its spawns named) is
deleted only with ``with_children``, and then as a tree: the root's last seq
is checked first, then every live descendant is deleted at its own last seq,
children before their parents, the root last, so a tree deletion cut short
(a crash, a child that moved) never leaves a child whose parent is gone:
deleting again finishes it. Without it the refusal names the children: a
child left without its parent could never hand its outcome on.
"""

from __future__ import annotations

from runjournal_server.backends.base import Backend, Deletion
from runjournal_server.core.errors import (
    CorruptJournalError,
    InvalidArgumentError,
    LastSeqMismatchError,
    RunDeletedError,
    RunNotFoundError,
    VersionMismatchError,
)
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

    async def delete(self, run_id: str, expected_last_seq: int, *, with_children: bool = False) -> Deletion:
        validate_run_id(run_id)
        if expected_last_seq < 1:
            raise InvalidArgumentError("expected_last_seq", "must be the run's last seq (>= 1), as last read")
        last_seq, descendants = await self._tree(run_id)
        if descendants:
            if not with_children:
                named = ", ".join(child for child, _ in descendants[-5:])
                raise InvalidArgumentError(
                    "with_children",
                    f"run {run_id!r} has {len(descendants)} child run(s) ({named}); delete the whole tree "
                    "with with_children, or delete the children first",
                )
            if last_seq != expected_last_seq:
                raise LastSeqMismatchError(run_id, last_seq, expected_last_seq)
            for child, child_last_seq in descendants:
                await self._delete_one(child, child_last_seq)
        return await self._delete_one(run_id, expected_last_seq)

    async def _tree(self, run_id: str) -> tuple[int, list[tuple[str, int]]]:
        """The run's last seq and its live descendants with theirs, children before parents (0, [] when gone)."""
        try:
            folder, _ = await self._handles.pre_read(run_id)
        except (RunNotFoundError, RunDeletedError):
            return 0, []
        except (CorruptJournalError, VersionMismatchError):
            return 0, []  # its children cannot be read: deleted as a run alone, as before there were trees
        found: list[tuple[str, int]] = []
        for child in folder.children():
            child_last_seq, below = await self._tree(child)
            if child_last_seq:
                found += [*below, (child, child_last_seq)]
        return folder.last_seq, found

    async def _delete_one(self, run_id: str, expected_last_seq: int) -> Deletion:
        async with self._handles.use(run_id) as slot:
            await self._handles.drop(slot)
            # Not waiting for the erasure: the tombstone already makes every call about the run RUN_DELETED.
            deletion = await self._backend.delete_run(run_id, expected_last_seq, wait_for_erase=False)
            if deletion.deleted:
                self._events.deleted(run_id)  # every listener, this one included, forgets the run once
            else:
                self._forget(run_id)  # a retry: the deletion was told when it happened, here or on another replica
        if not deletion.deleted and deletion.tombstone.last_seq != expected_last_seq:
            raise RunDeletedError(run_id, deletion.tombstone.last_seq)
        return deletion

    # RunListener (``runs/events.py``): a run deleted through another replica is forgotten here too.

    def stored(self, run_id: str, last_seq: int) -> None:
        pass

    def deleted(self, run_id: str) -> None:
        self._forget(run_id)

    def _forget(self, run_id: str) -> None:
        self._handles.forget_corrupt(run_id)
        self._past_states.forget(run_id)
