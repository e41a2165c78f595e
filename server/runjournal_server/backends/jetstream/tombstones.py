"""Deleting a run from the stream: a tombstone fenced on the run's last message, then every message erased.

The tombstone is a message on ``P.R.deleted`` (``layout.py``), published with
``Nats-Expected-Last-Subject-Sequence`` = the stream sequence of the run's
last record over the run's wildcard ``P.R.>``: it lands only if nothing was
stored in the run since its last seq was checked, and once it is there no
creation can land (the creation's fence expects the run's subjects empty),
so a stale retry of the meta cannot bring the run back. Then, in the
background (``erasing.py``), every other message of the run is erased with
the stream's message delete, whose default
overwrites the message's bytes in the block file with random data (no wait
for a compaction): the last record first, since an append through another
replica is fenced on it, and the meta last, so a deletion a crash
interrupted is a run with both a meta and a tombstone, found and finished at
the next start (``unfinished``). The stream must allow message deletes: a
created stream does; one created with ``deny_delete`` can never lift it.

A deletion is one of this replica's writes (``own_writes.py``): its
tombstone subject is held from before the publish, and acknowledged only
when the deletion answers ``deleted`` (the tombstone is this call's and the
last record is erased), since only then does ``runs/deleting.py`` tell it,
as the answer returns; any other end leaves the tombstone to the feed.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from runjournal_server.backends.jetstream.api import (
    ERR_WRONG_LAST_SEQUENCE,
    READ_CONCURRENCY,
    ApiError,
    JetStreamApi,
    NoAnswerError,
    NotDeliveredError,
    Outgoing,
    StoredMessage,
    is_full,
    is_taken,
)
from runjournal_server.backends.jetstream.layout import Layout, write_headers
from runjournal_server.backends.jetstream.own_writes import OwnWrites
from runjournal_server.backends.jetstream.reading import StreamReader
from runjournal_server.backends.tombstone import Tombstone, decode_tombstone, encode_tombstone
from runjournal_server.core.errors import (
    LastSeqMismatchError,
    RunExistsError,
    StorageFullError,
    StorageUnavailableError,
)

ERASE_ROUNDS = 8
"""How often ``erase`` lists the run's subjects again (a record another replica stored as the tombstone landed)."""

_STORE_ERRORS = (ApiError, NotDeliveredError, NoAnswerError)


def decode(run_id: str, message: StoredMessage) -> Tombstone:
    """The tombstone a message on a run's tombstone subject holds (``tombstone.py``)."""
    return decode_tombstone(run_id, message.data, f"on {message.subject!r}")


@dataclass(frozen=True)
class Landed:
    """The tombstone the run's tombstone subject holds after a publish, and its stream seq."""

    tombstone: Tombstone
    stream_seq: int


