"""The few JetStream API calls the backend makes, over one nats-py connection.

Raw requests rather than nats-py's JetStream helpers, because the backend
needs things they do not offer: the fence header naming another subject,
atomic batch publish, stream-info subject paging, and every reply read as
what it is. Driver exceptions end here, as one of three:

* ``ApiError``: the server answered and refused (it carries JetStream's
  ``err_code``);
* ``NotDeliveredError``: the request certainly never reached a stream (not
  connected, no responders, too large), so a write did not happen;
* ``NoAnswerError``: the request may have been carried out, but no reply
  came (timeout, connection lost): a write must be read back to know.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import re
import uuid
from calendar import timegm
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import nats.errors
from nats.aio.client import Client

API_PREFIX = "$JS.API"
READ_CONCURRENCY = 64
"""Reads in flight at once for one caller: well under the server's API queue limit."""
_PAST_EVERY_PAGE = 1 << 62
"""A stream-info page offset past any subject list: the reply then carries the total and no names."""
ERR_NO_MESSAGE = 10037
ERR_MSG_DELETE_FAILED = 10057
ERR_STREAM_NOT_FOUND = 10059
ERR_STREAM_NAME_IN_USE = 10058
ERR_WRONG_LAST_SEQUENCE = 10071
ERR_STORE_FAILED = 10077
ERR_BATCH_WRONG_LAST_SEQUENCE = 10164
ERR_INSUFFICIENT_RESOURCES = 10023

HEADER_MSG_ID = "Nats-Msg-Id"
HEADER_EXPECTED_STREAM = "Nats-Expected-Stream"
HEADER_EXPECTED_LAST_SUBJECT_SEQUENCE = "Nats-Expected-Last-Subject-Sequence"
HEADER_EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT = "Nats-Expected-Last-Subject-Sequence-Subject"
"""nats-py has no constant for this one."""
HEADER_BATCH_ID = "Nats-Batch-Id"
HEADER_BATCH_SEQUENCE = "Nats-Batch-Sequence"
HEADER_BATCH_COMMIT = "Nats-Batch-Commit"
HEADER_STAGED = "Runjournal-Staged"
"""Carried by each record a staged creation stores before its meta (``staging.py``): what proves remains
without a meta are a creation that never committed (``remains.py``)."""


_FULL_DESCRIPTIONS = ("maximum messages exceeded", "maximum bytes exceeded", "insufficient", "resources exceeded")


class ApiError(Exception):
    """The JetStream API answered with an error."""

    def __init__(self, code: int, err_code: int, description: str) -> None:
        super().__init__(f"{description} (JetStream error {err_code}, status {code})")
        self.code = code
        self.err_code = err_code
        self.description = description


class NotDeliveredError(Exception):
    """The request certainly reached no stream: nothing was written."""


class NoAnswerError(Exception):
    """No reply came; a write may or may not have happened."""


@dataclass(frozen=True)
class StoredMessage:
    """A message as the stream holds it."""

    subject: str
    stream_seq: int
    data: bytes
    msg_id: str | None
    stored_at: float | None = None
    """When the stream stored it (seconds since the epoch), from the message's ``time``."""
    staged: bool = False
    """Stored by a staged creation ahead of its meta (it carries ``HEADER_STAGED``)."""


@dataclass(frozen=True)
class PubAck:
    stream_seq: int
    duplicate: bool


@dataclass(frozen=True)
class Outgoing:
    """One message to publish."""

    subject: str
    data: bytes
    headers: Mapping[str, str]


