"""The JetStream backend's task store: create-only documents on write-once subjects of the journal stream.

A task's documents are ``<prefix>._tasks.<task_id>.request`` and
``<prefix>._tasks.<task_id>.outcome``, in the journal stream, under the
stream's own rules: one message per subject and a second one refused. So
creation is exclusive at the server, and of two completions racing through
different server replicas the first one stored wins. No run id can start with
``_``, so a task subject never falls under a run's subjects or the listing's
``<prefix>.*.meta``.

Deleting a task stores its tombstone on ``<prefix>._tasks.<task_id>.deleted``
(create-only, like the documents) first, then erases both documents (the
stream's message delete overwrites their bytes).

This gives what a KV bucket with create-only writes gives (the DESIGN's
sketch), with the checks the journal stream already passed at start (file
storage, no expiry, no rollups, sync and replicas as for records), and
without a second stream to create and validate.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable

from runjournal_server.backends.jetstream.api import (
    ApiError,
    JetStreamApi,
    NoAnswerError,
    NotDeliveredError,
    Outgoing,
    StoredMessage,
    is_full,
    is_taken,
)
from runjournal_server.backends.jetstream.layout import Fence, Layout, write_headers
from runjournal_server.backends.jetstream.publish import (
    Answer,
    Answered,
    Empty,
    Occupied,
    ReadBackError,
    Stored,
    Target,
    publish_once,
)
from runjournal_server.backends.task_store import MAX_TASK_DOCUMENT_BYTES, TaskNames, TaskStore
from runjournal_server.core.errors import InvalidArgumentError, StorageFullError, StorageUnavailableError

REQUEST = "request"
OUTCOME = "outcome"
DELETED = "deleted"


def _is_final(answer: Answer) -> bool:
    """A duplicate ack, or a refusal for anything but an occupied subject: the subject was empty, nothing stored."""
    if answer.duplicate:
        return True
    return answer.refusal is not None and not (answer.is_fence or is_taken(answer.refusal))


class JetStreamTaskStore(TaskStore):
    """Task documents in the journal stream; ``api`` gives the started backend's API client."""

    def __init__(
        self, api: Callable[[], JetStreamApi], layout: Layout, max_document_bytes: Callable[[], int] | None = None
    ) -> None:
        self._api = api
        self._layout = layout
        self._max_document_bytes = max_document_bytes or (lambda: MAX_TASK_DOCUMENT_BYTES)

    async def create_request(self, task_id: str, body: bytes) -> bytes | None:
        return await self._create(task_id, REQUEST, body)

    async def create_outcome(self, task_id: str, body: bytes) -> bytes | None:
        return await self._create(task_id, OUTCOME, body)

    async def get(self, task_id: str) -> tuple[bytes | None, bytes | None]:
        request, outcome = await self._read(task_id, [self._subject(task_id, REQUEST), self._subject(task_id, OUTCOME)])
        return (request.data if request else None, outcome.data if outcome else None)

    async def list_task_ids(self) -> list[str]:
        requested, deleted = await asyncio.gather(self._ids(REQUEST), self._ids(DELETED))
        return [task_id for task_id in requested if task_id not in deleted]

    async def names(self) -> TaskNames:
        """Three subject listings of the stream (``subjects``), no message read."""
        requested, completed, deleted = await asyncio.gather(self._ids(REQUEST), self._ids(OUTCOME), self._ids(DELETED))
        return TaskNames(frozenset(requested), frozenset(completed), frozenset(deleted))

    async def _ids(self, kind: str) -> set[str]:
        try:
            subjects = await self._api().subjects(self._layout.tasks(kind))
        except (ApiError, NotDeliveredError, NoAnswerError) as err:
            raise StorageUnavailableError(None, f"listing tasks: {err}", what="task") from err
        return {task_id for subject in subjects if (task_id := self._layout.task_of(subject, kind)) is not None}

    async def delete(self, task_id: str) -> bool:
        body = json.dumps({"task_id": task_id, "deleted_at": time.time()}, sort_keys=True).encode()
        created = await self._create(task_id, DELETED, body) is None
        documents = await self._read(task_id, [self._subject(task_id, REQUEST), self._subject(task_id, OUTCOME)])
        try:
            for message in documents:
                if message is not None:
                    await self._api().delete_message(message.stream_seq)
        except (ApiError, NotDeliveredError, NoAnswerError) as err:
            raise StorageUnavailableError(
                task_id, f"erasing the task: {err}; it is deleted, delete it again to finish", what="task"
            ) from err
        return created

    async def deleted_task_ids(self) -> list[str]:
        return sorted(await self._ids(DELETED))

    async def is_deleted(self, task_id: str) -> bool:
        (tombstone,) = await self._read(task_id, [self._subject(task_id, DELETED)])
        return tombstone is not None

    async def _create(self, task_id: str, kind: str, body: bytes) -> bytes | None:
        """Store ``body`` unless the document exists: None when this call stored it, else the stored bytes.

        The publish expects the subject to be empty, so an existing document
        is refused before the duplicate window is consulted. A refusal for a
        taken subject, or no answer, is settled by reading the subject back
        (``publish.py``): our bytes (which include this call's timestamp)
        after no answer mean our write landed; anything else stored there is
        the existing document. Any other refusal, and a duplicate ack, are
        final: the subject was empty, so nothing is stored.
        """
        subject = self._subject(task_id, kind)
        self._check_size(task_id, kind, body)
        api = self._api()
        msg_id = f"task/{task_id}/{kind}/{hashlib.sha256(body).hexdigest()[:32]}"
        headers = write_headers(api.stream, fence=Fence(subject, 0), msg_id=msg_id)
        try:
            outcome = await publish_once(
                api,
                lambda: api.publish(Outgoing(subject, body, headers)),
                [Target(subject, body, msg_id)],
                final=_is_final,
            )
        except NotDeliveredError as err:
            raise StorageUnavailableError(task_id, f"storing the {kind}: {err}", what="task") from err
        except ReadBackError as err:
            raise StorageUnavailableError(task_id, f"reading the task: {err.cause}", what="task") from err.cause
        match outcome:
            case Stored():
                return None
            case Occupied(_, [StoredMessage() as stored]):
                return stored.data
            case Answered(Answer(duplicate=True)) | Empty(Answer(duplicate=True)):
                raise StorageUnavailableError(
                    task_id, f"the stream took the {kind} for a duplicate of a removed one", what="task"
                )
            case Answered(Answer(refusal=ApiError() as refusal)) | Empty(Answer(refusal=ApiError() as refusal)):
                if is_full(refusal):
                    raise StorageFullError(task_id, f"storing the {kind}: {refusal}", what="task") from refusal
                raise StorageUnavailableError(task_id, f"storing the {kind}: {refusal}", what="task") from refusal
            case Empty(Answer(no_answer=lost)):
                raise StorageUnavailableError(task_id, f"storing the {kind} got no ack ({lost})", what="task") from lost
        raise AssertionError(f"unhandled outcome {outcome!r}")

    def _check_size(self, task_id: str, kind: str, body: bytes) -> None:
        # tasks.py refuses documents over its own limit; a NATS server with a
        # smaller max_payload carries less, and the publish would fail as
        # STORAGE_UNAVAILABLE, which a retry never fixes: say why instead.
        limit = self._max_document_bytes()
        if len(body) > limit:
            raise InvalidArgumentError(
                kind, f"is {len(body)} bytes; this NATS server (max_payload) stores task documents of at most {limit}"
            )

    def _subject(self, task_id: str, kind: str) -> str:
        return self._layout.task(task_id, kind)

    async def _read(self, task_id: str, subjects: list[str]) -> list[StoredMessage | None]:
        try:
            return list(await asyncio.gather(*(self._api().get_last(subject) for subject in subjects)))
        except (ApiError, NotDeliveredError, NoAnswerError) as err:
            raise StorageUnavailableError(task_id, f"reading the task: {err}", what="task") from err
