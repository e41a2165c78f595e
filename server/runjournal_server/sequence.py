"""The append rule: one pure function every backend and ``runs.py`` share.

Given a journal's last durable seq and an incoming seq, ``check_append``
decides what the incoming record is. It decides and advances nothing: the
caller advances its notion of ``last`` only after the record is durable (file:
after fsync; JetStream: after the ack), so a torn or failed write is appended
again at the same seq instead of being lost, and a retry of a record that did
land is recognised as a duplicate by its bytes.
"""

from __future__ import annotations

import enum


class AppendDecision(enum.StrEnum):
    """What an incoming record is, relative to the journal's last durable seq."""

    NEXT = "next"
    """``seq == last + 1``: write it."""
    DUPLICATE = "duplicate"
    """``seq <= last`` and the stored body is byte-identical: a retry; skip it and report success."""
    CONFLICT = "conflict"
    """``seq <= last`` and a different body is stored there: refuse (``SEQ_CONFLICT``)."""
    GAP = "gap"
    """``seq > last + 1``: refuse (``SEQ_GAP``)."""


def check_append(last_seq: int, seq: int, body: bytes, stored_body: bytes | None) -> AppendDecision:
    """Decide what the record ``body`` at ``seq`` is, given the last durable seq ``last_seq``.

    Contract:

    * ``stored_body`` is the canonical body already stored at ``seq``. The
      caller must provide it whenever ``seq <= last_seq`` (``ValueError``
      otherwise); it is ignored for any other seq, so the caller need not read
      anything on the common path.
    * A record at an occupied seq is a duplicate only when its canonical body
      is the same byte for byte: a stale writer must never be told "ok" for a
      record that is not the one stored.
    * Nothing is advanced here. Advance ``last_seq`` only after the record is
      durable, so a torn or failed write is re-appended at the same seq instead
      of being lost.
    """
    if seq < 1:
        raise ValueError(f"a seq starts at 1, got {seq}")
    if last_seq < 0:
        raise ValueError(f"a last seq is 0 (empty journal) or more, got {last_seq}")
    if seq == last_seq + 1:
        return AppendDecision.NEXT
    if seq > last_seq + 1:
        return AppendDecision.GAP
    if stored_body is None:
        raise ValueError(f"seq {seq} is at or below the last seq {last_seq}: pass the body stored at seq {seq}")
    return AppendDecision.DUPLICATE if stored_body == body else AppendDecision.CONFLICT
