"""The NATS JetStream backend: one write-once message per record, fenced on the record before it.

For run ``R`` under the subject prefix ``P`` the meta (seq 1) is the message on
``P.R.meta`` and the record with seq ``N >= 2`` the message on ``P.R.N``. A
message body is the record's stored line from ``records.py``, byte for byte,
so a run moves between backends unchanged. The stream keeps one message per
subject and refuses a second one (discard new per subject), so a record
subject is written once: of two writers of the same seq exactly one lands.

Appends are fenced on the exact subject of the previous record: seq ``N`` is
published with ``Nats-Expected-Last-Subject-Sequence`` = the stream sequence
of record ``N-1`` and ``...-Subject`` = its subject. It lands only if record
``N-1`` is the one this writer read and slot ``N`` is empty, which (since
every record needs its predecessor) means this writer's view is the whole
run; unlike a fence over the run's wildcard, its cost does not grow with the
run. A reply that is not a clean ack is settled by reading the target
subjects back from the stream leader; see ``JetStreamJournal._settle``.

There is no writer lock: several server replicas may hold the same run, and
the fence refuses a stale one (``WriteRaceError``; ``refresh`` adopts what
the others wrote). See docs/jetstream-backend.md; the contract is in ``base.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import re
import ssl
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nats.aio.client import Client

from runjournal_server import records
from runjournal_server.backends._nats_api import (
    ERR_BATCH_WRONG_LAST_SEQUENCE,
    ERR_STREAM_NAME_IN_USE,
    ERR_STREAM_NOT_FOUND,
    ERR_WRONG_LAST_SEQUENCE,
    HEADER_EXPECTED_LAST_SUBJECT_SEQUENCE,
    HEADER_EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT,
    HEADER_EXPECTED_STREAM,
    HEADER_MSG_ID,
    ApiError,
    JetStreamApi,
    NoAnswerError,
    NotDeliveredError,
    Outgoing,
    PubAck,
    StoredMessage,
    is_full,
    is_taken,
)
from runjournal_server.backends._nats_config import (
    HEADER_ALLOWANCE_BYTES,
    MAX_ATOMIC_BATCH,
    StreamConfigError,
    check_server_version,
    format_problems,
    record_limit,
    stream_config,
    stream_problems,
    validate_stream_name,
    validate_subject_prefix,
)
from runjournal_server.backends._nats_tasks import JetStreamTaskStore
from runjournal_server.backends.base import Backend, Journal, RunEnds, TaskStore, WriteRaceError
from runjournal_server.errors import (
    CorruptJournalError,
    RunExistsError,
    RunNotFoundError,
    StorageFullError,
    StorageUnavailableError,
)
from runjournal_server.ids import is_valid_run_id, validate_run_id
from runjournal_server.records import RecordDecodeError, StoredRecord
from runjournal_server.tasks import MAX_TASK_DOCUMENT_BYTES

__all__ = ["JetStreamBackend", "JetStreamJournal", "StreamConfigError", "nats_connect_options"]

log = logging.getLogger(__name__)

META_TOKEN = "meta"
DEFAULT_SUBJECT_PREFIX = "runjournal"
DEFAULT_REQUEST_TIMEOUT_SECONDS = 5.0
CONNECT_TIMEOUT_SECONDS = 10.0
"""How long ``start`` keeps trying to reach a NATS server before refusing to start."""
RECONNECT_WAIT_SECONDS = 1.0
REFRESH_WINDOW_MAX = 64
"""The most subjects ``refresh`` reads at once (after 4, then 16), once it knows something is new."""
WALK_BACK_WINDOW = 8
"""``ends`` and ``tail`` read this many records at a time backward from the end."""
STREAM_WINDOW_MAX = 64
STREAM_WINDOW_BYTES = 1 << 20
"""``stream`` holds about this much of a run at a time (one record at least, if it is larger)."""
_SEQ_TOKEN = re.compile(r"[1-9][0-9]*")


@dataclass(frozen=True)
class _Layout:
    """Where a run's records live: ``<prefix>.<run>.meta`` and ``<prefix>.<run>.<seq>``."""

    prefix: str

    def subject(self, run_id: str, seq: int) -> str:
        return f"{self.prefix}.{run_id}.{META_TOKEN if seq == 1 else seq}"

    def run_subjects(self, run_id: str) -> str:
        """Every subject of one run (run ids hold no '.', so the fence cannot widen to another run)."""
        return f"{self.prefix}.{run_id}.>"

    def metas(self) -> str:
        """The meta subject of every run: the listing's filter."""
        return f"{self.prefix}.*.{META_TOKEN}"

    def seq_of(self, run_id: str, subject: str) -> int | None:
        """The seq a subject of ``run_id`` holds, or None for a subject no record may have."""
        token = subject.removeprefix(f"{self.prefix}.{run_id}.")
        if token == subject:
            return None
        if token == META_TOKEN:
            return 1
        if _SEQ_TOKEN.fullmatch(token) and int(token) >= 2:
            return int(token)
        return None

    def run_of_meta(self, subject: str) -> str | None:
        run_id = subject.removeprefix(f"{self.prefix}.").removesuffix(f".{META_TOKEN}")
        return run_id if is_valid_run_id(run_id) and self.subject(run_id, 1) == subject else None


