"""Reading runs from the stream: loads, bounded stream windows, the backward walk, the stray-subject check.

Every read goes to the stream leader (``api.JetStreamApi.get_last``), so a
write that was acknowledged is always seen; a failure to read is
STORAGE_UNAVAILABLE, and anything the stream holds that no record of the run
may be is CORRUPT_JOURNAL.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

from runjournal_server.backends.jetstream.api import (
    ApiError,
    JetStreamApi,
    NoAnswerError,
    NotDeliveredError,
    StoredMessage,
)
from runjournal_server.backends.jetstream.fetch import ConsumerRead
from runjournal_server.backends.jetstream.layout import Layout, not_a_record, subject_problem
from runjournal_server.backends.jetstream.remains import is_creation_remains, no_meta_problem
from runjournal_server.backends.reading import BackwardWalk, decode_at
from runjournal_server.core.errors import CorruptJournalError, RunNotFoundError, StorageUnavailableError
from runjournal_server.core.ids import validate_run_id
from runjournal_server.core.records import StoredRecord

WALK_BACK_WINDOW = 8
"""``ends`` and ``tail`` read this many records at a time backward from the end."""
STREAM_WINDOW_MAX = 64
BY_SUBJECT_MAX = 64
"""A run with more records than this before its last is loaded through a consumer (``fetch.py``): one
request per record costs more past here, where 64 requests in flight no longer take one round trip."""
CONSUMER_WINDOW_MAX = 1024
"""The most records one pull of ``stream``'s consumer asks for (fewer when they are large)."""
STREAM_WINDOW_BYTES = 1 << 20
"""``stream`` holds about this much of a run at a time (one record at least, if it is larger)."""


