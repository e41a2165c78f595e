"""Where the listing index persists on the file backend: small files in a directory beside the journals.

The index is derived data: the journals are the truth, and the repair that
runs at every start compares each entry against the store (``listing/upkeep.py``).
So this store only has to make two promises:

* it never hands back bytes that were damaged: every line carries the CRC-32
  of its body, and ``load`` stops at the first line that fails it (a torn
  final line after a crash) and says so, so the repair then re-reads every
  run instead of trusting what followed;
* a compaction replaces the snapshot atomically (written to a temporary
  file, fsynced, renamed, the directory fsynced): a crash leaves the old
  snapshot and log or the new snapshot, never a mix.

Appends to the log are written but not fsynced: a change lost to a power cut
leaves an entry with the version the journal had before, which the repair
finds different and reads again. Lines hold up to ``CHUNK_ENTRIES`` entries,
column by column (``COLUMNS`` in ``backends/index_store.py``), so neither the load nor a compaction holds the GIL
in one long ``json`` call while appends wait on the event loop.

The contract is ``IndexStore`` (``backends/index_store.py``), kept async by
``FileStoreOnThread``: the file store runs on a thread of its own.

One server process owns the directory at a time (an exclusive ``flock`` on
``lock``). A second process on the same data directory (each is refused the
runs the other holds) keeps no index, and touches ``others`` every few
seconds; the owner, seeing a fresh ``others``, stops using its index too,
since it does not hear of the other's writes. Both then read every run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import portalocker

from runjournal_server.backends.file.files import fsync_dir
from runjournal_server.backends.index_store import (
    CHUNK_ENTRIES,
    FORMAT,
    Entry,
    Loaded,
    Op,
    checked_line,
    encode_columns,
    replay_lines,
)

log = logging.getLogger(__name__)

SNAPSHOT = "snapshot"
LOG = "log"
LOCK = "lock"
OTHERS = "others"

T = TypeVar("T")


class FileStoreOnThread:
    """``IndexStore`` over a ``FileIndexStore``: each call on the index's own thread (its I/O blocks)."""

    def __init__(self, files: FileIndexStore, thread: ThreadPoolExecutor) -> None:
        self.files = files
        self._thread = thread

    @property
    def where(self) -> str:
        return str(self.files.directory)

    async def load(self) -> Loaded:
        return await self._blocking(self.files.load)

    async def append(self, ops: Sequence[Op]) -> None:
        await self._blocking(self.files.append, ops)

    async def compact(self, entries: Sequence[Entry], position: int | None) -> None:
        await self._blocking(self.files.compact, entries)

    async def close(self) -> None:
        await self._blocking(self.files.close)

    async def _blocking(self, fn: Callable[..., T], *args: object) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn, *args)


class FileIndexStore:
    """The index files in one directory (see the module docstring). Blocking: call from a thread."""

    def __init__(self, directory: Path) -> None:
        self._dir = Path(directory)
        self._lock_fd: int | None = None
        self._log_fd: int | None = None

    @property
    def directory(self) -> Path:
        return self._dir

    def open(self) -> bool:
        """Take the directory; False when another process holds it (the index then stays in memory)."""
        self._dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._dir / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            portalocker.lock(fd, portalocker.LOCK_EX | portalocker.LOCK_NB)
        except portalocker.LockException:
            os.close(fd)
            return False
        self._lock_fd = fd
        self._log_fd = os.open(self._dir / LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        if os.fstat(self._log_fd).st_size == 0:
            _write_all(self._log_fd, checked_line(["format", FORMAT]))
        return True

    def touch_others(self) -> None:
        """Say that a process that does not own the directory serves this data directory too."""
        self._dir.mkdir(parents=True, exist_ok=True)
        path = self._dir / OTHERS
        path.touch()
        os.utime(path)

    def others_seen_within(self, seconds: float) -> bool:
        """True when another process said within ``seconds`` that it serves this data directory."""
        try:
            touched = os.stat(self._dir / OTHERS).st_mtime
        except FileNotFoundError:
            return False
        return time.time() - touched < seconds

    def close(self) -> None:
        for fd in (self._log_fd, self._lock_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._log_fd = self._lock_fd = None

    def load(self) -> Loaded:
        """The persisted entries: the snapshot, then the log's changes; damage stops the replay and is reported."""
        entries: dict[str, Entry] = {}
        damaged: str | None = None
        ops = 0
        try:
            snapshot = (self._dir / SNAPSHOT).read_bytes()
        except FileNotFoundError:
            snapshot = None
        if snapshot is not None:
            damaged = replay_lines(snapshot, entries, SNAPSHOT, empty_is_damage=True)
        if damaged is None:
            try:
                data = (self._dir / LOG).read_bytes()
            except FileNotFoundError:
                data = b""
            ops = data.count(b"\n")
            damaged = replay_lines(data, entries, LOG)
        if snapshot is None and ops <= 1 and damaged is None:  # a log of its format line alone
            damaged = "no index was persisted"
        return Loaded(list(entries.values()), damaged, ops)

    def append(self, ops: Sequence[Op]) -> None:
        """Write changes to the log (not fsynced: see the module docstring)."""
        assert self._log_fd is not None
        out: list[bytes] = []
        puts = [entry for kind, entry in ops if kind == "put"]
        drops = [run_id for kind, run_id in ops if kind == "drop"]
        for start in range(0, len(puts), CHUNK_ENTRIES):
            out.append(checked_line(["put", encode_columns(puts[start : start + CHUNK_ENTRIES])]))
        for start in range(0, len(drops), CHUNK_ENTRIES):
            out.append(checked_line(["drop", drops[start : start + CHUNK_ENTRIES]]))
        data = b"".join(out)
        while data:
            written = os.write(self._log_fd, data)
            data = data[written:]

    def compact(self, entries: Iterable[Entry]) -> None:
        """Replace the snapshot with ``entries`` and empty the log, atomically (see the module docstring)."""
        assert self._log_fd is not None
        tmp = self._dir / (SNAPSHOT + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, checked_line(["format", FORMAT]))
            chunk: list[Entry] = []
            for entry in entries:
                chunk.append(entry)
                if len(chunk) == CHUNK_ENTRIES:
                    _write_all(fd, checked_line(["put", encode_columns(chunk)]))
                    chunk = []
            if chunk:
                _write_all(fd, checked_line(["put", encode_columns(chunk)]))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self._dir / SNAPSHOT)
        # The log goes only after the new snapshot is durable under its name.
        self._fsync_dir()
        os.ftruncate(self._log_fd, 0)
        _write_all(self._log_fd, checked_line(["format", FORMAT]))

    def _fsync_dir(self) -> None:
        fsync_dir(self._dir)


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]
