"""The contract of the task store kept beside the journals: create-only task documents.

A backend stores a task's documents as bytes (``Backend.task_store``);
``tasks.py`` builds and reads them.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

MAX_TASK_DOCUMENT_BYTES = 1 << 20
"""The largest task document (request or outcome) a task store must keep; ``tasks.py`` refuses larger ones."""


@dataclass(frozen=True)
class TaskNames:
    """Which documents the store holds, from one listing of names (no document read).

    Every document is create-only, so these three sets say all that can have
    changed about a task: submitted (``requested``), completed (``completed``),
    deleted (``deleted``). The task index (``task_index.py``) reads a document
    only when a name it has not seen appears.
    """

    requested: frozenset[str]
    completed: frozenset[str]
    deleted: frozenset[str]

    @property
    def live(self) -> frozenset[str]:
        """The tasks with a request and no tombstone: what a listing lists."""
        return self.requested - self.deleted


class TaskStore(abc.ABC):
    """Create-only storage of task documents: a request and, later, an outcome per task.

    Both writes are create-only and durable before they return, so the first
    completion wins at the store itself, whichever server replica races
    (file: a fully synced file linked into place; JetStream: a KV create).
    The store keeps bytes; ``tasks.py`` builds and reads them.
    """

    @abc.abstractmethod
    async def create_request(self, task_id: str, body: bytes) -> bytes | None:
        """Store the request if the task has none; None when stored, else the existing bytes."""

    @abc.abstractmethod
    async def create_outcome(self, task_id: str, body: bytes) -> bytes | None:
        """Store the outcome if the task has none; None when stored, else the existing bytes."""

    @abc.abstractmethod
    async def get(self, task_id: str) -> tuple[bytes | None, bytes | None]:
        """The task's request and outcome bytes, each None when absent."""

    @abc.abstractmethod
    async def list_task_ids(self) -> list[str]:
        """Every task id with a stored request and no tombstone (unordered)."""

    @abc.abstractmethod
    async def delete(self, task_id: str) -> bool:
        """Keep a durable tombstone of the task, then remove its documents; False when it had a tombstone already.

        The tombstone comes first, so a crash leaves the task whole or
        tombstoned, never readable in part; deleting again removes what a
        crash left. ``tasks.py`` checks that the task exists first.
        """

    @abc.abstractmethod
    async def is_deleted(self, task_id: str) -> bool:
        """True when the task has a tombstone (TASK_DELETED)."""

    @abc.abstractmethod
    async def deleted_task_ids(self) -> list[str]:
        """Every task id with a tombstone (unordered): what a migration copies (``delete`` stores one)."""

    @abc.abstractmethod
    async def names(self) -> TaskNames:
        """Which tasks have a request, an outcome, a tombstone: names only, one listing."""

    async def load_index(self) -> bytes | None:
        """The task index as ``save_index`` last kept it, or None (a store that keeps none)."""
        return None

    async def save_index(self, data: bytes) -> None:  # noqa: B027  (optional: a store may keep no index)
        """Keep the task index (derived data: whole or not at all); a store that keeps none does nothing."""
