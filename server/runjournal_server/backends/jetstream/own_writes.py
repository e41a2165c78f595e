"""This replica's own writes (records and tombstones), kept until the feed delivers them, so each is told once.

``runs/`` tells the server's listeners of every write this replica
acknowledged, right after the ack (``RunEvents.stored``), and of every
deletion it made (``RunEvents.deleted``, ``runs/deleting.py``); the feed
(``feed.py``) tells them of every record and tombstone stored in the stream.
Without this ledger each listener heard of this replica's own writes and
deletions twice. A record subject is written once, and so is a run's
tombstone subject, so a subject names one write: the ledger holds the
subjects of this replica's writes from just before each is published until
the feed has delivered them, and the feed skips those it says are told.

The ack and the feed's delivery are separate messages; either may come
first. What is told, and by whom:

* **Acknowledged** (``Write.acknowledge``): ``runs/`` tells it, in the same
  step of the event loop as the write's end. A record write is acknowledged
  on a clean ack or a read-back that found its bytes (``publish.py``); a
  tombstone when it is this deletion's own (landed now, or read back after a
  lost ack) and the deletion answers ``deleted`` (``tombstones.py``).
  Delivered before that, the subject was pending and is skipped; after it,
  it is filed as acknowledged and skipped then.
* **Not acknowledged** (a refusal, a lost ack settled as nothing stored, a
  read-back that failed, a cancellation, another writer or deleter first, a
  deletion that failed after its tombstone landed): ``runs/`` tells nothing,
  so the feed must. Delivered already, it is told when the write ends; not
  yet, it is forgotten, and should it land later (a publish still in flight)
  the feed tells it like any other replica's write.

Other replicas' writes and deletions never enter this ledger: the feed tells
every one.

The feed's position says "every message up to here has been told" (the
listing index persists it, and its barrier waits for it). A message of
this replica's that the feed delivered while its write was still pending
is not told yet, so the position stays below it (``held_below``) until
the write ends and ``runs/`` (in the same step of the event loop) or the
write's end has told it.

Bounded: a pending subject lives for one write; an acknowledged one until
the feed delivers it, or passes its stream seq without (the message was
erased first). Nothing is kept while no feed follows (``follow``, ``stop``),
and the ledger costs the feed one dict lookup per message.
"""

from __future__ import annotations

import contextlib
import heapq
from collections.abc import Callable, Iterator, Sequence

Told = Callable[[str], None]
"""Told a subject: tell the news its stored message carries (a record's or a tombstone's: the feed's ``news``)."""
Released = Callable[[], None]
"""Told when a write the feed delivered while it was pending ends: the feed's position may move on."""


class Write:
    """One write of this replica's (a publish, or a deletion around its tombstone's), inside ``OwnWrites.writing``."""

    def __init__(self) -> None:
        self.acknowledged_at: int | None = None

    def acknowledge(self, stream_seq: int) -> None:
        """Every message of the write is stored by it, the last at ``stream_seq``, and ``runs/`` tells it."""
        self.acknowledged_at = stream_seq


class OwnWrites:
    """The ledger of one replica's record writes (see the module docstring)."""

    def __init__(self) -> None:
        self._tell: Told | None = None
        self._released: Released | None = None
        self._pending: dict[str, int | None] = {}
        """Subjects being published now -> the stream seq the feed delivered them at meanwhile (None: not yet)."""
        self._acknowledged: dict[str, int] = {}
        """Subjects of acknowledged writes the feed has not delivered -> their write's last stream seq."""
        self._expiry: list[tuple[int, str]] = []
        """``_acknowledged`` as a heap by stream seq, so entries the feed passed are dropped cheaply."""
        self._position = 0

    def follow(self, tell: Told, position: int, released: Released) -> None:
        """Keep writes from now on, for a feed that tells with ``tell`` and starts after stream seq ``position``."""
        self._tell = tell
        self._released = released
        self._position = position

    def stop(self) -> None:
        """Keep nothing more: no feed follows."""
        self._tell = None
        self._released = None
        self._pending.clear()
        self._acknowledged.clear()
        self._expiry.clear()

    @contextlib.contextmanager
    def writing(self, subjects: Sequence[str]) -> Iterator[Write]:
        """Hold ``subjects`` as this replica's while the block publishes them; the block acknowledges or not.

        Entered before anything is sent. ``runs/`` writes (and deletes) a
        run from one task at a time, so a subject is pending for one write
        at most; a second one holds nothing (at worst, the feed tells it twice).
        """
        write = Write()
        held = [subject for subject in subjects if subject not in self._pending] if self._tell is not None else []
        for subject in held:
            self._pending[subject] = None
        try:
            yield write
        finally:
            self._end(held, write.acknowledged_at)

    def _end(self, held: list[str], acknowledged_at: int | None) -> None:
        released = False
        for subject in held:
            if subject not in self._pending:  # ``stop`` ran meanwhile
                continue
            delivered_at = self._pending.pop(subject)
            released = released or delivered_at is not None
            if acknowledged_at is not None:
                if delivered_at is None and acknowledged_at > self._position:
                    self._acknowledged[subject] = acknowledged_at
                    heapq.heappush(self._expiry, (acknowledged_at, subject))
            elif delivered_at is not None and self._tell is not None:
                self._tell(subject)
        if released and self._released is not None:
            self._released()

    def delivered(self, subject: str, stream_seq: int) -> bool:
        """The feed delivered the message on ``subject`` at ``stream_seq``: True when it is not the feed's to tell."""
        if subject in self._pending:
            self._pending[subject] = stream_seq  # its write's end decides
            return True
        return self._acknowledged.pop(subject, None) is not None

    def held_below(self) -> int | None:
        """The lowest stream seq delivered while its write is pending (not told yet), or None."""
        return min((at for at in self._pending.values() if at is not None), default=None)

    def passed(self, position: int) -> None:
        """The feed delivered everything up to stream seq ``position``: forget acknowledged writes at or below it."""
        self._position = position
        while self._expiry and self._expiry[0][0] <= position:
            stream_seq, subject = heapq.heappop(self._expiry)
            if self._acknowledged.get(subject) == stream_seq:
                del self._acknowledged[subject]
