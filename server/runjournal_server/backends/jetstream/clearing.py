"""A creation whose fence found the run's subjects taken: what is there, and clearing an uncommitted creation's remains.

What the subjects of a run without a meta mean is ``remains.py``'s rule;
this module reads them for a creation and clears the remains of a creation
that never committed, so the id can be created again. They are cleared by
the next creation of the id, never by a reader or at start: a start cannot
tell remains a crash left from a staging another replica is storing right
now, and only a creator needs the id. To a staging still in flight, a
clearing is a rival creation that got there first: its next stage or its
commit is refused and it answers RUN_EXISTS (``staging.py``), as the loser
of any two creations of one id does.

1. **The marker** ``P.R.clearing`` (``layout.py``) is published fenced on
   the last message of the remains as they were read and checked (every
   message staged): it lands only if nothing was stored on the run since,
   and once it is there no stage, commit or creation can land (each is
   fenced on the run's subjects), so what lies below it is all there is.
2. Every message below it is erased (the stream's message delete, which
   overwrites the bytes, as a deletion does), then the marker.

A clearing that a crash or a cancelled caller interrupted leaves the marker
and what is left below it: remains too, whose clearing the next creation
finishes (two creators may clear at once: a delete of a message already
gone is fine). Readers find no run meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

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
from runjournal_server.backends.jetstream.reading import StreamReader
from runjournal_server.backends.jetstream.remains import is_creation_remains, no_meta_problem
from runjournal_server.core.errors import (
    CorruptJournalError,
    RunExistsError,
    StorageFullError,
    StorageUnavailableError,
)
from runjournal_server.core.records import StoredRecord

MARKER_BODY = b'{"clearing":"the remains of a creation that never committed"}'
_WINDOW = 64


@dataclass(frozen=True)
class Held:
    """One message of the remains, without its body."""

    subject: str
    stream_seq: int
    staged: bool
    ours: bool
    """Its bytes are the creator's own record at that seq (a staged creation resuming its staging)."""


@dataclass(frozen=True)
class Found:
    """The remains of an uncommitted creation, read whole (none: the run's subjects are empty now)."""

    held: list[Held] = field(default_factory=list)
    """In stream order."""

    @property
    def last_stream_seq(self) -> int:
        return self.held[-1].stream_seq if self.held else 0

    def stream_seq_of(self, subject: str) -> int | None:
        return next((held.stream_seq for held in self.held if held.subject == subject), None)


class Remains:
    """Reading and clearing what a refused creation found on a run's subjects (see the module docstring)."""

    def __init__(self, api: JetStreamApi, layout: Layout, reader: StreamReader, run_id: str) -> None:
        self._api = api
        self._layout = layout
        self._reader = reader
        self._run_id = run_id

    async def look(self, ours: Sequence[StoredRecord] = ()) -> Found:
        """The run's subjects, where they are an uncommitted creation's remains (or nothing any more).

        RUN_EXISTS where the run's meta or tombstone is there (the caller
        tells a deleted run apart), CORRUPT_JOURNAL naming the subjects where
        they are anything else. ``ours`` are the creator's records 2, 3, ...:
        each message holding one of them byte for byte is marked ``ours``.
        Bodies are read a window at a time and not kept.
        """
        run_id, layout = self._run_id, self._layout
        subjects = await self._reader.call(run_id, lambda api: api.subjects(layout.run_subjects(run_id)))
        if layout.subject(run_id, 1) in subjects or layout.tombstone(run_id) in subjects:
            raise RunExistsError(run_id)
        held: list[Held] = []
        for first in range(0, len(subjects), _WINDOW):
            window = subjects[first : first + _WINDOW]
            for message in await self._reader.read(run_id, window):
                if message is not None:  # gone since the listing: another creator's clearing
                    held.append(self._held(message, ours))
        held.sort(key=lambda message: message.stream_seq)
        if held and not is_creation_remains(layout, run_id, [m.subject for m in held], [m.staged for m in held]):
            raise CorruptJournalError(run_id, no_meta_problem(layout, run_id, [m.subject for m in held]), seq=1)
        return Found(held)

    def _held(self, message: StoredMessage, ours: Sequence[StoredRecord]) -> Held:
        seq = self._layout.seq_of(self._run_id, message.subject)
        mine = seq is not None and 2 <= seq <= len(ours) + 1 and ours[seq - 2].line == message.data
        return Held(message.subject, message.stream_seq, message.staged, mine and message.staged)

    async def clear(self, found: Found) -> None:
        """Clear the remains ``look`` found; returns when they are gone or the run moved (look again)."""
        if not found.held:
            return
        marker = self._layout.clearing(self._run_id)
        marker_seq = found.stream_seq_of(marker)
        if marker_seq is None:
            marker_seq = await self._mark(found.last_stream_seq)
            if marker_seq is None:
                return
        await self._erase([held.stream_seq for held in found.held if held.stream_seq < marker_seq])
        await self._erase([marker_seq])

    async def _mark(self, last_stream_seq: int) -> int | None:
        """Publish the marker fenced on the remains' last message: its stream seq, or None if the run moved."""
        run_id = self._run_id
        headers = write_headers(self._api.stream, fence=self._layout.run_fence(run_id, last_stream_seq))
        try:
            ack = await self._api.publish(Outgoing(self._layout.clearing(run_id), MARKER_BODY, headers))
        except NoAnswerError:
            return None  # landed or not, the next look sees: a marker there is finished then
        except NotDeliveredError as err:
            raise StorageUnavailableError(run_id, f"clearing an uncommitted creation's remains: {err}") from err
        except ApiError as err:
            if err.err_code == ERR_WRONG_LAST_SEQUENCE or is_taken(err):
                return None
            if is_full(err):
                raise StorageFullError(run_id, f"clearing an uncommitted creation's remains: {err}") from err
            raise StorageUnavailableError(run_id, f"clearing an uncommitted creation's remains: {err}") from err
        return ack.stream_seq

    async def _erase(self, stream_seqs: list[int]) -> None:
        gate = asyncio.Semaphore(READ_CONCURRENCY)

        async def one(stream_seq: int) -> None:
            async with gate:
                await self._api.delete_message(stream_seq)  # False (gone already) is fine: another clearer's

        try:
            await asyncio.gather(*(one(stream_seq) for stream_seq in stream_seqs))
        except (ApiError, NotDeliveredError, NoAnswerError) as err:
            raise StorageUnavailableError(
                self._run_id,
                f"clearing an uncommitted creation's remains: {err}; nothing is created, and the next creation "
                "of the run finishes the clearing",
            ) from err
