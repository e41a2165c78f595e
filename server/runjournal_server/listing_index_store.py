"""Where the listing index persists between restarts: small files in a directory beside the journals.

The index is derived data: the journals are the truth, and the repair that
runs at every start compares each entry against the store (``listing_upkeep.py``).
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
finds different and reads again. Lines are JSON arrays of up to
``CHUNK_ENTRIES`` entries, so neither the load nor a compaction holds the GIL
in one long ``json`` call while appends wait on the event loop.

The contract every index store keeps is ``IndexStore`` (async: the file
store runs on a thread of its own, ``FileStoreOnThread``); a store that other
replicas write (JetStream) keeps ``SharedIndexStore``, which adds where the
news of other replicas' writes stands (``backends/jetstream/listing_store.py``).

One server process owns the directory at a time (an exclusive ``flock`` on
``lock``). A second process on the same data directory (each is refused the
runs the other holds) keeps no index, and touches ``others`` every few
seconds; the owner, seeing a fresh ``others``, stops using its index too,
since it does not hear of the other's writes. Both then read every run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import portalocker

from runjournal_server.backends.file.files import fsync_dir
from runjournal_server.listing_index import LABELS_UNKNOWN, Entry, RunState

log = logging.getLogger(__name__)

FORMAT = 2
CHUNK_ENTRIES = 1000
SNAPSHOT = "snapshot"
LOG = "log"
LOCK = "lock"
OTHERS = "others"

Op = tuple[str, Any]
"""("put", Entry) or ("drop", run_id)."""


T = TypeVar("T")


@dataclass
class Loaded:
    entries: list[Entry]
    damaged: str | None
    """Why the persisted index cannot be trusted whole (then every entry is re-read), or None."""
    log_ops: int
    position: int | None = None
    """A shared store's news position the index was current to (``SharedIndexStore``); None for files."""


class IndexStore(Protocol):
    """Where the listing index persists between restarts: what the upkeep calls, and all it relies on.

    Derived data: ``load`` reports damage (``Loaded.damaged``) instead of
    returning doubtful entries, and the upkeep then rebuilds from the
    journals. A failure to write raises ``OSError`` or a ``JournalError``;
    what it lost the next start's repair finds again.
    """

    @property
    def where(self) -> str:
        """Where the index is, for the logs."""
        ...

    async def load(self) -> Loaded: ...

    async def append(self, ops: Sequence[Op]) -> None:
        """Persist changes since the last call (a store may keep no log: then nothing)."""
        ...

    async def compact(self, entries: Sequence[Entry], position: int | None) -> None:
        """Replace what is persisted with ``entries``, current to the news ``position`` (shared stores)."""
        ...

    async def close(self) -> None: ...


Told = Callable[[str], None]


class SharedIndexStore(IndexStore, Protocol):
    """An index store on a store other replicas write too: it also knows where their news stands.

    Another replica's write reaches this one only as news from a feed, a
    moment later; an index that pages trust must have heard every write
    acknowledged before the page began (``caught_up``), and at start every
    write since the persisted index was current (``news_since``).
    """

    def position(self) -> int | None:
        """Where the news stands now (every change up to it has been told), or None when nothing follows it."""
        ...

    def behind(self) -> int:
        """How much news the next start would replay: stored since the persisted index's position."""
        ...

    async def news_since(self, position: int | None, stored: Told, deleted: Told) -> bool:
        """Tell the runs written (``stored``) and deleted since ``position``, and follow the news from there.

        ``position`` None: nothing to tell; the news is followed from now on.
        False when the news since ``position`` cannot be told (the store was
        replaced, or it lost that far back): the index must be rebuilt.
        """
        ...

    async def caught_up(self) -> bool:
        """Wait until every change acknowledged before this call has been told; False when that cannot be known."""
        ...


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


def encode_entry(entry: Entry) -> list[Any]:
    """The persisted row of an entry: ids, order and listing state, never content.

    Labels are content: a deleted run's labels must leave the disk with it,
    and a log line cannot be taken back, so they are read again from the
    metas after a restart (``LABELS_UNKNOWN``).
    """
    state = entry.state
    return [
        entry.run_id,
        entry.key[0],
        entry.key[1],
        entry.labels is not None,  # whether the meta was readable; never the labels (see encode_entry)
        entry.task_id,
        entry.parent_run_id,
        None if state is None else [state.status, state.waiting, state.updated_ns, state.last_seq, state.version],
    ]


