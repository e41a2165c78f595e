"""A creation larger than one atomic batch (a fork of a long run): staged records, then the meta, atomically.

nats-server takes at most 1,000 messages in one atomic batch (its
``jetstream.limits.batch.max_msgs``), and a batch must commit inside the
server's batch timeout, so a creation of more records, or of more bytes than
``STAGE_BYTES``, is stored in two steps:

1. **Staging**: records 2..M in atomic batches of at most 1,000 records and
   ``STAGE_BYTES``, each fenced (on its first message) on the run's subjects
   holding exactly what this creation staged so far; the first on their
   holding nothing.
2. **Commit**: one atomic batch of the meta and records M+1..N, the meta
   fenced on the last staged message.

Each staged record carries the staging mark (``api.HEADER_STAGED``); the
commit's do not. A run is its meta: until the commit lands no reader finds
the run (a run's subjects without a meta read as RUN_NOT_FOUND where they
are marked stages, ``remains.py``; the listing lists metas), and the commit
lands whole or not at all. So the run has all of its creation or, to every
reader, does not exist, across a crash too. The run's last message is still
its last record, as the reads assume; only the meta's stream sequence is
later than the staged records'.

A crash or a lost connection during staging leaves staged records and no
meta: nothing, to a reader. A retry resumes them: a creation whose fence is
refused finds no meta and only marked records 2..k byte-identical to its
own, and continues from k+1, fenced on them. Identical bytes are
indistinguishable whoever staged them (a fork's records are its source's),
so two creators of the same run may share a staging; one meta lands, the
other is RUN_EXISTS. Staged records that differ (another creation of the
id, abandoned midway or still going) are cleared by a creation that has
staged nothing yet (``clearing.py``), which then stages from the start; a
creation whose own stages were cleared so lost the id to a rival:
RUN_EXISTS. Remains that are not marked stages are CORRUPT_JOURNAL
(``remains.py``).

A stage or commit the stream cannot take now (a leader change) is
``NotNow``: ``creating.py`` begins the creation again, which resumes the
stages that landed, as a retry does.
"""

from __future__ import annotations

from collections.abc import Sequence

from runjournal_server.backends.jetstream.api import (
    JetStreamApi,
    NoAnswerError,
    NotDeliveredError,
    Outgoing,
    is_full,
    is_taken,
)
from runjournal_server.backends.jetstream.clearing import Remains
from runjournal_server.backends.jetstream.config import MAX_ATOMIC_BATCH
from runjournal_server.backends.jetstream.journal import record_targets
from runjournal_server.backends.jetstream.layout import Layout, write_headers
from runjournal_server.backends.jetstream.own_writes import OwnWrites
from runjournal_server.backends.jetstream.publish import Answered, Empty, Occupied, ReadBackError, Stored, publish_once
from runjournal_server.backends.jetstream.reading import StreamReader
from runjournal_server.backends.jetstream.ride_through import NotNow, is_not_now
from runjournal_server.core.errors import RunExistsError, StorageFullError, StorageUnavailableError
from runjournal_server.core.records import StoredRecord

STAGE_BYTES = 4 * 1024 * 1024
"""Record bytes per staged batch (at least one record): well inside the server's batch commit timeout."""
MAX_STAGE_REFUSALS = 5
"""Fence refusals in a row without progress a staging survives by resuming before it gives up."""


def needs_staging(batch: Sequence[StoredRecord]) -> bool:
    """True for a creation that one atomic batch cannot carry."""
    return len(batch) > MAX_ATOMIC_BATCH or sum(len(stored.line) for stored in batch) > STAGE_BYTES


def chunks(records: Sequence[StoredRecord], *, max_records: int) -> list[list[StoredRecord]]:
    """``records`` cut into runs of at most ``max_records`` and ``STAGE_BYTES`` (a larger record alone)."""
    out: list[list[StoredRecord]] = []
    size = 0
    for stored in records:
        if not out or len(out[-1]) == max_records or size + len(stored.line) > STAGE_BYTES:
            out.append([])
            size = 0
        out[-1].append(stored)
        size += len(stored.line)
    return out


