"""What every backend's readers share: checking a record read back, and the backward walk.

A record read back is checked with ``decode_at`` (undecodable bytes, or a
record holding another seq, are CORRUPT_JOURNAL), or with ``check_seq`` by a
reader that tolerates a torn final line and decodes itself. ``BackwardWalk``
is the walk ``Backend.ends`` and ``Backend.tail`` share; a backend's
``_walk_back`` hook feeds it records from the last one back.
"""

from __future__ import annotations

from collections.abc import Callable

from runjournal_server.core import records
from runjournal_server.core.errors import CorruptJournalError
from runjournal_server.core.records import RecordDecodeError, StoredRecord


def check_seq(
    run_id: str,
    stored: StoredRecord,
    seq: int,
    *,
    holder: str = "the line",
    line: int | None = None,
    at_seq: int | None = None,
) -> StoredRecord:
    """``stored``, read where record ``seq`` is kept; a record holding another seq is CORRUPT_JOURNAL.

    ``line`` and ``at_seq`` say where the error places the damage (a file
    names its line, a store addressed by seq the seq); ``holder`` names what
    held the record in the message.
    """
    if stored.seq != seq:
        raise CorruptJournalError(run_id, f"{holder} holds seq {stored.seq}", line=line, seq=at_seq)
    return stored


def decode_at(
    run_id: str, seq: int, data: bytes, *, holder: str = "the line", line: int | None = None, at_seq: int | None = None
) -> StoredRecord:
    """Decode the stored bytes of record ``seq``: undecodable bytes or another seq is CORRUPT_JOURNAL.

    For reads where damage cannot be a torn write. A reader that tolerates a
    torn final line decodes itself and then calls ``check_seq``.
    """
    try:
        stored = records.decode(data)
    except RecordDecodeError as err:
        raise CorruptJournalError(run_id, err.detail, line=line, seq=at_seq) from err
    return check_seq(run_id, stored, seq, holder=holder, line=line, at_seq=at_seq)


class BackwardWalk:
    """The walk ``ends`` and ``tail`` share: take records from the last one back until ``stop`` holds, or the meta.

    A backend's ``_walk_back`` feeds it records, the last first, until
    ``take`` returns True; a reader that starts over calls ``restart`` first.
    ``keep_all`` keeps every record taken (``tail``); otherwise only the
    record the walk stopped at is kept (``ends``), so walking past many inert
    records holds none of them. ``wants_meta`` is False where the caller has
    no use for the meta (``tail``), so a backend that must read it separately
    (JetStream) need not.
    """

    def __init__(self, stop: Callable[[StoredRecord], bool], *, keep_all: bool, wants_meta: bool = True) -> None:
        self._stop = stop
        self._keep_all = keep_all
        self.wants_meta = wants_meta
        self.restart()

    def restart(self) -> None:
        self.last_seq: int | None = None
        """The seq of the first record taken: the run's last."""
        self.stored_at: float | None = None
        """Set by the backend: when the run's last record was stored (``RunEnds.stored_at``)."""
        self.taken: list[StoredRecord] = []
        """The records kept, in the order taken (the last record first)."""
        self.done = False

    def take(self, stored: StoredRecord) -> bool:
        """Take the next record up; True when the walk is done (``stop`` held for it, or it is the meta)."""
        if self.last_seq is None:
            self.last_seq = stored.seq
        self.done = stored.seq == 1 or self._stop(stored)
        if self._keep_all or self.done:
            self.taken.append(stored)
        return self.done
