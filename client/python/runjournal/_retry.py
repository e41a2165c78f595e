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
the attempts are spent, ``StorageUnavailableError`` is raised as before.

Every other status with an ErrorInfo reason (RUN_LOCKED included, which is
UNAVAILABLE too: another server process holds the run, for as long as it
lives) is an answer, and the caller decides what to do about it.
"""

from __future__ import annotations

import random
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
    """Capped exponential backoff with jitter over a bounded number of attempts.

    The n-th retry waits a random time in ``[cap / 2, cap]`` where
    ``cap = min(max_backoff_seconds, initial_backoff_seconds * multiplier ** (n - 1))``.
    Each attempt gets the call's full deadline.
    """

    max_attempts: int = 5
    """Attempts in total, the first one included; 1 disables retries."""
    initial_backoff_seconds: float = 0.1
    max_backoff_seconds: float = 5.0
    multiplier: float = 2.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")
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


NO_RETRY = RetryPolicy(max_attempts=1)
"""A policy that sends every request exactly once."""


class Attempts:
    """The attempts of one call: decides after each failure whether to go again."""

    def __init__(self, policy: RetryPolicy, rng: random.Random) -> None:
        self._policy = policy
        self._rng = rng
        self.made = 1
        """Attempts made so far, the current one included."""

    def delay_after(self, err: grpc.RpcError) -> float:
        """Seconds to wait before resending; raises the client error when the call is over."""
        if not is_resent(err) or self.made >= self._policy.max_attempts:
            raise from_rpc_error(err) from err
        delay = self._policy.backoff_seconds(self.made, self._rng)
        self.made += 1
        return delay

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