class JetStreamApi:
    """One stream's API over a shared connection; ``timeout`` bounds every call."""

    def __init__(self, nc: Client, stream: str, timeout: float) -> None:
        self._nc = nc
        self.stream = stream
        self._timeout = timeout

    @property
    def connection(self) -> Client:
        """The connection, for a reader that streams from a consumer (``fetch.py``) instead of asking per subject."""
        return self._nc

    @property
    def timeout(self) -> float:
        return self._timeout

    # ------------------------------------------------------------ writing

    async def publish(self, message: Outgoing) -> PubAck:
        """Publish one message and wait for its ack."""
        headers = message.headers if isinstance(message.headers, dict) else dict(message.headers)
        reply = await self._request(message.subject, message.data, headers)
        return _pub_ack(reply)

    async def publish_batch(self, messages: Sequence[Outgoing]) -> PubAck:
        """Publish ``messages`` as one atomic batch: all are stored or none.

        Every message but the last goes without a reply subject; the server
        checks the whole batch when the commit arrives and answers it once.
        Publishes on one connection arrive in order. A batch whose commit
        never arrives is abandoned by the server after 10 s of silence.
        """
        batch_id = uuid.uuid4().hex
        last = len(messages)
        self._check_connected()
        try:
            for number, message in enumerate(messages[:-1], start=1):
                headers = {**message.headers, HEADER_BATCH_ID: batch_id, HEADER_BATCH_SEQUENCE: str(number)}
                await self._nc.publish(message.subject, message.data, headers=headers)
        except nats.errors.Error as err:
            # Nothing was committed: without the commit the server abandons the batch.
            raise NotDeliveredError(f"sending the batch failed: {_describe(err)}") from err
        final = messages[-1]
        headers = {
            **final.headers,
            HEADER_BATCH_ID: batch_id,
            HEADER_BATCH_SEQUENCE: str(last),
            HEADER_BATCH_COMMIT: "1",
        }
        return _pub_ack(await self._request(final.subject, final.data, headers))

    # ------------------------------------------------------------ reading

    async def get_last(self, subject: str) -> StoredMessage | None:
        """The last message on ``subject`` (a wildcard is allowed), from the stream leader; None if none.

        This is the stream's MSG.GET API, answered by the stream leader, never
        a direct get that a lagging replica may answer: a write that was
        acknowledged is always seen.
        """
        try:
            reply = await self._api(f"STREAM.MSG.GET.{self.stream}", {"last_by_subj": subject})
        except ApiError as err:
            if err.err_code == ERR_NO_MESSAGE:
                return None
            raise
        return _stored_message(reply.get("message") or {})

    async def get_many(self, subjects: Sequence[str]) -> list[StoredMessage | None]:
        """``get_last`` of each subject, ``READ_CONCURRENCY`` at a time, in order."""
        gate = asyncio.Semaphore(READ_CONCURRENCY)

        async def one(subject: str) -> StoredMessage | None:
            async with gate:
                return await self.get_last(subject)

        return list(await asyncio.gather(*(one(subject) for subject in subjects)))

    async def get_next(self, subject: str, from_stream_seq: int) -> StoredMessage | None:
        """The first message on ``subject`` (a wildcard is allowed) at or after ``from_stream_seq``; None if none.

        From the stream leader, like ``get_last``.
        """
        try:
            reply = await self._api(f"STREAM.MSG.GET.{self.stream}", {"next_by_subj": subject, "seq": from_stream_seq})
        except ApiError as err:
            if err.err_code == ERR_NO_MESSAGE:
                return None
            raise
        return _stored_message(reply.get("message") or {})

    async def subject_count(self, subjects_filter: str) -> int:
        """How many subjects matching the filter hold a message, without listing them.

        The info API pages subject names; asking for a page past the last
        returns the total alone, so the reply stays small whatever the count.
        """
        info = await self._api(
            f"STREAM.INFO.{self.stream}", {"subjects_filter": subjects_filter, "offset": _PAST_EVERY_PAGE}
        )
        return int(info.get("total") or 0)

    async def last_and_count(self, subjects_filter: str) -> tuple[StoredMessage | None, int]:
        """``get_last`` and ``subject_count`` of the filter, sent together (one round trip of latency).

        Both are awaited to the end, so a failure of one leaves no request
        running unobserved; the first failure is raised.
        """
        last, count = await asyncio.gather(
            self.get_last(subjects_filter), self.subject_count(subjects_filter), return_exceptions=True
        )
        for outcome in (last, count):
            if isinstance(outcome, BaseException):
                raise outcome
        assert not isinstance(last, BaseException) and isinstance(count, int)
        return last, count

    async def subjects(self, subjects_filter: str) -> list[str]:
        """Every subject matching the filter that holds a message, across the info API's pages."""
        found: list[str] = []
        offset = 0
        while True:
            info = await self._api(f"STREAM.INFO.{self.stream}", {"subjects_filter": subjects_filter, "offset": offset})
            page = list((info.get("state") or {}).get("subjects") or {})
            found.extend(page)
            total = int(info.get("total") or 0)
            offset += len(page)
            if not page or offset >= total:
                return found

    async def delete_message(self, stream_seq: int) -> bool:
        """Erase the message at ``stream_seq``: removed and its bytes overwritten in the store files.

        The API's default (``no_erase`` false) rewrites the message with random
        data, so a deleted record's bytes do not linger in a block file until
        it is compacted. False when no message is there (erased already).
        """
        try:
            await self._api(f"STREAM.MSG.DELETE.{self.stream}", {"seq": stream_seq, "no_erase": False})
        except ApiError as err:
            if err.err_code in (ERR_NO_MESSAGE, ERR_MSG_DELETE_FAILED) and "no message" in err.description:
                return False
            raise
        return True

    # ------------------------------------------------------------ managing

    async def stream_info(self) -> dict[str, Any]:
        return await self._api(f"STREAM.INFO.{self.stream}", None)

    async def create_stream(self, config: Mapping[str, Any]) -> dict[str, Any]:
        return await self._api(f"STREAM.CREATE.{self.stream}", dict(config))

    # ------------------------------------------------------------ plumbing

    async def _api(self, suffix: str, body: Mapping[str, Any] | None) -> dict[str, Any]:
        payload = json.dumps(body).encode() if body is not None else b""
        reply = await self._request(f"{API_PREFIX}.{suffix}", payload, None)
        _raise_for_error(reply)
        return reply

    async def _request(self, subject: str, payload: bytes, headers: dict[str, str] | None) -> dict[str, Any]:
        self._check_connected()
        try:
            message = await self._nc.request(subject, payload, timeout=self._timeout, headers=headers)
        except nats.errors.NoRespondersError as err:
            raise NotDeliveredError(f"no JetStream stream or API answered on {subject}") from err
        except (nats.errors.MaxPayloadError, nats.errors.BadHeaderError, nats.errors.BadSubjectError) as err:
            raise NotDeliveredError(f"the request was refused before sending: {_describe(err)}") from err
        except (nats.errors.ConnectionClosedError, nats.errors.ConnectionDrainingError) as err:
            raise NotDeliveredError("the NATS connection is closed") from err
        except (TimeoutError, nats.errors.Error, OSError) as err:
            raise NoAnswerError(f"no reply within {self._timeout:g} s ({_describe(err)})") from err
        try:
            reply = json.loads(message.data)
        except ValueError as err:
            raise NoAnswerError(f"the reply is not JSON: {message.data[:80]!r}") from err
        if not isinstance(reply, dict):
            raise NoAnswerError(f"the reply is not a JSON object: {message.data[:80]!r}")
        return reply

    def _check_connected(self) -> None:
        # Fail at once while reconnecting: nats-py would buffer the request and
        # send it after the reconnect, long after we stopped waiting for it.
        if not self._nc.is_connected:
            raise NotDeliveredError("not connected to NATS (reconnecting)")