@dataclass(frozen=True)
class _Tail:
    """The last record a journal handle knows: what its next append is fenced on."""

    subject: str
    stream_seq: int


def message_id(run_id: str, stored: StoredRecord) -> str:
    """Deterministic per (run, seq, body): a retry of the same record has the same id."""
    return f"{run_id}/{stored.seq}/{hashlib.sha256(stored.line).hexdigest()[:32]}"


def _is_ours(message: StoredMessage | None, run_id: str, stored: StoredRecord) -> bool:
    """The stored message is this record: same bytes, and our message id where one was set.

    Records written in an atomic batch carry no message id (nats-server 2.12
    refuses ids in batches), so an absent id does not disqualify a match.
    """
    return message is not None and message.data == stored.line and message.msg_id in (None, message_id(run_id, stored))


def _check_seqs(run_id: str, batch: Sequence[StoredRecord], first: int) -> None:
    """Refuse a batch runs.py should never send: too long for one atomic batch, or not ``first, first + 1, ...``."""
    if len(batch) > MAX_ATOMIC_BATCH:
        raise ValueError(f"run {run_id!r}: at most {MAX_ATOMIC_BATCH} records per append, got {len(batch)}")
    for index, stored in enumerate(batch):
        if stored.seq != first + index:
            raise ValueError(f"run {run_id!r}: expected seq {first + index}, got {stored.seq}")


