"""``JetStreamBackend``: the backend contract over one stream: connecting, starting, and each call delegated.

A message body is the record's stored line from ``records.py``, byte for
byte, so a run moves between backends unchanged. The stream keeps one
message per subject and refuses a second one (discard new per subject), so a
record subject is written once: of two writers of the same seq exactly one
lands (``layout.py`` says where records live, ``journal.py`` how appends are
fenced, ``publish.py`` how an unclear answer is settled).

There is no writer lock: several server replicas may hold the same run, and
the fence refuses a stale one (``WriteRaceError``; ``refresh`` adopts what
the others wrote). What each call does is its module's: ``stream.py``
(start), ``creating.py``, ``journal.py``, ``reading.py``, ``tombstones.py``
and ``erasing.py`` (delete), ``feed.py`` (follow), ``tasks.py``,
``listing_store.py``. See docs/jetstream-backend.md; the contract is in
``backends/base.py``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from nats.aio.client import Client

from runjournal_server.backends.base import Backend
from runjournal_server.backends.jetstream.api import (
    JetStreamApi,
)
from runjournal_server.backends.jetstream.barrier import Barrier, StaleAnswerError
from runjournal_server.backends.jetstream.config import (
    HEADER_ALLOWANCE_BYTES,
    check_server_version,
    record_limit,
    validate_stream_name,
    validate_subject_prefix,
)
from runjournal_server.backends.jetstream.connect import (
    CONNECT_TIMEOUT_SECONDS,
    GuardedClient,
    client_options,
    server_version,
)
from runjournal_server.backends.jetstream.creating import Creation
from runjournal_server.backends.jetstream.erasing import Erasures
from runjournal_server.backends.jetstream.feed import Feed
from runjournal_server.backends.jetstream.journal import JetStreamJournal
from runjournal_server.backends.jetstream.layout import DEFAULT_SUBJECT_PREFIX, Fence, Layout
from runjournal_server.backends.jetstream.listing_store import JetStreamIndexStore
from runjournal_server.backends.jetstream.own_writes import OwnWrites
from runjournal_server.backends.jetstream.reading import StreamReader
from runjournal_server.backends.jetstream.stream import checked_stream
from runjournal_server.backends.jetstream.tasks import JetStreamTaskStore
from runjournal_server.backends.jetstream.tombstones import StreamTombstones
from runjournal_server.backends.jetstream.tombstones import decode as decode_tombstone
from runjournal_server.backends.reading import BackwardWalk
from runjournal_server.backends.task_store import MAX_TASK_DOCUMENT_BYTES, TaskStore
from runjournal_server.backends.tombstone import Tombstone
from runjournal_server.core import records
from runjournal_server.core.errors import (
    CorruptJournalError,
    RunDeletedError,
    RunNotFoundError,
    StorageUnavailableError,
)
from runjournal_server.core.ids import validate_run_id
from runjournal_server.core.records import StoredRecord

log = logging.getLogger("runjournal_server.backends.jetstream")

DEFAULT_REQUEST_TIMEOUT_SECONDS = 5.0

T = TypeVar("T")


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
        self._layout = Layout(validate_subject_prefix(subject_prefix))
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
        self._reader = StreamReader(lambda: self._api, self._layout, self._stream)
        self._barrier = Barrier(lambda: self._api, self._layout)
        self._own = OwnWrites()
        """This replica's writes and deletions, which the feed leaves to ``runs/`` (``own_writes.py``)."""
        self._tombstones = StreamTombstones(lambda: self._api, self._layout, self._reader, self._own)
        self._erasures = Erasures(self._tombstones.erase)
        self._journals: set[JetStreamJournal] = set()
        self._connected = asyncio.Event()
        self._closing = False
        self._last_error: BaseException | None = None
        self._feed: Feed | None = None
        self._follow_after: int | None = None
        """Where the feed starts when the listing index replayed the news up to there (``listing_store.py``)."""

    @property
    def stream_name(self) -> str:
        """The JetStream stream holding the journals (``stream`` is the records reader of ``Backend``)."""
        return self._stream

    @property
    def subject_prefix(self) -> str:
        return self._layout.prefix

    @property
    def max_record_bytes(self) -> int:
        """The largest record line this backend stores: what runs/runs.py must refuse above. Decided by ``start``.

        The ``max_record_bytes`` given to the constructor when one was (start
        refuses it if the server cannot carry it), else the default capped by
        the server's ``max_payload`` (see ``config.record_limit``).
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
        async with asyncio.timeout(timeout_seconds):  # not wait_for: on 3.11 it may drop the caller's cancel
            await self._connected.wait()

    # ------------------------------------------------------------ starting

    async def start(self) -> None:
        """Connect, check the server version and payload limit, then check (or create) the stream."""
        self._closing = False
        nc = GuardedClient()  # no reply trusted across a reconnect (connect.py)
        try:
            async with asyncio.timeout(self._connect_timeout):
                await nc.connect(**self._nats_options())
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
            check_server_version(server_version(nc))
            self._size_limits(nc.max_payload)
            config = await checked_stream(
                self._api,
                self._layout,
                create=self._create_stream,
                replicas=self._replicas,
                max_message_bytes=self._largest_message_bytes,
            )
            self._tombstones.deny_delete = bool(config.get("deny_delete"))
            await self._finish_deletions()
        except BaseException:
            await self.close()
            raise

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

    async def follow(self, stored: Callable[[str, int], None], deleted: Callable[[str], None]) -> None:
        """Tell of every record other replicas store, and of every run they delete, from now on (``feed.py``)."""
        if self._nc is None:
            raise StorageUnavailableError(None, "the JetStream backend is not started")
        feed = Feed(self._layout, stored, deleted, self._own)
        await feed.start(self._nc, self._stream, self._follow_after)
        self._feed = feed

    def listing_store(self) -> JetStreamIndexStore | None:
        """The listing index in a KV bucket beside the stream, with the feed's news (``listing_store.py``)."""
        if self._nc is None:
            return None

        def follow_after(stream_seq: int) -> None:
            self._follow_after = stream_seq

        return JetStreamIndexStore(self._nc, self._api, self._layout, lambda: self._feed, follow_after)

    async def close(self) -> None:
        await self._erasures.close()  # what they leave, the next start finishes (erasing.py)
        feed, self._feed = self._feed, None
        if feed is not None:
            await feed.stop()
        for journal in list(self._journals):
            await journal.close()
        self._closing = True
        nc, self._nc, self._api_client = self._nc, None, None
        self._connected.clear()
        if nc is not None and not nc.is_closed:
            await nc.close()

    # ------------------------------------------------------------ creating and opening runs

    async def _create_exclusive(self, run_id: str, batch: list[StoredRecord]) -> JetStreamJournal:
        """Publish the run's creation, fenced on the run having no message at all (``creating.py``)."""
        validate_run_id(run_id)
        stream_seq = await Creation(self._api, self._layout, self._reader, self._own, run_id).store(batch)
        return self._adopt(run_id, batch[-1].seq, stream_seq)

    async def open_journal(
        self, run_id: str, known: Sequence[StoredRecord] = ()
    ) -> tuple[JetStreamJournal, list[StoredRecord]]:
        """Load the run; there is no lock to take (replicas share runs, the fence keeps them apart).

        ``known`` is not used: reading the records again is what proves they are still there.
        """
        found, last = await self._found(run_id, lambda: self._reader.load(run_id))
        return self._adopt(run_id, found[-1].seq, last.stream_seq), found

    def _adopt(self, run_id: str, last_seq: int, stream_seq: int) -> JetStreamJournal:
        journal = JetStreamJournal(
            run_id,
            last_seq,
            Fence(self._layout.subject(run_id, last_seq), stream_seq),
            api=lambda: self._api,
            layout=self._layout,
            reader=self._reader,
            own=self._own,
            forget=self._journals.discard,
        )
        self._journals.add(journal)
        return journal

    # ------------------------------------------------------------ reading (reading.py)

    async def load(self, run_id: str) -> list[StoredRecord]:
        found, _ = await self._found(run_id, lambda: self._reader.load(run_id))
        return found

    async def _walk_back(self, run_id: str, walk: BackwardWalk) -> StoredRecord | None:
        return await self._found(run_id, lambda: self._reader.walk_back(run_id, walk))

    async def meta(self, run_id: str) -> StoredRecord:
        """The meta alone, read with the tombstone subject in the same round trip.

        The meta is erased last (``tombstones.py``), so a deletion a crash
        cut short still has it: the tombstone beside it says the run is gone.
        """
        validate_run_id(run_id)
        message, tombstone = await self._reader.read(
            run_id, [self._layout.subject(run_id, 1), self._layout.tombstone(run_id)]
        )
        if tombstone is not None:
            raise RunDeletedError(run_id, decode_tombstone(run_id, tombstone).last_seq)
        if message is None:
            raise await self._reader.why_no_meta(run_id)  # records without a meta may be damage (remains.py)
        return self._reader.decode(run_id, 1, message)

    async def stream(self, run_id: str, from_seq: int) -> AsyncGenerator[StoredRecord, None]:
        for last_try in (False, True):
            yielded = False
            try:
                async for stored in self._reader.stream(run_id, from_seq):
                    yielded = True
                    yield stored
                return
            except (RunNotFoundError, CorruptJournalError) as err:
                if yielded or not await self._read_again(run_id, err, last_try):
                    await self.refuse_deleted(run_id, err)

    async def _found(self, run_id: str, read: Callable[[], Awaitable[T]]) -> T:
        """``read()``; a run it found absent or damaged is RUN_DELETED where its tombstone says so.

        A tombstone is the run's last message (a record subject it is not),
        so a read in the middle of the erasure finds "damage", and after it
        "no run": both are answered from the tombstone.
        """
        for last_try in (False, True):
            try:
                return await read()
            except (RunNotFoundError, CorruptJournalError) as err:
                if not await self._read_again(run_id, err, last_try):
                    await self.refuse_deleted(run_id, err)
        raise AssertionError("unreachable: the last try returns or raises")

    async def _read_again(self, run_id: str, err: Exception, last_try: bool) -> bool:
        """Whether a read that found no run should be made again, asked behind a barrier (``barrier.py``).

        "No run" becomes RUN_NOT_FOUND only when a node that has every acknowledged write agrees. When the meta
        is there after all, either the run was created between the read and the barrier (a creation racing the
        read, common on one node), so one more read finds it, or the leader that answered was behind the
        stream: when the read made again is still answered "absent", that is STORAGE_UNAVAILABLE (retry), and
        so is a barrier nobody could acknowledge.
        """
        if not isinstance(err, RunNotFoundError):
            return False
        try:
            (meta,) = await self._barrier.held([self._layout.subject(run_id, 1)])
        except StaleAnswerError as stale:
            raise StorageUnavailableError(run_id, f"reading the run: {stale}") from stale
        if not meta:
            return False
        if last_try:
            raise StorageUnavailableError(
                run_id, "reading the run: a node behind the stream answered that it is absent"
            )
        return True

    async def list_run_ids(self) -> list[str]:
        run_ids, deleted = await asyncio.gather(self._reader.run_ids(), self._tombstones.deleted_ids())
        return [run_id for run_id in run_ids if run_id not in deleted]

    # ------------------------------------------------------------ deleting (tombstones.py)

    async def _delete(self, run_id: str, expected_last_seq: int, deleted_at: float) -> tuple[Tombstone, bool]:
        try:
            return await self._tombstones.delete(run_id, expected_last_seq, deleted_at)
        except CorruptJournalError:
            # The run's last message is a tombstone the check before this one did not see (that read was
            # answered by a NATS node behind the stream: a deletion resent after its answer was lost, during
            # a failover): the deletion happened; answer it as a retry, as ``delete_run`` does.
            found = await self._tombstones.read(run_id)
            if found is None:
                raise
            return found, False

    async def _erase_deleted(self, run_id: str, *, wait: bool) -> bool:
        if wait:
            await self._erase(run_id)
            return True
        self._erasures.begin(run_id)  # a synced write per message: minutes for a long run (erasing.py)
        return False

    async def _erase(self, run_id: str) -> None:
        await self._erasures.wait(run_id)

    async def tombstone(self, run_id: str) -> Tombstone | None:
        return await self._tombstones.read(run_id)

    async def tombstones(self) -> list[Tombstone]:
        return await self._tombstones.all()

    async def keep_tombstone(self, tombstone: Tombstone) -> None:
        await self._tombstones.keep(tombstone)

    async def _finish_deletions(self) -> None:
        """Erase, in the background, what a deletion a crash or a stop interrupted left (a meta and a tombstone)."""
        unfinished = await self._tombstones.unfinished(set(await self._reader.run_ids()))
        for run_id in unfinished:
            log.info("finishing the erasure of deleted run %s in the background", run_id)
            self._erasures.begin(run_id)

    def task_store(self) -> TaskStore:
        """Task documents on write-once subjects of the same stream (see ``tasks.py``)."""
        return JetStreamTaskStore(lambda: self._api, self._layout, lambda: self._max_task_document_bytes)

    # ------------------------------------------------------------ plumbing

    @property
    def _api(self) -> JetStreamApi:
        if self._api_client is None:
            raise StorageUnavailableError(None, "the JetStream backend is not started")
        return self._api_client

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

        return client_options(
            self._servers,
            request_timeout_seconds=self._timeout,
            on_error=on_error,
            on_disconnect=on_disconnect,
            on_reconnect=on_reconnect,
            connect_options=self._connect_options,
        )