def next_window(window: int, held_bytes: int) -> int:
    """The next ``stream`` window: as many records as the last ones' size says fit ``STREAM_WINDOW_BYTES``."""
    average = max(held_bytes // window, 1)
    return max(1, min(STREAM_WINDOW_MAX, window * 4, STREAM_WINDOW_BYTES // average))


class StreamReader:
    """The reads of one stream's runs; ``api`` gives the started backend's API client."""

    def __init__(self, api: Callable[[], JetStreamApi], layout: Layout, stream: str) -> None:
        self._api = api
        self._layout = layout
        self._stream = stream

    # ------------------------------------------------------------ whole runs

    async def load(self, run_id: str) -> tuple[list[StoredRecord], StoredMessage]:
        """Every record of the run: its last message first (its subject says how many), then the rest.

        The rest of a long run comes through one consumer (``_consumed``),
        not one request per record; what it does not deliver is read by subject.
        """
        last_seq, last = await self.last(run_id)
        earlier: list[StoredRecord] = []
        if last_seq - 1 > BY_SUBJECT_MAX:
            async with contextlib.aclosing(self._consumed(run_id, 1, last_seq)) as consumed:
                earlier = [stored async for stored in consumed]
        earlier += await self.records(run_id, range(len(earlier) + 1, last_seq))
        return [*earlier, self.decode(run_id, last_seq, last)], last

    async def meta(self, run_id: str) -> StoredRecord:
        """The record on the run's meta subject alone."""
        (message,) = await self.read(run_id, [self._layout.subject(run_id, 1)])
        if message is None:
            raise await self.why_no_meta(run_id)
        return self.decode(run_id, 1, message)

    async def stream(self, run_id: str, from_seq: int) -> AsyncGenerator[StoredRecord, None]:
        """The records from ``from_seq`` to the first empty subject, read a bounded window at a time.

        The run's subjects are checked first (``last``), so a stray message
        is CORRUPT_JOURNAL before anything is yielded. A window is at most
        ``STREAM_WINDOW_MAX`` subjects and sized from the previous one to stay
        near ``STREAM_WINDOW_BYTES``; only the current window is held, and the
        next is read only when the consumer asks for it (gRPC flow control).
        Records appended meanwhile are included: the read ends at the first
        empty subject, not at the last seq seen when it began. A remainder
        longer than ``BY_SUBJECT_MAX`` comes through one consumer first
        (``_consumed``: a request per window, not per record; a fork of a
        10,000-record run read 10,000 subjects one by one), the same bounded
        windows; the by-subject read goes on from where it stops.
        """
        last_seq, _ = await self.last(run_id)
        seq = max(from_seq, 1)
        if last_seq - seq > BY_SUBJECT_MAX:
            async with contextlib.aclosing(self._consumed(run_id, seq, last_seq)) as consumed:
                async for stored in consumed:
                    yield stored
                    seq = stored.seq + 1
        window = 1
        while True:
            seqs = range(seq, seq + window)
            messages = await self.read(run_id, [self._layout.subject(run_id, at) for at in seqs])
            held = 0
            for at, message in zip(seqs, messages, strict=True):
                if message is None:
                    if at <= last_seq:
                        raise CorruptJournalError(run_id, f"seq {at} is missing (a later record is stored)", seq=at)
                    return
                held += len(message.data)
                yield self.decode(run_id, at, message)
            del messages
            seq += window
            window = next_window(window, held)

    async def _consumed(self, run_id: str, from_seq: int, last_seq: int) -> AsyncGenerator[StoredRecord, None]:
        """Records ``from_seq`` up to below ``last_seq`` through one consumer (``fetch.py``), a window at a time.

        The first is read by subject (its stream seq starts the consumer,
        or the run's first message does, for the meta); the consumer then
        delivers the rest in stream order, which is seq order but for the
        meta of a staged creation, stored after its staged records
        (``staging.py``): passed over, read by subject already or not
        wanted. It stops early where it cannot go on (a lagging consumer, a
        subject out of place): the caller reads on by subject from the
        record after the last yielded.
        Windows are sized like ``stream``'s, up to ``CONSUMER_WINDOW_MAX``.
        """
        (first,) = await self.read(run_id, [self._layout.subject(run_id, from_seq)])
        if first is None:
            return  # the by-subject read says what is wrong
        yield self.decode(run_id, from_seq, first)
        window = max(1, min(CONSUMER_WINDOW_MAX, STREAM_WINDOW_BYTES // max(len(first.data), 1)))
        reader = ConsumerRead(
            self._api(),
            self._layout.run_subjects(run_id),
            lambda seq: self._layout.subject(run_id, seq),
            first=from_seq + 1,
            after_stream_seq=0 if from_seq == 1 else first.stream_seq,
            skip_subject=self._layout.subject(run_id, 1),
        )
        seq = from_seq + 1
        async with reader:
            while seq < last_seq and not reader.ended:
                bodies = await reader.window(min(window, last_seq - seq))
                held = 0
                for body in bodies:
                    held += len(body)
                    yield decode_at(
                        run_id, seq, body, holder=f"the record on {self._layout.subject(run_id, seq)!r}", at_seq=seq
                    )
                    seq += 1
                if bodies:
                    fit = STREAM_WINDOW_BYTES * len(bodies) // max(held, 1)
                    window = max(1, min(CONSUMER_WINDOW_MAX, len(bodies) * 4, fit))
                del bodies

    async def walk_back(self, run_id: str, walk: BackwardWalk) -> StoredRecord | None:
        """Feed ``walk`` the run's records from the last back (``backward``) until it is done; the run's meta.

        The walk of ``ends`` and ``tail`` is ``base.py``'s; this reads for it,
        and reads the meta alone when the walk stops above it and wants it
        (``tail`` does not: the inbox listing pays no extra request per run).
        """
        walk.restart()
        async with contextlib.aclosing(self.backward(run_id, walk)) as backward:
            async for stored in backward:
                if walk.take(stored):
                    break
        if stored.seq == 1:
            return stored
        if not walk.wants_meta:
            return None
        (meta,) = await self.records(run_id, [1])
        return meta

    async def run_ids(self) -> list[str]:
        """Every run with a meta: the stream's subjects matching ``<prefix>.*.meta``, page by page."""
        subjects = await self.call(None, lambda api: api.subjects(self._layout.metas()))
        return [run_id for subject in subjects if (run_id := self._layout.run_of_meta(subject)) is not None]

    # ------------------------------------------------------------ the last record and the subjects check

    async def last(self, run_id: str) -> tuple[int, StoredMessage]:
        """The run's last message and its seq, checked against the count of the run's subjects.

        Records are stored in seq order (each needs its predecessor), so the
        last message is the last record, and a healthy run of N records has
        exactly N subjects. The append fence looks only at the previous
        record, so a message published straight to the stream on a gap or
        malformed subject of the run (``.9`` at 7, ``.x``, ``.07``) would
        otherwise hide until an append collided with it; a different count
        is diagnosed (``_check_subjects``). Both lookups run at once; their
        cost grows gently with the run (the server matches the run's
        subjects); appends never pay it.
        """
        validate_run_id(run_id)
        wildcard = self._layout.run_subjects(run_id)
        last, count = await self.call(run_id, lambda api: api.last_and_count(wildcard))
        if last is None:
            raise RunNotFoundError(run_id)
        if last.subject == self._layout.clearing(run_id):
            await self._check_subjects(run_id)  # the remains of a creation, being cleared: no run
        seq = self._seq_of(run_id, last)
        if count != seq:
            await self._check_subjects(run_id)
        return seq, last

    async def _check_subjects(self, run_id: str) -> None:
        """Raise ``CorruptJournalError`` naming a subject of the run that no record of it may have.

        Subjects without a meta are ``RunNotFoundError`` where they are a
        deleted run's or an uncommitted creation's, and damage otherwise
        (``remains.py``).

        Only on a count mismatch: the names are listed (pages of the info
        API), then the last message is read again, so every record the list
        holds is at or below it. A mismatch with no stray was a concurrent
        append between the two lookups: nothing to report.
        """
        wildcard = self._layout.run_subjects(run_id)
        subjects = await self.call(run_id, lambda api: api.subjects(wildcard))
        (last,) = await self.read(run_id, [wildcard])
        if last is None or self._layout.subject(run_id, 1) not in subjects:
            raise self._no_meta(run_id, subjects, last)
        top = self._seq_of(run_id, last)
        problem = subject_problem(self._layout, run_id, subjects, top)
        if problem is not None:
            detail, seq = problem
            raise CorruptJournalError(run_id, detail, seq=seq)

    async def why_no_meta(self, run_id: str) -> RunNotFoundError | CorruptJournalError:
        """Why a run's meta subject is empty: no run, or damage naming what its subjects hold (``remains.py``)."""
        wildcard = self._layout.run_subjects(run_id)
        subjects = await self.call(run_id, lambda api: api.subjects(wildcard))
        (last,) = await self.read(run_id, [wildcard]) if subjects else (None,)
        return self._no_meta(run_id, subjects, last)

    def _no_meta(
        self, run_id: str, subjects: list[str], last: StoredMessage | None
    ) -> RunNotFoundError | CorruptJournalError:
        """A run is its meta: subjects without one are no run, where they are nothing, a deleted run's (its
        tombstone answers, ``backend.py``) or a creation's that never committed, and damage otherwise."""
        if last is None or not subjects or self._layout.tombstone(run_id) in subjects:
            return RunNotFoundError(run_id)
        if is_creation_remains(self._layout, run_id, subjects, [last.staged]):
            return RunNotFoundError(run_id)
        return CorruptJournalError(run_id, no_meta_problem(self._layout, run_id, subjects), seq=1)

    async def next_after(self, run_id: str, after_stream_seq: int) -> StoredMessage | None:
        """The first message on the run's subjects stored after ``after_stream_seq``."""
        wildcard = self._layout.run_subjects(run_id)
        return await self.call(run_id, lambda api: api.get_next(wildcard, after_stream_seq + 1))  # type: ignore[no-any-return]

    def stray_error(self, run_id: str, subject: str, expected: int) -> CorruptJournalError:
        """A message on ``subject`` stored where record ``expected`` should come next."""
        if self._layout.seq_of(run_id, subject) is None:
            return CorruptJournalError(run_id, not_a_record(subject))
        return CorruptJournalError(
            run_id,
            f"seq {expected} is missing, but the stream holds a later message on {subject!r} "
            "(published outside runjournal)",
            seq=expected,
        )

    # ------------------------------------------------------------ records by subject

    async def backward(self, run_id: str, walk: BackwardWalk | None = None) -> AsyncGenerator[StoredRecord, None]:
        """The run's records from the last back to the meta, read ``WALK_BACK_WINDOW`` at a time.

        The others are read by exact subject, so a caller that stops early
        reads only the tail.
        """
        last_seq, last = await self.last(run_id)
        if walk is not None:
            walk.stored_at = last.stored_at  # the listing's updated_at: when the last record was stored
        yield self.decode(run_id, last_seq, last)
        for top in range(last_seq - 1, 0, -WALK_BACK_WINDOW):
            for stored in await self.records(run_id, range(top, max(top - WALK_BACK_WINDOW, 0), -1)):
                yield stored

    async def records(self, run_id: str, seqs: Sequence[int]) -> list[StoredRecord]:
        """The records at ``seqs`` (below a stored last record, so each must be there)."""
        messages = await self.read(run_id, [self._layout.subject(run_id, seq) for seq in seqs])
        found = []
        for seq, message in zip(seqs, messages, strict=True):
            if message is None:
                raise CorruptJournalError(run_id, f"seq {seq} is missing (a later record is stored)", seq=seq)
            found.append(self.decode(run_id, seq, message))
        return found

    async def read(self, run_id: str | None, subjects: Sequence[str]) -> list[StoredMessage | None]:
        """The last message on each subject, from the stream leader; a failure is STORAGE_UNAVAILABLE."""
        return await self.call(run_id, lambda api: api.get_many(subjects))

    async def call(self, run_id: str | None, call: Callable[[JetStreamApi], Any]) -> Any:
        """One read of the API; its failure is STORAGE_UNAVAILABLE."""
        try:
            return await call(self._api())
        except (ApiError, NotDeliveredError, NoAnswerError) as err:
            raise StorageUnavailableError(run_id, f"reading from stream {self._stream}: {err}") from err

    def _seq_of(self, run_id: str, message: StoredMessage) -> int:
        seq = self._layout.seq_of(run_id, message.subject)
        if seq is None:
            raise CorruptJournalError(run_id, not_a_record(message.subject))
        return seq

    @staticmethod
    def decode(run_id: str, seq: int, message: StoredMessage) -> StoredRecord:
        """The record on seq's subject; any damage is corruption (a message is never torn)."""
        return decode_at(run_id, seq, message.data, holder=f"the record on {message.subject!r}", at_seq=seq)
