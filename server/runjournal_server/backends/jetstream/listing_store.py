"""The listing index of a JetStream store: a snapshot in a KV bucket, and the feed's news since it.

Replicas share the stream, and each keeps its own listing index in memory,
told of every write by its own acknowledgements and by the feed
(``feed.py``). What persists it between restarts (``SharedIndexStore`` in
``backends/index_store.py``):

* **A chunked snapshot in a KV bucket**, ``RJINDEX_<stream>_<hash of the
  subject prefix>`` (history 1, file storage, the journal stream's replica
  count), created on first use. The key ``head`` names the snapshot: its
  slot (``a`` or ``b``), its number of chunks and the CRC-32 of each, the
  journal stream's creation time, and the stream seq (the news *position*)
  the index was current to; keys ``<slot>.<n>`` hold ``CHUNK_ENTRIES``
  entries each, in the file store's own format (``encode_chunk``). Not one
  key per run: loading 100,000 runs is 100 gets (``IO_CONCURRENCY`` in
  flight), not 100,000, and a snapshot replaces the whole index at once. A
  new snapshot is written into the slot ``head`` does not name, then
  ``head`` is swapped by compare-and-set on its revision: a reader never
  sees half a snapshot, and two replicas compacting at once cannot both win
  (the loser writes again, into the slot the winner left).
* **No log.** The journal stream is the log: every message up to the
  snapshot's position had been told to the index when it was taken (a run
  told of since its state was read is written without a state, so it loads
  dirty). At start the feed's news from the position on is replayed (the
  headers-only consumer of ``feed.py``, from position + 1 to the stream's
  last record), each run it names marked dirty or placed, each tombstone
  dropped; then the feed follows from where the replay ended, so nothing
  falls between. That costs a small message per record stored since the
  snapshot, not a read per run; the upkeep writes a new snapshot once that
  many exceed ``listing_upkeep.REPLAY_COMPACT_MESSAGES`` (``behind``).
* **The barrier** (``caught_up``): before a page trusts the index, the feed
  must have delivered the stream's last record as of the page's start
  (``Feed.caught_up``: one request). So a run another replica acknowledged
  before ListRuns began is on the page, as if this replica had written it.

Derived data: a missing bucket or head, a chunk whose CRC differs, another
format, a head of another stream of that name (its creation time differs) or
a position past the stream's last seq all load as damaged, and the index is
rebuilt from the journals (listing every run meanwhile). Labels are never
written (``encode_columns``), as on files.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import zlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.js import api as js_api
from nats.js.kv import KeyValue

from runjournal_server.backends.index_store import (
    CHUNK_ENTRIES,
    FORMAT,
    Entry,
    Loaded,
    Op,
    Told,
    encode_chunk,
    replay_lines,
)
from runjournal_server.backends.jetstream.api import ApiError, JetStreamApi, NoAnswerError, NotDeliveredError
from runjournal_server.backends.jetstream.feed import Feed
from runjournal_server.backends.jetstream.layout import Layout
from runjournal_server.core.errors import StorageUnavailableError

log = logging.getLogger("runjournal_server.backends.jetstream")

BUCKET_PREFIX = "RJINDEX"
HEAD = "head"
SLOTS = ("a", "b")
IO_CONCURRENCY = 16
"""Chunk gets or puts in flight at once."""
BARRIER_TIMEOUT_SECONDS = 5.0
"""How long a page waits for the feed to catch up before it lists by reading every run instead."""
REPLAY_TIMEOUT_SECONDS = 300.0
"""How long the start's replay of the news since the snapshot may take before the index is rebuilt instead."""
CAS_ATTEMPTS = 3
"""Snapshot writes a replica tries before it gives up (each lost compare-and-set means another replica won)."""

T = TypeVar("T")

_ERRORS = (nats.errors.Error, ApiError, NotDeliveredError, NoAnswerError, TimeoutError, OSError)


def bucket_name(stream: str, prefix: str) -> str:
    """One bucket per stream and subject prefix: two deployments on one account never share an index."""
    return f"{BUCKET_PREFIX}_{stream}_{hashlib.sha256(prefix.encode()).hexdigest()[:12]}"


