"""The part of the backend contract that deletes runs, and the rule "is this run deleted", kept here alone.

A deleted run keeps a tombstone (``tombstone.py``) so that its id is never
used again. Whether a run is deleted is decided by the backends and nowhere
above them: every read or write of a tombstoned run raises
``RunDeletedError`` from the backend itself (``refuse_deleted``, asked only
on the path where the run was found absent or damaged, so a healthy run's
reads pay nothing for it; JetStream's ``Journal.refresh`` where another
replica's tombstone follows the held tail). The layers above catch
``RunDeletedError``; they never read a tombstone to decide it.

``delete_run`` is the template every backend shares (``final``); a backend
fills the hooks ``_delete`` and ``_erase`` (and ``_erase_deleted`` where its
erasure runs in the background) and the tombstone reads. ``Backend`` in
``base.py`` inherits ``Deletions``.
"""

from __future__ import annotations

import abc
import time
from dataclasses import dataclass
from typing import NoReturn, final

from runjournal_server.backends.tombstone import Tombstone
from runjournal_server.core.errors import RunDeletedError


@dataclass(frozen=True)
class Deletion:
    """What ``Backend.delete_run`` did."""

    tombstone: Tombstone
    deleted: bool
    """False when the run was deleted already (by an earlier call, or another deleter first)."""
    erased: bool
    """True when none of the run's stored bytes is left; False while a background erasure removes them."""


class Deletions(abc.ABC):
    """Deleting runs, and refusing every call about a deleted one (see the module docstring)."""

    @final
    async def delete_run(self, run_id: str, expected_last_seq: int, *, wait_for_erase: bool = True) -> Deletion:
        """Delete the run if its last seq is ``expected_last_seq``.

        The tombstone is durable before any byte of the run is removed (or in
        the same atomic step), so a crash at any point leaves either the whole
        run, or a tombstone: never a run that reads back in part and could be
        written again. Once the tombstone exists every read and write of the
        run is RUN_DELETED (``refuse_deleted``), so the erasure need not be
        done before the answer: with ``wait_for_erase`` False a store whose
        erasure is slow (JetStream: a synced write per message) answers first
        and erases in the background (``_erase_deleted``). What a crash or a
        stop left behind is removed by ``_erase``: here (deleting again
        answers the tombstone, not deleted, once the erasure is complete) and
        by ``start``. Raises ``RunNotFoundError``, ``LastSeqMismatchError``
        (nothing removed), ``RunLockedError``.

        A deletion answered ``deleted`` is told to the server's listeners by
        the caller (``runs/deleting.py``), as it returns; a store that
        follows other writers (``follow``) leaves it out of its news from
        then on (JetStream: ``own_writes.py``), so its ``_erase_deleted``
        without ``wait`` answers without awaiting anything.
        """
        found = await self.tombstone(run_id)
        if found is not None:
            await self._erase(run_id)
            return Deletion(found, deleted=False, erased=True)
        tombstone, deleted = await self._delete(run_id, expected_last_seq, time.time())
        if not deleted:  # another deleter's tombstone landed first: as for a retry, its erasure is finished here
            await self._erase(run_id)
            return Deletion(tombstone, deleted=False, erased=True)
        return Deletion(tombstone, deleted=True, erased=await self._erase_deleted(run_id, wait=wait_for_erase))

    @abc.abstractmethod
    async def _delete(self, run_id: str, expected_last_seq: int, deleted_at: float) -> tuple[Tombstone, bool]:
        """Hook: with the run's writers held off, check its last seq and store the tombstone durably.

        A last seq other than ``expected_last_seq`` is ``LastSeqMismatchError``
        with nothing written. Returns the tombstone and True, or the tombstone
        another deleter stored first and False. A store may erase the run here
        too, under the same hold (file); else ``_erase_deleted`` does.
        """

    async def _erase_deleted(self, run_id: str, *, wait: bool) -> bool:
        """Hook: after ``_delete`` stored this call's tombstone, erase the run (or begin to); True when nothing is left.

        This default erases before answering, whatever ``wait`` says. Without
        ``wait`` a store may start the erasure in the background and answer
        False; ``_erase`` then waits for it, and ``close`` stops it (``start``
        finishes it).
        """
        await self._erase(run_id)
        return True

    @abc.abstractmethod
    async def _erase(self, run_id: str) -> None:
        """Hook: remove what is left of a tombstoned run's stored bytes (idempotent), overwritten if the store can.

        Where erasures run in the background, this waits for the run's own.
        """

    @abc.abstractmethod
    async def tombstone(self, run_id: str) -> Tombstone | None:
        """The run's tombstone, or None when it was never deleted."""

    @abc.abstractmethod
    async def tombstones(self) -> list[Tombstone]:
        """Every tombstone (unordered): what a migration copies."""

    @abc.abstractmethod
    async def keep_tombstone(self, tombstone: Tombstone) -> None:
        """Store ``tombstone`` for a run this store does not hold (a migration's copy); idempotent.

        A run the store holds under that id is ``RunExistsError``: it is not removed.
        """

    async def refuse_deleted(self, run_id: str, err: Exception) -> NoReturn:
        """Raise RUN_DELETED if the run has a tombstone, else ``err``: for a read that found the run absent or damaged.

        Asked only on that path, so a healthy run's reads pay nothing for it.
        """
        found = await self.tombstone(run_id)
        if found is not None:
            raise RunDeletedError(run_id, found.last_seq) from err
        raise err
