"""A run held by this server replica, and its fenced writes.

Appends are fenced on the exact subject of the previous record: seq ``N`` is
published with ``Nats-Expected-Last-Subject-Sequence`` = the stream sequence
of record ``N-1`` and ``...-Subject`` = its subject. It lands only if record
``N-1`` is the one this writer read and slot ``N`` is empty, which (since
every record needs its predecessor) means this writer's view is the whole
run; unlike a fence over the run's wildcard, its cost does not grow with the
run. A reply that is not a clean ack is settled by ``publish.publish_once``.

**Riding through a leader change** (``ride_through.py``): a publish that got
no answer, or one that says the stream cannot take it now, and whose
read-back found nothing of ours or could not be made, is ``NotNow``, and is
published again, the very same messages fenced on the same tail. So a
worker's Append waits through a failover instead of being answered
STORAGE_UNAVAILABLE; docs/jetstream-backend.md has the measured waits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from runjournal_server.backends.jetstream.api import (
    JetStreamApi,
    NotDeliveredError,
    Outgoing,
    PubAck,
    StoredMessage,
    is_full,
)
from runjournal_server.backends.jetstream.barrier import Barrier, StaleAnswerError
from runjournal_server.backends.jetstream.config import MAX_ATOMIC_BATCH
from runjournal_server.backends.jetstream.layout import Fence, Layout, message_id, write_headers
from runjournal_server.backends.jetstream.own_writes import OwnWrites
from runjournal_server.backends.jetstream.publish import (
    Answer,
    Empty,
    Occupied,
    ReadBackError,
    Stored,
    Target,
    publish_once,
)
from runjournal_server.backends.jetstream.reading import StreamReader
from runjournal_server.backends.jetstream.ride_through import NotNow, is_not_now, ride_through
from runjournal_server.backends.jetstream.tombstones import decode as decode_tombstone
from runjournal_server.backends.journal import Journal, WriteRaceError
from runjournal_server.core.errors import (
    CorruptJournalError,
    RunDeletedError,
    StorageFullError,
    StorageUnavailableError,
)
from runjournal_server.core.records import StoredRecord

REFRESH_WINDOW_MAX = 64
"""The most subjects ``refresh`` reads at once (after 4, then 16), once it knows something is new."""
CATCH_UP_ROUNDS = 3
"""How many times ``refresh`` reads on from where a barrier found the run goes on, before answering
STORAGE_UNAVAILABLE: once is the stale-node case; more is a run other writers extend as fast as it is read."""


def check_batch_size(run_id: str, batch: Sequence[StoredRecord]) -> None:
    """Refuse a batch runs/runs.py should never send: too long for one atomic batch (the numbering is base.py's)."""
    if len(batch) > MAX_ATOMIC_BATCH:
        raise ValueError(f"run {run_id!r}: at most {MAX_ATOMIC_BATCH} records per append, got {len(batch)}")


def record_targets(layout: Layout, run_id: str, batch: Sequence[StoredRecord]) -> list[Target]:
    """The batch as the stream holds it once stored: each record's line on its subject, with its message id.

    Only a write of one message carries an id; an atomic batch carries none
    (``layout.write_headers``), so its records are not hashed for one.
    """
    with_ids = len(batch) == 1
    return [
        Target(layout.subject(run_id, stored.seq), stored.line, message_id(run_id, stored) if with_ids else None)
        for stored in batch
    ]


class JetStreamJournal(Journal):
    """A run held by this server replica: its last seq and the tail its next append is fenced on.

    There is nothing to lock or roll back: a write either lands whole (one
    message, or one atomic batch) or not at all, so ``poisoned`` is never set.
    ``_mutex`` keeps one append or refresh at a time on the handle. The
    checks before a write or a read (closed handle, numbering, the
    ``stored_line`` range) are ``Journal``'s; this class fills its hooks.
    """

    def __init__(
        self,
        run_id: str,
        last_seq: int,
        tail: Fence,
        *,
        api: Callable[[], JetStreamApi],
        layout: Layout,
        reader: StreamReader,
        own: OwnWrites,
        forget: Callable[[JetStreamJournal], None],
    ) -> None:
        self.run_id = run_id
        self._api = api
        self._layout = layout
        self._reader = reader
        self._own = own
        self._forget = forget
        self._last_seq = last_seq
        self._tail = tail
        """The last record this handle knows: what its next append is fenced on."""
        self._closed = False
        self._mutex = asyncio.Lock()
        self._barrier = Barrier(api, layout)

    @property
    def last_seq(self) -> int:
        return self._last_seq

    async def _store(self, batch: list[StoredRecord]) -> None:
        check_batch_size(self.run_id, batch)
        async with self._mutex:
            self._check_append(batch)  # again: the handle may have closed or advanced while we waited
            await self._write(batch)

    async def refresh(self) -> list[StoredRecord]:
        """Adopt what other writers stored after our tail, all or nothing; a stray message there is corruption.

        The first message of the run's subjects stored after our tail (one
        lookup when nothing is new) must be record ``last_seq + 1``; the
        records after it are read by exact subject (4, then 16, then 64 at
        a time) until one is empty, and the lookup is repeated from the new
        tail, so a message published on a gap or malformed subject after
        them is reported instead of waiting to collide with a later append,
        and the run's tombstone there is RUN_DELETED (``deletion.py``).
        A stray stored *before* our tail is the full reads' to find
        (``StreamReader.last``). Where the reads stop ("nothing after seq
        N"), that is asked again behind a barrier before it is believed
        (``_read_again``), whether or not they found anything: a node behind
        the stream may hold seq N (stored before it fell behind) and not
        N+1 (stored after, under a new leader), and stopping at N would
        refuse a correct N+2 as a gap just as surely as stopping at our tail.
        """
        async with self._mutex:
            self._check_usable()
            found = await self._newer(self._last_seq, self._tail.stream_seq)
            for _ in range(CATCH_UP_ROUNDS):
                last_seq, after = self._end(found)
                if not await self._read_again(last_seq, after):
                    break
                more = await self._newer(last_seq, after)
                if not more:
                    raise StorageUnavailableError(
                        self.run_id,
                        f"catching up with the run: seq {last_seq + 1} is stored, but a node behind the "
                        "stream answered that it is not",
                    )
                found.extend(more)
            else:
                raise StorageUnavailableError(
                    self.run_id, f"catching up with the run: it grew past seq {last_seq} while being read"
                )
            if found:
                self._advance(*self._end(found))
            return [stored for stored, _ in found]

    def _end(self, found: list[tuple[StoredRecord, StoredMessage]]) -> tuple[int, int]:
        """The seq and stream seq of the last record known: the last found, else our tail."""
        if not found:
            return self._last_seq, self._tail.stream_seq
        stored, message = found[-1]
        return stored.seq, message.stream_seq

    async def _newer(self, last_seq: int, after: int) -> list[tuple[StoredRecord, StoredMessage]]:
        """The records stored after seq ``last_seq`` (at stream seq ``after``), up to the first empty subject."""
        found: list[tuple[StoredRecord, StoredMessage]] = []
        while (following := await self._reader.next_after(self.run_id, after)) is not None:
            expected = last_seq + len(found) + 1
            if following.subject == self._layout.tombstone(self.run_id):
                # Another replica deleted the run: its tombstone follows what this handle knows.
                raise RunDeletedError(self.run_id, decode_tombstone(self.run_id, following).last_seq)
            if following.subject != self._subject(expected):
                raise self._reader.stray_error(self.run_id, following.subject, expected)
            found.extend(await self._forward(expected, following))
            after = found[-1][1].stream_seq
        return found

    async def _read_again(self, last_seq: int, after: int) -> bool:
        """Whether "nothing after seq ``last_seq``" must be read again: asked behind a barrier (``barrier.py``).

        A leader cut off from the others, or one that hung and resumed after
        being replaced, answers from a store that lacks what the new leader
        acknowledged; an append refused on its word would be a SEQ_GAP to a
        worker that sent exactly the next seq. So the next record's subject
        and the tombstone's are asked behind a barrier: both empty, nothing
        is new (False). The tombstone there, or the next record stored after
        ``after``: the first read was stale, read again (True). The next
        record's subject holding a message stored *before* it is a stray,
        the full read's to report (False). No answer that can be proven
        current is STORAGE_UNAVAILABLE: nothing was written, resend.
        """
        following = self._subject(last_seq + 1)
        try:
            next_held, tombstone_held = await self._barrier.held([following, self._layout.tombstone(self.run_id)])
        except StaleAnswerError as err:
            raise StorageUnavailableError(self.run_id, f"catching up with the run: {err}") from err
        if tombstone_held:
            return True
        if not next_held:
            return False
        (message,) = await self._reader.read(self.run_id, [following])
        return message is None or message.stream_seq > after

    async def _forward(self, seq: int, message: StoredMessage) -> list[tuple[StoredRecord, StoredMessage]]:
        """Record ``seq`` (its message in hand) and those after it, up to the first empty subject."""
        found = [(self._reader.decode(self.run_id, seq, message), message)]
        window = 4
        while True:
            first = seq + len(found)
            seqs = range(first, first + window)
            messages = await self._reader.read(self.run_id, [self._subject(at) for at in seqs])
            for at, later in zip(seqs, messages, strict=True):
                if later is None:
                    return found
                found.append((self._reader.decode(self.run_id, at, later), later))
            window = min(window * 4, REFRESH_WINDOW_MAX)

    async def _read_line(self, seq: int) -> StoredRecord:
        return self._reader.decode(self.run_id, seq, await self._read_message(seq))

    async def _read_bytes(self, seq: int) -> bytes:
        return (await self._read_message(seq)).data

    async def _read_message(self, seq: int) -> StoredMessage:
        (message,) = await self._reader.read(self.run_id, [self._subject(seq)])
        if message is None:
            raise CorruptJournalError(self.run_id, f"seq {seq} is no longer in the stream", seq=seq)
        return message

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._forget(self)

    # ------------------------------------------------------------ writing

    async def _write(self, batch: list[StoredRecord]) -> None:
        await ride_through(lambda: self._write_once(batch), self._api().timeout)

    async def _write_once(self, batch: list[StoredRecord]) -> None:
        """Publish the batch fenced on our tail; advance only on an ack or a verified read-back.

        What the settled outcomes mean here: our bytes stored by an earlier
        request, or anything stored by another writer, is ``WriteRaceError``
        (runs/runs.py catches up and its append rule answers the retry as a
        verified duplicate, truthfully: adopting would answer "written now",
        ``duplicate=false``); on an empty target a fence refusal means our
        view of the run is stale (``WriteRaceError``), a full stream is
        STORAGE_FULL, and anything else STORAGE_UNAVAILABLE, with "nothing is
        stored" as the whole truth.
        """
        first = batch[0].seq
        api = self._api()
        targets = record_targets(self._layout, self.run_id, batch)
        try:
            outcome = await publish_once(api, lambda: self._send(api, targets), targets, own=self._own)
        except NotDeliveredError as err:
            raise NotNow(StorageUnavailableError(self.run_id, f"appending seq {first}: {err}")) from err
        except ReadBackError as err:
            what = self._what(first, err.answer)
            raise NotNow(
                StorageUnavailableError(self.run_id, f"{what}, and reading seq {first} back failed too ({err.cause})")
            ) from err.cause
        match outcome:
            case Stored(stream_seq):
                self._advance(batch[-1].seq, stream_seq)
            case Occupied(answer, _, ours=True):
                what = self._what(first, answer)
                raise WriteRaceError(f"run {self.run_id!r}: seq {first} was stored by an earlier request ({what})")
            case Occupied(answer):
                what = self._what(first, answer)
                raise WriteRaceError(f"run {self.run_id!r}: another writer stored seq {first} or later ({what})")
            case Empty(answer):
                what = self._what(first, answer)
                if answer.is_fence:
                    raise WriteRaceError(f"run {self.run_id!r}: seq {first - 1} is not what this server read ({what})")
                if answer.refusal is not None and is_full(answer.refusal):
                    raise StorageFullError(self.run_id, what)
                unavailable = StorageUnavailableError(self.run_id, f"{what}; nothing is stored at seq {first}")
                if answer.refusal is None or is_not_now(answer.refusal):
                    raise NotNow(unavailable)
                raise unavailable

    @staticmethod
    def _what(first: int, answer: Answer) -> str:
        if answer.no_answer is not None:
            return f"appending seq {first} got no ack ({answer.no_answer})"
        if answer.refusal is not None:
            return f"the stream refused seq {first}: {answer.refusal}"
        return f"the stream reported seq {first} as a duplicate"

    async def _send(self, api: JetStreamApi, targets: list[Target]) -> PubAck:
        if len(targets) == 1:
            (only,) = targets
            headers = write_headers(api.stream, fence=self._tail, msg_id=only.msg_id)
            return await api.publish(Outgoing(only.subject, only.data, headers))
        # In an atomic batch the first message carries the fence, and none an id (``layout.write_headers``).
        fenced = write_headers(api.stream, fence=self._tail)
        plain = write_headers(api.stream)
        return await api.publish_batch(
            [
                Outgoing(target.subject, target.data, fenced if index == 0 else plain)
                for index, target in enumerate(targets)
            ]
        )

    def _advance(self, seq: int, stream_seq: int) -> None:
        self._last_seq = seq
        self._tail = Fence(self._subject(seq), stream_seq)

    def _subject(self, seq: int) -> str:
        return self._layout.subject(self.run_id, seq)