class StagedCreation:
    """Store one run's creation in stages (see the module docstring); ``store`` returns the last stream seq."""

    def __init__(self, api: JetStreamApi, layout: Layout, reader: StreamReader, own: OwnWrites, run_id: str) -> None:
        self._api = api
        self._layout = layout
        self._reader = reader
        self._own = own
        self._run_id = run_id
        self._landed = False
        """A stage of ours was stored: remains that are not ours now mean a rival cleared them (RUN_EXISTS)."""

    async def store(self, batch: list[StoredRecord]) -> int:
        meta, rest = batch[0], batch[1:]
        # The commit carries the last records (at least one), so the run's last message is its last record.
        commit = chunks(rest[::-1], max_records=MAX_ATOMIC_BATCH - 1)[0][::-1] if rest else []
        staged = rest[: len(rest) - len(commit)]
        done, after, refusals = 0, 0, 0
        while True:
            pending = staged[done:]
            # The next stage: the first chunk of what is pending (cut from its first batch's worth alone).
            messages = (
                [meta, *commit] if not pending else chunks(pending[:MAX_ATOMIC_BATCH], max_records=MAX_ATOMIC_BATCH)[0]
            )
            stream_seq = await self._publish(messages, after)
            if stream_seq is not None and not pending:
                return stream_seq
            if stream_seq is not None:
                done, after, self._landed = done + len(messages), stream_seq, True
                continue
            refusals += 1
            if refusals > MAX_STAGE_REFUSALS:
                raise StorageUnavailableError(
                    self._run_id,
                    f"creating the run: its staging was refused {refusals} times without progress; nothing is created",
                )
            before = done
            done, after = await self._resume(staged)
            if done > before:
                refusals = 0  # another creator staged our bytes meanwhile: sharing the staging, not stuck

    async def _publish(self, messages: list[StoredRecord], after: int) -> int | None:
        """Publish one stage fenced on ``after``: its last stream seq, or None when the run moved under it."""
        api = self._api
        targets = record_targets(self._layout, self._run_id, messages)
        try:
            outcome = await publish_once(
                api,
                lambda: api.publish_batch(self._outgoing(messages, after)),
                targets,
                final=lambda answer: answer.refusal is not None,
                own=self._own,
            )
        except NotDeliveredError as err:
            raise NotNow(StorageUnavailableError(self._run_id, f"creating the run: {err}")) from err
        except ReadBackError as err:
            raise NotNow(StorageUnavailableError(self._run_id, f"creating the run: {err.cause}")) from err.cause
        match outcome:
            case Stored(stream_seq):
                return stream_seq
            case Answered(answer) if answer.refusal is not None:
                refusal = answer.refusal
                if answer.is_fence or is_taken(refusal):
                    return None
                if is_full(refusal):
                    raise StorageFullError(self._run_id, f"creating the run: {refusal}") from refusal
                unavailable = StorageUnavailableError(self._run_id, f"creating the run: {refusal}")
                if is_not_now(refusal):
                    raise NotNow(unavailable) from refusal
                raise unavailable from refusal
            case Occupied():
                return None
            case Empty(answer) if isinstance(answer.no_answer, NoAnswerError):
                raise NotNow(
                    StorageUnavailableError(
                        self._run_id, f"creating the run got no ack ({answer.no_answer}); the run is not created"
                    )
                ) from answer.no_answer
            case _:
                raise StorageUnavailableError(self._run_id, "creating the run: the stream took a stage for a duplicate")

    def _outgoing(self, messages: list[StoredRecord], after: int) -> list[Outgoing]:
        # The fence on the first message covers the whole run; the others rely on their write-once subjects.
        # A stage's records carry the staging mark, the commit's (the meta's batch) do not (remains.py).
        staged = messages[0].seq != 1
        plain = write_headers(self._api.stream, staged=staged)
        fence = write_headers(self._api.stream, fence=self._layout.run_fence(self._run_id, after), staged=staged)
        return [
            Outgoing(self._layout.subject(self._run_id, stored.seq), stored.line, fence if index == 0 else plain)
            for index, stored in enumerate(messages)
        ]

    async def _resume(self, staged: list[StoredRecord]) -> tuple[int, int]:
        """After a refused fence: how many of ``staged`` the stream holds already, and the stream seq to fence on.

        RUN_EXISTS when the run has a meta (a creation landed) or a tombstone,
        or when our stages were cleared by a rival creation; CORRUPT_JOURNAL
        when its subjects hold anything but a creation's remains. Remains
        that are a prefix of ``staged``, byte for byte, are resumed; others
        are cleared and staging begins again (``clearing.py``).
        """
        remains = Remains(self._api, self._layout, self._reader, self._run_id)
        found = await remains.look(staged)
        if not found.held:
            return 0, 0  # the stream holds nothing of the run any more: stage from the start
        if all(held.ours for held in found.held):  # marked stages 2..k (remains.py), each one of ours
            return len(found.held), found.last_stream_seq
        if self._landed:
            raise RunExistsError(self._run_id)  # our stages are gone: a rival creation cleared them
        await remains.clear(found)
        return 0, 0
