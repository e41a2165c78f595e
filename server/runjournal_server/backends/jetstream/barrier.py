"""Whether a subject holds a message, asked so that the answer cannot come from a leader that lost its place.

Every read of the backend asks the stream leader (``api.py``), and in a
healthy cluster that sees every acknowledged write. Two faults break it for
a few seconds: a leader cut off from the others by the network keeps
answering as leader until it notices it lost its quorum (about 10 s in NATS
raft), and a leader that hung and resumed answers until it hears of the new
term. Meanwhile the others have elected a leader and acknowledged writes it
never saw, so "no message there" from it is not the truth; a replica
connected to it would refuse a correct append (SEQ_GAP, RUN_NOT_FOUND).

So before the backend says "absent" where that leads to a refusal, it asks
again behind a barrier: it publishes a small message on a subject of its own
(``<prefix>._barrier.<id>``: no run id starts with '_', so it is under no
run and no listing), which only a leader with a quorum can acknowledge, at
stream seq ``B``; then it asks the stream's info filtered on the subject in
question, whose answer carries the answering node's last stream seq. An
answer at or past ``B`` comes from a node that has applied every write
acknowledged before the barrier, whoever it is; an answer from behind it is
refused (``StaleAnswerError``: STORAGE_UNAVAILABLE to the caller, which a
worker resends), and so is a barrier nobody acknowledges (a cut-off leader
cannot). The barrier message is erased right after (a barrier whose ack was
lost stays, a few bytes under no run; so does every barrier on a stream that
denies deletes, ``deny_delete``, which the start already warns about).

It costs two stream writes and a read, so it is asked only where "absent"
would be answered: before a refusal, never on the common path.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Callable, Sequence

import nats.errors

from runjournal_server.backends.jetstream.api import (
    ApiError,
    JetStreamApi,
    NoAnswerError,
    NotDeliveredError,
    Outgoing,
)
from runjournal_server.backends.jetstream.layout import Layout, write_headers

BARRIER_TOKEN = "_barrier"
_PAST_EVERY_PAGE = 1 << 62


class StaleAnswerError(Exception):
    """No answer could be proven current: the barrier was not acknowledged, or the answer came from behind it."""


class Barrier:
    """The barrier reads of one stream (see the module docstring)."""

    def __init__(self, api: Callable[[], JetStreamApi], layout: Layout) -> None:
        self._api = api
        self._layout = layout

    async def held(self, subjects: Sequence[str]) -> list[bool]:
        """Whether each subject holds a message, as a node that has every write acknowledged before this call sees it.

        Raises ``StaleAnswerError`` when that cannot be known now.
        """
        api = self._api()
        subject = f"{self._layout.prefix}.{BARRIER_TOKEN}.{uuid.uuid4().hex}"
        try:
            ack = await api.publish(Outgoing(subject, b"", write_headers(api.stream)))
        except (ApiError, NotDeliveredError, NoAnswerError) as err:
            raise StaleAnswerError(f"no leader with a quorum acknowledged a barrier ({err})") from err
        # The erasure goes with the questions: the stream's last seq stays where the barrier put it.
        _erased, *held = await asyncio.gather(
            _erase(api, ack.stream_seq),
            *(self._held_since(api, each, ack.stream_seq) for each in subjects),
            return_exceptions=True,
        )
        for outcome in held:
            if isinstance(outcome, BaseException):
                raise outcome
        return [bool(outcome) for outcome in held]

    @staticmethod
    async def _held_since(api: JetStreamApi, subject: str, barrier_seq: int) -> bool:
        request = {"subjects_filter": subject, "offset": _PAST_EVERY_PAGE}
        try:
            reply = await api.connection.request(
                f"$JS.API.STREAM.INFO.{api.stream}", json.dumps(request).encode(), timeout=api.timeout
            )
            info = json.loads(reply.data)
            if info.get("error"):
                raise StaleAnswerError(f"the stream's info was refused: {info['error']}")
            last_seq = int((info.get("state") or {}).get("last_seq") or 0)
            total = int(info.get("total") or 0)
        except (nats.errors.Error, TimeoutError, OSError, ValueError, TypeError, AttributeError) as err:
            raise StaleAnswerError(f"the stream's info did not come ({err or type(err).__name__})") from err
        if last_seq < barrier_seq:
            raise StaleAnswerError(
                f"the stream's info came from a node at stream seq {last_seq}, behind the barrier at {barrier_seq}"
            )
        return total > 0


async def _erase(api: JetStreamApi, stream_seq: int) -> None:
    """Erase the barrier; one left behind (this fails, or the process dies first) is a few bytes under no run."""
    with contextlib.suppress(ApiError, NotDeliveredError, NoAnswerError):
        await api.delete_message(stream_seq)
