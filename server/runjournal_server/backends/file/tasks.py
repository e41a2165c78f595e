"""The file backend's task store: one directory, create-only files.

``<data_dir>/tasks/<task_id>.request.json`` and ``<task_id>.outcome.json``.
A document is written to a temporary file and fsynced (the temporary file is
removed again if that fails, so a full disk is not also left littered), then
hard-linked into its final name: ``link`` fails when the name exists, so
creation is exclusive *and* the linked file is always complete (an O_EXCL
create would expose a half-written file to a racing reader, or leave one
behind after a crash). The directory is fsynced before the call returns, so an
acknowledged document survives a crash. The first completion wins at the file
system itself.

Deleting a task links ``<task_id>.deleted.json`` (its tombstone) the same
way first, then truncates, fsyncs and unlinks both documents and fsyncs the
directory: a crash leaves the task whole or tombstoned.

The task index (``task_index.py``) is kept in ``INDEX_FILE``, replaced whole
(a temporary file, fsynced, renamed over it): derived data, checked again
against the names of the documents whenever it is loaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path
from typing import TypeVar

from runjournal_server.backends.file.files import fsync_dir, os_errors, write_new_file
from runjournal_server.backends.file.tombstones import erase
from runjournal_server.backends.task_store import TaskNames, TaskStore
from runjournal_server.core.ids import is_valid_run_id

TASKS_DIR = "tasks"
REQUEST_SUFFIX = ".request.json"
OUTCOME_SUFFIX = ".outcome.json"
DELETED_SUFFIX = ".deleted.json"
TEMP_PREFIX = ".tmp-"
INDEX_FILE = ".index"
"""Not a valid task id, so never taken for a document."""

T = TypeVar("T")


class FileTaskStore(TaskStore):
    def __init__(self, data_dir: Path, executor: Executor | None) -> None:
        self._dir = data_dir / TASKS_DIR
        self._executor = executor

    async def create_request(self, task_id: str, body: bytes) -> bytes | None:
        return await self._run(self._create, task_id, REQUEST_SUFFIX, body)

    async def create_outcome(self, task_id: str, body: bytes) -> bytes | None:
        return await self._run(self._create, task_id, OUTCOME_SUFFIX, body)

    async def get(self, task_id: str) -> tuple[bytes | None, bytes | None]:
        return await self._run(self._get, task_id)

    async def list_task_ids(self) -> list[str]:
        return await self._run(self._list)

    async def delete(self, task_id: str) -> bool:
        return await self._run(self._delete, task_id)

    async def is_deleted(self, task_id: str) -> bool:
        return await self._run(os.path.lexists, self._path(task_id, DELETED_SUFFIX))

    async def deleted_task_ids(self) -> list[str]:
        return await self._run(self._list_deleted)

    async def names(self) -> TaskNames:
        return await self._run(self._list_names)

    async def load_index(self) -> bytes | None:
        return await self._run(_read_if_present, self._dir / INDEX_FILE)

    async def save_index(self, data: bytes) -> None:
        await self._run(self._save_index, data)

    def _save_index(self, data: bytes) -> None:
        with os_errors(None, "keeping the task index", what="task"):
            self._dir.mkdir(exist_ok=True)
            temp = self._dir / f"{TEMP_PREFIX}{uuid.uuid4().hex}"
            try:
                write_new_file(temp, data)
                os.replace(temp, self._dir / INDEX_FILE)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temp)
                raise
            fsync_dir(self._dir)

    def _list_names(self) -> TaskNames:
        found: dict[str, set[str]] = {REQUEST_SUFFIX: set(), OUTCOME_SUFFIX: set(), DELETED_SUFFIX: set()}
        for name in self._names():
            for suffix, ids in found.items():
                if name.endswith(suffix):
                    task_id = name.removesuffix(suffix)
                    if is_valid_run_id(task_id):
                        ids.add(task_id)
                    break
        return TaskNames(
            frozenset(found[REQUEST_SUFFIX]), frozenset(found[OUTCOME_SUFFIX]), frozenset(found[DELETED_SUFFIX])
        )

    async def _run(self, fn: Callable[..., T], *args: object) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def _path(self, task_id: str, suffix: str) -> Path:
        if not is_valid_run_id(task_id):  # never build a path from an unchecked id
            raise ValueError(f"invalid task id {task_id!r}")
        return self._dir / f"{task_id}{suffix}"

    def _create(self, task_id: str, suffix: str, body: bytes) -> bytes | None:
        final = self._path(task_id, suffix)
        with os_errors(task_id, "storing the task", what="task"):
            self._dir.mkdir(exist_ok=True)
            temp = self._dir / f"{TEMP_PREFIX}{uuid.uuid4().hex}"
            write_new_file(temp, body)
            try:
                os.link(temp, final)
                created = True
            except FileExistsError:
                created = False
            finally:
                os.unlink(temp)
            fsync_dir(self._dir)
            return None if created else final.read_bytes()

    def _delete(self, task_id: str) -> bool:
        body = json.dumps({"task_id": task_id, "deleted_at": time.time()}, sort_keys=True).encode()
        created = self._create(task_id, DELETED_SUFFIX, body) is None  # durable, directory fsynced
        with os_errors(task_id, "deleting the task", what="task"):
            erase([self._path(task_id, REQUEST_SUFFIX), self._path(task_id, OUTCOME_SUFFIX)], self._dir)
        return created

    def _get(self, task_id: str) -> tuple[bytes | None, bytes | None]:
        with os_errors(task_id, "reading the task", what="task"):
            return (
                _read_if_present(self._path(task_id, REQUEST_SUFFIX)),
                _read_if_present(self._path(task_id, OUTCOME_SUFFIX)),
            )

    def _list(self) -> list[str]:
        names = self._names()
        deleted = {name.removesuffix(DELETED_SUFFIX) for name in names if name.endswith(DELETED_SUFFIX)}
        ids = (name.removesuffix(REQUEST_SUFFIX) for name in names if name.endswith(REQUEST_SUFFIX))
        return [task_id for task_id in ids if is_valid_run_id(task_id) and task_id not in deleted]

    def _list_deleted(self) -> list[str]:
        ids = (name.removesuffix(DELETED_SUFFIX) for name in self._names() if name.endswith(DELETED_SUFFIX))
        return [task_id for task_id in ids if is_valid_run_id(task_id)]

    def _names(self) -> list[str]:
        with os_errors(None, f"listing {self._dir}", what="task"):
            try:
                return os.listdir(self._dir)
            except FileNotFoundError:
                return []


def _read_if_present(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