class StreamTombstones:
    """Tombstones and erasure in one stream; ``api`` gives the started backend's API client.

    ``own`` is this replica's ledger of writes, which holds each deletion's
    tombstone subject (see the module docstring).
    """

    def __init__(self, api: Callable[[], JetStreamApi], layout: Layout, reader: StreamReader, own: OwnWrites) -> None:
        self._api = api
        self._layout = layout
        self._reader = reader
        self._own = own
        self.deny_delete = False
        """Set by ``start`` from the stream's configuration: True where deleting cannot erase anything."""

    async def read(self, run_id: str) -> Tombstone | None:
        (message,) = await self._reader.read(run_id, [self._layout.tombstone(run_id)])
        return decode(run_id, message) if message is not None else None

    async def deleted_ids(self) -> set[str]:
        subjects = await self._reader.call(None, lambda api: api.subjects(self._layout.tombstones()))
        return {run_id for subject in subjects if (run_id := self._layout.run_of_tombstone(subject)) is not None}

    async def all(self) -> list[Tombstone]:
        run_ids = sorted(await self.deleted_ids())
        messages = await self._reader.read(None, [self._layout.tombstone(run_id) for run_id in run_ids])
        return [decode(run_id, m) for run_id, m in zip(run_ids, messages, strict=True) if m is not None]

    async def delete(self, run_id: str, expected_last_seq: int, deleted_at: float) -> tuple[Tombstone, bool]:
        """Check the last seq, publish the tombstone fenced on it and erase the last record; ``erase`` does the rest.

        See the module docstring; the rest may be erased in the background.
        """
        if self.deny_delete:
            raise StorageUnavailableError(
                run_id,
                f"stream {self._api().stream} denies message deletes (deny_delete), which cannot be lifted: "
                "nothing was deleted; migrate the runs to a stream runjournal creates to delete runs",
            )
        last_seq, last = await self._reader.last(run_id)
        if last_seq != expected_last_seq:
            raise LastSeqMismatchError(run_id, last_seq, expected_last_seq)
        tombstone = Tombstone(run_id, last_seq, deleted_at)
        with self._own.writing([self._layout.tombstone(run_id)]) as write:
            landed = await self._publish(tombstone, fence=last.stream_seq)
            if landed is None:  # the fence failed and no tombstone is there: the run moved
                now, _ = await self._reader.last(run_id)
                raise LastSeqMismatchError(run_id, now, expected_last_seq)
            if landed.tombstone is not tombstone:
                return landed.tombstone, False  # another deleter's, which the feed tells
            # The last record goes before the answer: every append through another replica is fenced on it, so
            # from now on each fails its fence, catches up and meets the tombstone. The rest can wait (erasing.py).
            await self._erase_one(run_id, last)
            # Nothing awaits between here and ``runs/deleting.py`` telling the deletion (``Deletions.delete_run``).
            write.acknowledge(landed.stream_seq)
        return tombstone, True

    async def keep(self, tombstone: Tombstone) -> None:
        """Store a migrated tombstone where the run holds nothing; a run stored under the id is RUN_EXISTS."""
        run_id = tombstone.run_id
        if await self.read(run_id) is not None:
            return
        if await self._publish(tombstone, fence=0) is None:
            raise RunExistsError(run_id)

    async def _publish(self, tombstone: Tombstone, *, fence: int) -> Landed | None:
        """Publish the tombstone fenced on the run's last stream sequence ``fence``.

        What the subject holds then: ``tombstone`` itself when it landed (now
        or by an earlier request whose ack was lost), another deleter's
        tombstone when one is there; None when the fence refused it and there
        is none (the run moved).
        """
        run_id = tombstone.run_id
        subject = self._layout.tombstone(run_id)
        body = encode_tombstone(tombstone)
        api = self._api()
        headers = write_headers(
            api.stream,
            fence=self._layout.run_fence(run_id, fence),
            msg_id=f"deleted/{run_id}/{hashlib.sha256(body).hexdigest()[:32]}",
        )
        try:
            ack = await api.publish(Outgoing(subject, body, headers))
        except NotDeliveredError as err:
            raise StorageUnavailableError(run_id, f"storing the tombstone: {err}; nothing was deleted") from err
        except ApiError as err:
            if err.err_code != ERR_WRONG_LAST_SEQUENCE and not is_taken(err):
                if is_full(err):
                    raise StorageFullError(run_id, f"storing the tombstone: {err}; nothing was deleted") from err
                raise StorageUnavailableError(run_id, f"storing the tombstone: {err}; nothing was deleted") from err
            return await self._settle(tombstone, body)
        except NoAnswerError:
            landed = await self._settle(tombstone, body)
            if landed is None:
                raise StorageUnavailableError(run_id, "storing the tombstone got no ack; nothing was deleted") from None
            return landed
        if ack.duplicate:
            return await self._settle(tombstone, body)
        return Landed(tombstone, ack.stream_seq)

    async def _settle(self, tombstone: Tombstone, body: bytes) -> Landed | None:
        """What the tombstone subject holds after an unclear answer: ours, another's, or nothing."""
        (message,) = await self._reader.read(tombstone.run_id, [self._layout.tombstone(tombstone.run_id)])
        if message is None:
            return None
        found = tombstone if message.data == body else decode(tombstone.run_id, message)
        return Landed(found, message.stream_seq)

    async def erase(self, run_id: str) -> None:
        """Erase every message of the run but its tombstone: the last first, the meta last; idempotent.

        Listed again after each pass, so a record another replica stored on
        the last record while the tombstone landed is erased too (it can land
        only before that record is erased: its fence names it).
        """
        keep = self._layout.tombstone(run_id)
        meta = self._layout.subject(run_id, 1)
        for _ in range(ERASE_ROUNDS):
            subjects = await self._reader.call(run_id, lambda api: api.subjects(self._layout.run_subjects(run_id)))
            subjects = [subject for subject in subjects if subject != keep]
            if not subjects:
                return
            found = [m for m in await self._reader.read(run_id, subjects) if m is not None]
            found.sort(key=lambda message: message.stream_seq, reverse=True)
            if not found:
                continue
            await self._erase_one(run_id, found[0])
            rest = [message for message in found[1:] if message.subject != meta]
            await self._erase_all(run_id, rest)
            for message in found[1:]:
                if message.subject == meta:
                    await self._erase_one(run_id, message)
        raise StorageUnavailableError(run_id, "messages kept arriving while the run was erased; delete it again")

    async def _erase_all(self, run_id: str, messages: list[StoredMessage]) -> None:
        gate = asyncio.Semaphore(READ_CONCURRENCY)

        async def one(message: StoredMessage) -> None:
            async with gate:
                await self._erase_one(run_id, message)

        await asyncio.gather(*(one(message) for message in messages))

    async def _erase_one(self, run_id: str, message: StoredMessage) -> None:
        try:
            await self._api().delete_message(message.stream_seq)
        except _STORE_ERRORS as err:
            raise StorageUnavailableError(
                run_id, f"erasing {message.subject!r}: {err}; the run is deleted, delete it again to finish"
            ) from err

    async def unfinished(self, metas: set[str]) -> list[str]:
        """The runs with both a tombstone and a meta: deletions a crash interrupted."""
        return sorted(metas & await self.deleted_ids())
