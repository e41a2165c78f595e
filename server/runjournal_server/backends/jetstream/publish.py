"""Publish once, and when the stream's answer does not settle it, read the targets back and decide.

Every write of the backend (a record, a batch, a run's creation, a task
document) goes to write-once subjects, so what the stream holds afterwards
says what happened. The rules, stated here once:

1. A clean ack: this call stored every message (``Stored``).
2. The request certainly reached no stream (``NotDeliveredError``, not
   caught here): nothing is stored and there is nothing to read.
3. An answer the caller takes as final (``final``) is returned as it is,
   unread (``Answered``): a creation's refusal, whose fence spans the whole
   run, says by itself that the run exists or the stream is full.
4. Anything else (no answer, a refusal, an ack calling it a duplicate) is
   settled by reading every target subject back from the stream leader:

   a. Every target holds our bytes (and our message id, where one is
      stored) and no answer came: this call's publish landed and only its
      ack was lost: ``Stored``, adopted. When the stream did answer,
      refusing or calling it a duplicate, this call stored nothing: the
      bytes were stored by an earlier request (a retry that came back,
      perhaps through another replica): ``Occupied(ours=True)``, never an
      adoption, so the caller can answer it as a duplicate, truthfully.
   b. Some target holds anything else: another writer got there first:
      ``Occupied(ours=False)``.
   c. Every target is empty: nothing of this call is stored: ``Empty``,
      carrying the answer (a refusal's reason says fence, full or other; no
      answer means a publish still in flight may land later, which a retry
      of the same request then finds).

A failed read-back raises ``ReadBackError`` with the answer it was settling.
What each outcome means to its caller (a write race, an existing run, the
stored task document) is the caller's; these rules are not.

A record write passes ``own`` (``own_writes.py``): its subjects are held as
this replica's while it is published, and ``Stored`` acknowledges it, so the
feed leaves its news to ``runs/``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from runjournal_server.backends.jetstream.api import (
    ERR_BATCH_WRONG_LAST_SEQUENCE,
    ERR_WRONG_LAST_SEQUENCE,
    ApiError,
    JetStreamApi,
    NoAnswerError,
    NotDeliveredError,
    PubAck,
    StoredMessage,
)
from runjournal_server.backends.jetstream.own_writes import OwnWrites


@dataclass(frozen=True)
class Target:
    """A message this call publishes, as the stream would hold it if the publish landed."""

    subject: str
    data: bytes
    msg_id: str | None
    """Our message id for these bytes. Records written in an atomic batch carry
    none (nats-server 2.12 refuses ids in batches), so a stored message with no
    id still matches; one with another id does not."""

    def holds(self, message: StoredMessage | None) -> bool:
        return message is not None and message.data == self.data and message.msg_id in (None, self.msg_id)


@dataclass(frozen=True)
class Answer:
    """What the stream said to a publish that was not a clean ack: exactly one of the three."""

    no_answer: NoAnswerError | None = None
    refusal: ApiError | None = None
    duplicate: bool = False

    @property
    def is_fence(self) -> bool:
        """The stream refused because the subject the write is fenced on is not what the writer read."""
        return self.refusal is not None and self.refusal.err_code in (
            ERR_WRONG_LAST_SEQUENCE,
            ERR_BATCH_WRONG_LAST_SEQUENCE,
        )


@dataclass(frozen=True)
class Answered:
    """An answer the caller takes as final, returned unread (rule 3)."""

    answer: Answer


@dataclass(frozen=True)
class Stored:
    """This call stored every target (rule 1, or 4a after no answer)."""

    stream_seq: int
    """The stream sequence of the last target."""


@dataclass(frozen=True)
class Occupied:
    """The stream answered or stayed silent, and some target holds a message this call did not store now."""

    answer: Answer
    found: list[StoredMessage | None]
    ours: bool
    """Every target holds our bytes: stored by an earlier request (4a after an answer)."""


@dataclass(frozen=True)
class Empty:
    """Nothing is stored on any target (4c)."""

    answer: Answer


class ReadBackError(Exception):
    """Reading the targets back to settle ``answer`` failed; the cause is the read's error."""

    def __init__(self, answer: Answer, cause: Exception) -> None:
        super().__init__(str(cause))
        self.answer = answer
        self.cause = cause


def _never(answer: Answer) -> bool:
    return False


async def publish_once(
    api: JetStreamApi,
    send: Callable[[], Awaitable[PubAck]],
    targets: Sequence[Target],
    *,
    final: Callable[[Answer], bool] = _never,
    own: OwnWrites | None = None,
) -> Stored | Answered | Occupied | Empty:
    """Run ``send`` (one publish of ``targets``) once and decide what it stored, by the rules above."""
    if own is None:
        return await _settled(api, send, targets, final)
    with own.writing([target.subject for target in targets]) as write:
        outcome = await _settled(api, send, targets, final)
        if isinstance(outcome, Stored):
            write.acknowledge(outcome.stream_seq)
        return outcome


async def _settled(
    api: JetStreamApi,
    send: Callable[[], Awaitable[PubAck]],
    targets: Sequence[Target],
    final: Callable[[Answer], bool],
) -> Stored | Answered | Occupied | Empty:
    try:
        ack = await send()
    except NoAnswerError as err:
        answer = Answer(no_answer=err)
    except ApiError as err:
        answer = Answer(refusal=err)
    else:
        if not ack.duplicate:
            return Stored(ack.stream_seq)
        answer = Answer(duplicate=True)
    if final(answer):
        return Answered(answer)
    try:
        found = await api.get_many([target.subject for target in targets])
    except (ApiError, NotDeliveredError, NoAnswerError) as err:
        raise ReadBackError(answer, err) from err
    if all(target.holds(message) for target, message in zip(targets, found, strict=True)):
        if answer.no_answer is not None:
            last = found[-1]
            assert last is not None
            return Stored(last.stream_seq)
        return Occupied(answer, found, ours=True)
    if any(message is not None for message in found):
        return Occupied(answer, found, ours=False)
    return Empty(answer)
