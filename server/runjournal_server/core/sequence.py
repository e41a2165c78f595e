"""The append rule: one pure function every backend and ``runs/runs.py`` share.

Given a journal's last durable seq and an incoming seq, ``check_append``
decides what the incoming record is. It decides and advances nothing: the
caller advances its notion of ``last`` only after the record is durable (file:
after fsync; JetStream: after the ack), so a torn or failed write is appended
again at the same seq instead of being lost, and a retry of a record that did
land is recognised as a duplicate by its bytes. ``decide_batch`` applies
the rule to a batch, with the claim token, in the one order every append
takes: "is this the next seq" is decided here and nowhere else.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


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


class BatchOutcome(enum.StrEnum):
    """What a batch of consecutive records is, as a whole."""

    WRITE = "write"
    """The records from ``BatchDecision.duplicates`` on are next: write them."""
    DUPLICATES = "duplicates"
    """Every record is already stored, byte for byte: a retry; report success, write nothing."""
    CONFLICT = "conflict"
    """A different body is stored at ``BatchDecision.seq``: refuse (``SEQ_CONFLICT``, or ``RUN_EXISTS`` for a meta)."""
    GAP = "gap"
    """The first new record's seq is past ``last_seq + 1``: refuse (``SEQ_GAP``)."""
    CLAIMED = "claimed"
    """The writer's claim token is not the run's latest claim: refuse (``RUN_CLAIMED``)."""


@dataclass(frozen=True)
class BatchDecision:
    outcome: BatchOutcome
    duplicates: int
    """How many leading records of the batch are verified retries."""
    seq: int = 0
    """The refused record's seq (CONFLICT, GAP)."""


def decide_batch(
    last_seq: int, batch: Sequence[tuple[int, bytes]], stored_bodies: Mapping[int, bytes], *, token_ok: bool
) -> BatchDecision:
    """Decide a batch of consecutive ``(seq, body)`` records by the append rule, record by record.

    ``stored_bodies`` holds the body stored at every seq of the batch that is
    ``<= last_seq`` (the caller reads exactly those). The order of the checks
    is the contract:

    * A record at an occupied seq with another body is refused, but a writer
      whose token is stale hears RUN_CLAIMED first (the conflict is its own
      doing: it lost the run).
    * A batch wholly stored already is a verified retry, acknowledged whoever
      sends it: the records are there, so the answer is true even for a writer
      that no longer holds the run.
    * Otherwise the token must be the latest claim, then the first new record
      must be ``last_seq + 1``.
    """
    duplicates = 0
    for seq, body in batch:
        if seq > last_seq:
            break
        decision = check_append(last_seq, seq, body, stored_bodies[seq])
        if decision is AppendDecision.CONFLICT:
            return BatchDecision(BatchOutcome.CONFLICT if token_ok else BatchOutcome.CLAIMED, duplicates, seq)
        duplicates += 1
    if duplicates == len(batch):
        return BatchDecision(BatchOutcome.DUPLICATES, duplicates)
    if not token_ok:
        return BatchDecision(BatchOutcome.CLAIMED, duplicates)
    first_new = batch[duplicates][0]
    if check_append(last_seq, first_new, batch[duplicates][1], None) is AppendDecision.GAP:
        return BatchDecision(BatchOutcome.GAP, duplicates, first_new)
    return BatchDecision(BatchOutcome.WRITE, duplicates)