class JetStreamIndexStore:
    """The listing index's ``SharedIndexStore`` on one stream (see the module docstring)."""

    def __init__(
        self,
        nc: Client,
        api: JetStreamApi,
        layout: Layout,
        feed: Callable[[], Feed | None],
        follow_after: Callable[[int], None],
    ) -> None:
        self._nc = nc
        self._api = api
        self._layout = layout
        self._feed = feed
        self._follow_after = follow_after
        self._bucket = bucket_name(api.stream, layout.prefix)
        self._kv: KeyValue | None = None
        self._stream_created: str | None = None
        self._head_revision = 0
        self._snapshot_position = 0
        self._last_position: int | None = None

    @property
    def where(self) -> str:
        return f"KV bucket {self._bucket}"

    # ------------------------------------------------------------ the snapshot

    async def load(self) -> Loaded:
        try:
            kv = await self._open()
            try:
                head_entry = await kv.get(HEAD)
            except nats.js.errors.KeyNotFoundError:
                return Loaded([], "no index was persisted", 0)
            self._head_revision = head_entry.revision or 0
            head = _head(head_entry.value)
            if head is None:
                return Loaded([], "its head is damaged or of another format", 0)
            if head["stream_created"] != self._stream_created:
                return Loaded([], f"it was written for another stream named {self._api.stream}", 0)
            slot, crcs = head["slot"], head["crcs"]
            values = await _gather([self._get_value(kv, f"{slot}.{n}") for n in range(len(crcs))])
        except _ERRORS as err:
            return Loaded([], f"it cannot be read ({err or type(err).__name__})", 0)
        entries: dict[str, Entry] = {}
        for number, (value, crc) in enumerate(zip(values, crcs, strict=True)):
            if value is None or zlib.crc32(value) != crc:
                return Loaded([], f"chunk {number} of {len(crcs)} is missing or damaged", 0)
            damaged = replay_lines(value, entries, f"chunk {number}")
            if damaged is not None:
                return Loaded([], damaged, 0)
        self._snapshot_position = head["position"]
        return Loaded(list(entries.values()), None, 0, head["position"])

    async def append(self, ops: Sequence[Op]) -> None:
        """Nothing: the journal stream's news since the snapshot is the log (see the module docstring)."""

    async def compact(self, entries: Sequence[Entry], position: int | None) -> None:
        """Write ``entries`` as the snapshot current to ``position``; StorageUnavailableError if it cannot."""
        if position is None:
            return  # nothing follows the news yet: a snapshot would not know where to replay from
        chunks: list[bytes] = []
        for start in range(0, len(entries), CHUNK_ENTRIES):
            chunks.append(encode_chunk(entries[start : start + CHUNK_ENTRIES], dirty_unknown=True))
            await asyncio.sleep(0)  # encoding 100,000 entries is 100 ms of CPU: let calls run between chunks
        try:
            kv = await self._open()
            for _ in range(CAS_ATTEMPTS):
                head = await self._current_head(kv)
                slot = SLOTS[1] if head is not None and head["slot"] == SLOTS[0] else SLOTS[0]
                await _gather([kv.put(f"{slot}.{n}", chunk) for n, chunk in enumerate(chunks)])
                stale = (head or {}).get("sizes", {}).get(slot, 0)
                body = {
                    "format": FORMAT,
                    "slot": slot,
                    "crcs": [zlib.crc32(chunk) for chunk in chunks],
                    "sizes": {**(head or {}).get("sizes", {}), slot: len(chunks)},
                    "stream_created": self._stream_created,
                    "position": position,
                }
                try:
                    # Revision 0 expects no head at all: the first snapshot of a new bucket.
                    revision = await kv.update(HEAD, json.dumps(body).encode(), last=self._head_revision)
                except nats.js.errors.KeyWrongLastSequenceError as err:
                    log.info("listing index: another replica wrote the snapshot meanwhile (%s); writing again", err)
                    continue
                self._head_revision = revision
                self._snapshot_position = position
                # What the slot held past the new snapshot: run ids of runs since deleted, among others.
                await _gather([kv.purge(f"{slot}.{n}") for n in range(len(chunks), stale)])
                return
        except _ERRORS as err:
            raise StorageUnavailableError(None, f"writing the listing index to {self.where}: {err}") from err
        log.info("listing index: not persisted (other replicas kept writing the snapshot); the next start repairs it")

    async def close(self) -> None:
        self._kv = None

    async def _open(self) -> KeyValue:
        if self._kv is not None:
            return self._kv
        info = await self._api.stream_info()
        self._stream_created = str(info.get("created"))
        js = self._nc.jetstream()
        try:
            kv = await js.key_value(self._bucket)
        except nats.js.errors.BucketNotFoundError:
            replicas = int((info.get("config") or {}).get("num_replicas") or 1)
            kv = await js.create_key_value(
                js_api.KeyValueConfig(
                    bucket=self._bucket,
                    description=f"runjournal listing index of stream {self._api.stream} (derived data)",
                    history=1,
                    storage=js_api.StorageType.FILE,
                    replicas=replicas,
                )
            )
            log.info("listing index: created %s", self.where)
        self._kv = kv
        return kv

    async def _current_head(self, kv: KeyValue) -> dict[str, Any] | None:
        try:
            entry = await kv.get(HEAD)
        except nats.js.errors.KeyNotFoundError:
            self._head_revision = 0
            return None
        self._head_revision = entry.revision or 0
        return _head(entry.value)

    @staticmethod
    async def _get_value(kv: KeyValue, key: str) -> bytes | None:
        try:
            return (await kv.get(key)).value
        except nats.js.errors.KeyNotFoundError:
            return None

    # ------------------------------------------------------------ the news

    def position(self) -> int | None:
        feed = self._feed()
        if feed is not None:
            self._last_position = feed.position
        return self._last_position

    def behind(self) -> int:
        position = self.position()
        return 0 if position is None else max(0, position - self._snapshot_position)

    async def news_since(self, position: int | None, stored: Told, deleted: Told) -> bool:
        try:
            if position is None:
                last = await self._api.get_last(self._layout.records())
                self._follow_after(0 if last is None else last.stream_seq)
                return True
            info = await self._api.stream_info()
            if position > int((info.get("state") or {}).get("last_seq") or 0):
                log.warning("listing index: persisted at stream seq %d, past the stream's last", position)
                return False
            feed = Feed(self._layout, lambda run_id, _seq: stored(run_id), deleted)
            await feed.start(self._nc, self._api.stream, after=position)
            try:
                caught_up = await feed.caught_up(self._api, REPLAY_TIMEOUT_SECONDS)
            finally:
                await feed.stop()
        except (*_ERRORS, StorageUnavailableError) as err:
            log.warning("listing index: cannot replay the news since stream seq %s (%s)", position, err)
            return False
        if caught_up:
            log.info("listing index: replayed stream seqs %d to %d", position + 1, feed.position)
            self._follow_after(feed.position)
        return caught_up

    async def caught_up(self) -> bool:
        feed = self._feed()
        if feed is None:
            return False
        return await feed.caught_up(self._api, BARRIER_TIMEOUT_SECONDS)


def _head(value: bytes | None) -> dict[str, Any] | None:
    """The head's fields, checked; None when it is damaged or of another format."""
    try:
        head = json.loads(value or b"")
        if not isinstance(head, dict) or head.get("format") != FORMAT:
            return None
        if head.get("slot") not in SLOTS or not isinstance(head.get("position"), int):
            return None
        if not (isinstance(head.get("crcs"), list) and all(isinstance(crc, int) for crc in head["crcs"])):
            return None
        if not isinstance(head.get("sizes"), dict):
            return None
        return head
    except (ValueError, TypeError, UnicodeDecodeError, RecursionError):
        return None


async def _gather(calls: Sequence[Awaitable[T]]) -> list[T]:
    """``calls`` awaited ``IO_CONCURRENCY`` at a time, in order."""
    gate = asyncio.Semaphore(IO_CONCURRENCY)

    async def one(call: Awaitable[T]) -> T:
        async with gate:
            return await call

    return list(await asyncio.gather(*(one(call) for call in calls)))