def _next_window(window: int, held_bytes: int) -> int:
    """The next ``stream`` window: as many records as the last ones' size says fit ``STREAM_WINDOW_BYTES``."""
    average = max(held_bytes // window, 1)
    return max(1, min(STREAM_WINDOW_MAX, window * 4, STREAM_WINDOW_BYTES // average))


def _not_a_record(subject: str) -> str:
    return f"the stream holds a message on {subject!r}, not a record subject (published outside runjournal)"


def _subject_problem(
    layout: _Layout, run_id: str, subjects: Sequence[str], top: int, top_subject: str
) -> tuple[str, int | None] | None:
    """What is wrong with a run's subjects whose last record is ``top`` (on ``top_subject``), with its seq.

    A healthy run holds exactly the subjects of seqs 1..top. A malformed
    subject is reported first, then a record subject above ``top`` (stored
    before the last record, so not by runjournal), then the first seq
    missing below it.
    """
    seqs = {subject: layout.seq_of(run_id, subject) for subject in subjects}
    for subject, seq in sorted(seqs.items()):
        if seq is None:
            return _not_a_record(subject), None
    for subject, seq in sorted(seqs.items(), key=lambda item: item[1] or 0):
        if seq is not None and seq > top:
            return (
                f"the stream holds a message on {subject!r} stored before the run's last record (seq {top}): "
                "published outside runjournal",
                seq,
            )
    present = set(seqs.values())
    missing = next((seq for seq in range(1, top) if seq not in present), None)
    if missing is not None:
        return f"seq {missing} is missing, but the stream holds a later message on {top_subject!r}", missing
    return None


# ---------------------------------------------------------------- journals


class JetStreamJournal(Journal):
    """A run held by this server replica: its last seq and the tail its next append is fenced on.

    There is nothing to lock or roll back: a write either lands whole (one
    message, or one atomic batch) or not at all, so ``poisoned`` is never set.
    ``_mutex`` keeps one append or refresh at a time on the handle.
    """

    def __init__(self, backend: JetStreamBackend, run_id: str, last_seq: int, tail: _Tail) -> None:
        self.run_id = run_id
        self._backend = backend
        self._last_seq = last_seq
        self._tail = tail
        self._closed = False
        self._mutex = asyncio.Lock()

    @property
    def last_seq(self) -> int:
        return self._last_seq

    @property
    def poisoned(self) -> bool:
        return False

    async def append(self, records: Sequence[StoredRecord]) -> None:
        batch = list(records)
        if not batch:
            return
        async with self._mutex:
            self._check_open()
            self._check_batch(batch)
            await self._write(batch)

    async def refresh(self) -> list[StoredRecord]:
        """Adopt what other writers stored after our tail, all or nothing; a stray message there is corruption.

        The first message of the run's subjects stored after our tail (one
        lookup when nothing is new) must be record ``last_seq + 1``; the
        records after it are read by exact subject (4, then 16, then 64 at
        a time) until one is empty, and the lookup is repeated from the new
        tail, so a message published on a gap or malformed subject after
        them is reported instead of waiting to collide with a later append.
        A stray stored *before* our tail is the full reads' to find
        (``_last``); refresh stays one lookup.
        """
        async with self._mutex:
            self._check_open()
            found: list[tuple[StoredRecord, StoredMessage]] = []
            after = self._tail.stream_seq
            while (following := await self._backend._next(self.run_id, after)) is not None:
                expected = self._last_seq + len(found) + 1
                if following.subject != self._subject(expected):
                    raise self._backend._stray_error(self.run_id, following.subject, expected)
                found.extend(await self._forward(expected, following))
                after = found[-1][1].stream_seq
            if found:
                self._advance(found[-1][0].seq, found[-1][1].stream_seq)
            return [stored for stored, _ in found]

    async def _forward(self, seq: int, message: StoredMessage) -> list[tuple[StoredRecord, StoredMessage]]:
        """Record ``seq`` (its message in hand) and those after it, up to the first empty subject."""
        found = [(self._backend._decode(self.run_id, seq, message), message)]
        window = 4
        while True:
            first = seq + len(found)
            seqs = range(first, first + window)
            messages = await self._backend._read(self.run_id, [self._subject(at) for at in seqs])
            for at, later in zip(seqs, messages, strict=True):
                if later is None:
                    return found
                found.append((self._backend._decode(self.run_id, at, later), later))
            window = min(window * 4, REFRESH_WINDOW_MAX)

    async def stored_line(self, seq: int) -> StoredRecord:
        self._check_open()
        if not 1 <= seq <= self._last_seq:
            raise ValueError(f"run {self.run_id!r}: seq {seq} is outside 1..{self._last_seq}")
        (message,) = await self._backend._read(self.run_id, [self._subject(seq)])
        if message is None:
            raise CorruptJournalError(self.run_id, f"seq {seq} is no longer in the stream", seq=seq)
        return self._backend._decode(self.run_id, seq, message)

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._backend._forget(self)

    # ------------------------------------------------------------ writing

    async def _write(self, batch: list[StoredRecord]) -> None:
        """Publish the batch fenced on our tail; advance only on an ack or a verified read-back."""
        first = batch[0].seq
        api = self._backend._api
        try:
            if len(batch) == 1:
                ack = await api.publish(self._outgoing(batch[0], fenced=True, with_id=True))
            else:
                # nats-server 2.12 refuses message ids inside an atomic batch, and
                # allows the fence only where no earlier message of the batch
                # writes its subject: so the first message carries the fence and
                # the later ones rely on their write-once slots.
                ack = await api.publish_batch(
                    [self._outgoing(stored, fenced=index == 0, with_id=False) for index, stored in enumerate(batch)]
                )
        except NotDeliveredError as err:
            raise StorageUnavailableError(self.run_id, f"appending seq {first}: {err}") from err
        except NoAnswerError as err:
            await self._settle(batch, f"appending seq {first} got no ack ({err})", answered=False, refusal=None)
            return
        except ApiError as err:
            await self._settle(batch, f"the stream refused seq {first}: {err}", answered=True, refusal=err)
            return
        if ack.duplicate:
            await self._settle(batch, f"the stream reported seq {first} as a duplicate", answered=True, refusal=None)
            return
        self._advance(batch[-1].seq, ack.stream_seq)

    def _outgoing(self, stored: StoredRecord, *, fenced: bool, with_id: bool) -> Outgoing:
        headers = {HEADER_EXPECTED_STREAM: self._backend._api.stream}
        if with_id:
            headers[HEADER_MSG_ID] = message_id(self.run_id, stored)
        if fenced:
            headers[HEADER_EXPECTED_LAST_SUBJECT_SEQUENCE] = str(self._tail.stream_seq)
            headers[HEADER_EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT] = self._tail.subject
        return Outgoing(self._subject(stored.seq), stored.line, headers)

    async def _settle(self, batch: list[StoredRecord], what: str, *, answered: bool, refusal: ApiError | None) -> None:
        """Decide an append that was not cleanly acknowledged, from what the stream holds.

        * Every target holds our bytes, and no answer came (``answered`` is
          false): this call's own publish landed and only its ack was lost:
          adopt it. When the stream did answer, refusing it or calling it a
          duplicate, this call stored nothing: the bytes were stored by an
          earlier request (a retry that came back, perhaps through another
          replica). That is ``WriteRaceError``, so runs.py catches up and its
          append rule answers the retry as a verified duplicate, truthfully
          (adopting would answer "written now", ``duplicate=false``).
        * Some target holds anything else: another writer got there first;
          ``WriteRaceError`` (runs.py refreshes and answers from the store).
        * Every target is empty: nothing of this append is stored. A fence
          refusal means our view of the run is stale (``WriteRaceError``); a
          full stream is STORAGE_FULL; no answer is STORAGE_UNAVAILABLE, with
          "not acknowledged" as the whole truth: a publish still in flight may
          land later, and a retry of the same request then finds it as a
          verified duplicate.
        """
        first = batch[0].seq
        try:
            found = await self._backend._api.get_many([self._subject(stored.seq) for stored in batch])
        except (ApiError, NotDeliveredError, NoAnswerError) as err:
            raise StorageUnavailableError(
                self.run_id, f"{what}, and reading seq {first} back failed too ({err})"
            ) from err
        if all(_is_ours(message, self.run_id, stored) for message, stored in zip(found, batch, strict=True)):
            if answered:
                raise WriteRaceError(f"run {self.run_id!r}: seq {first} was stored by an earlier request ({what})")
            last = found[-1]
            assert last is not None
            self._advance(batch[-1].seq, last.stream_seq)
            return
        if any(message is not None for message in found):
            raise WriteRaceError(f"run {self.run_id!r}: another writer stored seq {first} or later ({what})")
        if refusal is not None and refusal.err_code in (ERR_WRONG_LAST_SEQUENCE, ERR_BATCH_WRONG_LAST_SEQUENCE):
            raise WriteRaceError(f"run {self.run_id!r}: seq {first - 1} is not what this server read ({what})")
        if refusal is not None and is_full(refusal):
            raise StorageFullError(self.run_id, what)
        raise StorageUnavailableError(self.run_id, f"{what}; nothing is stored at seq {first}")

    def _advance(self, seq: int, stream_seq: int) -> None:
        self._last_seq = seq
        self._tail = _Tail(self._subject(seq), stream_seq)

    # ------------------------------------------------------------ checks

    def _subject(self, seq: int) -> str:
        return self._backend._layout.subject(self.run_id, seq)

    def _check_open(self) -> None:
        if self._closed:
            raise StorageUnavailableError(self.run_id, "the journal was closed; open the run again")

    def _check_batch(self, batch: list[StoredRecord]) -> None:
        _check_seqs(self.run_id, batch, self._last_seq + 1)


# ---------------------------------------------------------------- the backend


class JetStreamBackend(Backend):
    """Run journals in one JetStream stream (see the module docstring)."""

    name = "jetstream"
    shared_writers = True

    def __init__(
        self,
        servers: Sequence[str],
        *,
        stream: str,
        subject_prefix: str = DEFAULT_SUBJECT_PREFIX,
        create_stream: bool = False,
        replicas: int = 1,
        max_record_bytes: int | None = None,
        request_timeout_seconds: float = DEFAULT_REQUEST_TIMEOUT_SECONDS,
        connect_timeout_seconds: float = CONNECT_TIMEOUT_SECONDS,
        connect_options: Mapping[str, Any] | None = None,
    ) -> None:
        if not servers:
            raise ValueError("at least one NATS server URL is required")
        if not 1 <= replicas <= 5:
            raise ValueError(f"replicas must be 1 to 5, got {replicas}")
        if request_timeout_seconds <= 0:
            raise ValueError("the request timeout must be positive")
        self._servers = list(servers)
        self._stream = validate_stream_name(stream)
        self._layout = _Layout(validate_subject_prefix(subject_prefix))
        self._create_stream = create_stream
        self._replicas = replicas
        self._configured_record_bytes = max_record_bytes
        self._max_record_bytes = max_record_bytes or records.DEFAULT_MAX_RECORD_BYTES
        self._max_task_document_bytes = MAX_TASK_DOCUMENT_BYTES
        self._timeout = request_timeout_seconds
        self._connect_timeout = connect_timeout_seconds
        self._connect_options = dict(connect_options or {})
        self._nc: Client | None = None
        self._api_client: JetStreamApi | None = None
        self._journals: set[JetStreamJournal] = set()
        self._connected = asyncio.Event()
        self._closing = False
        self._last_error: BaseException | None = None

    @property
    def stream_name(self) -> str:
        """The JetStream stream holding the journals (``stream`` is the records reader of ``Backend``)."""
        return self._stream

    @property
    def subject_prefix(self) -> str:
        return self._layout.prefix

    @property
    def max_record_bytes(self) -> int:
        """The largest record line this backend stores: what runs.py must refuse above. Decided by ``start``.

        The ``max_record_bytes`` given to the constructor when one was (start
        refuses it if the server cannot carry it), else the default capped by
        the server's ``max_payload`` (see ``_nats_config.record_limit``).
        """
        return self._max_record_bytes

    @property
    def max_task_document_bytes(self) -> int:
        """The largest task document this backend stores (tasks.py's limit, capped by ``max_payload``)."""
        return self._max_task_document_bytes

    @property
    def _largest_message_bytes(self) -> int:
        """A maximal record, or a maximal task document, which share the stream."""
        return max(self._max_record_bytes, self._max_task_document_bytes)

    @property
    def connected(self) -> bool:
        return self._nc is not None and self._nc.is_connected

    async def wait_until_connected(self, timeout_seconds: float) -> None:
        """Wait for the connection to NATS (e.g. after an outage); raises TimeoutError."""
        await asyncio.wait_for(self._connected.wait(), timeout_seconds)

    async def start(self) -> None:
        """Connect, check the server version and payload limit, then check (or create) the stream."""
        self._closing = False
        nc = Client()
        try:
            await asyncio.wait_for(nc.connect(**self._nats_options()), self._connect_timeout)
        except Exception as err:  # nats-py raises OSError, its own errors, or times out
            self._closing = True
            await nc.close()
            cause = self._last_error or err  # nats-py keeps retrying; the first real error says why
            raise StorageUnavailableError(
                None, f"cannot connect to NATS at {', '.join(self._servers)} ({cause or type(cause).__name__})"
            ) from err
        self._nc = nc
        self._connected.set()
        self._api_client = JetStreamApi(nc, self._stream, self._timeout)
        try:
            check_server_version(_server_version(nc))
            self._size_limits(nc.max_payload)
            config = await self._stream_config()
            problems = stream_problems(config, prefix=self._layout.prefix, max_record_bytes=self._largest_message_bytes)
            if problems:
                raise StreamConfigError(format_problems(self._stream, problems))
        except BaseException:
            await self.close()
            raise
        if int(config.get("num_replicas") or 1) < 3:
            log.warning(
                "stream %s has %s replica(s): an acknowledged record survives the loss of a NATS server only "
                "with 3 or more",
                self._stream,
                config.get("num_replicas") or 1,
            )

    def _size_limits(self, max_payload: int) -> None:
        """Decide the record and task document limits from what the server carries, and say so."""
        self._max_record_bytes = record_limit(max_payload, self._configured_record_bytes)
        self._max_task_document_bytes = min(MAX_TASK_DOCUMENT_BYTES, max_payload - HEADER_ALLOWANCE_BYTES)
        log.info(
            "NATS max_payload is %d bytes: records of up to %d bytes (%s), task documents of up to %d bytes",
            max_payload,
            self._max_record_bytes,
            "max_record_bytes as configured" if self._configured_record_bytes is not None else "derived",
            self._max_task_document_bytes,
        )

    async def close(self) -> None:
        for journal in list(self._journals):
            await journal.close()
        self._closing = True
        nc, self._nc, self._api_client = self._nc, None, None
        self._connected.clear()
        if nc is not None and not nc.is_closed:
            await nc.close()

    async def create_journal(
        self, run_id: str, meta: StoredRecord, rest: Sequence[StoredRecord] = ()
    ) -> JetStreamJournal:
        """Publish the meta (and ``rest``, as one atomic batch), fenced on the run having no message at all.

        The fence (``Expected-Last-Subject-Sequence: 0`` over the run's
        subjects, on the meta, the batch's first message) refuses a second
        creator, and also a "creation" into the remains of a run whose meta
        was removed by hand. A batch lands whole or not at all, so a run is
        never listed with only part of its creation. A lost ack is settled by
        reading the batch back; an occupied run is ``RunExistsError`` even
        when it holds the same bytes (runs.py then answers a duplicate).
        """
        validate_run_id(run_id)
        batch = [meta, *rest]
        _check_seqs(run_id, batch, 1)
        try:
            ack = await self._publish_creation(run_id, batch)
        except NotDeliveredError as err:
            raise StorageUnavailableError(run_id, f"creating the run: {err}") from err
        except NoAnswerError as err:
            return await self._settle_creation(run_id, batch, err)
        except ApiError as err:
            if err.err_code in (ERR_WRONG_LAST_SEQUENCE, ERR_BATCH_WRONG_LAST_SEQUENCE) or is_taken(err):
                raise RunExistsError(run_id) from err
            if is_full(err):
                raise StorageFullError(run_id, f"creating the run: {err}") from err
            raise StorageUnavailableError(run_id, f"creating the run: {err}") from err
        if ack.duplicate:
            # Nothing was stored by this call. Where the server checks the
            # duplicate window before the fence, an earlier request's meta is
            # there: RUN_EXISTS, and runs.py verifies the retry. Where the fence
            # came first it passed, so the run is empty and the id is remembered
            # from a run removed within the duplicate window.
            (stored,) = await self._read(run_id, [self._layout.subject(run_id, 1)])
            if stored is not None:
                raise RunExistsError(run_id)
            raise StorageUnavailableError(
                run_id, "the stream took the meta for a duplicate of a removed run; retry after its duplicate window"
            )
        return self._adopt(run_id, batch[-1].seq, ack.stream_seq)

    async def _publish_creation(self, run_id: str, batch: list[StoredRecord]) -> PubAck:
        fence = {
            HEADER_EXPECTED_STREAM: self._stream,
            HEADER_EXPECTED_LAST_SUBJECT_SEQUENCE: "0",
            HEADER_EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT: self._layout.run_subjects(run_id),
        }
        first = Outgoing(self._layout.subject(run_id, 1), batch[0].line, fence)
        if len(batch) == 1:
            return await self._api.publish(
                replace(first, headers={**fence, HEADER_MSG_ID: message_id(run_id, batch[0])})
            )
        # No message ids in an atomic batch (nats-server 2.12 refuses them); the
        # later messages need no fence: the meta's fence says the run is empty.
        later = [
            Outgoing(self._layout.subject(run_id, stored.seq), stored.line, {HEADER_EXPECTED_STREAM: self._stream})
            for stored in batch[1:]
        ]
        return await self._api.publish_batch([first, *later])

    async def _settle_creation(self, run_id: str, batch: list[StoredRecord], err: NoAnswerError) -> JetStreamJournal:
        """No answer to the creation: ours if every subject holds our bytes, a rival's if any holds others."""
        found = await self._read(run_id, [self._layout.subject(run_id, stored.seq) for stored in batch])
        if all(_is_ours(message, run_id, stored) for message, stored in zip(found, batch, strict=True)):
            last = found[-1]
            assert last is not None
            return self._adopt(run_id, batch[-1].seq, last.stream_seq)
        if any(message is not None for message in found):
            raise RunExistsError(run_id) from err
        raise StorageUnavailableError(run_id, f"creating the run got no ack ({err}); nothing is stored") from err

    async def open_journal(
        self, run_id: str, known: Sequence[StoredRecord] = ()
    ) -> tuple[JetStreamJournal, list[StoredRecord]]:
        """Load the run; there is no lock to take (replicas share runs, the fence keeps them apart).

        ``known`` is not used: reading the records again is what proves they are still there.
        """
        found, last = await self._load(run_id)
        return self._adopt(run_id, found[-1].seq, last.stream_seq), found

    async def load(self, run_id: str) -> list[StoredRecord]:
        found, _ = await self._load(run_id)
        return found

    async def ends(self, run_id: str, is_inert: Callable[[StoredRecord], bool]) -> RunEnds:
        """The meta and the last significant record, read from the end of the run (``_backward``)."""
        last_seq: int | None = None
        async with contextlib.aclosing(self._backward(run_id)) as backward:
            async for stored in backward:
                last_seq = last_seq or stored.seq
                if stored.seq == 1:
                    return RunEnds(meta=stored, last_significant=stored, last_seq=last_seq)
                if not is_inert(stored):
                    (meta,) = await self._records(run_id, [1])
                    return RunEnds(meta=meta, last_significant=stored, last_seq=last_seq)
        raise AssertionError("the backward walk always reaches the meta")

    async def meta(self, run_id: str) -> StoredRecord:
        """The record on the run's meta subject alone."""
        (message,) = await self._read(run_id, [self._layout.subject(run_id, 1)])
        if message is None:
            raise RunNotFoundError(run_id)
        return self._decode(run_id, 1, message)

    async def stream(self, run_id: str, from_seq: int) -> AsyncGenerator[StoredRecord, None]:
        """The records from ``from_seq`` to the first empty subject, read a bounded window at a time.

        The run's subjects are checked first (``_last``), so a stray message
        is CORRUPT_JOURNAL before anything is yielded. A window is at most
        ``STREAM_WINDOW_MAX`` subjects and sized from the previous one to stay
        near ``STREAM_WINDOW_BYTES``; only the current window is held, and the
        next is read only when the consumer asks for it (gRPC flow control).
        Records appended meanwhile are included: the read ends at the first
        empty subject, not at the last seq seen when it began.
        """
        last_seq, _ = await self._last(run_id)
        seq = max(from_seq, 1)
        window = 1
        while True:
            seqs = range(seq, seq + window)
            messages = await self._read(run_id, [self._layout.subject(run_id, at) for at in seqs])
            held = 0
            for at, message in zip(seqs, messages, strict=True):
                if message is None:
                    if at <= last_seq:
                        raise CorruptJournalError(run_id, f"seq {at} is missing (a later record is stored)", seq=at)
                    return
                held += len(message.data)
                yield self._decode(run_id, at, message)
            del messages
            seq += window
            window = _next_window(window, held)

    async def tail(self, run_id: str, is_start: Callable[[StoredRecord], bool]) -> list[StoredRecord]:
        """The records from the last one for which ``is_start`` holds (or the meta) to the end."""
        found: list[StoredRecord] = []
        async with contextlib.aclosing(self._backward(run_id)) as backward:
            async for stored in backward:
                found.append(stored)
                if stored.seq == 1 or is_start(stored):
                    break
        found.reverse()
        return found

    def task_store(self) -> TaskStore:
        """Task documents on write-once subjects of the same stream (see ``_nats_tasks.py``)."""
        return JetStreamTaskStore(lambda: self._api, self._layout.prefix, lambda: self._max_task_document_bytes)

    async def list_run_ids(self) -> list[str]:
        """Every run with a meta: the stream's subjects matching ``<prefix>.*.meta``, page by page."""
        subjects = await self._read_many(None, lambda api: api.subjects(self._layout.metas()))
        return [run_id for subject in subjects if (run_id := self._layout.run_of_meta(subject)) is not None]

    # ------------------------------------------------------------ reading

    async def _load(self, run_id: str) -> tuple[list[StoredRecord], StoredMessage]:
        """Every record of the run: its last message first (its subject says how many), then the rest."""
        last_seq, last = await self._last(run_id)
        earlier = await self._records(run_id, range(1, last_seq))
        return [*earlier, self._decode(run_id, last_seq, last)], last

    async def _last(self, run_id: str) -> tuple[int, StoredMessage]:
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
        last, count = await self._read_many(run_id, lambda api: api.last_and_count(wildcard))
        if last is None:
            raise RunNotFoundError(run_id)
        seq = self._seq_of(run_id, last)
        if count != seq:
            await self._check_subjects(run_id)
        return seq, last

    async def _check_subjects(self, run_id: str) -> None:
        """Raise ``CorruptJournalError`` naming a subject of the run that no record of it may have.

        Only on a count mismatch: the names are listed (pages of the info
        API), then the last message is read again, so every record the list
        holds is at or below it. A mismatch with no stray was a concurrent
        append between the two lookups: nothing to report.
        """
        wildcard = self._layout.run_subjects(run_id)
        subjects = await self._read_many(run_id, lambda api: api.subjects(wildcard))
        (last,) = await self._read(run_id, [wildcard])
        if last is None:
            raise RunNotFoundError(run_id)
        top = self._seq_of(run_id, last)
        problem = _subject_problem(self._layout, run_id, subjects, top, last.subject)
        if problem is not None:
            detail, seq = problem
            raise CorruptJournalError(run_id, detail, seq=seq)

    async def _next(self, run_id: str, after_stream_seq: int) -> StoredMessage | None:
        """The first message on the run's subjects stored after ``after_stream_seq``."""
        wildcard = self._layout.run_subjects(run_id)
        return await self._read_many(run_id, lambda api: api.get_next(wildcard, after_stream_seq + 1))  # type: ignore[no-any-return]

    def _stray_error(self, run_id: str, subject: str, expected: int) -> CorruptJournalError:
        """A message on ``subject`` stored where record ``expected`` should come next."""
        if self._layout.seq_of(run_id, subject) is None:
            return CorruptJournalError(run_id, _not_a_record(subject))
        return CorruptJournalError(
            run_id,
            f"seq {expected} is missing, but the stream holds a later message on {subject!r} "
            "(published outside runjournal)",
            seq=expected,
        )

    async def _backward(self, run_id: str) -> AsyncGenerator[StoredRecord, None]:
        """The run's records from the last back to the meta, read ``WALK_BACK_WINDOW`` at a time.

        The others are read by exact subject, so a caller that stops early
        reads only the tail.
        """
        last_seq, last = await self._last(run_id)
        yield self._decode(run_id, last_seq, last)
        for top in range(last_seq - 1, 0, -WALK_BACK_WINDOW):
            for stored in await self._records(run_id, range(top, max(top - WALK_BACK_WINDOW, 0), -1)):
                yield stored

    async def _records(self, run_id: str, seqs: Sequence[int]) -> list[StoredRecord]:
        """The records at ``seqs`` (below a stored last record, so each must be there)."""
        messages = await self._read(run_id, [self._layout.subject(run_id, seq) for seq in seqs])
        found = []
        for seq, message in zip(seqs, messages, strict=True):
            if message is None:
                raise CorruptJournalError(run_id, f"seq {seq} is missing (a later record is stored)", seq=seq)
            found.append(self._decode(run_id, seq, message))
        return found

    async def _read(self, run_id: str | None, subjects: Sequence[str]) -> list[StoredMessage | None]:
        """The last message on each subject, from the stream leader; a failure is STORAGE_UNAVAILABLE."""
        return await self._read_many(run_id, lambda api: api.get_many(subjects))

    async def _read_many(self, run_id: str | None, call: Callable[[JetStreamApi], Any]) -> Any:
        try:
            return await call(self._api)
        except (ApiError, NotDeliveredError, NoAnswerError) as err:
            raise StorageUnavailableError(run_id, f"reading from stream {self._stream}: {err}") from err

    def _seq_of(self, run_id: str, message: StoredMessage) -> int:
        seq = self._layout.seq_of(run_id, message.subject)
        if seq is None:
            raise CorruptJournalError(run_id, _not_a_record(message.subject))
        return seq

    @staticmethod
    def _decode(run_id: str, seq: int, message: StoredMessage) -> StoredRecord:
        """The record on seq's subject; any damage is corruption (a message is never torn)."""
        try:
            stored = records.decode(message.data)
        except RecordDecodeError as err:
            raise CorruptJournalError(run_id, err.detail, seq=seq) from err
        if stored.seq != seq:
            raise CorruptJournalError(run_id, f"the record on {message.subject!r} holds seq {stored.seq}", seq=seq)
        return stored

    # ------------------------------------------------------------ plumbing

    @property
    def _api(self) -> JetStreamApi:
        if self._api_client is None:
            raise StorageUnavailableError(None, "the JetStream backend is not started")
        return self._api_client

    def _adopt(self, run_id: str, last_seq: int, stream_seq: int) -> JetStreamJournal:
        journal = JetStreamJournal(self, run_id, last_seq, _Tail(self._layout.subject(run_id, last_seq), stream_seq))
        self._journals.add(journal)
        return journal

    def _forget(self, journal: JetStreamJournal) -> None:
        self._journals.discard(journal)

    async def _stream_config(self) -> Mapping[str, Any]:
        """The stream's configuration, creating the stream first when asked to and it is missing."""
        try:
            info = await self._api.stream_info()
        except ApiError as err:
            if err.err_code != ERR_STREAM_NOT_FOUND:
                raise StorageUnavailableError(None, f"reading stream {self._stream}: {err}") from err
            if not self._create_stream:
                raise StreamConfigError(
                    f"stream {self._stream!r} does not exist: start with --create-stream to create it, or create it "
                    f"with subjects '{self._layout.prefix}.>' as docs/jetstream-backend.md shows"
                ) from err
            info = await self._create()
        except (NotDeliveredError, NoAnswerError) as err:
            raise StorageUnavailableError(None, f"reading stream {self._stream}: {err} (is JetStream on?)") from err
        return info.get("config") or {}

    async def _create(self) -> dict[str, Any]:
        config = stream_config(self._stream, self._layout.prefix, replicas=self._replicas)
        try:
            info = await self._api.create_stream(config)
        except ApiError as err:
            if err.err_code != ERR_STREAM_NAME_IN_USE:
                raise StreamConfigError(f"creating stream {self._stream!r} failed: {err}") from err
            info = await self._api.stream_info()  # another replica created it first: check theirs
        except (NotDeliveredError, NoAnswerError) as err:
            raise StorageUnavailableError(None, f"creating stream {self._stream}: {err}") from err
        log.info("created stream %s for subjects %s.>", self._stream, self._layout.prefix)
        return info

    def _nats_options(self) -> dict[str, Any]:
        async def on_error(err: Exception) -> None:
            self._last_error = err
            log.warning("NATS: %s", err or type(err).__name__)

        async def on_disconnect() -> None:
            self._connected.clear()
            if not self._closing:
                log.warning("NATS: disconnected; appends fail with STORAGE_UNAVAILABLE until it reconnects")
                if self.health_listener is not None:
                    await self.health_listener(False)

        async def on_reconnect() -> None:
            self._connected.set()
            log.info("NATS: reconnected to %s", self._nc.connected_url if self._nc else "?")
            if self.health_listener is not None:
                await self.health_listener(True)

        return {
            "servers": self._servers,
            "name": "runjournal",
            "connect_timeout": max(1, round(self._timeout)),
            "allow_reconnect": True,
            "max_reconnect_attempts": -1,
            "reconnect_time_wait": RECONNECT_WAIT_SECONDS,
            "error_cb": on_error,
            "disconnected_cb": on_disconnect,
            "reconnected_cb": on_reconnect,
            **self._connect_options,
        }


def _server_version(nc: Client) -> str:
    version = nc.connected_server_version
    try:
        text = f"{version.major}.{version.minor}.{version.patch}"
        return f"{text}-{version.prerelease}" if version.prerelease else text
    except ValueError as err:
        raise StreamConfigError(f"the NATS server reports an unreadable version ({err})") from err


def nats_connect_options(
    *,
    creds_file: Path | None = None,
    tls_ca_file: Path | None = None,
    tls_cert_file: Path | None = None,
    tls_key_file: Path | None = None,
    user: str | None = None,
    password: str | None = None,
    token: str | None = None,
) -> dict[str, Any]:
    """nats-py connect options from the server's settings: credentials file, TLS, user/password or token."""
    options: dict[str, Any] = {}
    if creds_file is not None:
        options["user_credentials"] = str(creds_file)
    if tls_ca_file is not None or tls_cert_file is not None:
        context = ssl.create_default_context(cafile=str(tls_ca_file) if tls_ca_file else None)
        if tls_cert_file is not None:
            context.load_cert_chain(str(tls_cert_file), str(tls_key_file) if tls_key_file else None)
        options["tls"] = context
    if user:
        options["user"] = user
        options["password"] = password or ""
    if token:
        options["token"] = token
    return options
