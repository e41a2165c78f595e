"""Creating a run: its meta (and the rest, as one atomic batch), fenced on the run having no message at all.

The fence (``Expected-Last-Subject-Sequence: 0`` over the run's subjects, on
the meta, the batch's first message) refuses a second creator, and also a
"creation" into the remains of a run whose meta was removed by hand. A batch
lands whole or not at all, so a run is never listed with only part of its
creation. A refusal is decided by itself (the fence spans the run: something is
there, or the stream is full); no answer or a duplicate ack is settled by
reading the batch back (``publish.py``): anything stored there, even the
same bytes, is the run taken (``runs/`` then answers a duplicate). A
duplicate ack over an empty run is an id remembered from a run removed
within the duplicate window (where the server checks the fence first).

A refused creation looks at what the run's subjects hold (``clearing.py``):
a meta or a tombstone is ``RunExistsError``; the remains of a creation
that never committed are cleared and the creation tried again; anything
else is CORRUPT_JOURNAL naming it (``remains.py``).

A creation larger than one atomic batch carries is staged first
(``staging.py``).

A creation rides through a leader change as an append does
(``ride_through.py``): no answer and nothing found on the read-back, "no
responders" (an R3 stream just created, whose interest has not reached every
node yet, answers so for a moment), or a 503 refusal is published again; a
resend that finds the earlier attempt landed after all finds the run
taken, which ``runs/`` answers as a duplicate when the meta is the same.
"""

from __future__ import annotations

from runjournal_server.backends.jetstream.api import (
    ApiError,
    JetStreamApi,
    NoAnswerError,
    NotDeliveredError,
    Outgoing,
    PubAck,
    is_full,
    is_taken,
)
from runjournal_server.backends.jetstream.clearing import Remains
from runjournal_server.backends.jetstream.journal import check_batch_size, record_targets
from runjournal_server.backends.jetstream.layout import Layout, message_id, write_headers
from runjournal_server.backends.jetstream.own_writes import OwnWrites
from runjournal_server.backends.jetstream.publish import (
    Answer,
    Answered,
    Empty,
    Occupied,
    ReadBackError,
    Stored,
    publish_once,
)
from runjournal_server.backends.jetstream.reading import StreamReader
from runjournal_server.backends.jetstream.ride_through import NotNow, is_not_now, ride_through
from runjournal_server.backends.jetstream.staging import StagedCreation, needs_staging
from runjournal_server.core.errors import StorageFullError, StorageUnavailableError
from runjournal_server.core.records import StoredRecord

MAX_CLEARINGS = 3
"""Clearings of other creations' remains one creation goes through before it gives up (the run keeps moving)."""


class Creation:
    """One run's creation (see the module docstring); ``store`` returns the stream seq of its last record."""

    def __init__(self, api: JetStreamApi, layout: Layout, reader: StreamReader, own: OwnWrites, run_id: str) -> None:
        self._api = api
        self._layout = layout
        self._reader = reader
        self._own = own
        self._run_id = run_id

    async def store(self, batch: list[StoredRecord]) -> int:
        """Store ``batch`` (seqs 1, 2, ..., checked) as the new run, all or nothing, again while the stream
        cannot take it now (see the module docstring)."""
        return await ride_through(lambda: self._store(batch), self._api.timeout)

    async def _store(self, batch: list[StoredRecord]) -> int:
        run_id, api = self._run_id, self._api
        if needs_staging(batch):  # more than one atomic batch carries: staged, then committed
            return await StagedCreation(api, self._layout, self._reader, self._own, run_id).store(batch)
        check_batch_size(run_id, batch)
        remains = Remains(api, self._layout, self._reader, run_id)
        for _ in range(MAX_CLEARINGS + 1):
            stream_seq = await self._store_once(batch)
            if stream_seq is not None:
                return stream_seq
            await remains.clear(await remains.look())  # or RUN_EXISTS, or CORRUPT_JOURNAL (remains.py)
        raise StorageUnavailableError(
            run_id, "creating the run: its subjects kept changing while another creation's remains were cleared"
        )

    async def _store_once(self, batch: list[StoredRecord]) -> int | None:
        """Publish the creation: the stream seq of its last record, or None when the run's subjects are taken."""
        run_id, api = self._run_id, self._api
        try:
            outcome = await publish_once(
                api,
                lambda: self._publish(batch),
                record_targets(self._layout, run_id, batch),
                final=lambda answer: answer.refusal is not None,
                own=self._own,
            )
        except NotDeliveredError as err:
            raise NotNow(StorageUnavailableError(run_id, f"creating the run: {err}")) from err
        except ReadBackError as err:
            raise NotNow(
                StorageUnavailableError(run_id, f"reading from stream {api.stream}: {err.cause}")
            ) from err.cause
        match outcome:
            case Stored(stream_seq):
                return stream_seq
            case Answered(Answer(refusal=ApiError() as refusal) as answer):
                if answer.is_fence or is_taken(refusal):
                    return None
                if is_full(refusal):
                    raise StorageFullError(run_id, f"creating the run: {refusal}") from refusal
                unavailable = StorageUnavailableError(run_id, f"creating the run: {refusal}")
                if is_not_now(refusal):
                    raise NotNow(unavailable) from refusal
                raise unavailable from refusal
            case Occupied():
                return None
            case Empty(Answer(no_answer=NoAnswerError() as lost)):
                raise NotNow(
                    StorageUnavailableError(run_id, f"creating the run got no ack ({lost}); nothing is stored")
                ) from lost
            case _:
                raise StorageUnavailableError(
                    run_id,
                    "the stream took the meta for a duplicate of a removed run; retry after its duplicate window",
                )

    async def _publish(self, batch: list[StoredRecord]) -> PubAck:
        api, layout, run_id = self._api, self._layout, self._run_id
        fence = layout.run_fence(run_id)
        meta = layout.subject(run_id, 1)
        if len(batch) == 1:
            headers = write_headers(api.stream, fence=fence, msg_id=message_id(run_id, batch[0]))
            return await api.publish(Outgoing(meta, batch[0].line, headers))
        # The later messages need no fence: the meta's fence says the run is empty.
        first = Outgoing(meta, batch[0].line, write_headers(api.stream, fence=fence))
        later = [
            Outgoing(layout.subject(run_id, stored.seq), stored.line, write_headers(api.stream)) for stored in batch[1:]
        ]
        return await api.publish_batch([first, *later])
