"""The retry rule of both clients, stated once.

Only a transport-level UNAVAILABLE, DEADLINE_EXCEEDED or CANCELLED is retried:
a status that carries no ErrorInfo, so the server's journal logic never
answered. A server that shuts down ends calls so: it refuses those arriving
while it drains UNAVAILABLE (they did nothing), and gRPC cancels those it had
queued, or that outlived the grace, CANCELLED (``errors.TRANSPORT_CODES``).

The very same request is resent (same run, same seq, same bytes). Whether the
first attempt was stored is unknown, so each call is safe to resend:

* Append and AppendBatch name their seqs: the server acknowledges a resent
  record as a duplicate only when the stored one is byte-identical.
* SubmitTask accepts the same request again; DeleteRun, DeleteTask and every
  read change nothing when repeated.
* ForkRun, Answer, Approve and CompleteTask settle a resend's refusal that
  names their own first write (RUN_EXISTS, ALREADY_ANSWERED, ALREADY_DECIDED,
  ALREADY_COMPLETED with the same content) as the success it is.
* Claim is not idempotent, and need not be: a resent claim writes a second
  claim record, and its token is the run's latest; the first token is spent
  before anyone used it.

One answer is resent too: STORAGE_UNAVAILABLE. The server gives it only when
its store acknowledged nothing ("nothing was acknowledged, retry the same
request"): a NATS leader change, a hung or cut-off NATS node, a read it could
not prove current. That is the case above with less doubt (nothing stored,
rather than unknown), so the same resend is safe for every call, and a worker
whose call would have gone through a moment later gets its answer instead of
an error to handle (issue 23: "the clients' retries ride through it"). When
the budget is spent, ``StorageUnavailableError`` is raised.

How long: resends continue while they would start within the policy's time
budget (20 s by default) of the call's first failure, with backoff capped at
1 s; a count of attempts would end early or late depending on how fast each
attempt fails, while an outage is measured in seconds.

Every other status with an ErrorInfo reason (RUN_LOCKED included, which is
UNAVAILABLE too: another server process holds the run, for as long as it
lives) is an answer, and the caller decides what to do about it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import grpc

from runjournal.errors import error_info, from_rpc_error, is_retryable

RESENT_REASONS = frozenset({"STORAGE_UNAVAILABLE"})
"""Answers resent like a transport failure (see the module docstring)."""


def is_resent(err: grpc.RpcError) -> bool:
    """Whether a call that failed with ``err`` is sent again: a transport failure, or a reason in ``RESENT_REASONS``."""
    if is_retryable(err):
        return True
    info = error_info(err)
    return info is not None and info.reason in RESENT_REASONS


@dataclass(frozen=True)
class RetryPolicy:
    """Capped exponential backoff with jitter, resent for as long as a time budget lasts.

    The n-th resend waits a random time in ``[cap / 2, cap]`` where
    ``cap = min(max_backoff_seconds, initial_backoff_seconds * multiplier ** (n - 1))``.
    A resend is made only when it would start within ``budget_seconds`` of the
    call's first failure (for a Read or Watch stream: its first failure since
    it last delivered an item), so the budget, not a count, decides how long a
    call rides out an outage: 20 s covers a JetStream leader change (about 6 s,
    up to 10 s for a leader cut off) and a hung NATS node. Each attempt gets the
    call's full deadline, so a call lasts at most ``budget_seconds`` plus two
    deadlines. ``max_attempts`` optionally caps the count as well.
    """

    budget_seconds: float = 20.0
    """How long after the first failure a resend may still start; 0 disables retries."""
    max_attempts: int | None = None
    """Attempts in total, the first one included (1 disables retries); None: the budget alone decides."""
    initial_backoff_seconds: float = 0.1
    max_backoff_seconds: float = 1.0
    """Short, so that a recovered server is noticed within a second."""
    multiplier: float = 2.0

    def __post_init__(self) -> None:
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1 (or None), got {self.max_attempts}")
        if self.budget_seconds < 0:
            raise ValueError(f"budget_seconds must not be negative, got {self.budget_seconds}")
        if self.initial_backoff_seconds < 0 or self.max_backoff_seconds < 0:
            raise ValueError("backoff seconds must not be negative")
        if self.multiplier < 1:
            raise ValueError(f"multiplier must be at least 1, got {self.multiplier}")

    def backoff_seconds(self, retry_number: int, rng: random.Random) -> float:
        """How long to wait before retry number ``retry_number`` (1 for the first retry)."""
        cap = min(
            self.max_backoff_seconds,
            self.initial_backoff_seconds * self.multiplier ** (retry_number - 1),
        )
        return rng.uniform(cap / 2, cap)


NO_RETRY = RetryPolicy(budget_seconds=0.0, max_attempts=1)
"""A policy that sends every request exactly once."""


class Attempts:
    """The attempts of one call: decides after each failure whether to go again.

    The budget is counted from the first failure, on ``clock`` (a monotonic
    clock in seconds; tests pass their own): a stream that makes a new
    ``Attempts`` after each item it delivered gets a whole budget per outage,
    however long it ran well before.
    """

    def __init__(self, policy: RetryPolicy, rng: random.Random, clock: Callable[[], float] = time.monotonic) -> None:
        self._policy = policy
        self._rng = rng
        self._clock = clock
        self._first_failure: float | None = None
        self.made = 1
        """Attempts made so far, the current one included."""

    def delay_after(self, err: grpc.RpcError) -> float:
        """Seconds to wait before resending; raises the client error when the call is over."""
        if not is_resent(err) or self._spent():
            raise from_rpc_error(err) from err
        now = self._clock()
        if self._first_failure is None:
            self._first_failure = now
        delay = self._policy.backoff_seconds(self.made, self._rng)
        if now - self._first_failure + delay > self._policy.budget_seconds:
            raise from_rpc_error(err) from err
        self.made += 1
        return delay

    def _spent(self) -> bool:
        cap = self._policy.max_attempts
        return cap is not None and self.made >= cap

    def delay_after_end(self) -> float:
        """As ``delay_after``, for a stream meant to last until cancelled that the server ended OK.

        A watch never ends by itself, so an end is a server going away (or a
        proxy closing an idle stream): resumed like a transport failure.
        """
        return self.delay_after(_StreamEnded())


class _StreamEnded(grpc.RpcError):
    """A watch stream that ended OK: retried as a reason-less UNAVAILABLE, raised as ``UnavailableError``."""

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE

    def details(self) -> str:
        return "the server ended a watch stream"

    def trailing_metadata(self) -> tuple[tuple[str, str | bytes], ...]:
        return ()