def decode_entry(row: list[Any]) -> Entry:
    run_id, seconds, nanos, meta_readable, task_id, parent, state = row
    if not (isinstance(run_id, str) and isinstance(seconds, int) and isinstance(nanos, int)):
        raise ValueError("malformed entry")
    if state is not None:
        status, waiting, updated_ns, last_seq, version = state
        state = RunState(status, waiting, updated_ns, last_seq, tuple(version) if isinstance(version, list) else None)
    # Loaded entries are trusted (not dirty) until the start's repair finds their journal changed.
    return Entry(
        run_id=run_id,
        key=(seconds, nanos, run_id),
        labels=LABELS_UNKNOWN if meta_readable else None,
        task_id=task_id,
        parent_run_id=parent,
        state=state,
        dirty=state is None,
    )


def encode_chunk(entries: Sequence[Entry], *, dirty_unknown: bool = False) -> bytes:
    """One self-contained piece of a snapshot: the format line, then one line of ``entries``.

    ``dirty_unknown``: a dirty entry is written without its state (read again
    after the load), for a store whose repair does not compare versions.
    """
    rows = []
    for entry in entries:
        row = encode_entry(entry)
        if dirty_unknown and entry.dirty:
            row[-1] = None
        rows.append(row)
    return _line(["format", FORMAT]) + _line(["put", rows])


def replay_lines(data: bytes, entries: dict[str, Entry], name: str) -> str | None:
    """Apply the lines of a snapshot or log piece to ``entries``; what is damaged, or None."""
    return FileIndexStore._replay(data, entries, name)


def _line(body: object) -> bytes:
    data = json.dumps(body, separators=(",", ":")).encode()
    return b"%08x " % zlib.crc32(data) + data + b"\n"


def _parse(line: bytes) -> Any:
    crc, _, data = line.partition(b" ")
    if len(crc) != 8 or int(crc, 16) != zlib.crc32(data):
        raise ValueError("checksum mismatch")
    return json.loads(data)


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
            _write_all(self._log_fd, _line(["format", FORMAT]))
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
            damaged = self._replay(snapshot, entries, SNAPSHOT)
        if damaged is None:
            try:
                data = (self._dir / LOG).read_bytes()
            except FileNotFoundError:
                data = b""
            ops = data.count(b"\n")
            damaged = self._replay(data, entries, LOG)
        if snapshot is None and ops <= 1 and damaged is None:  # a log of its format line alone
            damaged = "no index was persisted"
        return Loaded(list(entries.values()), damaged, ops)

    @staticmethod
    def _replay(data: bytes, entries: dict[str, Entry], name: str) -> str | None:
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        elif lines:
            return f"the {name} file ends with a torn line"
        for number, line in enumerate(lines, 1):
            try:
                body = _parse(line)
                if number == 1:  # both files begin with their format: rows of another one are never read
                    if body != ["format", FORMAT]:
                        return f"the {name} file is of another format ({body!r})"
                    continue
                kind, rows = body
                for row in rows:
                    if kind == "put":
                        entry = decode_entry(row)
                        entries[entry.run_id] = entry
                    elif kind == "drop":
                        entries.pop(row, None)
                    else:
                        raise ValueError(f"unknown operation {kind!r}")
            except (ValueError, TypeError, UnicodeDecodeError, RecursionError) as err:
                return f"line {number} of the {name} file is damaged ({err})"
        if name == SNAPSHOT and not lines:
            return f"the {name} file is empty"
        return None

    def append(self, ops: Sequence[Op]) -> None:
        """Write changes to the log (not fsynced: see the module docstring)."""
        assert self._log_fd is not None
        out: list[bytes] = []
        puts = [encode_entry(entry) for kind, entry in ops if kind == "put"]
        drops = [run_id for kind, run_id in ops if kind == "drop"]
        for start in range(0, len(puts), CHUNK_ENTRIES):
            out.append(_line(["put", puts[start : start + CHUNK_ENTRIES]]))
        for start in range(0, len(drops), CHUNK_ENTRIES):
            out.append(_line(["drop", drops[start : start + CHUNK_ENTRIES]]))
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
            os.write(fd, _line(["format", FORMAT]))
            chunk: list[list[Any]] = []
            for entry in entries:
                chunk.append(encode_entry(entry))
                if len(chunk) == CHUNK_ENTRIES:
                    _write_all(fd, _line(["put", chunk]))
                    chunk = []
            if chunk:
                _write_all(fd, _line(["put", chunk]))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self._dir / SNAPSHOT)
        # The log goes only after the new snapshot is durable under its name.
        self._fsync_dir()
        os.ftruncate(self._log_fd, 0)
        _write_all(self._log_fd, _line(["format", FORMAT]))

    def _fsync_dir(self) -> None:
        fsync_dir(self._dir)


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]