def is_taken(err: ApiError) -> bool:
    """A refusal because the subject already holds its one message (never retried: the slot is taken)."""
    return err.err_code == ERR_STORE_FAILED and "per subject" in err.description


def is_full(err: ApiError) -> bool:
    """A refusal because the stream or account is full (a limit with discard new), not a taken slot."""
    if err.err_code == ERR_INSUFFICIENT_RESOURCES:
        return True
    return err.err_code == ERR_STORE_FAILED and any(text in err.description for text in _FULL_DESCRIPTIONS)


def _describe(err: BaseException) -> str:
    return str(err) or type(err).__name__


def _raise_for_error(reply: Mapping[str, Any]) -> None:
    error = reply.get("error")
    if error:
        raise ApiError(int(error.get("code") or 0), int(error.get("err_code") or 0), str(error.get("description")))


def _pub_ack(reply: Mapping[str, Any]) -> PubAck:
    _raise_for_error(reply)
    seq = reply.get("seq")
    if not isinstance(seq, int) or seq <= 0:
        raise NoAnswerError(f"the publish ack carries no stream sequence: {dict(reply)!r}")
    return PubAck(stream_seq=seq, duplicate=bool(reply.get("duplicate")))


def _stored_message(message: Mapping[str, Any]) -> StoredMessage:
    try:
        data = base64.b64decode(message.get("data") or "", validate=True)
        raw_headers = base64.b64decode(message.get("hdrs") or "", validate=True)
        return StoredMessage(
            subject=str(message["subject"]),
            stream_seq=int(message["seq"]),
            data=data,
            msg_id=header_value(raw_headers, HEADER_MSG_ID),
            stored_at=_epoch_seconds(message.get("time")),
            staged=header_value(raw_headers, HEADER_STAGED) is not None,
        )
    except (KeyError, TypeError, ValueError, binascii.Error) as err:
        raise NoAnswerError(f"the stream returned a malformed message: {_describe(err)}") from err


_RFC3339 = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?Z")


def _epoch_seconds(text: object) -> float | None:
    """A message's ``time`` (RFC 3339 in UTC, up to nanoseconds) in seconds since the epoch; None if absent or odd."""
    found = _RFC3339.fullmatch(text) if isinstance(text, str) else None
    if found is None:
        return None
    year, month, day, hour, minute, second = (int(part) for part in found.groups()[:6])
    fraction = found.group(7) or "0"
    return timegm((year, month, day, hour, minute, second)) + int(fraction) / 10 ** len(fraction)


def header_value(raw: bytes, name: str) -> str | None:
    """One header's value from a stored header block (``NATS/1.0\\r\\nKey: value\\r\\n...``)."""
    wanted = name.lower()
    for line in raw.split(b"\r\n")[1:]:
        key, sep, value = line.partition(b":")
        if sep and key.strip().decode("latin-1").lower() == wanted:
            return value.strip().decode("utf-8", "replace")
    return None
